package profilesync

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/pem"
	"strings"
	"testing"
	"time"

	"github.com/fluxcd/pkg/apis/meta"
	"github.com/fluxcd/pkg/runtime/conditions"
	. "github.com/onsi/gomega"
	"golang.org/x/crypto/ssh"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1alpha1 "github.com/profilesync/profilesync/api/v1alpha1"
	"github.com/profilesync/profilesync/internal/gitsource"
	"github.com/profilesync/profilesync/internal/rollout"
	"github.com/profilesync/profilesync/test/testenv"
)

// newRecordSigningKey is an Ed25519 SSH private key made in the test, as
// ssh-keygen writes it, and its signer.
func newRecordSigningKey(t *testing.T) ([]byte, *gitsource.RecordSigner) {
	t.Helper()
	_, private, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	block, err := ssh.MarshalPrivateKey(private, "")
	if err != nil {
		t.Fatal(err)
	}
	data := pem.EncodeToMemory(block)
	signer, err := gitsource.ParseRecordSigningKey("test key", data)
	if err != nil {
		t.Fatal(err)
	}
	return data, signer
}

// createSecret creates a Secret of data in the ProfileSyncs' namespace.
func createSecret(t *testing.T, name string, data map[string][]byte) {
	t.Helper()
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: clusterProfilesNamespace}, Data: data}
	if err := k8sClient.Create(context.Background(), secret); err != nil {
		t.Fatalf("create Secret %s: %v", name, err)
	}
	t.Cleanup(func() { _ = k8sClient.Delete(context.Background(), secret) })
}

// TestRolloutProdCountsOnlyTheRecordsDevSigned runs dev and prod on the
// test Git server: dev signs its records with its key
// (spec.rollout.signingKey), prod requires dev's key
// (spec.rollout.upstreamKeys). A forged applied record with a readyAt a
// month old, unsigned, and another signed by a stranger's key, both with
// push access to the records ref, do not move prod: it still waits its soak
// on dev's genuine record, names the forged records, and takes the commit
// when the genuine record's soak ends.
func TestRolloutProdCountsOnlyTheRecordsDevSigned(t *testing.T) {
	g := NewWithT(t)
	start := time.Now().UTC().Truncate(time.Second)
	testClock.Set(t, start)
	ensureNamespace(t, clusterProfilesNamespace)
	server := startRolloutGitServer(t, true)
	repo := testenv.UniqueName("signed")
	devProfile, prodProfile := testenv.UniqueName("signed-dev"), testenv.UniqueName("signed-prod")
	first, err := server.CreateRepo(repo, rolloutRepo(devProfile, prodProfile, "1.31.0"))
	g.Expect(err).NotTo(HaveOccurred())

	devKey, devSigner := newRecordSigningKey(t)
	_, strangerSigner := newRecordSigningKey(t)
	signingSecret, keysSecret := testenv.UniqueName("dev-signing"), testenv.UniqueName("prod-upstream-keys")
	createSecret(t, signingSecret, map[string][]byte{v1alpha1.RecordSigningKeyEntry: devKey})
	createSecret(t, keysSecret, map[string][]byte{v1alpha1.UpstreamKeysEntry: []byte("dev " + devSigner.PublicKey() + " dev's operator\n")})

	prod := createRolloutSync(t, server.RepoURL(repo), "prod",
		&v1alpha1.ProfileSyncRollout{UpstreamKeys: &v1alpha1.UpstreamRecordKeys{SecretRef: meta.LocalObjectReference{Name: keysSecret}}}, prodProfile)
	dev := createRolloutSync(t, server.RepoURL(repo), "dev",
		&v1alpha1.ProfileSyncRollout{Record: ptr.To(true), SigningKey: &v1alpha1.RecordSigningKey{SecretRef: meta.LocalObjectReference{Name: signingSecret}}}, devProfile)
	g.Eventually(func(g Gomega) {
		got := getProfileSync(g, dev)
		g.Expect(got.Status.Rollout).NotTo(BeNil())
		g.Expect(got.Status.Rollout.RecordedRevision).To(Equal(first))
		g.Expect(conditions.IsTrue(got, v1alpha1.RecordedCondition)).To(BeTrue())
	}).WithTimeout(30 * time.Second).Should(Succeed())

	records := newLandscapeRecorder(t, server.RepoURL(repo))
	devLandscape := rollout.Landscape{Name: "dev"}
	prodLandscape := rollout.Landscape{Name: "prod", After: []string{"dev"}, Soak: rolloutSoak}
	t.Run("dev's operator signs its record with its key, as git signs a commit", func(t *testing.T) {
		g := NewWithT(t)
		landscapes, err := records.fetcher.FetchLandscapes(context.Background(), gitsource.LandscapeRequest{URL: records.url, CacheKey: "records", Branch: "main"})
		g.Expect(err).NotTo(HaveOccurred())
		defer func() { _ = landscapes.Close() }()
		keys, err := gitsource.ParseRecordKeys("test", []byte("dev "+devSigner.PublicKey()+"\n"))
		g.Expect(err).NotTo(HaveOccurred())
		landscapes.CheckRecordSignatures(keys, start)
		history, err := landscapes.Records(devLandscape.Name, gitsource.RecordLimits{})
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(history.Records).To(HaveLen(1))
		g.Expect(history.Records[0].Signature.Verified).To(BeTrue(), history.Records[0].Signature.Describe())
		g.Expect(history.Records[0].Signature.Signer).To(Equal("SSH key " + devSigner.Fingerprint() + " (dev)"))
	})

	// Whoever can push to the records ref writes that dev held a newer
	// commit for a month: once unsigned, once signed by a key of their own.
	second, err := server.Commit(repo, rolloutRepo(devProfile, prodProfile, "1.32.0"), "1.32.0")
	g.Expect(err).NotTo(HaveOccurred())
	monthAgo := start.Add(-30 * 24 * time.Hour)
	forged := rollout.Record{Landscape: "dev", Kind: rollout.RecordApplied, Revision: second, AppliedAt: monthAgo, ReadyAt: monthAgo, OperatorVersion: "v0.4.0"}
	_, err = records.fetcher.PushRecord(context.Background(), gitsource.LandscapeRequest{URL: records.url, CacheKey: "records", Signer: strangerSigner}, forged)
	g.Expect(err).NotTo(HaveOccurred())
	unsigned, err := records.fetcher.PushRecord(context.Background(), gitsource.LandscapeRequest{URL: records.url, CacheKey: "records"}, forged)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(records.decideFromRecords(prodLandscape, start.Add(time.Minute)).Promote).To(Equal(second),
		"without dev's key the forged record makes prod skip its soak: what upstreamKeys guards against")

	testenv.SettledResourceVersion(g, k8sClient, prod.DeepCopy())
	r, events := directSyncReconciler(t)
	t.Run("prod ignores the forged records, names them, and waits its soak on dev's genuine record", func(t *testing.T) {
		g := NewWithT(t)
		testenv.DrainEvents(events)
		result := reconcileAt(t, r, prod, start.Add(time.Minute))
		got := getProfileSync(g, prod)
		g.Expect(got.Status.LastAppliedRevision).To(BeEmpty(), "no forged record moves prod")
		g.Expect(got.Status.Rollout.Waiting).NotTo(BeNil())
		g.Expect(got.Status.Rollout.Waiting.Revision).To(Equal(first), "the newest commit dev genuinely holds")
		g.Expect(got.Status.Rollout.Waiting.EligibleAt).NotTo(BeNil())
		genuineReady := got.Status.Rollout.Waiting.Upstreams[0].Since.Time
		g.Expect(genuineReady).To(BeTemporally(">=", start), "the soak runs from dev's own record, not the forged month")
		g.Expect(got.Status.Rollout.Waiting.EligibleAt.Time).To(BeTemporally("==", genuineReady.Add(rolloutSoak)))
		g.Expect(result.RequeueAfter).To(Equal(genuineReady.Add(rolloutSoak).Sub(start.Add(time.Minute))))
		waiting := conditions.GetMessage(got, v1alpha1.WaitingCondition)
		g.Expect(waiting).To(ContainSubstring("ignored 2 records of landscape dev whose signature does not verify (spec.rollout.upstreamKeys), the newest " + unsigned))
		g.Expect(waiting).To(ContainSubstring("unsigned"))
		g.Expect(got.Status.Rollout.Message).To(Equal(waiting))
		g.Expect(testenv.DrainEvents(events)).To(And(
			ContainElement(And(ContainSubstring("Warning RolloutInvalid record of landscape dev ignored"), ContainSubstring("record "+unsigned+" of landscape dev"),
				ContainSubstring("unsigned"))),
			ContainElement(And(ContainSubstring("Warning RolloutInvalid record of landscape dev ignored"), ContainSubstring("unknown key (signed by SSH key "+strangerSigner.Fingerprint()+")"))),
		))
	})

	t.Run("prod takes the commit when dev's genuine, signed record has soaked", func(t *testing.T) {
		g := NewWithT(t)
		eligible := getProfileSync(g, prod).Status.Rollout.Waiting.EligibleAt.Time
		reconcileAt(t, r, prod, eligible.Add(-time.Second))
		g.Expect(getProfileSync(g, prod).Status.LastAppliedRevision).To(BeEmpty())
		reconcileAt(t, r, prod, eligible)
		got := getProfileSync(g, prod)
		g.Expect(got.Status.LastAppliedRevision).To(Equal("main@sha1:"+first), "dev's signed record counts")
		g.Expect(got.Status.Rollout.Waiting.Revision).To(Equal(second), "second waits: only the forged records say dev holds it")
		g.Expect(got.Status.Rollout.Waiting.EligibleAt).To(BeNil())
	})

	t.Run("a signing key Secret without a usable key pushes no record, unsigned or not, naming the Secret and the entry", func(t *testing.T) {
		g := NewWithT(t)
		secret := &corev1.Secret{}
		g.Expect(k8sClient.Get(context.Background(), client.ObjectKey{Namespace: clusterProfilesNamespace, Name: signingSecret}, secret)).To(Succeed())
		secret.Data[v1alpha1.RecordSigningKeyEntry] = []byte(devSigner.PublicKey())
		g.Expect(k8sClient.Update(context.Background(), secret)).To(Succeed())
		requestSync(t, dev, "bad-signing-key")
		g.Eventually(func(g Gomega) {
			got := getProfileSync(g, dev)
			g.Expect(got.Status.LastAppliedRevision).To(Equal("main@sha1:"+second), "the apply stands")
			g.Expect(conditions.GetReason(got, v1alpha1.RecordedCondition)).To(Equal(v1alpha1.RecordFailedReason))
			g.Expect(conditions.GetMessage(got, v1alpha1.RecordedCondition)).To(ContainSubstring(
				"spec.rollout.signingKey: Secret " + clusterProfilesNamespace + "/" + signingSecret + ": entry identity: not an SSH private key"))
		}).WithTimeout(30 * time.Second).Should(Succeed())
		history := records.history(t, "dev")
		g.Expect(history[0].Revision).To(Equal(second), "the newest record is still the forged one: nothing was pushed")
		g.Expect(history[0].Commit).To(Equal(unsigned))
	})

	t.Run("an upstream keys Secret that cannot be parsed takes nothing new, naming the Secret and the line", func(t *testing.T) {
		g := NewWithT(t)
		secret := &corev1.Secret{}
		g.Expect(k8sClient.Get(context.Background(), client.ObjectKey{Namespace: clusterProfilesNamespace, Name: keysSecret}, secret)).To(Succeed())
		secret.Data[v1alpha1.UpstreamKeysEntry] = []byte(devSigner.PublicKey() + "\n")
		g.Expect(k8sClient.Update(context.Background(), secret)).To(Succeed())
		g.Eventually(func(g Gomega) {
			_, err := r.Reconcile(context.Background(), ctrl.Request{NamespacedName: client.ObjectKeyFromObject(prod)})
			g.Expect(err).To(HaveOccurred())
			got := getProfileSync(g, prod)
			g.Expect(conditions.GetMessage(got, v1alpha1.ReadyCondition)).To(
				ContainSubstring("spec.rollout.upstreamKeys: Secret " + clusterProfilesNamespace + "/" + keysSecret + ": entry allowed_signers: line 1"))
			g.Expect(got.Status.LastAppliedRevision).To(Equal("main@sha1:" + first))
		}).WithTimeout(10 * time.Second).Should(Succeed())
	})
}

// TestRolloutFileCountsOnlyFromASignedCommit: with spec.verify, the
// rollout file that decides which older commit prod takes is read from the
// branch's tip only when that commit verifies. An unsigned push that
// shortens prod's soak to a minute, on top of a signed commit dev has held
// for five minutes, does not make prod take that signed commit early: prod
// refuses the unsigned rollout file (VerificationFailed, naming the file
// and the commit) and keeps what it runs; once a signed commit is on top,
// prod waits its real soak again.
func TestRolloutFileCountsOnlyFromASignedCommit(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	start := time.Now().UTC().Truncate(time.Second)
	testClock.Set(t, start)
	ensureNamespace(t, clusterProfilesNamespace)
	server := startRolloutGitServer(t, true)
	repo := testenv.UniqueName("signed-file")
	devProfile, prodProfile := testenv.UniqueName("signed-file-dev"), testenv.UniqueName("signed-file-prod")
	_, err := server.CreateRepo(repo, rolloutRepo(devProfile, prodProfile, "1.30.0"))
	g.Expect(err).NotTo(HaveOccurred())
	releaseManager := signingKey(t, "release-manager")
	keysSecret := testenv.UniqueName("trusted-keys")
	createSecret(t, keysSecret, map[string][]byte{"release-manager.asc": exportedPublicKey(t, releaseManager)})
	first, err := server.CommitSigned(repo, rolloutRepo(devProfile, prodProfile, "1.31.0"), "1.31.0", signedBy(releaseManager))
	g.Expect(err).NotTo(HaveOccurred())
	dev := newLandscapeRecorder(t, server.RepoURL(repo))
	dev.applied("dev", first, start.Add(-2*rolloutSoak))
	prod := createRolloutSync(t, server.RepoURL(repo), "prod", nil, prodProfile)
	testenv.UpdateSpec(t, k8sClient, prod, func(s *v1alpha1.ProfileSync) {
		s.Spec.Verify = &v1alpha1.SignatureVerification{SecretRef: meta.LocalObjectReference{Name: keysSecret}}
	})
	// The sync of the spec with spec.verify applied first, verified: not
	// only the sync before it, which verified nothing.
	g.Eventually(func(g Gomega) {
		got := getProfileSync(g, prod)
		g.Expect(got.Status.ObservedGeneration).To(Equal(got.Generation))
		g.Expect(conditions.IsReady(got)).To(BeTrue(), conditions.GetMessage(got, v1alpha1.ReadyCondition))
		g.Expect(got.Status.LastAppliedRevision).To(Equal("main@sha1:" + first))
	}).WithTimeout(15 * time.Second).Should(Succeed())
	testenv.SettledResourceVersion(g, k8sClient, prod.DeepCopy())

	second, err := server.CommitSigned(repo, rolloutRepo(devProfile, prodProfile, "1.32.0"), "1.32.0", signedBy(releaseManager))
	g.Expect(err).NotTo(HaveOccurred())
	dev.applied("dev", second, start.Add(-5*time.Minute))
	shortSoak := rolloutRepo(devProfile, prodProfile, "1.32.0")
	shortSoak[rollout.FileName] = strings.Replace(rolloutFile, "soak: 1h", "soak: 1m", 1)
	unsigned, err := server.Commit(repo, shortSoak, "prod soaks a minute")
	g.Expect(err).NotTo(HaveOccurred())

	r, _ := directSyncReconciler(t)
	t.Run("an unsigned rollout file at the tip is refused, and prod keeps what it runs", func(t *testing.T) {
		g := NewWithT(t)
		testClock.Set(t, start)
		_, _ = r.Reconcile(ctx, ctrl.Request{NamespacedName: client.ObjectKeyFromObject(prod)})
		got := getProfileSync(g, prod)
		g.Expect(got.Status.LastAppliedRevision).To(Equal("main@sha1:"+first), "second has soaked five minutes of its hour: the unsigned file's minute does not count")
		g.Expect(conditions.GetReason(got, v1alpha1.ReadyCondition)).To(Equal(v1alpha1.VerificationFailedReason))
		g.Expect(conditions.GetMessage(got, v1alpha1.ReadyCondition)).To(And(
			ContainSubstring("main@sha1:"+unsigned), ContainSubstring(rollout.FileName+" is read from it, and it does not verify"),
			ContainSubstring("commit "+unsigned), ContainSubstring("unsigned")))
		g.Expect(dev.history(t, "prod")).NotTo(ContainElement(HaveField("Kind", rollout.RecordRefused)),
			"the rollout file was refused, not a revision: prod refused nothing its downstream landscapes must skip")
	})

	third, err := server.CommitSigned(repo, rolloutRepo(devProfile, prodProfile, "1.33.0"), "1.33.0", signedBy(releaseManager))
	g.Expect(err).NotTo(HaveOccurred())
	t.Run("a signed commit on top makes the rollout file count again, with prod's real soak", func(t *testing.T) {
		g := NewWithT(t)
		reconcileAt(t, r, prod, start.Add(time.Minute))
		got := getProfileSync(g, prod)
		g.Expect(conditions.IsReady(got)).To(BeTrue(), "the refusal of the unsigned rollout file is no refusal of what prod runs: "+conditions.GetMessage(got, v1alpha1.ReadyCondition))
		g.Expect(got.Status.LastAppliedRevision).To(Equal("main@sha1:" + first))
		g.Expect(conditions.GetReason(got, v1alpha1.WaitingCondition)).To(Equal(v1alpha1.WaitingForUpstreamReason))
		g.Expect(got.Status.Rollout.Waiting.Revision).To(Equal(second), "the newest commit dev holds; "+third+" it does not")
		g.Expect(got.Status.Rollout.Waiting.EligibleAt.Time).To(BeTemporally("==", start.Add(-5*time.Minute+rolloutSoak)))
	})
}

// history reads landscape's records from the server, newest first,
// unchecked.
func (l *landscapeRecorder) history(t *testing.T, landscape string) []rollout.Record {
	t.Helper()
	landscapes, err := l.fetcher.FetchLandscapes(context.Background(), gitsource.LandscapeRequest{URL: l.url, CacheKey: "records", Branch: "main"})
	if err != nil {
		t.Fatalf("fetch the records: %v", err)
	}
	defer func() { _ = landscapes.Close() }()
	read, err := landscapes.Records(landscape, gitsource.RecordLimits{})
	if err != nil {
		t.Fatalf("read the records of %s: %v", landscape, err)
	}
	return read.Records
}
