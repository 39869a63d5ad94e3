package faults

import (
	"maps"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	crmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/profilesync/profilesync/test/metricstest"
)

// reconcileCounts are the reconciles each controller of the operator ran so
// far in this process, whatever their result (controller-runtime's
// controller_runtime_reconcile_total).
func reconcileCounts(g Gomega) map[string]float64 {
	counts := map[string]float64{}
	for _, controller := range []string{"cloudprofile", "namespacedcloudprofile", "profilesync"} {
		for _, v := range metricstest.Series(g, crmetrics.Registry, "controller_runtime_reconcile_total", map[string]string{"controller": controller}) {
			counts[controller] += v
		}
	}
	return counts
}

// TestNoReconcileBetweenTransitions: an idle landscape whose profiles have
// transitions scheduled an hour and two ahead, under a 1 s status recheck
// (the setting that bounds how late a wall-clock step shows). Between the
// transitions no controller reconciles anything and nothing is written: a
// recheck reads the cache and finds no status overdue. (Before, each
// profile with a transition scheduled was reconciled at every recheck.)
// TestClockJumpsForwardPastSeveralTransitions shows that the recheck still
// catches a step of the wall clock.
func TestNoReconcileBetweenTransitions(t *testing.T) {
	g := NewWithT(t)
	_, counter, _, _ := startClockLandscape(t, time.Now(), func(t0 time.Time) map[string]string {
		return lifecycleRepo(map[string]string{
			"1.30.0": "supported;deprecated@" + at(t0.Add(time.Hour)),
			"1.31.0": "preview;supported@" + at(t0.Add(2*time.Hour)),
		})
	})
	// The first status writes and the sync's own status settle: the counts
	// stand still for 1.5 s (at most 10 s are waited for that).
	before := reconcileCounts(g)
	for settle := time.Now().Add(10 * time.Second); time.Now().Before(settle); {
		time.Sleep(1500 * time.Millisecond)
		now := reconcileCounts(g)
		if maps.Equal(now, before) {
			break
		}
		before = now
	}
	counter.reset()

	const idle = 4 * time.Second // four rechecks
	time.Sleep(idle)
	after := reconcileCounts(g)
	for controller, n := range after {
		g.Expect(n-before[controller]).To(BeZero(), "reconciles of %s in %s between transitions", controller, idle)
	}
	g.Expect(statusWrites(counter)).To(BeEmpty(), "no status write")
	figures(t, "idle %s between transitions, recheck 1s: reconciles %v, status writes %v", idle,
		map[string]float64{"cloudprofile": after["cloudprofile"] - before["cloudprofile"],
			"namespacedcloudprofile": after["namespacedcloudprofile"] - before["namespacedcloudprofile"],
			"profilesync":            after["profilesync"] - before["profilesync"]}, statusWrites(counter))
}
