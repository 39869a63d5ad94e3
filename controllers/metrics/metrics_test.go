package metrics

import (
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	clocktesting "k8s.io/utils/clock/testing"

	v1alpha1 "github.com/profilesync/profilesync/api/v1alpha1"
	"github.com/profilesync/profilesync/test/builders"
	"github.com/profilesync/profilesync/test/metricstest"
)

// everyMetric is a registry with a Metrics that has reported something
// for every one of its metrics.
func everyMetric(t *testing.T) (*prometheus.Registry, *Metrics) {
	t.Helper()
	m := New(clocktesting.NewFakePassiveClock(builders.Time("2025-01-01T00:00:00Z")), []string{v1alpha1.FetchFailedReason})
	registry := prometheus.NewPedanticRegistry()
	if err := registry.Register(m); err != nil {
		t.Fatalf("register metrics: %v", err)
	}
	sync := &v1alpha1.ProfileSync{
		ObjectMeta: metav1.ObjectMeta{Namespace: "landscape", Name: "dev"},
		Status: v1alpha1.ProfileSyncStatus{LastAppliedRevision: "main@sha1:0123", Holds: []v1alpha1.ObjectHold{{
			InventoryEntry: v1alpha1.InventoryEntry{Kind: v1alpha1.CloudProfileKind, Name: "aws"},
			Until:          metav1.NewTime(builders.Time("2025-01-02T00:00:00Z")),
		}}},
	}
	m.ObserveDrift(sync, 1)
	timer := m.StartSync(sync)
	timer.Start(PhaseFetch)
	timer.Finish()
	m.AppliedRevision(sync)
	m.RefusedRevision(sync, v1alpha1.FetchFailedReason)
	m.Promoted(sync, v1alpha1.PromotedReason)
	m.ObserveWaiting(sync, "0123456789abcdef0123456789abcdef01234567")
	soak := time.Hour
	m.ObserveSoak(sync, &soak)
	m.ObserveRecordPush(sync, 2)
	m.ObserveRefusedHolds(sync, 1)
	m.ObserveProfile(v1alpha1.CloudProfileKind, &v1alpha1.CloudProfile{ObjectMeta: metav1.ObjectMeta{Name: "aws"}},
		&v1alpha1.ProfileVersionsStatus{NextTransitionTime: builders.Date("2025-03-01T00:00:00Z")})
	return registry, m
}

func TestMetricsAreNamedAndDescribedByTheConventions(t *testing.T) {
	g := NewWithT(t)
	registry, m := everyMetric(t)
	descs := make(chan *prometheus.Desc, 100)
	m.Describe(descs)
	close(descs)
	families, err := registry.Gather()
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(families).To(HaveLen(len(descs)), "everyMetric reports every metric Metrics describes")
	for _, f := range families {
		g.Expect(f.GetName()).To(HavePrefix("profilesync_"))
		g.Expect(f.GetHelp()).NotTo(BeEmpty(), f.GetName())
	}
	problems, err := testutil.GatherAndLint(registry)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(problems).To(BeEmpty())
}

func TestDeletedObjectsLeaveNoSeries(t *testing.T) {
	g := NewWithT(t)
	registry, m := everyMetric(t)
	m.ForgetSync(types.NamespacedName{Namespace: "landscape", Name: "dev"})
	m.ForgetProfile(v1alpha1.CloudProfileKind, types.NamespacedName{Name: "aws"})
	families, err := registry.Gather()
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(families).To(BeEmpty())
}

func TestANilMetricsRecordsNothing(t *testing.T) {
	var m *Metrics
	sync := &v1alpha1.ProfileSync{ObjectMeta: metav1.ObjectMeta{Namespace: "landscape", Name: "dev"}}
	timer := m.StartSync(sync)
	NewWithT(t).Expect(timer).To(BeNil())
	timer.Start(PhaseFetch)
	timer.Finish()
	m.AppliedRevision(sync)
	m.RefusedRevision(sync, v1alpha1.FetchFailedReason)
	m.ObserveDrift(sync, 1)
	m.ObserveSoak(sync, nil)
	m.ObserveRecordPush(sync, 1)
	m.ObserveRefusedHolds(sync, 1)
	m.ObserveProfile(v1alpha1.CloudProfileKind, &v1alpha1.CloudProfile{}, &v1alpha1.ProfileVersionsStatus{})
	m.ForgetProfile(v1alpha1.CloudProfileKind, types.NamespacedName{})
	m.ForgetSync(types.NamespacedName{})
}

func TestEachPhaseIsObservedOnceWithItsTotal(t *testing.T) {
	g := NewWithT(t)
	m := New(clocktesting.NewFakePassiveClock(time.Time{}), nil)
	stopwatch := clocktesting.NewFakePassiveClock(builders.Time("2025-01-01T00:00:00Z"))
	m.stopwatch = stopwatch
	registry := prometheus.NewRegistry()
	g.Expect(registry.Register(m)).To(Succeed())
	sync := &v1alpha1.ProfileSync{ObjectMeta: metav1.ObjectMeta{Namespace: "landscape", Name: "dev"}}
	timer := m.StartSync(sync)
	for _, step := range []struct {
		phase string
		takes time.Duration
	}{{PhaseFetch, 2 * time.Second}, {PhaseValidate, time.Second}, {PhaseBuild, 4 * time.Second}, {PhaseValidate, time.Second}} {
		timer.Start(step.phase)
		stopwatch.SetTime(stopwatch.Now().Add(step.takes))
	}
	timer.Finish()
	for phase, want := range map[string]float64{PhaseFetch: 2, PhaseBuild: 4, PhaseValidate: 2} {
		h := metricstest.Series(g, registry, "profilesync_sync_duration_seconds", map[string]string{"phase": phase})
		g.Expect(h).To(HaveLen(1))
		g.Expect(h).To(HaveEach(1.0), "%s observed once", phase)
		g.Expect(histogramSum(g, registry, phase)).To(Equal(want), phase)
	}
	g.Expect(metricstest.Series(g, registry, "profilesync_sync_duration_seconds", map[string]string{"phase": PhaseApply})).To(BeEmpty(), "a phase not run is not observed")
}

func histogramSum(g Gomega, registry prometheus.Gatherer, phase string) float64 {
	families, err := registry.Gather()
	g.Expect(err).NotTo(HaveOccurred())
	for _, f := range families {
		for _, m := range f.GetMetric() {
			if f.GetName() == "profilesync_sync_duration_seconds" && metricstest.HasLabels(m, map[string]string{"phase": phase}) {
				return m.GetHistogram().GetSampleSum()
			}
		}
	}
	return -1
}
