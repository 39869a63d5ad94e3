package profilestatus

import (
	"context"
	"fmt"
	"testing"
	"time"

	. "github.com/onsi/gomega"

	"github.com/fluxcd/pkg/apis/meta"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1alpha1 "github.com/profilesync/profilesync/api/v1alpha1"
	"github.com/profilesync/profilesync/controllers/metrics"
	"github.com/profilesync/profilesync/test/builders"
	"github.com/profilesync/profilesync/test/metricstest"
)

// requestProfileReconcile asks the profile controllers to reconcile obj now.
func requestProfileReconcile(t *testing.T, obj client.Object, token string) {
	t.Helper()
	patch := fmt.Sprintf(`{"metadata":{"annotations":{%q:%q}}}`, meta.ReconcileRequestAnnotation, token)
	if err := k8sClient.Patch(context.Background(), obj.DeepCopyObject().(client.Object), client.RawPatch(types.MergePatchType, []byte(patch))); err != nil {
		t.Fatalf("request a reconcile of %s: %v", obj.GetName(), err)
	}
}

// TestProfileMetricsCountVersionsAndMoveWithTheClock reads the metrics of
// GEP-32's example profile and a namespaced profile of it, moves the clock
// past the next transition without a reconcile (the transition is then
// overdue, as the alert sees it), lets the controller catch up, and deletes
// both.
func TestProfileMetricsCountVersionsAndMoveWithTheClock(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	testClock.Set(t, builders.Time("2024-12-03T00:00:00Z"))
	parent := gep32Profile()
	createProfile(t, parent)
	ncp := gep32Override(parent.Name)
	createProfile(t, ncp)
	cpLabels := map[string]string{"kind": v1alpha1.CloudProfileKind, "namespace": "", "name": parent.Name}
	ncpLabels := map[string]string{"kind": v1alpha1.NamespacedCloudProfileKind, "namespace": ncp.Namespace, "name": ncp.Name}
	versions := func(g Gomega, labels map[string]string, kind string) map[string]float64 {
		counts := map[string]float64{}
		for _, c := range metrics.Classifications {
			counts[string(c)] = metricstest.Value(g, testMetrics, "profilesync_profile_versions", metricstest.WithLabels(labels, "versions", kind, "classification", string(c)))
		}
		return counts
	}
	march := builders.Time("2025-03-01T00:00:00Z")

	g.Eventually(func(g Gomega) {
		// 1.30.6, 1.27.0 and 1.28.0 supported, 1.18.0 expired, 2.0.0 not yet available.
		g.Expect(versions(g, cpLabels, "kubernetes")).To(Equal(map[string]float64{
			"unavailable": 1, "preview": 0, "supported": 3, "deprecated": 0, "expired": 1,
		}))
		g.Expect(versions(g, cpLabels, "machineImage")).To(Equal(map[string]float64{
			"unavailable": 0, "preview": 0, "supported": 1, "deprecated": 0, "expired": 0,
		}))
		// The override postpones 1.28.0's support: still in preview there.
		g.Expect(versions(g, ncpLabels, "kubernetes")).To(Equal(map[string]float64{
			"unavailable": 1, "preview": 1, "supported": 2, "deprecated": 0, "expired": 1,
		}))
		for _, labels := range []map[string]string{cpLabels, ncpLabels} {
			g.Expect(metricstest.Value(g, testMetrics, "profilesync_profile_next_transition_timestamp_seconds", labels)).To(Equal(float64(march.Unix())))
			g.Expect(metricstest.Value(g, testMetrics, "profilesync_profile_seconds_until_next_transition", labels)).To(Equal(march.Sub(builders.Time("2024-12-03T00:00:00Z")).Seconds()))
		}
	}).WithTimeout(15 * time.Second).Should(Succeed())

	// The controllers sleep until the next transition on the real clock, so
	// moving the test clock wakes nobody: the seconds move at the scrape alone.
	testClock.Set(t, march.Add(-time.Hour))
	g.Expect(metricstest.Value(g, testMetrics, "profilesync_profile_seconds_until_next_transition", cpLabels)).To(Equal(3600.0))
	testClock.Set(t, march.Add(2*time.Minute))
	g.Expect(metricstest.Value(g, testMetrics, "profilesync_profile_seconds_until_next_transition", cpLabels)).To(Equal(-120.0))
	g.Expect(metricstest.Value(g, testMetrics, "profilesync_profile_next_transition_timestamp_seconds", cpLabels)).To(Equal(float64(march.Unix())), "the status is overdue")

	requestProfileReconcile(t, parent, "catch-up")
	april := builders.Time("2025-04-01T00:00:00Z")
	g.Eventually(func(g Gomega) {
		g.Expect(versions(g, cpLabels, "kubernetes")).To(HaveKeyWithValue("deprecated", 1.0))
		g.Expect(metricstest.Value(g, testMetrics, "profilesync_profile_next_transition_timestamp_seconds", cpLabels)).To(Equal(float64(april.Unix())))
		g.Expect(metricstest.Value(g, testMetrics, "profilesync_profile_seconds_until_next_transition", cpLabels)).To(Equal(april.Sub(march.Add(2 * time.Minute)).Seconds()))
	}).WithTimeout(15 * time.Second).Should(Succeed())

	g.Expect(k8sClient.Delete(ctx, ncp)).To(Succeed())
	g.Eventually(func(g Gomega) {
		g.Expect(metricstest.FamiliesWith(g, testMetrics, "profilesync_profile_", ncpLabels)).To(BeEmpty())
	}).WithTimeout(15 * time.Second).Should(Succeed())
	g.Expect(metricstest.FamiliesWith(g, testMetrics, "profilesync_profile_", cpLabels)).NotTo(BeEmpty())
	g.Expect(k8sClient.Delete(ctx, parent)).To(Succeed())
	g.Eventually(func(g Gomega) {
		g.Expect(metricstest.FamiliesWith(g, testMetrics, "profilesync_profile_", cpLabels)).To(BeEmpty())
	}).WithTimeout(15 * time.Second).Should(Succeed())
}
