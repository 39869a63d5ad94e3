package profilesync

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/fluxcd/pkg/runtime/conditions"
	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/object"
	. "github.com/onsi/gomega"
	"github.com/prometheus/client_golang/prometheus"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1alpha1 "github.com/profilesync/profilesync/api/v1alpha1"
	"github.com/profilesync/profilesync/controllers/metrics"
	"github.com/profilesync/profilesync/internal/gitsource"
	"github.com/profilesync/profilesync/internal/rollout"
	"github.com/profilesync/profilesync/test/builders"
	"github.com/profilesync/profilesync/test/gitserver"
	"github.com/profilesync/profilesync/test/metricstest"
	"github.com/profilesync/profilesync/test/testenv"
)

// rolloutSoak is the soak of prod in the tests' rollout file.
const rolloutSoak = time.Hour

// rolloutFile lists dev (overlay dev) and prod (overlay prod, after dev,
// with rolloutSoak).
const rolloutFile = `apiVersion: rollout.profilesync.io/v1alpha1
kind: Rollout
landscapes:
- name: dev
  path: dev
- name: prod
  path: prod
  after: [dev]
  soak: 1h
`

// rolloutRepo is a repository of the rollout file and one CloudProfile per
// landscape's overlay, each listing version.
func rolloutRepo(devProfile, prodProfile, version string) map[string]string {
	return map[string]string{
		rollout.FileName:     rolloutFile,
		"dev/profiles.yaml":  singleProfileRepo(devProfile, version)["profiles.yaml"],
		"prod/profiles.yaml": singleProfileRepo(prodProfile, version)["profiles.yaml"],
	}
}

// startRolloutGitServer is a Git server on loopback that accepts pushes
// when allowPush is set: the landscapes' records are pushed to it.
func startRolloutGitServer(t *testing.T, allowPush bool) *gitserver.Server {
	t.Helper()
	server, err := gitserver.New(t.TempDir(), gitserver.Options{AllowPush: allowPush})
	if err != nil {
		t.Fatalf("start git server: %v", err)
	}
	t.Cleanup(func() { _ = server.Close() })
	return server
}

// createRolloutSync creates a ProfileSync of the overlay path with spec
// rollout and an interval of a day, so that every sync the tests see is
// one they asked for or one the rollout woke.
func createRolloutSync(t *testing.T, url, path string, spec *v1alpha1.ProfileSyncRollout, profiles ...string) *v1alpha1.ProfileSync {
	t.Helper()
	sync := createLandscapeSync(t, testenv.UniqueName("rollout-"+path), url, path, profiles...)
	testenv.UpdateSpec(t, k8sClient, sync, func(s *v1alpha1.ProfileSync) {
		s.Spec.Interval = metav1.Duration{Duration: 24 * time.Hour}
		s.Spec.Rollout = spec
	})
	return sync
}

// landscapeRecorder pushes records of a landscape to a repository, as that
// landscape's operator would.
type landscapeRecorder struct {
	t       *testing.T
	fetcher *gitsource.Fetcher
	url     string
}

func newLandscapeRecorder(t *testing.T, url string) *landscapeRecorder {
	t.Helper()
	fetcher, err := gitsource.New(t.TempDir(), gitsource.FetcherOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return &landscapeRecorder{t: t, fetcher: fetcher, url: url}
}

// applied records that landscape applied revision, Ready at readyAt.
func (l *landscapeRecorder) applied(landscape, revision string, readyAt time.Time) {
	l.push(rollout.Record{Landscape: landscape, Kind: rollout.RecordApplied, Revision: revision, AppliedAt: readyAt, ReadyAt: readyAt, OperatorVersion: "test"})
}

// decideFromRecords is the decision `rollout status` makes for landscape
// on the repository's records alone: what the landscape runs and whether it
// holds, as its records say.
func (l *landscapeRecorder) decideFromRecords(landscape rollout.Landscape, now time.Time) rollout.Answer {
	l.t.Helper()
	landscapes, err := l.fetcher.FetchLandscapes(context.Background(), gitsource.LandscapeRequest{URL: l.url, CacheKey: "records", Branch: "main"})
	if err != nil {
		l.t.Fatalf("fetch the records: %v", err)
	}
	defer func() { _ = landscapes.Close() }()
	answer, err := rollout.DecideLandscape(landscapes, rollout.Question{Landscape: landscape, Branch: "main", FromRecords: true, Now: now})
	if err != nil {
		l.t.Fatalf("decide for %s from its records: %v", landscape.Name, err)
	}
	return answer
}

func (l *landscapeRecorder) push(record rollout.Record) {
	l.t.Helper()
	if _, err := l.fetcher.PushRecord(context.Background(), gitsource.LandscapeRequest{URL: l.url, CacheKey: "records"}, record); err != nil {
		l.t.Fatalf("push the record of %s: %v", record.Landscape, err)
	}
}

// rolloutWaitingSeconds is the profilesync_rollout_candidate_waiting_seconds
// of sync that metrics report now.
func rolloutWaitingSeconds(g Gomega, m *metrics.Metrics, sync *v1alpha1.ProfileSync) float64 {
	return syncGauge(g, m, "profilesync_rollout_candidate_waiting_seconds", sync)
}

// syncGauge is the gauge name of sync that m reports now.
func syncGauge(g Gomega, m *metrics.Metrics, name string, sync *v1alpha1.ProfileSync) float64 {
	registry := prometheus.NewRegistry()
	g.Expect(registry.Register(m)).To(Succeed())
	families, err := registry.Gather()
	g.Expect(err).NotTo(HaveOccurred())
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
		for _, series := range f.GetMetric() {
			for _, l := range series.GetLabel() {
				if l.GetName() == "name" && l.GetValue() == sync.Name {
					return series.GetGauge().GetValue()
				}
			}
		}
	}
	g.Expect(false).To(BeTrue(), "no series %s of %s", name, sync.Name)
	return 0
}

// reconcileAt runs one sync of sync with r at the clock's instant at.
func reconcileAt(t *testing.T, r *ProfileSyncReconciler, sync *v1alpha1.ProfileSync, at time.Time) ctrl.Result {
	t.Helper()
	testClock.Set(t, at)
	result, err := r.Reconcile(context.Background(), ctrl.Request{NamespacedName: client.ObjectKeyFromObject(sync)})
	if err != nil {
		t.Fatalf("reconcile %s at %s: %v", sync.Name, at, err)
	}
	return result
}

// TestRolloutProdTakesWhatDevHeldExactlyWhenTheSoakEnds runs dev and prod
// in one control plane: dev applies each commit at once and records it once
// Ready; prod takes a commit exactly when dev has held it for the soak, by
// the injected clock, and never one dev refused.
func TestRolloutProdTakesWhatDevHeldExactlyWhenTheSoakEnds(t *testing.T) {
	g := NewWithT(t)
	start := time.Now().UTC().Truncate(time.Second)
	testClock.Set(t, start)
	ensureNamespace(t, clusterProfilesNamespace)
	server := startRolloutGitServer(t, true)
	repo := testenv.UniqueName("rollout")
	devProfile, prodProfile := testenv.UniqueName("rollout-dev"), testenv.UniqueName("rollout-prod")
	first, err := server.CreateRepo(repo, rolloutRepo(devProfile, prodProfile, "1.31.0"))
	g.Expect(err).NotTo(HaveOccurred())
	prod := createRolloutSync(t, server.RepoURL(repo), "prod", nil, prodProfile)
	dev := createRolloutSync(t, server.RepoURL(repo), "dev", &v1alpha1.ProfileSyncRollout{Record: ptr.To(true)}, devProfile)

	t.Run("dev applies at once and records the revision once it is Ready", func(t *testing.T) {
		NewWithT(t).Eventually(func(g Gomega) {
			got := getProfileSync(g, dev)
			g.Expect(got.Status.LastAppliedRevision).To(Equal("main@sha1:" + first))
			g.Expect(got.Status.Rollout).NotTo(BeNil())
			g.Expect(got.Status.Rollout.Landscape).To(Equal("dev"))
			g.Expect(got.Status.Rollout.Message).To(ContainSubstring("landscape dev has no upstream landscapes"))
			g.Expect(got.Status.Rollout.RecordedRevision).To(Equal(first))
			g.Expect(got.Status.Rollout.RecordedKind).To(Equal(string(rollout.RecordApplied)))
			g.Expect(conditions.IsTrue(got, v1alpha1.RecordedCondition)).To(BeTrue())
			// The push of the record is a phase of its own, not prune's.
			devLabels := map[string]string{"namespace": dev.Namespace, "name": dev.Name}
			g.Expect(metricstest.Value(g, testMetrics, "profilesync_sync_duration_seconds", metricstest.WithLabels(devLabels, "phase", metrics.PhaseRecord))).
				To(BeNumerically(">=", 1))
			g.Expect(metricstest.Value(g, testMetrics, "profilesync_rollout_record_failed_pushes", devLabels)).To(Equal(0.0), "the push succeeded")
			g.Expect(metricstest.Series(g, testMetrics, "profilesync_rollout_soak_seconds", devLabels)).To(BeEmpty(), "dev waits for no upstream landscape")
			g.Expect(metricstest.Value(g, testMetrics, "profilesync_rollout_held", devLabels)).To(Equal(0.0))
		}).WithTimeout(30 * time.Second).Should(Succeed())
	})

	// The manager's syncs of prod's creation are over before the test
	// drives prod itself.
	testenv.SettledResourceVersion(g, k8sClient, prod.DeepCopy())
	r, events := directSyncReconciler(t)
	r.Metrics = metrics.New(testClock, RefusalReasons)
	t.Run("prod waits for the soak and wakes exactly when it ends", func(t *testing.T) {
		g := NewWithT(t)
		result := reconcileAt(t, r, prod, start)
		g.Expect(result.RequeueAfter).To(Equal(rolloutSoak))
		got := getProfileSync(g, prod)
		g.Expect(got.Status.LastAppliedRevision).To(BeEmpty(), "nothing is applied before the soak ends")
		g.Expect(conditions.GetReason(got, v1alpha1.ReadyCondition)).To(Equal(v1alpha1.WaitingForUpstreamReason))
		g.Expect(conditions.GetReason(got, v1alpha1.WaitingCondition)).To(Equal(v1alpha1.WaitingForUpstreamReason))
		waiting := got.Status.Rollout.Waiting
		g.Expect(waiting).NotTo(BeNil())
		g.Expect(waiting.Revision).To(Equal(first))
		g.Expect(waiting.EligibleAt.Time).To(BeTemporally("==", start.Add(rolloutSoak)))
		g.Expect(waiting.Upstreams).To(HaveLen(1))
		g.Expect(waiting.Upstreams[0].Landscape).To(Equal("dev"))
		g.Expect(waiting.Upstreams[0].Since.Time).To(BeTemporally("==", start))

		result = reconcileAt(t, r, prod, start.Add(rolloutSoak-time.Second))
		g.Expect(result.RequeueAfter).To(Equal(time.Second))
		g.Expect(getProfileSync(g, prod).Status.LastAppliedRevision).To(BeEmpty())
		g.Expect(rolloutWaitingSeconds(g, r.Metrics, prod)).To(Equal((rolloutSoak - time.Second).Seconds()))
		g.Expect(syncGauge(g, r.Metrics, "profilesync_rollout_soak_seconds", prod)).To(Equal(rolloutSoak.Seconds()), "the soak the wait is held against")
	})

	t.Run("prod applies the commit when the soak ends", func(t *testing.T) {
		g := NewWithT(t)
		reconcileAt(t, r, prod, start.Add(rolloutSoak))
		got := getProfileSync(g, prod)
		g.Expect(got.Status.LastAppliedRevision).To(Equal("main@sha1:" + first))
		g.Expect(got.Status.Rollout.AppliedRevision).To(Equal(first))
		g.Expect(got.Status.Rollout.AppliedAt.Time).To(BeTemporally("==", start.Add(rolloutSoak)))
		g.Expect(got.Status.Rollout.Waiting).To(BeNil())
		g.Expect(conditions.Has(got, v1alpha1.WaitingCondition)).To(BeFalse())
		g.Expect(conditions.IsReady(got)).To(BeTrue())
		g.Expect(testenv.GetCloudProfile(g, k8sClient, prodProfile).Spec.Kubernetes.Versions).To(HaveLen(1))
		g.Expect(testenv.DrainEvents(events)).To(ContainElement(ContainSubstring("Promoted promoted " + first + " to landscape prod")))
		promotions := prometheus.NewRegistry()
		g.Expect(promotions.Register(r.Metrics)).To(Succeed())
		g.Expect(metricstest.Value(g, promotions, "profilesync_rollout_promotions_total",
			map[string]string{"namespace": prod.Namespace, "name": prod.Name, "reason": v1alpha1.PromotedReason})).To(Equal(1.0))
	})

	t.Run("a revision dev refused is recorded as refused and never promoted", func(t *testing.T) {
		g := NewWithT(t)
		// A version that is no MAJOR.MINOR.PATCH fails validation.
		broken, err := server.Commit(repo, map[string]string{
			"dev/profiles.yaml":  singleProfileRepo(devProfile, "1.32")["profiles.yaml"],
			"prod/profiles.yaml": singleProfileRepo(prodProfile, "1.32")["profiles.yaml"],
		}, "a broken version")
		g.Expect(err).NotTo(HaveOccurred())
		requestSync(t, dev, "broken")
		g.Eventually(func(g Gomega) {
			got := getProfileSync(g, dev)
			g.Expect(got.Status.Rollout.RecordedRevision).To(Equal(broken))
			g.Expect(got.Status.Rollout.RecordedKind).To(Equal(string(rollout.RecordRefused)))
			g.Expect(got.Status.LastAppliedRevision).To(Equal("main@sha1:" + first))
		}).WithTimeout(30 * time.Second).Should(Succeed())

		result := reconcileAt(t, r, prod, start.Add(30*rolloutSoak))
		g.Expect(result.RequeueAfter).To(BeNumerically(">", 20*time.Hour), "nothing to wake for: no candidate is held")
		got := getProfileSync(g, prod)
		g.Expect(got.Status.LastAppliedRevision).To(Equal("main@sha1:" + first))
		g.Expect(got.Status.Rollout.Waiting.Revision).To(Equal(broken))
		g.Expect(got.Status.Rollout.Waiting.EligibleAt).To(BeNil())
		g.Expect(got.Status.Rollout.Waiting.Upstreams[0].Refused).To(BeTrue())
		g.Expect(conditions.GetMessage(got, v1alpha1.WaitingCondition)).To(ContainSubstring("dev refused it"))
	})
}

// TestRolloutRollbackInDevRestartsProdsSoak: dev's records, written as
// dev's operator writes them, hold a commit, roll back, and hold it again;
// prod's soak starts again from the second hold. A garbled record on top is
// ignored with a warning.
func TestRolloutRollbackInDevRestartsProdsSoak(t *testing.T) {
	g := NewWithT(t)
	start := time.Now().UTC().Truncate(time.Second)
	testClock.Set(t, start)
	ensureNamespace(t, clusterProfilesNamespace)
	server := startRolloutGitServer(t, true)
	repo := testenv.UniqueName("rollback")
	devProfile, prodProfile := testenv.UniqueName("rollback-dev"), testenv.UniqueName("rollback-prod")
	first, err := server.CreateRepo(repo, rolloutRepo(devProfile, prodProfile, "1.31.0"))
	g.Expect(err).NotTo(HaveOccurred())
	dev := newLandscapeRecorder(t, server.RepoURL(repo))
	dev.applied("dev", first, start.Add(-2*rolloutSoak))
	prod := createRolloutSync(t, server.RepoURL(repo), "prod", nil, prodProfile)
	waitApplied(t, prod, first)
	testenv.SettledResourceVersion(g, k8sClient, prod.DeepCopy())

	second, err := server.Commit(repo, rolloutRepo(devProfile, prodProfile, "1.32.0"), "1.32.0")
	g.Expect(err).NotTo(HaveOccurred())
	dev.applied("dev", second, start)
	r, events := directSyncReconciler(t)
	result := reconcileAt(t, r, prod, start.Add(30*time.Minute))
	g.Expect(result.RequeueAfter).To(Equal(30 * time.Minute))
	g.Expect(getProfileSync(g, prod).Status.Rollout.Waiting.EligibleAt.Time).To(BeTemporally("==", start.Add(rolloutSoak)))

	// dev rolls back to first, then takes second again.
	dev.applied("dev", first, start.Add(40*time.Minute))
	result = reconcileAt(t, r, prod, start.Add(rolloutSoak))
	got := getProfileSync(g, prod)
	g.Expect(got.Status.LastAppliedRevision).To(Equal("main@sha1:"+first), "dev rolled back: second does not qualify")
	g.Expect(got.Status.Rollout.Waiting.EligibleAt).To(BeNil())
	g.Expect(got.Status.Rollout.Waiting.Upstreams[0].Running).To(Equal(first))
	g.Expect(result.RequeueAfter).To(BeNumerically(">", 20*time.Hour))

	dev.applied("dev", second, start.Add(70*time.Minute))
	result = reconcileAt(t, r, prod, start.Add(90*time.Minute))
	g.Expect(result.RequeueAfter).To(Equal(40*time.Minute), "the soak runs from the second hold")
	g.Expect(getProfileSync(g, prod).Status.Rollout.Waiting.EligibleAt.Time).To(BeTemporally("==", start.Add(130*time.Minute)))

	reconcileAt(t, r, prod, start.Add(130*time.Minute))
	g.Expect(getProfileSync(g, prod).Status.LastAppliedRevision).To(Equal("main@sha1:" + second))

	t.Run("a garbled record is ignored with a warning", func(t *testing.T) {
		g := NewWithT(t)
		garbled := writeRawRecord(t, filepath.Join(server.Root(), repo+".git"), "dev", `{"version": 1, "kind": "applied", "revision": "not a commit"}`)
		testenv.DrainEvents(events)
		reconcileAt(t, r, prod, start.Add(3*time.Hour))
		g.Expect(testenv.DrainEvents(events)).To(ContainElement(And(
			ContainSubstring("Warning RolloutInvalid record of landscape dev ignored"),
			ContainSubstring("refs/profilesync/landscapes/dev@"+garbled))))
		g.Expect(getProfileSync(g, prod).Status.LastAppliedRevision).To(Equal("main@sha1:"+second), "the records under it still count")
	})
}

// writeRawRecord commits content as the record file on top of landscape's
// ref in the bare repository at dir, unchecked, as anyone who can push
// could, and returns the record commit.
func writeRawRecord(t *testing.T, dir, landscape, content string) string {
	t.Helper()
	repository, err := git.PlainOpen(dir)
	if err != nil {
		t.Fatal(err)
	}
	refName := plumbing.ReferenceName(rollout.LandscapeRefPrefix + landscape)
	parent, err := repository.Reference(refName, true)
	if err != nil {
		t.Fatal(err)
	}
	store := repository.Storer
	blob := store.NewEncodedObject()
	blob.SetType(plumbing.BlobObject)
	writer, _ := blob.Writer()
	_, _ = writer.Write([]byte(content))
	_ = writer.Close()
	blobHash, err := store.SetEncodedObject(blob)
	if err != nil {
		t.Fatal(err)
	}
	treeObject := store.NewEncodedObject()
	tree := &object.Tree{Entries: []object.TreeEntry{{Name: rollout.RecordFileName, Mode: filemode.Regular, Hash: blobHash}}}
	if err := tree.Encode(treeObject); err != nil {
		t.Fatal(err)
	}
	treeHash, err := store.SetEncodedObject(treeObject)
	if err != nil {
		t.Fatal(err)
	}
	signature := object.Signature{Name: "someone", Email: "someone@example.invalid", When: time.Now()}
	commitObject := store.NewEncodedObject()
	commit := &object.Commit{Author: signature, Committer: signature, Message: "garbled\n", TreeHash: treeHash, ParentHashes: []plumbing.Hash{parent.Hash()}}
	if err := commit.Encode(commitObject); err != nil {
		t.Fatal(err)
	}
	commitHash, err := store.SetEncodedObject(commitObject)
	if err != nil {
		t.Fatal(err)
	}
	if err := store.SetReference(plumbing.NewHashReference(refName, commitHash)); err != nil {
		t.Fatal(err)
	}
	return commitHash.String()
}

// TestRolloutHotfixAndHold: a hotfix is taken at once, whatever dev holds,
// and recorded as a hotfix; a hold keeps prod where it is while dev moves
// on, until it is lifted.
func TestRolloutHotfixAndHold(t *testing.T) {
	g := NewWithT(t)
	start := time.Now().UTC().Truncate(time.Second)
	testClock.Set(t, start)
	ensureNamespace(t, clusterProfilesNamespace)
	server := startRolloutGitServer(t, true)
	repo := testenv.UniqueName("hotfix")
	devProfile, prodProfile := testenv.UniqueName("hotfix-dev"), testenv.UniqueName("hotfix-prod")
	first, err := server.CreateRepo(repo, rolloutRepo(devProfile, prodProfile, "1.31.0"))
	g.Expect(err).NotTo(HaveOccurred())
	dev := newLandscapeRecorder(t, server.RepoURL(repo))
	dev.applied("dev", first, start.Add(-2*rolloutSoak))
	prod := createRolloutSync(t, server.RepoURL(repo), "prod", &v1alpha1.ProfileSyncRollout{Record: ptr.To(true)}, prodProfile)
	waitApplied(t, prod, first)
	hotfix, err := server.Commit(repo, rolloutRepo(devProfile, prodProfile, "1.31.1"), "1.31.1")
	g.Expect(err).NotTo(HaveOccurred())
	newest, err := server.Commit(repo, rolloutRepo(devProfile, prodProfile, "1.32.0"), "1.32.0")
	g.Expect(err).NotTo(HaveOccurred())

	t.Run("a hotfix is taken at once and recorded as a hotfix", func(t *testing.T) {
		g := NewWithT(t)
		testenv.UpdateSpec(t, k8sClient, prod, func(s *v1alpha1.ProfileSync) { s.Spec.Rollout.Hotfix = hotfix })
		g.Eventually(func(g Gomega) {
			got := getProfileSync(g, prod)
			g.Expect(got.Status.LastAppliedRevision).To(Equal("main@sha1:" + hotfix))
			g.Expect(got.Status.Rollout.Waiting.Revision).To(Equal(newest), "newer commits wait for dev again")
			g.Expect(got.Status.Rollout.RecordedRevision).To(Equal(hotfix))
			g.Expect(got.Status.Rollout.RecordedKind).To(Equal(string(rollout.RecordHotfix)))
			g.Expect(syncEvents(g, prod, v1alpha1.HotfixReason)).To(ConsistOf(ContainSubstring("took hotfix " + hotfix)))
		}).WithTimeout(30 * time.Second).Should(Succeed())
		g.Expect(versionsOf(testenv.GetCloudProfile(g, k8sClient, prodProfile))).To(Equal([]string{"1.31.1"}))
	})

	t.Run("a hold keeps prod at what it runs while dev moves on", func(t *testing.T) {
		g := NewWithT(t)
		testenv.UpdateSpec(t, k8sClient, prod, func(s *v1alpha1.ProfileSync) {
			s.Spec.Rollout.Hotfix = ""
			s.Spec.Rollout.Hold = true
		})
		g.Eventually(func(g Gomega) {
			got := getProfileSync(g, prod)
			g.Expect(got.Status.ObservedGeneration).To(Equal(got.Generation))
			g.Expect(conditions.GetReason(got, v1alpha1.WaitingCondition)).To(Equal(v1alpha1.RolloutHeldReason))
		}).WithTimeout(30 * time.Second).Should(Succeed())
		prodLabels := map[string]string{"namespace": prod.Namespace, "name": prod.Name}
		g.Eventually(func(g Gomega) {
			g.Expect(metricstest.Value(g, testMetrics, "profilesync_rollout_held", prodLabels)).To(Equal(1.0))
		}).WithTimeout(10 * time.Second).Should(Succeed())
		g.Eventually(func(g Gomega) {
			got := getProfileSync(g, prod)
			g.Expect(got.Status.Rollout.RecordedRevision).To(Equal(hotfix))
			g.Expect(got.Status.Rollout.RecordedKind).To(Equal(string(rollout.RecordHeld)), "the hold is recorded; clearing the hotfix records the revision it runs no second time")
		}).WithTimeout(30 * time.Second).Should(Succeed())
		prodLandscape := rollout.Landscape{Name: "prod", Path: "prod", After: []string{"dev"}, Soak: rolloutSoak}
		fromRecords := dev.decideFromRecords(prodLandscape, testClock.Now())
		g.Expect(fromRecords.Running).To(Equal(hotfix))
		g.Expect(fromRecords.Held).To(BeTrue(), "whoever reads the records sees the hold")
		g.Expect(fromRecords.HoldRecord.Revision).To(Equal(hotfix))

		// Released while nothing qualifies, the release is recorded too;
		// held again, so is the hold.
		for _, hold := range []bool{false, true} {
			testenv.UpdateSpec(t, k8sClient, prod, func(s *v1alpha1.ProfileSync) { s.Spec.Rollout.Hold = hold })
			kind := map[bool]rollout.RecordKind{false: rollout.RecordReleased, true: rollout.RecordHeld}[hold]
			g.Eventually(func(g Gomega) {
				got := getProfileSync(g, prod)
				g.Expect(got.Status.ObservedGeneration).To(Equal(got.Generation))
				g.Expect(got.Status.Rollout.RecordedKind).To(Equal(string(kind)))
			}).WithTimeout(30 * time.Second).Should(Succeed())
			fromRecords := dev.decideFromRecords(prodLandscape, testClock.Now())
			g.Expect(fromRecords.Held).To(Equal(hold), "after the %s record", kind)
			g.Expect(fromRecords.HoldRecord.Kind).To(Equal(kind))
			g.Expect(fromRecords.Running).To(Equal(hotfix))
		}
		dev.applied("dev", newest, start.Add(-rolloutSoak))
		requestSync(t, prod, "held")
		g.Eventually(func(g Gomega) {
			got := getProfileSync(g, prod)
			g.Expect(got.Status.LastHandledReconcileAt).To(Equal("held"))
			g.Expect(conditions.GetReason(got, v1alpha1.WaitingCondition)).To(Equal(v1alpha1.RolloutHeldReason))
			g.Expect(got.Status.Rollout.Waiting.Revision).To(Equal(newest))
			g.Expect(got.Status.Rollout.Waiting.Upstreams[0].Since.Time).To(BeTemporally("==", start.Add(-rolloutSoak)))
			g.Expect(syncEvents(g, prod, v1alpha1.RolloutHeldReason)).To(ContainElement(ContainSubstring(newest + " waits")))
		}).WithTimeout(30 * time.Second).Should(Succeed())
		got := getProfileSync(g, prod)
		g.Expect(got.Status.LastAppliedRevision).To(Equal("main@sha1:"+hotfix), "held, though dev held the newest for the soak")
		g.Expect(conditions.IsReady(got)).To(BeTrue())
		fromRecords = dev.decideFromRecords(prodLandscape, testClock.Now())
		g.Expect(fromRecords.Promote).To(BeEmpty(), "read from the records, prod takes nothing either")
		g.Expect(fromRecords.Waiting.Candidate).To(Equal(newest), "and holds back the commit the operator holds back")

		testenv.UpdateSpec(t, k8sClient, prod, func(s *v1alpha1.ProfileSync) { s.Spec.Rollout.Hold = false })
		waitApplied(t, prod, newest)
		g.Eventually(func(g Gomega) {
			g.Expect(metricstest.Value(g, testMetrics, "profilesync_rollout_held", prodLabels)).To(Equal(0.0))
			got := getProfileSync(g, prod)
			g.Expect(got.Status.Rollout.RecordedRevision).To(Equal(newest))
			g.Expect(got.Status.Rollout.RecordedKind).To(Equal(string(rollout.RecordApplied)))
		}).WithTimeout(30 * time.Second).Should(Succeed())
		fromRecords = dev.decideFromRecords(prodLandscape, testClock.Now())
		g.Expect(fromRecords.Held).To(BeFalse(), "the applied record after the hold ends it")
		g.Expect(fromRecords.Running).To(Equal(newest))
		// Events are recorded asynchronously: the status may come first.
		g.Eventually(func(g Gomega) []string { return syncEvents(g, prod, v1alpha1.PromotedReason) }).
			WithTimeout(10 * time.Second).Should(ContainElement(ContainSubstring("promoted " + newest)))
	})
}

// TestRolloutFailedRecordPushShowsAndDoesNotBlock: a server that refuses
// pushes leaves the record missing, shown by the Recorded condition, and
// the revision applied.
func TestRolloutFailedRecordPushShowsAndDoesNotBlock(t *testing.T) {
	g := NewWithT(t)
	ensureNamespace(t, clusterProfilesNamespace)
	server := startRolloutGitServer(t, false)
	repo := testenv.UniqueName("norecord")
	devProfile, prodProfile := testenv.UniqueName("norecord-dev"), testenv.UniqueName("norecord-prod")
	first, err := server.CreateRepo(repo, rolloutRepo(devProfile, prodProfile, "1.31.0"))
	g.Expect(err).NotTo(HaveOccurred())
	dev := createRolloutSync(t, server.RepoURL(repo), "dev", &v1alpha1.ProfileSyncRollout{Record: ptr.To(true)}, devProfile)
	g.Eventually(func(g Gomega) {
		got := getProfileSync(g, dev)
		g.Expect(got.Status.LastAppliedRevision).To(Equal("main@sha1:" + first))
		g.Expect(conditions.IsReady(got)).To(BeTrue())
		g.Expect(conditions.IsFalse(got, v1alpha1.RecordedCondition)).To(BeTrue())
		g.Expect(conditions.GetReason(got, v1alpha1.RecordedCondition)).To(Equal(v1alpha1.RecordFailedReason))
		g.Expect(conditions.GetMessage(got, v1alpha1.RecordedCondition)).To(ContainSubstring("the applied record of " + first + " for landscape dev was not pushed"))
		g.Expect(got.Status.Rollout.RecordedRevision).To(BeEmpty())
		g.Expect(syncEvents(g, dev, v1alpha1.RecordFailedReason)).To(HaveLen(1))
		g.Expect(metricstest.Value(g, testMetrics, "profilesync_rollout_record_failed_pushes", map[string]string{"namespace": dev.Namespace, "name": dev.Name})).
			To(BeNumerically(">=", 1), "the alert ProfileSyncRecordNotPushed reads it")
	}).WithTimeout(30 * time.Second).Should(Succeed())
	g.Expect(testenv.GetCloudProfile(g, k8sClient, devProfile).Spec.Kubernetes.Versions).To(HaveLen(1))
}

// TestRolloutWithoutALandscapeWorksAsBefore: a ProfileSync whose path is in
// no landscape takes the tip and says so, and that it has nothing to record.
func TestRolloutWithoutALandscapeWorksAsBefore(t *testing.T) {
	g := NewWithT(t)
	ensureNamespace(t, clusterProfilesNamespace)
	server := startRolloutGitServer(t, false)
	repo := testenv.UniqueName("nolandscape")
	profile := testenv.UniqueName("nolandscape")
	files := rolloutRepo(testenv.UniqueName("unused"), testenv.UniqueName("unused"), "1.31.0")
	files["other/profiles.yaml"] = singleProfileRepo(profile, "1.31.0")["profiles.yaml"]
	first, err := server.CreateRepo(repo, files)
	g.Expect(err).NotTo(HaveOccurred())
	sync := createRolloutSync(t, server.RepoURL(repo), "other", &v1alpha1.ProfileSyncRollout{Record: ptr.To(true)}, profile)
	g.Eventually(func(g Gomega) {
		got := getProfileSync(g, sync)
		g.Expect(got.Status.LastAppliedRevision).To(Equal("main@sha1:" + first))
		g.Expect(conditions.IsReady(got)).To(BeTrue())
		g.Expect(got.Status.Rollout).NotTo(BeNil())
		g.Expect(got.Status.Rollout.Landscape).To(BeEmpty())
		g.Expect(got.Status.Rollout.Message).To(ContainSubstring(`spec.path "other" is in no landscape of profilesync-rollout.yaml`))
		g.Expect(conditions.GetMessage(got, v1alpha1.RecordedCondition)).To(ContainSubstring("spec.rollout.record is set, but the ProfileSync is in no landscape"))
	}).WithTimeout(30 * time.Second).Should(Succeed())
}

// TestRolloutRecordsByDefaultForALandscapeTheFileLists: a ProfileSync of a
// landscape the rollout file lists records what it applies without
// spec.rollout.record, so the landscapes after it do not wait for ever;
// record: false turns it off.
func TestRolloutRecordsByDefaultForALandscapeTheFileLists(t *testing.T) {
	ensureNamespace(t, clusterProfilesNamespace)
	server := startRolloutGitServer(t, true)
	dev := rollout.Landscape{Name: "dev", Path: "dev"}
	for _, tt := range []struct {
		name    string
		spec    *v1alpha1.ProfileSyncRollout
		records bool
	}{
		{name: "unset, it records", spec: nil, records: true},
		{name: "false, it records nothing", spec: &v1alpha1.ProfileSyncRollout{Record: ptr.To(false)}, records: false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			repo := testenv.UniqueName("default-record")
			devProfile := testenv.UniqueName("default-record-dev")
			first, err := server.CreateRepo(repo, rolloutRepo(devProfile, testenv.UniqueName("unused"), "1.31.0"))
			g.Expect(err).NotTo(HaveOccurred())
			sync := createRolloutSync(t, server.RepoURL(repo), "dev", tt.spec, devProfile)
			waitApplied(t, sync, first)
			g.Eventually(func(g Gomega) {
				got := getProfileSync(g, sync)
				g.Expect(conditions.IsReady(got)).To(BeTrue())
				if tt.records {
					g.Expect(got.Status.Rollout.RecordedRevision).To(Equal(first))
					g.Expect(conditions.IsTrue(got, v1alpha1.RecordedCondition)).To(BeTrue())
				} else {
					g.Expect(got.Status.Rollout.RecordedRevision).To(BeEmpty())
					g.Expect(conditions.Has(got, v1alpha1.RecordedCondition)).To(BeFalse())
				}
			}).WithTimeout(30 * time.Second).Should(Succeed())
			fromRecords := newLandscapeRecorder(t, server.RepoURL(repo)).decideFromRecords(dev, testClock.Now().Add(time.Hour))
			if tt.records {
				g.Expect(fromRecords.Running).To(Equal(first), "the record is on the server")
			} else {
				g.Expect(fromRecords.Running).To(BeEmpty(), "no record on the server")
			}
		})
	}
}

// TestRolloutRefusesWhatItCannotFollow: a landscape the rollout file does
// not list, and a hotfix that is no newer commit of the branch, refuse the
// sync with reason RolloutInvalid, naming the field; what is applied stays,
// and no refusal is recorded for it.
func TestRolloutRefusesWhatItCannotFollow(t *testing.T) {
	ensureNamespace(t, clusterProfilesNamespace)
	server := startRolloutGitServer(t, true)
	for _, tt := range []struct {
		name   string
		mutate func(*v1alpha1.ProfileSync)
		want   string
	}{
		{
			name:   "an unknown landscape",
			mutate: func(s *v1alpha1.ProfileSync) { s.Spec.Landscape = "staging" },
			want:   `spec.landscape: unknown landscape "staging": profilesync-rollout.yaml lists dev, prod`,
		},
		{
			name: "a hotfix that is not on the branch",
			mutate: func(s *v1alpha1.ProfileSync) {
				s.Spec.Rollout.Hotfix = strings.Repeat("0", 40)
			},
			want: "spec.rollout.hotfix: commit " + strings.Repeat("0", 40) + " is not a commit of the branch newer than the revision applied",
		},
	} {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			repo := testenv.UniqueName("rollout-invalid")
			devProfile := testenv.UniqueName("rollout-invalid")
			first, err := server.CreateRepo(repo, rolloutRepo(devProfile, testenv.UniqueName("unused"), "1.31.0"))
			g.Expect(err).NotTo(HaveOccurred())
			sync := createRolloutSync(t, server.RepoURL(repo), "dev", &v1alpha1.ProfileSyncRollout{Record: ptr.To(true)}, devProfile)
			g.Eventually(func(g Gomega) {
				got := getProfileSync(g, sync)
				g.Expect(got.Status.Rollout).NotTo(BeNil())
				g.Expect(got.Status.Rollout.RecordedRevision).To(Equal(first))
			}).WithTimeout(30 * time.Second).Should(Succeed())
			testenv.UpdateSpec(t, k8sClient, sync, tt.mutate)
			g.Eventually(func(g Gomega) {
				got := getProfileSync(g, sync)
				g.Expect(got.Status.ObservedGeneration).To(Equal(got.Generation))
				g.Expect(conditions.GetReason(got, v1alpha1.ReadyCondition)).To(Equal(v1alpha1.RolloutInvalidReason))
				g.Expect(conditions.GetMessage(got, v1alpha1.ReadyCondition)).To(ContainSubstring(tt.want))
				g.Expect(got.Status.LastAppliedRevision).To(Equal("main@sha1:" + first))
				g.Expect(got.Status.Rollout.RecordedKind).To(Equal(string(rollout.RecordApplied)), "what the sync cannot follow is no refusal of the revision")
			}).WithTimeout(30 * time.Second).Should(Succeed())
		})
	}

	t.Run("a ProfileSync that follows a tag is not gated, and says so", func(t *testing.T) {
		g := NewWithT(t)
		repo := testenv.UniqueName("rollout-tag")
		prodProfile := testenv.UniqueName("rollout-tag")
		first, err := server.CreateRepo(repo, rolloutRepo(testenv.UniqueName("unused"), prodProfile, "1.31.0"))
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(server.Tag(repo, "v1", first)).To(Succeed())
		sync := createLandscapeSync(t, testenv.UniqueName("rollout-tag"), server.RepoURL(repo), "prod", prodProfile)
		testenv.UpdateSpec(t, k8sClient, sync, func(s *v1alpha1.ProfileSync) { s.Spec.Ref = &v1alpha1.GitReference{Tag: "v1"} })
		g.Eventually(func(g Gomega) {
			got := getProfileSync(g, sync)
			g.Expect(got.Status.LastAppliedRevision).To(Equal("v1@sha1:"+first), "prod's upstream has recorded nothing, but a tag is not gated")
			g.Expect(got.Status.Rollout.Landscape).To(Equal("prod"))
			g.Expect(got.Status.Rollout.Message).To(Equal(`follows tag "v1", not a branch: the rollout does not gate it`))
		}).WithTimeout(30 * time.Second).Should(Succeed())
	})
}

// TestRolloutFileThatCannotBeFollowedKeepsTheGoodRevision: a landscape
// that has applied a good revision is pushed one commit after another whose
// profilesync-rollout.yaml cannot be followed. Each is refused with reason
// RolloutInvalid, naming the file and the field, and the good revision and
// its profiles stay: a new version in the same commits is not applied.
func TestRolloutFileThatCannotBeFollowedKeepsTheGoodRevision(t *testing.T) {
	g := NewWithT(t)
	ensureNamespace(t, clusterProfilesNamespace)
	server := startRolloutGitServer(t, false)
	repo := testenv.UniqueName("rollout-file")
	devProfile, prodProfile := testenv.UniqueName("rollout-file-dev"), testenv.UniqueName("rollout-file-prod")
	good, err := server.CreateRepo(repo, rolloutRepo(devProfile, prodProfile, "1.31.0"))
	g.Expect(err).NotTo(HaveOccurred())
	sync := createRolloutSync(t, server.RepoURL(repo), "dev", nil, devProfile)
	waitApplied(t, sync, good)
	applied := testenv.GetCloudProfile(g, k8sClient, devProfile)

	for _, tt := range []struct {
		name       string
		landscapes string
		want       string
	}{
		{
			name:       "a cycle",
			landscapes: "- {name: dev, path: dev, after: [prod]}\n- {name: prod, path: prod, after: [dev]}\n",
			want:       "profilesync-rollout.yaml: landscapes[0].after: a cycle: dev → prod → dev each wait for the next, so none can take a commit",
		},
		{
			name:       "an unknown landscape in after",
			landscapes: "- {name: dev, path: dev}\n- {name: prod, path: prod, after: [stagin]}\n",
			want:       `profilesync-rollout.yaml: landscapes[1].after[0]: unknown landscape "stagin" (the landscapes are dev, prod)`,
		},
		{
			name:       "two landscapes with one path",
			landscapes: "- {name: dev, path: dev}\n- {name: prod, path: ./dev/, after: [dev]}\n",
			want:       `profilesync-rollout.yaml: landscapes[1].path: "./dev/" is the path of landscapes[0] (dev) too`,
		},
		{
			name:       "a negative soak",
			landscapes: "- {name: dev, path: dev}\n- {name: prod, path: prod, after: [dev], soak: -1h}\n",
			want:       "profilesync-rollout.yaml: landscapes[1].soak: -1h is negative",
		},
		{
			name:       "a soak longer than a rollout waits",
			landscapes: "- {name: dev, path: dev}\n- {name: prod, path: prod, after: [dev], soak: 91d}\n",
			want:       "profilesync-rollout.yaml: landscapes[1].soak: 91d is longer than the most a rollout waits",
		},
		{
			name:       "a lag on a classification that does not exist",
			landscapes: "- {name: dev, path: dev}\n- {name: prod, path: prod, after: [dev], lag: {suported: {duration: 7d, severity: error}}}\n",
			want:       "profilesync-rollout.yaml: landscapes[1].lag[suported]: no such classification",
		},
	} {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			files := rolloutRepo(devProfile, prodProfile, "1.32.0")
			files[rollout.FileName] = "apiVersion: " + rollout.APIVersion + "\nkind: " + rollout.Kind + "\nlandscapes:\n" + tt.landscapes
			bad, err := server.Commit(repo, files, tt.name)
			g.Expect(err).NotTo(HaveOccurred())
			requestSync(t, sync, bad)
			g.Eventually(func(g Gomega) {
				got := getProfileSync(g, sync)
				g.Expect(got.Status.LastHandledReconcileAt).To(Equal(bad))
				g.Expect(conditions.IsFalse(got, v1alpha1.ReadyCondition)).To(BeTrue())
				g.Expect(conditions.GetReason(got, v1alpha1.ReadyCondition)).To(Equal(v1alpha1.RolloutInvalidReason))
				g.Expect(conditions.GetMessage(got, v1alpha1.ReadyCondition)).To(And(
					ContainSubstring("revision main@sha1:"+bad), ContainSubstring(tt.want)))
				g.Expect(got.Status.LastAppliedRevision).To(Equal("main@sha1:" + good))
			}).WithTimeout(30 * time.Second).Should(Succeed())
			profile := testenv.GetCloudProfile(g, k8sClient, devProfile)
			g.Expect(versionsOf(profile)).To(Equal([]string{"1.31.0"}))
			g.Expect(profile.Generation).To(Equal(applied.Generation), "the profile is not written")
		})
	}
}

func TestRecordRetryBacksOffUpToTheInterval(t *testing.T) {
	for _, tt := range []struct {
		name      string
		attempts  int
		transient bool
		want      time.Duration
	}{
		{"the first failure that may pass is retried after 5s", 1, true, 5 * time.Second},
		{"each next one twice as late", 3, true, 20 * time.Second},
		{"never later than the interval", 12, true, 10 * time.Minute},
		{"a failure that cannot pass waits the interval", 1, false, 10 * time.Minute},
	} {
		t.Run(tt.name, func(t *testing.T) {
			NewWithT(t).Expect(recordRetryAfter(tt.attempts, tt.transient, 10*time.Minute)).To(Equal(tt.want))
		})
	}
}

func TestNextSyncWakesForTheRolloutWithinTheInterval(t *testing.T) {
	now := builders.Time("2026-11-25T02:00:00Z")
	obj := &v1alpha1.ProfileSync{ObjectMeta: metav1.ObjectMeta{Namespace: "landscape", Name: "prod"}}
	for _, tt := range []struct {
		name string
		wake time.Time
		want time.Duration
	}{
		{"no wake: the interval", time.Time{}, time.Hour},
		{"a soak that ends within the interval: exactly then", now.Add(20 * time.Minute), 20 * time.Minute},
		{"a soak that ends after the interval: the interval", now.Add(3 * time.Hour), time.Hour},
		{"a wake that has passed: at once, but not zero", now.Add(-time.Minute), time.Millisecond},
	} {
		t.Run(tt.name, func(t *testing.T) {
			r := &ProfileSyncReconciler{}
			r.memory.setWake(client.ObjectKeyFromObject(obj), tt.wake)
			NewWithT(t).Expect(r.nextSync(obj, now, time.Hour)).To(Equal(tt.want))
		})
	}
}
