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
	"github.com/profilesync/profilesync/internal/gitsource"
	"github.com/profilesync/profilesync/test/builders"
	"github.com/profilesync/profilesync/test/gitserver"
	"github.com/profilesync/profilesync/test/metricstest"
	"github.com/profilesync/profilesync/test/testenv"
)

// signingKey is an Ed25519 OpenPGP key pair made for a test, created at
// the suite clock's now. The syncs check a signature at that clock's now,
// and OpenPGP holds a key created after the instant of the check expired:
// a key dated by the wall clock, in a test that fixed the clock a second
// earlier (TestRolloutFileCountsOnlyFromASignedCommit), refused every
// commit it signed whenever making the test's repository took the wall
// clock past a second boundary.
func signingKey(t *testing.T, name string) *openpgp.Entity {
	t.Helper()
	key, err := openpgp.NewEntity(name, "", name+"@example.com", &packet.Config{Algorithm: packet.PubKeyAlgoEdDSA, Time: testClock.Now})
	if err != nil {
		t.Fatalf("make key %s: %v", name, err)
	}
	return key
}

// signedBy signs a commit's payload with key, as `git commit -S` does, at
// the suite clock's now: a signature made after the instant a sync checks
// it at is expired too (signingKey).
func signedBy(key *openpgp.Entity) gitserver.SignFunc {
	return func(payload io.Reader) (string, error) {
		var signature strings.Builder
		err := openpgp.ArmoredDetachSign(&signature, key, payload, &packet.Config{Time: testClock.Now})
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
		g.Expect(metricstest.Value(g, testMetrics, "profilesync_sync_duration_seconds",
			metricstest.WithLabels(map[string]string{"namespace": sync.Namespace, "name": sync.Name}, "phase", metrics.PhaseBuild))).
			To(Equal(float64(1)), "only v1 was built")
	}
	g.Eventually(refused).WithTimeout(30 * time.Second).Should(Succeed())
	g.Consistently(refused).WithTimeout(3 * time.Second).WithPolling(time.Second).Should(Succeed())
}

// expiredSigningKey is an Ed25519 OpenPGP key made two hours before the
// suite clock's now and valid for one: it signs as of 90 minutes ago, when it was valid, and has expired
// by the time a sync checks the signature.
func expiredSigningKey(t *testing.T, name string) (*openpgp.Entity, gitserver.SignFunc) {
	t.Helper()
	madeAt := testClock.Now().Add(-2 * time.Hour)
	key, err := openpgp.NewEntity(name, "", name+"@example.com", &packet.Config{
		Algorithm: packet.PubKeyAlgoEdDSA, Time: func() time.Time { return madeAt }, KeyLifetimeSecs: uint32(time.Hour / time.Second),
	})
	if err != nil {
		t.Fatalf("make key %s: %v", name, err)
	}
	signedAt := madeAt.Add(30 * time.Minute)
	return key, func(payload io.Reader) (string, error) {
		var signature strings.Builder
		err := openpgp.ArmoredDetachSign(&signature, key, payload, &packet.Config{Time: func() time.Time { return signedAt }})
		return signature.String(), err
	}
}

// signedOverOtherBytes signs, with sign, bytes other than the commit's:
// a signature that names a trusted key and does not match the commit, as
// one the commit was changed after is.
func signedOverOtherBytes(sign gitserver.SignFunc) gitserver.SignFunc {
	return func(payload io.Reader) (string, error) {
		content, err := io.ReadAll(payload)
		if err != nil {
			return "", err
		}
		return sign(bytes.NewReader(append(content, "changed after signing\n"...)))
	}
}

// TestEveryVerificationFailureIsNamedInTheConditionAndTheEvent: each way a
// revision's signature can fail, OpenPGP and SSH, refuses it before it is
// built, and the Ready condition and the VerificationFailed warning event
// both name the commit, why (unsigned, unknown key, bad signature, expired
// key) and the signer found: an OpenPGP key expired at the sync's time, an
// SSH key past its valid-before.
func TestEveryVerificationFailureIsNamedInTheConditionAndTheEvent(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ensureNamespace(t, clusterProfilesNamespace)
	server := startGitServer(t)
	trusted, stranger := signingKey(t, "release-manager"), signingKey(t, "stranger")
	expired, signedByExpired := expiredSigningKey(t, "leaver")
	trustedSSH, strangerSSH, expiredSSH := sshSigningKey(t), sshSigningKey(t), sshSigningKey(t)
	profile := testenv.UniqueName("why")
	_, err := server.CreateRepo("why", singleProfileRepo(profile, "1.31.0"))
	g.Expect(err).NotTo(HaveOccurred())
	signed, err := server.CommitSigned("why", singleProfileRepo(profile, "1.32.0"), "signed", signedBy(trusted))
	g.Expect(err).NotTo(HaveOccurred())

	keys := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: testenv.UniqueName("why-keys"), Namespace: clusterProfilesNamespace},
		Data: map[string][]byte{
			"release-manager.asc": exportedPublicKey(t, trusted),
			"leaver.asc":          exportedPublicKey(t, expired),
			"allowed_signers": []byte(allowedSigner("release-manager", trustedSSH) +
				`leaver valid-before="20200101" ` + string(ssh.MarshalAuthorizedKey(expiredSSH.PublicKey()))),
		},
	}
	g.Expect(k8sClient.Create(ctx, keys)).To(Succeed())
	sync := &v1alpha1.ProfileSync{
		ObjectMeta: metav1.ObjectMeta{Name: testenv.UniqueName("why"), Namespace: clusterProfilesNamespace},
		Spec: v1alpha1.ProfileSyncSpec{
			URL:      server.RepoURL("why"),
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

	openPGPKey := func(key *openpgp.Entity) string {
		return "OpenPGP key " + strings.ToUpper(hex.EncodeToString(key.PrimaryKey.Fingerprint))
	}
	sshKey := func(key ssh.Signer) string { return "SSH key " + ssh.FingerprintSHA256(key.PublicKey()) }
	// Every commit would fail its build: refused for its signature, it is
	// never built.
	broken := map[string]string{"kustomization.yaml": "resources:\n- missing.yaml\n"}
	for _, tc := range []struct {
		name    string
		sign    gitserver.SignFunc // nil: unsigned
		failure gitsource.SignatureFailure
		signer  string
	}{
		{"an unsigned commit: unsigned, signed by none", nil, gitsource.Unsigned, "signed by none"},
		{"an OpenPGP key the Secret does not hold: unknown key", signedBy(stranger), gitsource.UnknownKey, openPGPKey(stranger)},
		{"an OpenPGP signature over other bytes: bad signature", signedOverOtherBytes(signedBy(trusted)), gitsource.BadSignature, openPGPKey(trusted)},
		{"an OpenPGP key expired at the sync's time: expired key", signedByExpired, gitsource.ExpiredKey, openPGPKey(expired)},
		{"an SSH key the Secret does not list: unknown key", sshSignedBy(strangerSSH), gitsource.UnknownKey, sshKey(strangerSSH)},
		{"an SSH signature over other bytes: bad signature", signedOverOtherBytes(sshSignedBy(trustedSSH)), gitsource.BadSignature, sshKey(trustedSSH)},
		{"an SSH key past its valid-before: expired key", sshSignedBy(expiredSSH), gitsource.ExpiredKey, sshKey(expiredSSH)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			var commit string
			var err error
			if tc.sign == nil {
				commit, err = server.Commit("why", broken, tc.name)
			} else {
				commit, err = server.CommitSigned("why", broken, tc.name, tc.sign)
			}
			g.Expect(err).NotTo(HaveOccurred())
			why := "commit " + commit + ": " + string(tc.failure) + ": "
			g.Eventually(func(g Gomega) {
				got := getProfileSync(g, sync)
				g.Expect(got.Status.LastAttemptedRevision).To(Equal("main@sha1:" + commit))
				g.Expect(got.Status.LastAppliedRevision).To(Equal("main@sha1:"+signed), "the last verified revision stays")
				g.Expect(conditions.GetReason(got, v1alpha1.ReadyCondition)).To(Equal(v1alpha1.VerificationFailedReason))
				g.Expect(conditions.IsStalled(got)).To(BeTrue())
				message := conditions.GetMessage(got, v1alpha1.ReadyCondition)
				g.Expect(message).To(ContainSubstring(why))
				g.Expect(message).To(ContainSubstring(tc.signer))

				events, err := testenv.Events(ctx, k8sClient, testenv.EventQuery{Namespace: sync.Namespace, Name: sync.Name,
					Reason: v1alpha1.VerificationFailedReason, Type: corev1.EventTypeWarning})
				g.Expect(err).NotTo(HaveOccurred())
				g.Expect(events).To(ContainElement(WithTransform(func(e corev1.Event) string { return e.Message },
					And(ContainSubstring(why), ContainSubstring(tc.signer)))), "the warning event names the commit, why and the signer")
				g.Expect(builds(g)).To(Equal(float64(1)), "only the first signed revision was ever built")
			}).WithTimeout(30 * time.Second).Should(Succeed())
		})
	}
}

// TestAVerificationRefusalIsRememberedUntilTheRecheck: a revision refused
// for its signature is refused from memory at every interval, its keys not
// read again, so a key added to the Secret alone changes nothing at once
// (the operator may only get Secrets, not watch them); at the refusal's
// recheck (--refusal-recheck-interval, on the sync's clock) the revision is
// verified again, against the Secret as it is then, and applies.
func TestAVerificationRefusalIsRememberedUntilTheRecheck(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	start := time.Now().UTC().Truncate(time.Second)
	testClock.Set(t, start)
	ensureNamespace(t, clusterProfilesNamespace)
	server := startGitServer(t)
	owner, newcomer := sshSigningKey(t), sshSigningKey(t)
	profile := testenv.UniqueName("recheck")
	_, err := server.CreateRepo("recheck", singleProfileRepo(profile, "1.31.0"))
	g.Expect(err).NotTo(HaveOccurred())
	commit, err := server.CommitSigned("recheck", singleProfileRepo(profile, "1.32.0"), "the newcomer's first change", sshSignedBy(newcomer))
	g.Expect(err).NotTo(HaveOccurred())
	keys := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: testenv.UniqueName("recheck-keys"), Namespace: clusterProfilesNamespace},
		Data:       map[string][]byte{"allowed_signers": []byte(allowedSigner("owner", owner))},
	}
	g.Expect(k8sClient.Create(ctx, keys)).To(Succeed())
	sync := &v1alpha1.ProfileSync{
		ObjectMeta: metav1.ObjectMeta{Name: testenv.UniqueName("recheck"), Namespace: clusterProfilesNamespace},
		Spec: v1alpha1.ProfileSyncSpec{
			URL:      server.RepoURL("recheck"),
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
	refused := func(g Gomega) {
		got := getProfileSync(g, sync)
		g.Expect(got.Status.LastAttemptedRevision).To(Equal("main@sha1:" + commit))
		g.Expect(got.Status.LastAppliedRevision).To(BeEmpty())
		g.Expect(conditions.GetReason(got, v1alpha1.ReadyCondition)).To(Equal(v1alpha1.VerificationFailedReason))
		g.Expect(conditions.GetMessage(got, v1alpha1.ReadyCondition)).To(ContainSubstring("commit " + commit + ": unknown key"))
		g.Expect(conditions.IsStalled(got)).To(BeTrue())
	}
	g.Eventually(refused).WithTimeout(30 * time.Second).Should(Succeed())

	keys.Data["allowed_signers"] = []byte(allowedSigner("owner", owner) + allowedSigner("newcomer", newcomer))
	g.Expect(k8sClient.Update(ctx, keys)).To(Succeed())
	g.Consistently(refused).WithTimeout(4*time.Second).WithPolling(500*time.Millisecond).Should(Succeed(),
		"refused from memory at each interval: the Secret is not read again before the recheck")

	testClock.Set(t, start.Add(DefaultRefusalRecheck))
	g.Eventually(func(g Gomega) {
		got := getProfileSync(g, sync)
		g.Expect(conditions.IsReady(got)).To(BeTrue(), conditions.GetMessage(got, v1alpha1.ReadyCondition))
		g.Expect(got.Status.LastAppliedRevision).To(Equal("main@sha1:" + commit))
		cp := testenv.GetCloudProfile(g, k8sClient, profile)
		g.Expect(builders.KubernetesClassifications(cp.Status.ProfileVersionsStatus)).To(HaveKey("1.32.0"))
	}).WithTimeout(30 * time.Second).Should(Succeed())
}

// TestTagAndHEADModeVerifiesTheTagAndItsCommit: with mode TagAndHEAD, a
// signed annotated tag of an unsigned commit is refused, naming the commit,
// and so is an unsigned annotated tag of a signed commit, naming the tag;
// each before it is built. A signed tag of a signed commit applies.
func TestTagAndHEADModeVerifiesTheTagAndItsCommit(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ensureNamespace(t, clusterProfilesNamespace)
	server := startGitServer(t)
	releaser := signingKey(t, "releaser")
	profile := testenv.UniqueName("tag-and-head")
	unsignedCommit, err := server.CreateRepo("tag-and-head", singleProfileRepo(profile, "1.31.0"))
	g.Expect(err).NotTo(HaveOccurred())
	bare, err := git.PlainOpen(filepath.Join(server.Root(), "tag-and-head.git"))
	g.Expect(err).NotTo(HaveOccurred())
	signedTag := func(name, commit string) {
		t.Helper()
		_, err := bare.CreateTag(name, plumbing.NewHash(commit), &git.CreateTagOptions{
			Tagger: &object.Signature{Name: "releaser", Email: "releaser@example.com", When: time.Now()}, Message: name + "\n", SignKey: releaser,
		})
		g.Expect(err).NotTo(HaveOccurred())
	}
	signedTag("v1", unsignedCommit)

	keys := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: testenv.UniqueName("tag-and-head-keys"), Namespace: clusterProfilesNamespace},
		Data:       map[string][]byte{"releaser.asc": exportedPublicKey(t, releaser)},
	}
	g.Expect(k8sClient.Create(ctx, keys)).To(Succeed())
	sync := &v1alpha1.ProfileSync{
		ObjectMeta: metav1.ObjectMeta{Name: testenv.UniqueName("tag-and-head"), Namespace: clusterProfilesNamespace},
		Spec: v1alpha1.ProfileSyncSpec{
			URL:      server.RepoURL("tag-and-head"),
			Ref:      &v1alpha1.GitReference{Tag: "v1"},
			Interval: metav1.Duration{Duration: time.Second},
			Verify:   &v1alpha1.SignatureVerification{Mode: v1alpha1.VerifyTagAndHEAD, SecretRef: meta.LocalObjectReference{Name: keys.Name}},
		},
	}
	g.Expect(k8sClient.Create(ctx, sync)).To(Succeed())
	t.Cleanup(func() {
		_ = k8sClient.Delete(ctx, sync)
		_ = k8sClient.Delete(ctx, keys)
		_ = k8sClient.Delete(ctx, &v1alpha1.CloudProfile{ObjectMeta: metav1.ObjectMeta{Name: profile}})
	})
	syncLabels := map[string]string{"namespace": sync.Namespace, "name": sync.Name}
	neverBuilt := func(g Gomega) {
		g.Expect(metricstest.Series(g, testMetrics, "profilesync_sync_duration_seconds", metricstest.WithLabels(syncLabels, "phase", metrics.PhaseBuild))).
			To(BeEmpty(), "nothing is built")
	}
	refused := func(revision string, why ...string) func(g Gomega) {
		return func(g Gomega) {
			got := getProfileSync(g, sync)
			g.Expect(got.Status.LastAttemptedRevision).To(Equal(revision))
			g.Expect(conditions.GetReason(got, v1alpha1.ReadyCondition)).To(Equal(v1alpha1.VerificationFailedReason))
			g.Expect(conditions.IsStalled(got)).To(BeTrue())
			for _, w := range why {
				g.Expect(conditions.GetMessage(got, v1alpha1.ReadyCondition)).To(ContainSubstring(w))
			}
			err := k8sClient.Get(ctx, client.ObjectKey{Name: profile}, &v1alpha1.CloudProfile{})
			g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "nothing is written")
			neverBuilt(g)
		}
	}
	t.Run("a signed tag of an unsigned commit is refused, naming the commit", func(t *testing.T) {
		g := NewWithT(t)
		g.Eventually(refused("v1@sha1:"+unsignedCommit, "commit "+unsignedCommit+": unsigned")).WithTimeout(30 * time.Second).Should(Succeed())
		g.Consistently(refused("v1@sha1:" + unsignedCommit)).WithTimeout(3 * time.Second).WithPolling(time.Second).Should(Succeed())
	})

	signedCommit, err := server.CommitSigned("tag-and-head", singleProfileRepo(profile, "1.32.0"), "signed release", signedBy(releaser))
	g.Expect(err).NotTo(HaveOccurred())
	t.Run("an unsigned tag of a signed commit is refused, naming the tag", func(t *testing.T) {
		g := NewWithT(t)
		_, err := server.AnnotatedTag("tag-and-head", "v2-unsigned", signedCommit, "v2, unsigned")
		g.Expect(err).NotTo(HaveOccurred())
		testenv.UpdateSpec(t, k8sClient, sync.DeepCopy(), func(ps *v1alpha1.ProfileSync) { ps.Spec.Ref = &v1alpha1.GitReference{Tag: "v2-unsigned"} })
		g.Eventually(refused("v2-unsigned@sha1:"+signedCommit, `tag "v2-unsigned"`, "unsigned")).WithTimeout(30 * time.Second).Should(Succeed())
	})

	t.Run("a signed tag of a signed commit applies", func(t *testing.T) {
		g := NewWithT(t)
		signedTag("v2", signedCommit)
		testenv.UpdateSpec(t, k8sClient, sync.DeepCopy(), func(ps *v1alpha1.ProfileSync) { ps.Spec.Ref = &v1alpha1.GitReference{Tag: "v2"} })
		g.Eventually(func(g Gomega) {
			got := getProfileSync(g, sync)
			g.Expect(conditions.IsReady(got)).To(BeTrue(), conditions.GetMessage(got, v1alpha1.ReadyCondition))
			g.Expect(got.Status.LastAppliedRevision).To(Equal("v2@sha1:" + signedCommit))
			cp := testenv.GetCloudProfile(g, k8sClient, profile)
			g.Expect(builders.KubernetesClassifications(cp.Status.ProfileVersionsStatus)).To(HaveKey("1.32.0"))
		}).WithTimeout(30 * time.Second).Should(Succeed())
	})
}
