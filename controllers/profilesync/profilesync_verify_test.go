package profilesync

import (
	"bytes"
	"context"
	"encoding/hex"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/ProtonMail/go-crypto/openpgp"
	"github.com/ProtonMail/go-crypto/openpgp/armor"
	"github.com/ProtonMail/go-crypto/openpgp/packet"
	"github.com/fluxcd/pkg/apis/meta"
	"github.com/fluxcd/pkg/runtime/conditions"
	. "github.com/onsi/gomega"
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
