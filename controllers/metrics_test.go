package controllers

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/fluxcd/pkg/apis/meta"
	"github.com/fluxcd/pkg/runtime/conditions"
	. "github.com/onsi/gomega"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	dto "github.com/prometheus/client_model/go"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1alpha1 "github.com/profilesync/profilesync/api/v1alpha1"
)

// series are the series of the metric family name in registry whose labels
// include want (a label wanted with the value "" matches a series without
// it), with their value: a gauge's or counter's value, a histogram's count.
func series(g Gomega, registry prometheus.Gatherer, name string, want map[string]string) map[string]float64 {
	families, err := registry.Gather()
	g.Expect(err).NotTo(HaveOccurred())
	found := map[string]float64{}
	for _, family := range families {
		if family.GetName() != name {
			continue
		}
		for _, m := range family.GetMetric() {
			if !hasLabels(m, want) {
				continue
			}
			var value float64
			switch {
			case m.Gauge != nil:
				value = m.GetGauge().GetValue()
			case m.Counter != nil:
				value = m.GetCounter().GetValue()
			case m.Histogram != nil:
				value = float64(m.GetHistogram().GetSampleCount())
			}
			found[labelString(m)] = value
		}
	}
	return found
}

func hasLabels(m *dto.Metric, want map[string]string) bool {
	have := map[string]string{}
	for _, l := range m.GetLabel() {
		have[l.GetName()] = l.GetValue()
	}
	for k, v := range want {
		if have[k] != v {
			return false
		}
	}
	return true
}

func labelString(m *dto.Metric) string {
	parts := make([]string, 0, len(m.GetLabel()))
	for _, l := range m.GetLabel() {
		parts = append(parts, fmt.Sprintf("%s=%q", l.GetName(), l.GetValue()))
	}
	return "{" + strings.Join(parts, ",") + "}"
}

// value is the value of the one series of name with the labels want in the
// suite's registry.
func value(g Gomega, name string, want map[string]string) float64 {
	found := series(g, testMetrics, name, want)
	g.Expect(found).To(HaveLen(1), "one series %s%v", name, want)
	for _, v := range found {
		return v
	}
	return 0
}

// familiesWith are the profilesync_ families with prefix that have a series
// with the labels want.
func familiesWith(g Gomega, prefix string, want map[string]string) []string {
	families, err := testMetrics.Gather()
	g.Expect(err).NotTo(HaveOccurred())
	var names []string
	for _, family := range families {
		if !strings.HasPrefix(family.GetName(), prefix) {
			continue
		}
		if slices.ContainsFunc(family.GetMetric(), func(m *dto.Metric) bool { return hasLabels(m, want) }) {
			names = append(names, family.GetName())
		}
	}
	return names
}

func withLabels(base map[string]string, extra ...string) map[string]string {
	out := make(map[string]string, len(base)+len(extra)/2)
	for k, v := range base {
		out[k] = v
	}
	for i := 0; i+1 < len(extra); i += 2 {
		out[extra[i]] = extra[i+1]
	}
	return out
}

// TestSyncMetricsFollowTheSyncAndEndWithTheProfileSync walks one ProfileSync
// through a sync, a refused revision, a new revision and its deletion, and
// reads the metrics after each.
func TestSyncMetricsFollowTheSyncAndEndWithTheProfileSync(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ensureNamespace(t, clusterProfilesNamespace)
	now := mustTime("2026-01-01T00:00:00Z")
	testClock.Set(t, now)
	server := startGitServer(t)
	profile := uniqueName("metrics")
	first, err := server.CreateRepo("metrics", singleProfileRepo(profile, "1.31.0"))
	g.Expect(err).NotTo(HaveOccurred())
	sync := createLandscapeSync(t, uniqueName("metrics"), server.RepoURL("metrics"), "", profile)
	waitApplied(t, sync, first)
	syncLabels := map[string]string{"namespace": sync.Namespace, "name": sync.Name}

	t.Run("a sync reports each phase, Ready, the revision and when it was applied", func(t *testing.T) {
		NewWithT(t).Eventually(func(g Gomega) {
			g.Expect(value(g, "profilesync_sync_ready", syncLabels)).To(Equal(1.0))
			g.Expect(value(g, "profilesync_sync_suspended", syncLabels)).To(Equal(0.0))
			g.Expect(series(g, testMetrics, "profilesync_sync_applied_revision_info", syncLabels)).To(Equal(map[string]float64{
				fmt.Sprintf(`{name=%q,namespace=%q,revision="main@sha1:%s"}`, sync.Name, sync.Namespace, first): 1,
			}))
			g.Expect(value(g, "profilesync_sync_last_applied_timestamp_seconds", syncLabels)).To(Equal(float64(now.Unix())))
			for _, phase := range []string{phaseFetch, phaseRollout, phaseBuild, phaseValidate, phaseHold, phaseApply, phasePrune, phaseStatus} {
				g.Expect(value(g, "profilesync_sync_duration_seconds", withLabels(syncLabels, "phase", phase))).To(BeNumerically(">=", 1), phase)
			}
			g.Expect(series(g, testMetrics, "profilesync_sync_duration_seconds", withLabels(syncLabels, "phase", phaseRecord))).To(BeEmpty(), "no record pushed without spec.rollout.record")
			// A counter for every reason, at zero until a refusal.
			g.Expect(series(g, testMetrics, "profilesync_sync_revisions_refused_total", syncLabels)).To(
				And(HaveLen(len(refusalReasons)), HaveEach(0.0)))
			// The profile it applied, with its status controller's count.
			cpLabels := map[string]string{"kind": v1alpha1.CloudProfileKind, "namespace": "", "name": profile}
			g.Expect(value(g, "profilesync_profile_versions", withLabels(cpLabels, "versions", "kubernetes", "classification", "supported"))).To(Equal(1.0))
			g.Expect(series(g, testMetrics, "profilesync_profile_next_transition_timestamp_seconds", cpLabels)).To(BeEmpty(), "no transition scheduled")
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
			g.Expect(value(g, "profilesync_sync_revisions_refused_total", withLabels(syncLabels, "reason", v1alpha1.ValidationFailedReason))).To(Equal(1.0))
			g.Expect(value(g, "profilesync_sync_ready", syncLabels)).To(Equal(0.0))
			g.Expect(series(g, testMetrics, "profilesync_sync_applied_revision_info", withLabels(syncLabels, "revision", "main@sha1:"+first))).To(HaveLen(1))
		}).WithTimeout(15 * time.Second).Should(Succeed())
		g.Expect(value(g, "profilesync_sync_revisions_refused_total", withLabels(syncLabels, "reason", v1alpha1.FetchFailedReason))).To(Equal(0.0))
	})

	t.Run("a new revision replaces the revision series", func(t *testing.T) {
		g := NewWithT(t)
		fixed, err := server.Commit("metrics", singleProfileRepo(profile, "1.31.1"), "fixed")
		g.Expect(err).NotTo(HaveOccurred())
		requestSync(t, sync, "fixed")
		waitApplied(t, sync, fixed)
		g.Eventually(func(g Gomega) {
			g.Expect(series(g, testMetrics, "profilesync_sync_applied_revision_info", syncLabels)).To(Equal(map[string]float64{
				fmt.Sprintf(`{name=%q,namespace=%q,revision="main@sha1:%s"}`, sync.Name, sync.Namespace, fixed): 1,
			}))
			g.Expect(value(g, "profilesync_sync_ready", syncLabels)).To(Equal(1.0))
		}).WithTimeout(15 * time.Second).Should(Succeed())
	})

	t.Run("deleting the ProfileSync and its profile ends their series", func(t *testing.T) {
		g := NewWithT(t)
		g.Expect(k8sClient.Delete(ctx, sync)).To(Succeed())
		g.Eventually(func(g Gomega) {
			g.Expect(familiesWith(g, "profilesync_sync_", syncLabels)).To(BeEmpty())
		}).WithTimeout(15 * time.Second).Should(Succeed())
		cpLabels := map[string]string{"kind": v1alpha1.CloudProfileKind, "name": profile}
		g.Expect(familiesWith(g, "profilesync_profile_", cpLabels)).NotTo(BeEmpty(), "deleting a ProfileSync leaves its profiles")
		g.Expect(k8sClient.Delete(ctx, &v1alpha1.CloudProfile{ObjectMeta: metav1.ObjectMeta{Name: profile}})).To(Succeed())
		g.Eventually(func(g Gomega) {
			g.Expect(familiesWith(g, "profilesync_profile_", cpLabels)).To(BeEmpty())
		}).WithTimeout(15 * time.Second).Should(Succeed())
	})
}

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
	testClock.Set(t, mustTime("2024-12-03T00:00:00Z"))
	parent := gep32Profile()
	createProfile(t, parent)
	ncp := gep32Override(parent.Name)
	createProfile(t, ncp)
	cpLabels := map[string]string{"kind": v1alpha1.CloudProfileKind, "namespace": "", "name": parent.Name}
	ncpLabels := map[string]string{"kind": v1alpha1.NamespacedCloudProfileKind, "namespace": ncp.Namespace, "name": ncp.Name}
	versions := func(g Gomega, labels map[string]string, kind string) map[string]float64 {
		counts := map[string]float64{}
		for _, c := range metricClassifications {
			counts[string(c)] = value(g, "profilesync_profile_versions", withLabels(labels, "versions", kind, "classification", string(c)))
		}
		return counts
	}
	march := mustTime("2025-03-01T00:00:00Z")

	g.Eventually(func(g Gomega) {
		// 1.30.6, 1.27.0 and 1.28.0 supported, 1.18.0 expired, 2.0.0 not yet available.
		g.Expect(versions(g, cpLabels, versionsKubernetes)).To(Equal(map[string]float64{
			"unavailable": 1, "preview": 0, "supported": 3, "deprecated": 0, "expired": 1,
		}))
		g.Expect(versions(g, cpLabels, versionsMachineImage)).To(Equal(map[string]float64{
			"unavailable": 0, "preview": 0, "supported": 1, "deprecated": 0, "expired": 0,
		}))
		// The override postpones 1.28.0's support: still in preview there.
		g.Expect(versions(g, ncpLabels, versionsKubernetes)).To(Equal(map[string]float64{
			"unavailable": 1, "preview": 1, "supported": 2, "deprecated": 0, "expired": 1,
		}))
		for _, labels := range []map[string]string{cpLabels, ncpLabels} {
			g.Expect(value(g, "profilesync_profile_next_transition_timestamp_seconds", labels)).To(Equal(float64(march.Unix())))
			g.Expect(value(g, "profilesync_profile_seconds_until_next_transition", labels)).To(Equal(march.Sub(mustTime("2024-12-03T00:00:00Z")).Seconds()))
		}
	}).WithTimeout(15 * time.Second).Should(Succeed())

	// The controllers sleep until the next transition on the real clock, so
	// moving the test clock wakes nobody: the seconds move at the scrape alone.
	testClock.Set(t, march.Add(-time.Hour))
	g.Expect(value(g, "profilesync_profile_seconds_until_next_transition", cpLabels)).To(Equal(3600.0))
	testClock.Set(t, march.Add(2*time.Minute))
	g.Expect(value(g, "profilesync_profile_seconds_until_next_transition", cpLabels)).To(Equal(-120.0))
	g.Expect(value(g, "profilesync_profile_next_transition_timestamp_seconds", cpLabels)).To(Equal(float64(march.Unix())), "the status is overdue")

	requestProfileReconcile(t, parent, "catch-up")
	april := mustTime("2025-04-01T00:00:00Z")
	g.Eventually(func(g Gomega) {
		g.Expect(versions(g, cpLabels, versionsKubernetes)).To(HaveKeyWithValue("deprecated", 1.0))
		g.Expect(value(g, "profilesync_profile_next_transition_timestamp_seconds", cpLabels)).To(Equal(float64(april.Unix())))
		g.Expect(value(g, "profilesync_profile_seconds_until_next_transition", cpLabels)).To(Equal(april.Sub(march.Add(2 * time.Minute)).Seconds()))
	}).WithTimeout(15 * time.Second).Should(Succeed())

	g.Expect(k8sClient.Delete(ctx, ncp)).To(Succeed())
	g.Eventually(func(g Gomega) {
		g.Expect(familiesWith(g, "profilesync_profile_", ncpLabels)).To(BeEmpty())
	}).WithTimeout(15 * time.Second).Should(Succeed())
	g.Expect(familiesWith(g, "profilesync_profile_", cpLabels)).NotTo(BeEmpty())
	g.Expect(k8sClient.Delete(ctx, parent)).To(Succeed())
	g.Eventually(func(g Gomega) {
		g.Expect(familiesWith(g, "profilesync_profile_", cpLabels)).To(BeEmpty())
	}).WithTimeout(15 * time.Second).Should(Succeed())
}

// everyMetric is a registry with a Metrics that has reported something
// for every one of its metrics.
func everyMetric(t *testing.T) (*prometheus.Registry, *Metrics) {
	t.Helper()
	m := NewMetrics(clocktesting.NewFakePassiveClock(mustTime("2025-01-01T00:00:00Z")))
	registry := prometheus.NewPedanticRegistry()
	if err := registry.Register(m); err != nil {
		t.Fatalf("register metrics: %v", err)
	}
	sync := &v1alpha1.ProfileSync{
		ObjectMeta: metav1.ObjectMeta{Namespace: "landscape", Name: "dev"},
		Status: v1alpha1.ProfileSyncStatus{LastAppliedRevision: "main@sha1:0123", Holds: []v1alpha1.ObjectHold{{
			InventoryEntry: v1alpha1.InventoryEntry{Kind: v1alpha1.CloudProfileKind, Name: "aws"},
			Until:          metav1.NewTime(mustTime("2025-01-02T00:00:00Z")),
		}}},
	}
	m.observeDrift(sync, 1)
	timer := m.startSync(sync)
	timer.start(phaseFetch)
	timer.finish()
	m.appliedRevision(sync)
	m.refusedRevision(sync, v1alpha1.FetchFailedReason)
	m.promoted(sync, v1alpha1.PromotedReason)
	m.observeWaiting(sync, "0123456789abcdef0123456789abcdef01234567")
	soak := time.Hour
	m.observeSoak(sync, &soak)
	m.observeRecordPush(sync, 2)
	m.observeRefusedHolds(sync, 1)
	m.observeProfile(v1alpha1.CloudProfileKind, &v1alpha1.CloudProfile{ObjectMeta: metav1.ObjectMeta{Name: "aws"}},
		&v1alpha1.ProfileVersionsStatus{NextTransitionTime: timeP("2025-03-01T00:00:00Z")})
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
	m.forgetSync(types.NamespacedName{Namespace: "landscape", Name: "dev"})
	m.forgetProfile(v1alpha1.CloudProfileKind, types.NamespacedName{Name: "aws"})
	families, err := registry.Gather()
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(families).To(BeEmpty())
}

func TestANilMetricsRecordsNothing(t *testing.T) {
	var m *Metrics
	sync := &v1alpha1.ProfileSync{ObjectMeta: metav1.ObjectMeta{Namespace: "landscape", Name: "dev"}}
	timer := m.startSync(sync)
	NewWithT(t).Expect(timer).To(BeNil())
	timer.start(phaseFetch)
	timer.finish()
	m.appliedRevision(sync)
	m.refusedRevision(sync, v1alpha1.FetchFailedReason)
	m.observeDrift(sync, 1)
	m.observeSoak(sync, nil)
	m.observeRecordPush(sync, 1)
	m.observeRefusedHolds(sync, 1)
	m.observeProfile(v1alpha1.CloudProfileKind, &v1alpha1.CloudProfile{}, &v1alpha1.ProfileVersionsStatus{})
	m.forgetProfile(v1alpha1.CloudProfileKind, types.NamespacedName{})
	m.forgetSync(types.NamespacedName{})
}

func TestEachPhaseIsObservedOnceWithItsTotal(t *testing.T) {
	g := NewWithT(t)
	m := NewMetrics(clocktesting.NewFakePassiveClock(time.Time{}))
	stopwatch := clocktesting.NewFakePassiveClock(mustTime("2025-01-01T00:00:00Z"))
	m.stopwatch = stopwatch
	registry := prometheus.NewRegistry()
	g.Expect(registry.Register(m)).To(Succeed())
	sync := &v1alpha1.ProfileSync{ObjectMeta: metav1.ObjectMeta{Namespace: "landscape", Name: "dev"}}
	timer := m.startSync(sync)
	for _, step := range []struct {
		phase string
		takes time.Duration
	}{{phaseFetch, 2 * time.Second}, {phaseValidate, time.Second}, {phaseBuild, 4 * time.Second}, {phaseValidate, time.Second}} {
		timer.start(step.phase)
		stopwatch.SetTime(stopwatch.Now().Add(step.takes))
	}
	timer.finish()
	for phase, want := range map[string]float64{phaseFetch: 2, phaseBuild: 4, phaseValidate: 2} {
		h := series(g, registry, "profilesync_sync_duration_seconds", map[string]string{"phase": phase})
		g.Expect(h).To(HaveLen(1))
		g.Expect(h).To(HaveEach(1.0), "%s observed once", phase)
		g.Expect(histogramSum(g, registry, phase)).To(Equal(want), phase)
	}
	g.Expect(series(g, registry, "profilesync_sync_duration_seconds", map[string]string{"phase": phaseApply})).To(BeEmpty(), "a phase not run is not observed")
}

func histogramSum(g Gomega, registry prometheus.Gatherer, phase string) float64 {
	families, err := registry.Gather()
	g.Expect(err).NotTo(HaveOccurred())
	for _, f := range families {
		for _, m := range f.GetMetric() {
			if f.GetName() == "profilesync_sync_duration_seconds" && hasLabels(m, map[string]string{"phase": phase}) {
				return m.GetHistogram().GetSampleSum()
			}
		}
	}
	return -1
}
