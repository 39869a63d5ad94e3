package profilesync

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/hex"
	"io"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ProtonMail/go-crypto/openpgp"
	"github.com/ProtonMail/go-crypto/openpgp/armor"
	"github.com/ProtonMail/go-crypto/openpgp/packet"
	"github.com/fluxcd/pkg/apis/meta"
	"github.com/fluxcd/pkg/runtime/conditions"
	git "github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/hiddeco/sshsig"
	. "github.com/onsi/gomega"
	"golang.org/x/crypto/ssh"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1alpha1 "github.com/profilesync/profilesync/api/v1alpha1"
	"github.com/profilesync/profilesync/controllers/metrics"
	"github.com/profilesync/profilesync/test/builders"
	"github.com/profilesync/profilesync/test/gitserver"
	"github.com/profilesync/profilesync/test/metricstest"
	"github.com/profilesync/profilesync/test/testenv"
)

// signingKey is an Ed25519 OpenPGP key pair made for a test.
func signingKey(t *testing.T, name string) *openpgp.Entity {
	t.Helper()
	key, err := openpgp.NewEntity(name, "", name+"@example.com", &packet.Config{Algorithm: packet.PubKeyAlgoEdDSA})
	if err != nil {
		t.Fatalf("make key %s: %v", name, err)
	}
	return key
}

// signedBy signs a commit's payload with key, as `git commit -S` does.
func signedBy(key *openpgp.Entity) gitserver.SignFunc {
	return func(payload io.Reader) (string, error) {
		var signature strings.Builder
		err := openpgp.ArmoredDetachSign(&signature, key, payload, nil)
		return signature.String(), err
	}
}

// exportedPublicKey is key's public half as `gpg --export --armor` writes it.
func exportedPublicKey(t *testing.T, key *openpgp.Entity) []byte {
	t.Helper()
	var out bytes.Buffer
	w, err := armor.Encode(&out, openpgp.PublicKeyType, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := key.Serialize(w); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	out.WriteString("\n")
	return out.Bytes()
}

// TestOnlySignedRevisionsAreApplied: with spec.verify, a revision is applied
// only when its commit is signed by a key of the Secret. An unsigned commit
// and one signed by a key the Secret does not hold are refused with
// VerificationFailed, naming the commit, the signer and why, before they
// are built: a commit that would not even build is refused for its
// signature, not its build, the build phase never runs for it, and nothing
// of it is written.
func TestOnlySignedRevisionsAreApplied(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ensureNamespace(t, clusterProfilesNamespace)
	server := startGitServer(t)
	trusted, stranger := signingKey(t, "release-manager"), signingKey(t, "stranger")
	profile := testenv.UniqueName("signed")
	unsigned, err := server.CreateRepo("signed", singleProfileRepo(profile, "1.31.0"))
	g.Expect(err).NotTo(HaveOccurred())

	keys := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: testenv.UniqueName("trusted-keys"), Namespace: clusterProfilesNamespace},
		Data:       map[string][]byte{"release-manager.asc": exportedPublicKey(t, trusted)},
	}
	g.Expect(k8sClient.Create(ctx, keys)).To(Succeed())
	sync := &v1alpha1.ProfileSync{
		ObjectMeta: metav1.ObjectMeta{Name: testenv.UniqueName("signed"), Namespace: clusterProfilesNamespace},
		Spec: v1alpha1.ProfileSyncSpec{
			URL:      server.RepoURL("signed"),
			Interval: metav1.Duration{Duration: time.Second},
			Verify:   &v1alpha1.SignatureVerification{SecretRef: meta.LocalObjectReference{Name: keys.Name}},
		},
	}
	g.Expect(k8sClient.Create(ctx, sync)).To(Succeed())
	t.Cleanup(func() {
		_ = k8sClient.Delete(ctx, sync)
		_ = k8sClient.Delete(ctx, keys)
		_ = k8sClient.Delete(ctx, &v1alpha1.CloudProfile{ObjectMeta: metav1.ObjectMeta{Name: profile}})
	})
	syncLabels := map[string]string{"namespace": sync.Namespace, "name": sync.Name}
	builds := func(g Gomega) float64 {
		return metricstest.Value(g, testMetrics, "profilesync_sync_duration_seconds", metricstest.WithLabels(syncLabels, "phase", metrics.PhaseBuild))
	}
	refusedFor := func(commit string, why ...string) func(g Gomega) {
		return func(g Gomega) {
			got := getProfileSync(g, sync)
			g.Expect(got.Spec.Verify.Mode).To(Equal(v1alpha1.VerifyHEAD), "mode defaults to HEAD")
			g.Expect(got.Status.LastAttemptedRevision).To(Equal("main@sha1:" + commit))
			g.Expect(conditions.GetReason(got, v1alpha1.ReadyCondition)).To(Equal(v1alpha1.VerificationFailedReason))
			g.Expect(conditions.GetReason(got, v1alpha1.ValidationFailedCondition)).To(Equal(v1alpha1.VerificationFailedReason))
			g.Expect(conditions.IsStalled(got)).To(BeTrue())
			message := conditions.GetMessage(got, v1alpha1.ReadyCondition)
			g.Expect(message).To(ContainSubstring("commit " + commit))
			for _, w := range why {
				g.Expect(message).To(ContainSubstring(w))
			}
		}
	}

	t.Run("an unsigned commit is refused and nothing is written", func(t *testing.T) {
		g := NewWithT(t)
		g.Eventually(refusedFor(unsigned, "unsigned", "signed by none")).WithTimeout(30 * time.Second).Should(Succeed())
		err := k8sClient.Get(ctx, client.ObjectKey{Name: profile}, &v1alpha1.CloudProfile{})
		g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "nothing of the unsigned revision is written")
	})

	signed, err := server.CommitSigned("signed", singleProfileRepo(profile, "1.32.0"), "signed by the release manager", signedBy(trusted))
	g.Expect(err).NotTo(HaveOccurred())
	t.Run("a commit signed by a trusted key applies", func(t *testing.T) {
		g := NewWithT(t)
		g.Eventually(func(g Gomega) {
			got := getProfileSync(g, sync)
			g.Expect(conditions.IsReady(got)).To(BeTrue(), conditions.GetMessage(got, v1alpha1.ReadyCondition))
			g.Expect(got.Status.LastAppliedRevision).To(Equal("main@sha1:" + signed))
			g.Expect(conditions.IsStalled(got)).To(BeFalse())
			cp := testenv.GetCloudProfile(g, k8sClient, profile)
			g.Expect(builders.KubernetesClassifications(cp.Status.ProfileVersionsStatus)).To(HaveKey("1.32.0"))
		}).WithTimeout(30 * time.Second).Should(Succeed())
		g.Eventually(builds).WithTimeout(10*time.Second).Should(Equal(float64(1)), "only the signed revision is built")
	})

	// Commits that do not build: a refusal for their signature shows the
	// build never ran.
	broken := map[string]string{"kustomization.yaml": "resources:\n- missing.yaml\n"}
	for _, tc := range []struct {
		name   string
		commit func() (string, error)
		why    []string
	}{
		{
			name: "a commit signed by a key the Secret does not hold is refused before it is built",
			commit: func() (string, error) {
				return server.CommitSigned("signed", broken, "signed by a stranger", signedBy(stranger))
			},
			why: []string{"unknown key", "OpenPGP key " + strings.ToUpper(hex.EncodeToString(stranger.PrimaryKey.Fingerprint))},
		},
		{
			name:   "an unsigned commit on top of signed ones is refused before it is built",
			commit: func() (string, error) { return server.Commit("signed", broken, "unsigned") },
			why:    []string{"unsigned"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			commit, err := tc.commit()
			g.Expect(err).NotTo(HaveOccurred())
			g.Eventually(refusedFor(commit, tc.why...)).WithTimeout(30 * time.Second).Should(Succeed())
			g.Consistently(func(g Gomega) {
				refusedFor(commit, tc.why...)(g)
				got := getProfileSync(g, sync)
				g.Expect(got.Status.LastAppliedRevision).To(Equal("main@sha1:"+signed), "the signed revision stays")
				g.Expect(builds(g)).To(Equal(float64(1)), "the refused revision is never built")
				cp := testenv.GetCloudProfile(g, k8sClient, profile)
				g.Expect(builders.KubernetesClassifications(cp.Status.ProfileVersionsStatus)).To(HaveKey("1.32.0"))
			}).WithTimeout(4 * time.Second).WithPolling(time.Second).Should(Succeed())
		})
	}
}

// TestTrustedKeysThatCannotBeReadRefuseEverything: with spec.verify, nothing
// applies unverified. A Secret of keys that does not exist yet refuses the
// revision, retried with backoff (not stalled), and so is applied once the
// Secret exists; a Secret whose entry is no public key refuses it, stalled,
// naming the entry.
func TestTrustedKeysThatCannotBeReadRefuseEverything(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ensureNamespace(t, clusterProfilesNamespace)
	server := startGitServer(t)
	trusted := signingKey(t, "release-manager")
	profile := testenv.UniqueName("keys")
	_, err := server.CreateRepo("keys", singleProfileRepo(profile, "1.31.0"))
	g.Expect(err).NotTo(HaveOccurred())
	signed, err := server.CommitSigned("keys", singleProfileRepo(profile, "1.32.0"), "signed", signedBy(trusted))
	g.Expect(err).NotTo(HaveOccurred())

	keysName := testenv.UniqueName("keys")
	sync := &v1alpha1.ProfileSync{
		ObjectMeta: metav1.ObjectMeta{Name: testenv.UniqueName("keys"), Namespace: clusterProfilesNamespace},
		Spec: v1alpha1.ProfileSyncSpec{
			URL:      server.RepoURL("keys"),
			Interval: metav1.Duration{Duration: time.Second},
			Verify:   &v1alpha1.SignatureVerification{SecretRef: meta.LocalObjectReference{Name: keysName}},
		},
	}
	g.Expect(k8sClient.Create(ctx, sync)).To(Succeed())
	keys := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: keysName, Namespace: clusterProfilesNamespace},
		Data:       map[string][]byte{"release-manager.gpg": exportedPublicKey(t, trusted)},
	}
	t.Cleanup(func() {
		_ = k8sClient.Delete(ctx, sync)
		_ = k8sClient.Delete(ctx, keys)
		_ = k8sClient.Delete(ctx, &v1alpha1.CloudProfile{ObjectMeta: metav1.ObjectMeta{Name: profile}})
	})

	g.Eventually(func(g Gomega) {
		got := getProfileSync(g, sync)
		g.Expect(conditions.GetReason(got, v1alpha1.ReadyCondition)).To(Equal(v1alpha1.VerificationFailedReason))
		g.Expect(conditions.GetMessage(got, v1alpha1.ReadyCondition)).To(ContainSubstring("Secret " + clusterProfilesNamespace + "/" + keysName))
		g.Expect(conditions.IsStalled(got)).To(BeFalse(), "a Secret not there yet may come: retried with backoff")
	}).WithTimeout(30 * time.Second).Should(Succeed())

	g.Expect(k8sClient.Create(ctx, keys)).To(Succeed())
	g.Eventually(func(g Gomega) {
		got := getProfileSync(g, sync)
		g.Expect(conditions.GetReason(got, v1alpha1.ReadyCondition)).To(Equal(v1alpha1.VerificationFailedReason))
		g.Expect(conditions.GetMessage(got, v1alpha1.ReadyCondition)).To(ContainSubstring(`entry "release-manager.gpg"`))
		g.Expect(conditions.IsStalled(got)).To(BeTrue())
	}).WithTimeout(60 * time.Second).Should(Succeed())
	err = k8sClient.Get(ctx, client.ObjectKey{Name: profile}, &v1alpha1.CloudProfile{})
	g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "nothing is written while the keys cannot be read")

	keys.Data = map[string][]byte{"release-manager.asc": exportedPublicKey(t, trusted)}
	g.Expect(k8sClient.Update(ctx, keys)).To(Succeed())
	testenv.UpdateSpec(t, k8sClient, sync.DeepCopy(), func(ps *v1alpha1.ProfileSync) {
		ps.Annotations = map[string]string{"reconcile.fluxcd.io/requestedAt": "fixed-keys"}
	})
	g.Eventually(func(g Gomega) {
		got := getProfileSync(g, sync)
		g.Expect(conditions.IsReady(got)).To(BeTrue(), conditions.GetMessage(got, v1alpha1.ReadyCondition))
		g.Expect(got.Status.LastAppliedRevision).To(Equal("main@sha1:" + signed))
	}).WithTimeout(30 * time.Second).Should(Succeed())
}

// sshSigningKey is an SSH Ed25519 key pair made for a test.
func sshSigningKey(t *testing.T) ssh.Signer {
	t.Helper()
	_, private, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	signer, err := ssh.NewSignerFromKey(private)
	if err != nil {
		t.Fatal(err)
	}
	return signer
}

// sshSignedBy signs a commit's payload with key in git's namespace, as
// `git commit -S` with gpg.format=ssh does.
func sshSignedBy(key ssh.Signer) gitserver.SignFunc {
	return func(payload io.Reader) (string, error) {
		signature, err := sshsig.Sign(payload, key, sshsig.HashSHA512, "git")
		if err != nil {
			return "", err
		}
		return string(sshsig.Armor(signature)), nil
	}
}

// allowedSigner is key's line of an allowed_signers file.
func allowedSigner(principal string, key ssh.Signer) string {
	return principal + " " + string(ssh.MarshalAuthorizedKey(key.PublicKey()))
}

// TestSSHSignedRevisionsAndPathRules: with SSH keys in the Secret's
// allowed_signers entry, an SSH-signed commit applies and one signed by an
// SSH key not listed is refused before it is built; with a path rule, a
// dev key's change of prod's overlay is refused, before it is built, even
// under a prod owner's commit, while its change of dev's overlay applies.
func TestSSHSignedRevisionsAndPathRules(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ensureNamespace(t, clusterProfilesNamespace)
	server := startGitServer(t)
	prodOwner, dev := sshSigningKey(t), sshSigningKey(t)
	profile := testenv.UniqueName("ssh-signed")
	prodProfile := func(version string) map[string]string {
		return map[string]string{"overlays/prod/profiles.yaml": singleProfileRepo(profile, version)["profiles.yaml"]}
	}
	_, err := server.CreateRepo("ssh-signed", prodProfile("1.31.0"))
	g.Expect(err).NotTo(HaveOccurred())
	applied, err := server.CommitSigned("ssh-signed", prodProfile("1.32.0"), "prod owner's release", sshSignedBy(prodOwner))
	g.Expect(err).NotTo(HaveOccurred())

	keys := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: testenv.UniqueName("ssh-keys"), Namespace: clusterProfilesNamespace},
		Data:       map[string][]byte{"allowed_signers": []byte(allowedSigner("prod-owner", prodOwner) + allowedSigner("dev", dev))},
	}
	g.Expect(k8sClient.Create(ctx, keys)).To(Succeed())
	sync := &v1alpha1.ProfileSync{
		ObjectMeta: metav1.ObjectMeta{Name: testenv.UniqueName("ssh-signed"), Namespace: clusterProfilesNamespace},
		Spec: v1alpha1.ProfileSyncSpec{
			URL:      server.RepoURL("ssh-signed"),
			Path:     "overlays/prod",
			Interval: metav1.Duration{Duration: time.Second},
			Verify: &v1alpha1.SignatureVerification{
				SecretRef: meta.LocalObjectReference{Name: keys.Name},
				PathRules: []v1alpha1.SignaturePathRule{{Paths: []string{"overlays/prod/**"}, Principals: []string{"prod-owner"}}},
			},
		},
	}
	g.Expect(k8sClient.Create(ctx, sync)).To(Succeed())
	t.Cleanup(func() {
		_ = k8sClient.Delete(ctx, sync)
		_ = k8sClient.Delete(ctx, keys)
		_ = k8sClient.Delete(ctx, &v1alpha1.CloudProfile{ObjectMeta: metav1.ObjectMeta{Name: profile}})
	})
	syncLabels := map[string]string{"namespace": sync.Namespace, "name": sync.Name}
	builds := func(g Gomega) float64 {
		return metricstest.Value(g, testMetrics, "profilesync_sync_duration_seconds", metricstest.WithLabels(syncLabels, "phase", metrics.PhaseBuild))
	}
	appliedRevision := func(commit, version string) func(g Gomega) {
		return func(g Gomega) {
			got := getProfileSync(g, sync)
			g.Expect(conditions.IsReady(got)).To(BeTrue(), conditions.GetMessage(got, v1alpha1.ReadyCondition))
			g.Expect(got.Status.LastAppliedRevision).To(Equal("main@sha1:" + commit))
			cp := testenv.GetCloudProfile(g, k8sClient, profile)
			g.Expect(builders.KubernetesClassifications(cp.Status.ProfileVersionsStatus)).To(HaveKey(version))
		}
	}

	t.Run("a commit signed by a trusted SSH key applies", func(t *testing.T) {
		NewWithT(t).Eventually(appliedRevision(applied, "1.32.0")).WithTimeout(30 * time.Second).Should(Succeed())
	})

	t.Run("a dev key's change of dev's overlay applies", func(t *testing.T) {
		g := NewWithT(t)
		devChange, err := server.CommitSigned("ssh-signed", map[string]string{"overlays/dev/profiles.yaml": "# dev\n"}, "dev's change", sshSignedBy(dev))
		g.Expect(err).NotTo(HaveOccurred())
		g.Eventually(appliedRevision(devChange, "1.32.0")).WithTimeout(30 * time.Second).Should(Succeed())
		applied = devChange
	})

	t.Run("a dev key's change of prod is refused before it is built, under a prod owner's commit", func(t *testing.T) {
		g := NewWithT(t)
		var buildsBefore float64
		g.Eventually(func(g Gomega) { buildsBefore = builds(g) }).Should(Succeed())
		smuggled, err := server.CommitSigned("ssh-signed", prodProfile("1.33.0"), "dev's change of prod", sshSignedBy(dev))
		g.Expect(err).NotTo(HaveOccurred())
		tip, err := server.CommitSigned("ssh-signed", map[string]string{"README.md": "reviewed\n"}, "prod owner's trivial commit", sshSignedBy(prodOwner))
		g.Expect(err).NotTo(HaveOccurred())
		refused := func(g Gomega) {
			got := getProfileSync(g, sync)
			g.Expect(got.Status.LastAttemptedRevision).To(Equal("main@sha1:" + tip))
			g.Expect(conditions.GetReason(got, v1alpha1.ReadyCondition)).To(Equal(v1alpha1.VerificationFailedReason))
			g.Expect(conditions.IsStalled(got)).To(BeTrue())
			message := conditions.GetMessage(got, v1alpha1.ReadyCondition)
			for _, want := range []string{"commit " + smuggled, "path rule", "SSH key " + ssh.FingerprintSHA256(dev.PublicKey()) + " (dev)", "overlays/prod/profiles.yaml", "prod-owner"} {
				g.Expect(message).To(ContainSubstring(want))
			}
		}
		g.Eventually(refused).WithTimeout(30 * time.Second).Should(Succeed())
		g.Consistently(func(g Gomega) {
			refused(g)
			g.Expect(builds(g)).To(Equal(buildsBefore), "the refused revision is never built")
			g.Expect(getProfileSync(g, sync).Status.LastAppliedRevision).To(Equal("main@sha1:"+applied), "the last verified revision stays")
			cp := testenv.GetCloudProfile(g, k8sClient, profile)
			g.Expect(builders.KubernetesClassifications(cp.Status.ProfileVersionsStatus)).NotTo(HaveKey("1.33.0"))
		}).WithTimeout(4 * time.Second).WithPolling(time.Second).Should(Succeed())
	})
}

// TestUntrustedSSHKeyIsRefused: a commit signed by an SSH key the
// allowed_signers entry does not list is refused as an unknown key, naming
// its fingerprint, before it is built, and the signed revision stays.
func TestUntrustedSSHKeyIsRefused(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ensureNamespace(t, clusterProfilesNamespace)
	server := startGitServer(t)
	trusted, stranger := sshSigningKey(t), sshSigningKey(t)
	profile := testenv.UniqueName("ssh-stranger")
	_, err := server.CreateRepo("ssh-stranger", singleProfileRepo(profile, "1.31.0"))
	g.Expect(err).NotTo(HaveOccurred())
	signed, err := server.CommitSigned("ssh-stranger", singleProfileRepo(profile, "1.32.0"), "signed", sshSignedBy(trusted))
	g.Expect(err).NotTo(HaveOccurred())
	keys := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: testenv.UniqueName("ssh-keys"), Namespace: clusterProfilesNamespace},
		Data:       map[string][]byte{"team.allowed_signers": []byte(allowedSigner("release-manager", trusted))},
	}
	g.Expect(k8sClient.Create(ctx, keys)).To(Succeed())
	sync := &v1alpha1.ProfileSync{
		ObjectMeta: metav1.ObjectMeta{Name: testenv.UniqueName("ssh-stranger"), Namespace: clusterProfilesNamespace},
		Spec: v1alpha1.ProfileSyncSpec{
			URL:      server.RepoURL("ssh-stranger"),
			Interval: metav1.Duration{Duration: time.Second},
			Verify:   &v1alpha1.SignatureVerification{SecretRef: meta.LocalObjectReference{Name: keys.Name}},
		},
	}
	g.Expect(k8sClient.Create(ctx, sync)).To(Succeed())
	t.Cleanup(func() {
		_ = k8sClient.Delete(ctx, sync)
		_ = k8sClient.Delete(ctx, keys)
		_ = k8sClient.Delete(ctx, &v1alpha1.CloudProfile{ObjectMeta: metav1.ObjectMeta{Name: profile}})
	})
	syncLabels := map[string]string{"namespace": sync.Namespace, "name": sync.Name}
	builds := func(g Gomega) float64 {
		return metricstest.Value(g, testMetrics, "profilesync_sync_duration_seconds", metricstest.WithLabels(syncLabels, "phase", metrics.PhaseBuild))
	}
	g.Eventually(func(g Gomega) {
		got := getProfileSync(g, sync)
		g.Expect(conditions.IsReady(got)).To(BeTrue(), conditions.GetMessage(got, v1alpha1.ReadyCondition))
		g.Expect(got.Status.LastAppliedRevision).To(Equal("main@sha1:" + signed))
	}).WithTimeout(30 * time.Second).Should(Succeed())

	broken := map[string]string{"kustomization.yaml": "resources:\n- missing.yaml\n"}
	refusedCommit, err := server.CommitSigned("ssh-stranger", broken, "signed by a stranger", sshSignedBy(stranger))
	g.Expect(err).NotTo(HaveOccurred())
	refused := func(g Gomega) {
		got := getProfileSync(g, sync)
		g.Expect(got.Status.LastAttemptedRevision).To(Equal("main@sha1:" + refusedCommit))
		g.Expect(got.Status.LastAppliedRevision).To(Equal("main@sha1:" + signed))
		g.Expect(conditions.GetReason(got, v1alpha1.ReadyCondition)).To(Equal(v1alpha1.VerificationFailedReason))
		message := conditions.GetMessage(got, v1alpha1.ReadyCondition)
		g.Expect(message).To(ContainSubstring("commit " + refusedCommit + ": unknown key: signed by SSH key " + ssh.FingerprintSHA256(stranger.PublicKey())))
	}
	g.Eventually(refused).WithTimeout(30 * time.Second).Should(Succeed())
	g.Consistently(func(g Gomega) {
		refused(g)
		g.Expect(builds(g)).To(Equal(float64(1)), "only the signed revision is built")
	}).WithTimeout(4 * time.Second).WithPolling(time.Second).Should(Succeed())
}

// TestTagModeVerifiesTheAnnotatedTag: with mode Tag, a revision taken from
// an annotated tag a trusted key signed applies, though its commit is
// unsigned; an unsigned annotated tag is refused before it is built,
// naming the tag.
func TestTagModeVerifiesTheAnnotatedTag(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ensureNamespace(t, clusterProfilesNamespace)
	server := startGitServer(t)
	releaser := signingKey(t, "releaser")
	profile := testenv.UniqueName("tagged")
	first, err := server.CreateRepo("tagged", singleProfileRepo(profile, "1.31.0"))
	g.Expect(err).NotTo(HaveOccurred())
	bare, err := git.PlainOpen(filepath.Join(server.Root(), "tagged.git"))
	g.Expect(err).NotTo(HaveOccurred())
	_, err = bare.CreateTag("v1", plumbing.NewHash(first), &git.CreateTagOptions{
		Tagger: &object.Signature{Name: "releaser", Email: "releaser@example.com", When: time.Now()}, Message: "v1\n", SignKey: releaser,
	})
	g.Expect(err).NotTo(HaveOccurred())

	keys := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: testenv.UniqueName("tag-keys"), Namespace: clusterProfilesNamespace},
		Data:       map[string][]byte{"releaser.asc": exportedPublicKey(t, releaser)},
	}
	g.Expect(k8sClient.Create(ctx, keys)).To(Succeed())
	sync := &v1alpha1.ProfileSync{
		ObjectMeta: metav1.ObjectMeta{Name: testenv.UniqueName("tagged"), Namespace: clusterProfilesNamespace},
		Spec: v1alpha1.ProfileSyncSpec{
			URL:      server.RepoURL("tagged"),
			Ref:      &v1alpha1.GitReference{Tag: "v1"},
			Interval: metav1.Duration{Duration: time.Second},
			Verify:   &v1alpha1.SignatureVerification{Mode: v1alpha1.VerifyTag, SecretRef: meta.LocalObjectReference{Name: keys.Name}},
		},
	}
	g.Expect(k8sClient.Create(ctx, sync)).To(Succeed())
	t.Cleanup(func() {
		_ = k8sClient.Delete(ctx, sync)
		_ = k8sClient.Delete(ctx, keys)
		_ = k8sClient.Delete(ctx, &v1alpha1.CloudProfile{ObjectMeta: metav1.ObjectMeta{Name: profile}})
	})
	g.Eventually(func(g Gomega) {
		got := getProfileSync(g, sync)
		g.Expect(conditions.IsReady(got)).To(BeTrue(), conditions.GetMessage(got, v1alpha1.ReadyCondition))
		g.Expect(got.Status.LastAppliedRevision).To(Equal("v1@sha1:" + first))
	}).WithTimeout(30 * time.Second).Should(Succeed())

	second, err := server.Commit("tagged", singleProfileRepo(profile, "1.32.0"), "unsigned release")
	g.Expect(err).NotTo(HaveOccurred())
	_, err = server.AnnotatedTag("tagged", "v2", second, "v2, unsigned")
	g.Expect(err).NotTo(HaveOccurred())
	testenv.UpdateSpec(t, k8sClient, sync.DeepCopy(), func(ps *v1alpha1.ProfileSync) { ps.Spec.Ref = &v1alpha1.GitReference{Tag: "v2"} })
	refused := func(g Gomega) {
		got := getProfileSync(g, sync)
		g.Expect(got.Status.LastAttemptedRevision).To(Equal("v2@sha1:" + second))
		g.Expect(got.Status.LastAppliedRevision).To(Equal("v1@sha1:" + first))
		g.Expect(conditions.GetReason(got, v1alpha1.ReadyCondition)).To(Equal(v1alpha1.VerificationFailedReason))
		g.Expect(conditions.GetMessage(got, v1alpha1.ReadyCondition)).To(ContainSubstring(`tag "v2"`))
		g.Expect(conditions.GetMessage(got, v1alpha1.ReadyCondition)).To(ContainSubstring("unsigned"))
		cp := testenv.GetCloudProfile(g, k8sClient, profile)
		g.Expect(builders.KubernetesClassifications(cp.Status.ProfileVersionsStatus)).NotTo(HaveKey("1.32.0"))
	}
	g.Eventually(refused).WithTimeout(30 * time.Second).Should(Succeed())
}
