package profilesync

import (
	"context"
	"fmt"
	"testing"
	"time"

	. "github.com/onsi/gomega"

	"github.com/fluxcd/pkg/runtime/conditions"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1alpha1 "github.com/profilesync/profilesync/api/v1alpha1"
	"github.com/profilesync/profilesync/controllers/metrics"
	"github.com/profilesync/profilesync/test/builders"
	"github.com/profilesync/profilesync/test/metricstest"
	"github.com/profilesync/profilesync/test/testenv"
)

// TestSyncMetricsFollowTheSyncAndEndWithTheProfileSync walks one ProfileSync
// through a sync, a refused revision, a new revision and its deletion, and
// reads the metrics after each.
func TestSyncMetricsFollowTheSyncAndEndWithTheProfileSync(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ensureNamespace(t, clusterProfilesNamespace)
	now := builders.Time("2026-01-01T00:00:00Z")
	testClock.Set(t, now)
	server := startGitServer(t)
	profile := testenv.UniqueName("metrics")
	first, err := server.CreateRepo("metrics", singleProfileRepo(profile, "1.31.0"))
	g.Expect(err).NotTo(HaveOccurred())
	sync := createLandscapeSync(t, testenv.UniqueName("metrics"), server.RepoURL("metrics"), "", profile)
	waitApplied(t, sync, first)
	syncLabels := map[string]string{"namespace": sync.Namespace, "name": sync.Name}

	t.Run("a sync reports each phase, Ready, the revision and when it was applied", func(t *testing.T) {
		NewWithT(t).Eventually(func(g Gomega) {
			g.Expect(metricstest.Value(g, testMetrics, "profilesync_sync_ready", syncLabels)).To(Equal(1.0))
			g.Expect(metricstest.Value(g, testMetrics, "profilesync_sync_suspended", syncLabels)).To(Equal(0.0))
			g.Expect(metricstest.Series(g, testMetrics, "profilesync_sync_applied_revision_info", syncLabels)).To(Equal(map[string]float64{
				fmt.Sprintf(`{name=%q,namespace=%q,revision="main@sha1:%s"}`, sync.Name, sync.Namespace, first): 1,
			}))
			g.Expect(metricstest.Value(g, testMetrics, "profilesync_sync_last_applied_timestamp_seconds", syncLabels)).To(Equal(float64(now.Unix())))
			for _, phase := range []string{metrics.PhaseFetch, metrics.PhaseRollout, metrics.PhaseBuild, metrics.PhaseValidate, metrics.PhaseHold, metrics.PhaseApply, metrics.PhasePrune, metrics.PhaseStatus} {
				g.Expect(metricstest.Value(g, testMetrics, "profilesync_sync_duration_seconds", metricstest.WithLabels(syncLabels, "phase", phase))).To(BeNumerically(">=", 1), phase)
			}
			g.Expect(metricstest.Series(g, testMetrics, "profilesync_sync_duration_seconds", metricstest.WithLabels(syncLabels, "phase", metrics.PhaseRecord))).To(BeEmpty(), "no record pushed without spec.rollout.record")
			// A counter for every reason, at zero until a refusal.
			g.Expect(metricstest.Series(g, testMetrics, "profilesync_sync_revisions_refused_total", syncLabels)).To(
				And(HaveLen(len(RefusalReasons)), HaveEach(0.0)))
			// The profile it applied, with its status controller's count.
			cpLabels := map[string]string{"kind": v1alpha1.CloudProfileKind, "namespace": "", "name": profile}
			g.Expect(metricstest.Value(g, testMetrics, "profilesync_profile_versions", metricstest.WithLabels(cpLabels, "versions", "kubernetes", "classification", "supported"))).To(Equal(1.0))
			g.Expect(metricstest.Series(g, testMetrics, "profilesync_profile_next_transition_timestamp_seconds", cpLabels)).To(BeEmpty(), "no transition scheduled")
		}).WithTimeout(15 * time.Second).Should(Succeed())
	})

	t.Run("a refused revision is counted by its reason, and the applied revision stays", func(t *testing.T) {
		g := NewWithT(t)
		broken, err := server.Commit("metrics", singleProfileRepo(profile, "1.31"), "a version that does not decode")
		g.Expect(err).NotTo(HaveOccurred())
		requestSync(t, sync, "broken")
		g.Eventually(func(g Gomega) {
			got := getProfileSync(g, sync)
			g.Expect(got.Status.LastAttemptedRevision).To(Equal("main@sha1:" + broken))
			g.Expect(conditions.GetReason(got, v1alpha1.ReadyCondition)).To(Equal(v1alpha1.ValidationFailedReason), "a problem of the profile itself")
			g.Expect(metricstest.Value(g, testMetrics, "profilesync_sync_revisions_refused_total", metricstest.WithLabels(syncLabels, "reason", v1alpha1.ValidationFailedReason))).To(Equal(1.0))
			g.Expect(metricstest.Value(g, testMetrics, "profilesync_sync_ready", syncLabels)).To(Equal(0.0))
			g.Expect(metricstest.Series(g, testMetrics, "profilesync_sync_applied_revision_info", metricstest.WithLabels(syncLabels, "revision", "main@sha1:"+first))).To(HaveLen(1))
		}).WithTimeout(15 * time.Second).Should(Succeed())
		g.Expect(metricstest.Value(g, testMetrics, "profilesync_sync_revisions_refused_total", metricstest.WithLabels(syncLabels, "reason", v1alpha1.FetchFailedReason))).To(Equal(0.0))
	})

	t.Run("a new revision replaces the revision series", func(t *testing.T) {
		g := NewWithT(t)
		fixed, err := server.Commit("metrics", singleProfileRepo(profile, "1.31.1"), "fixed")
		g.Expect(err).NotTo(HaveOccurred())
		requestSync(t, sync, "fixed")
		waitApplied(t, sync, fixed)
		g.Eventually(func(g Gomega) {
			g.Expect(metricstest.Series(g, testMetrics, "profilesync_sync_applied_revision_info", syncLabels)).To(Equal(map[string]float64{
				fmt.Sprintf(`{name=%q,namespace=%q,revision="main@sha1:%s"}`, sync.Name, sync.Namespace, fixed): 1,
			}))
			g.Expect(metricstest.Value(g, testMetrics, "profilesync_sync_ready", syncLabels)).To(Equal(1.0))
		}).WithTimeout(15 * time.Second).Should(Succeed())
	})

	t.Run("deleting the ProfileSync and its profile ends their series", func(t *testing.T) {
		g := NewWithT(t)
		g.Expect(k8sClient.Delete(ctx, sync)).To(Succeed())
		g.Eventually(func(g Gomega) {
			g.Expect(metricstest.FamiliesWith(g, testMetrics, "profilesync_sync_", syncLabels)).To(BeEmpty())
		}).WithTimeout(15 * time.Second).Should(Succeed())
		cpLabels := map[string]string{"kind": v1alpha1.CloudProfileKind, "name": profile}
		g.Expect(metricstest.FamiliesWith(g, testMetrics, "profilesync_profile_", cpLabels)).NotTo(BeEmpty(), "deleting a ProfileSync leaves its profiles")
		g.Expect(k8sClient.Delete(ctx, &v1alpha1.CloudProfile{ObjectMeta: metav1.ObjectMeta{Name: profile}})).To(Succeed())
		g.Eventually(func(g Gomega) {
			g.Expect(metricstest.FamiliesWith(g, testMetrics, "profilesync_profile_", cpLabels)).To(BeEmpty())
		}).WithTimeout(15 * time.Second).Should(Succeed())
	})
}
