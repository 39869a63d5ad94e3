package profilestatus

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1alpha1 "github.com/profilesync/profilesync/api/v1alpha1"
	"github.com/profilesync/profilesync/test/builders"
	"github.com/profilesync/profilesync/test/testenv"
)

func TestRequeueAfterIsTheWayToTheTransitionExactly(t *testing.T) {
	now := builders.Time("2025-01-10T12:00:00Z")
	at := func(s string) *v1alpha1.ProfileVersionsStatus {
		return &v1alpha1.ProfileVersionsStatus{NextTransitionTime: builders.Date(s)}
	}
	rows := []struct {
		name   string
		status *v1alpha1.ProfileVersionsStatus
		want   time.Duration
	}{
		{"a transition is waited for exactly", at("2025-01-10T12:01:30Z"), 90 * time.Second},
		{"a transition months away too: nothing polls in between", at("2025-03-01T00:00:00Z"), builders.Time("2025-03-01T00:00:00Z").Sub(now)},
		{"no transition, no requeue: a clock step cannot change anything", &v1alpha1.ProfileVersionsStatus{}, 0},
	}
	for _, row := range rows {
		t.Run(row.name, func(t *testing.T) {
			NewWithT(t).Expect(requeueAfter(row.status, now)).To(Equal(row.want))
		})
	}
}

func TestTheWakeUpIsAtTheTransitionNotAfterTheWrite(t *testing.T) {
	rows := []struct {
		name              string
		wait, spent, want time.Duration
	}{
		{"the time the reconcile spent is taken off", 90 * time.Second, 40 * time.Millisecond, 90*time.Second - 40*time.Millisecond},
		{"a wait the reconcile used up wakes at once", 10 * time.Millisecond, 40 * time.Millisecond, time.Nanosecond},
		{"no wait stays none", 0, 40 * time.Millisecond, 0},
		{"a clock that went back while reconciling lengthens the wait", time.Minute, -time.Second, time.Minute + time.Second},
	}
	for _, row := range rows {
		t.Run(row.name, func(t *testing.T) {
			NewWithT(t).Expect(exactWake(row.wait, row.spent)).To(Equal(row.want))
		})
	}
}

func TestAStatusIsOverdueOnlyWhenTheWallClockPassedItsTransition(t *testing.T) {
	next := builders.Date("2025-01-10T12:00:00Z")
	rows := []struct {
		name    string
		next    *metav1.Time
		wallNow time.Time
		want    bool
	}{
		{"before the transition: its wake-up is to come", next, next.Add(-time.Hour), false},
		{"at the transition: its wake-up is in hand", next, next.Time, false},
		{"just within the grace: still in hand", next, next.Add(overdueGrace - time.Nanosecond), false},
		{"past the grace: the wall clock stepped past it", next, next.Add(overdueGrace), true},
		{"hours past it", next, next.Add(3 * time.Hour), true},
		{"no transition scheduled: nothing to be late for", nil, next.Add(3 * time.Hour), false},
	}
	for _, row := range rows {
		t.Run(row.name, func(t *testing.T) {
			NewWithT(t).Expect(overdue(row.next, row.wallNow)).To(Equal(row.want))
		})
	}
}

func TestStatusTimesNeverGoBackPerProfile(t *testing.T) {
	g := NewWithT(t)
	var times statusTimes
	a, b := types.NamespacedName{Name: "a"}, types.NamespacedName{Name: "b"}
	t0 := builders.Time("2025-01-10T12:00:00Z")

	g.Expect(times.at(a, t0)).To(Equal(t0))
	g.Expect(times.at(a, t0.Add(-time.Hour))).To(Equal(t0), "the clock stepped back: the status keeps its time")
	g.Expect(times.at(b, t0.Add(-time.Hour))).To(Equal(t0.Add(-time.Hour)), "each profile has its own")
	g.Expect(times.at(a, t0.Add(time.Minute))).To(Equal(t0.Add(time.Minute)), "forward is followed")
	times.forget(a)
	g.Expect(times.at(a, t0.Add(-time.Hour))).To(Equal(t0.Add(-time.Hour)), "a deleted profile starts anew")
}

// TestCloudProfileStatusDoesNotGoBackWithTheClock: the clock steps back an
// hour across a transition the status already shows. The version stays
// deprecated, nothing is written and no event is emitted; the wake-up is
// recomputed on the clock that stepped back. A spec change still applies.
func TestCloudProfileStatusDoesNotGoBackWithTheClock(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	deprecation := builders.Time("2025-03-01T00:00:00Z")
	expiry := builders.Time("2025-04-01T00:00:00Z")
	testClock.Set(t, deprecation.Add(time.Hour))
	cp := gep32Profile()
	createProfile(t, cp)
	reconciler, events := directCloudProfileReconciler()
	req := ctrl.Request{NamespacedName: client.ObjectKeyFromObject(cp)}
	_, err := reconciler.Reconcile(ctx, req)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(builders.KubernetesClassifications(testenv.GetCloudProfile(g, k8sClient, cp.Name).Status.ProfileVersionsStatus)["1.30.6"]).
		To(Equal(v1alpha1.ClassificationDeprecated))
	testenv.DrainEvents(events)
	// Let the manager's own reconcile of the create settle as well.
	g.Eventually(func(g Gomega) {
		g.Expect(testenv.GetCloudProfile(g, k8sClient, cp.Name).Status.ObservedGeneration).To(Equal(int64(1)))
	}).WithTimeout(10 * time.Second).Should(Succeed())
	before := testenv.GetCloudProfile(g, k8sClient, cp.Name).ResourceVersion

	stepped := deprecation.Add(-time.Hour)
	testClock.Set(t, stepped)
	result, err := reconciler.Reconcile(ctx, req)
	g.Expect(err).NotTo(HaveOccurred())
	got := testenv.GetCloudProfile(g, k8sClient, cp.Name)
	g.Expect(builders.KubernetesClassifications(got.Status.ProfileVersionsStatus)["1.30.6"]).To(Equal(v1alpha1.ClassificationDeprecated))
	g.Expect(got.ResourceVersion).To(Equal(before), "no write")
	g.Expect(testenv.DrainEvents(events)).To(BeEmpty(), "no event")
	g.Expect(result.RequeueAfter).To(Equal(expiry.Sub(stepped)), "the wait for the expiry, measured on the clock that stepped back")

	// Postponing the deprecation in the spec still takes it back (the
	// manager's reconciler may get there first; either computes the same).
	testenv.UpdateSpec(t, k8sClient, got, func(cp *v1alpha1.CloudProfile) {
		cp.Spec.Kubernetes.Versions[0].Lifecycle[2].StartTime = builders.Date("2025-03-15T00:00:00Z")
	})
	_, err = reconciler.Reconcile(ctx, req)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(builders.KubernetesClassifications(testenv.GetCloudProfile(g, k8sClient, cp.Name).Status.ProfileVersionsStatus)["1.30.6"]).
		To(Equal(v1alpha1.ClassificationSupported))
}
