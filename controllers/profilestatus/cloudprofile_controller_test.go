package profilestatus

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/fluxcd/pkg/runtime/conditions"
	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clocktesting "k8s.io/utils/clock/testing"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1alpha1 "github.com/profilesync/profilesync/api/v1alpha1"
	"github.com/profilesync/profilesync/controllers/statuspatch"
	"github.com/profilesync/profilesync/test/builders"
	"github.com/profilesync/profilesync/test/testenv"
)

// The shared builders of times and lifecycles, by the names this package's
// tests use.
var (
	stage = builders.Stage
)

// gep32Profile is GEP-32's example profile (its status at 2024-12-03 is
// stated there), plus one machine image.
func gep32Profile() *v1alpha1.CloudProfile {
	return &v1alpha1.CloudProfile{
		ObjectMeta: metav1.ObjectMeta{Name: testenv.UniqueName("gep32")},
		Spec: builders.WithRequiredLists(v1alpha1.CloudProfileSpec{
			Type:       "local",
			Kubernetes: v1alpha1.KubernetesSettings{Versions: builders.GEP32KubernetesVersions()},
			MachineImages: []v1alpha1.MachineImage{{
				Name: "gardenlinux",
				Versions: []v1alpha1.MachineImageVersion{{ExpirableVersion: v1alpha1.ExpirableVersion{
					Version: "1592.1.0",
					Lifecycle: []v1alpha1.LifecycleStage{
						stage(v1alpha1.ClassificationSupported, ""),
						stage(v1alpha1.ClassificationDeprecated, "2025-06-01T00:00:00Z"),
					},
				}}},
			}},
		}),
	}
}

func createProfile(t *testing.T, obj client.Object) {
	t.Helper()
	ctx := context.Background()
	NewWithT(t).Expect(k8sClient.Create(ctx, obj)).To(Succeed())
	t.Cleanup(func() { _ = k8sClient.Delete(ctx, obj) })
}

func TestCloudProfileStatusShowsTheClassificationsOfNow(t *testing.T) {
	g := NewWithT(t)
	testClock.Set(t, builders.Time("2024-12-03T00:00:00Z"))
	cp := gep32Profile()
	createProfile(t, cp)

	g.Eventually(func(g Gomega) {
		got := testenv.GetCloudProfile(g, k8sClient, cp.Name)
		g.Expect(conditions.IsReady(got)).To(BeTrue())
		g.Expect(got.Status.ObservedGeneration).To(Equal(got.Generation))
		g.Expect(builders.KubernetesClassifications(got.Status.ProfileVersionsStatus)).To(Equal(map[string]v1alpha1.VersionClassification{
			"1.30.6": v1alpha1.ClassificationSupported,
			"1.27.0": v1alpha1.ClassificationSupported,
			"1.28.0": v1alpha1.ClassificationSupported,
			"1.18.0": v1alpha1.ClassificationExpired,
			"2.0.0":  v1alpha1.ClassificationUnavailable,
		}))
		g.Expect(got.Status.NextTransitionTime).NotTo(BeNil())
		g.Expect(got.Status.NextTransitionTime.Time).To(BeTemporally("==", builders.Time("2025-03-01T00:00:00Z")))
		g.Expect(conditions.GetMessage(got, v1alpha1.ReadyCondition)).To(Equal(
			"6 versions: 4 supported, 1 expired, 1 unavailable; next: 1.30.6 → deprecated at 2025-03-01T00:00:00Z"))
	}).WithTimeout(10 * time.Second).Should(Succeed())
}

func TestCloudProfileStatusFlipsAtTheExactStartTime(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	testClock.Set(t, builders.Time("2024-12-03T00:00:00Z"))
	cp := gep32Profile()
	createProfile(t, cp)
	// The suite's manager reconciles the new profile once, at the suite's
	// time, and not again: its next wake-up is months away, and status
	// writes change no generation. The direct reconciler runs on a clock of
	// its own once that write is done, so the two never race for the status.
	g.Eventually(func(g Gomega) {
		g.Expect(conditions.IsReady(testenv.GetCloudProfile(g, k8sClient, cp.Name))).To(BeTrue())
	}).Should(Succeed())
	reconciler, events := directCloudProfileReconciler()
	ownClock := clocktesting.NewFakePassiveClock(time.Time{})
	reconciler.Clock = ownClock
	req := ctrl.Request{NamespacedName: client.ObjectKeyFromObject(cp)}

	deprecation := builders.Time("2025-03-01T00:00:00Z")
	ownClock.SetTime(deprecation.Add(-time.Nanosecond))
	_, err := reconciler.Reconcile(ctx, req)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(builders.KubernetesClassifications(testenv.GetCloudProfile(g, k8sClient, cp.Name).Status.ProfileVersionsStatus)["1.30.6"]).
		To(Equal(v1alpha1.ClassificationSupported))

	ownClock.SetTime(deprecation)
	result, err := reconciler.Reconcile(ctx, req)
	g.Expect(err).NotTo(HaveOccurred())
	got := testenv.GetCloudProfile(g, k8sClient, cp.Name)
	g.Expect(builders.KubernetesClassifications(got.Status.ProfileVersionsStatus)["1.30.6"]).To(Equal(v1alpha1.ClassificationDeprecated))
	// The next wake-up is the expiry of 1.30.6, a month later.
	g.Expect(result.RequeueAfter).To(Equal(builders.Time("2025-04-01T00:00:00Z").Sub(deprecation)))

	g.Expect(testenv.DrainEvents(events)).To(ContainElement("Normal ClassificationChanged 1.30.6: supported → deprecated"))
}

func TestCloudProfileRequeuesAtTheNextTransition(t *testing.T) {
	now := builders.Time("2025-01-10T12:00:00Z")
	rows := []struct {
		name     string
		versions []v1alpha1.ExpirableVersion
		images   []v1alpha1.MachineImage
		want     time.Duration
	}{
		{
			name: "a stage starting in 90 minutes wakes the controller in 90 minutes",
			versions: []v1alpha1.ExpirableVersion{{Version: "1.31.0", Lifecycle: []v1alpha1.LifecycleStage{
				stage(v1alpha1.ClassificationPreview, ""),
				stage(v1alpha1.ClassificationSupported, "2025-01-10T13:30:00Z"),
			}}},
			want: 90 * time.Minute,
		},
		{
			name:     "a profile with no future stage does not requeue",
			versions: []v1alpha1.ExpirableVersion{{Version: "1.31.0"}},
			want:     0,
		},
		{
			name: "a deprecated-API expiration date is a transition",
			versions: []v1alpha1.ExpirableVersion{
				{Version: "1.30.0", ExpirationDate: builders.Date("2025-01-10T13:00:00Z")},
				{Version: "1.31.0"},
			},
			want: time.Hour,
		},
		{
			name: "the earliest transition over Kubernetes and image versions wins",
			versions: []v1alpha1.ExpirableVersion{{Version: "1.31.0", Lifecycle: []v1alpha1.LifecycleStage{
				stage(v1alpha1.ClassificationSupported, ""),
				stage(v1alpha1.ClassificationDeprecated, "2025-02-01T00:00:00Z"),
			}}},
			images: []v1alpha1.MachineImage{{Name: "ubuntu", Versions: []v1alpha1.MachineImageVersion{
				{ExpirableVersion: v1alpha1.ExpirableVersion{Version: "24.4", Lifecycle: []v1alpha1.LifecycleStage{
					stage(v1alpha1.ClassificationSupported, ""),
					stage(v1alpha1.ClassificationExpired, "2025-01-10T12:00:01Z"),
				}}},
			}}},
			want: time.Second,
		},
		{
			name: "a stage that started exactly now is current, not next",
			versions: []v1alpha1.ExpirableVersion{{Version: "1.31.0", Lifecycle: []v1alpha1.LifecycleStage{
				stage(v1alpha1.ClassificationPreview, ""),
				stage(v1alpha1.ClassificationSupported, "2025-01-10T12:00:00Z"),
				stage(v1alpha1.ClassificationDeprecated, "2025-01-11T12:00:00Z"),
			}}},
			want: 24 * time.Hour,
		},
	}
	for _, row := range rows {
		t.Run(row.name, func(t *testing.T) {
			g := NewWithT(t)
			testClock.Set(t, now)
			cp := &v1alpha1.CloudProfile{
				ObjectMeta: metav1.ObjectMeta{Name: testenv.UniqueName("requeue")},
				Spec: builders.WithRequiredLists(v1alpha1.CloudProfileSpec{
					Type:          "local",
					Kubernetes:    v1alpha1.KubernetesSettings{Versions: row.versions},
					MachineImages: row.images,
				}),
			}
			createProfile(t, cp)
			reconciler, _ := directCloudProfileReconciler()
			result, err := reconciler.Reconcile(context.Background(), ctrl.Request{NamespacedName: client.ObjectKeyFromObject(cp)})
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(result.RequeueAfter).To(Equal(row.want))
		})
	}
}

func TestCloudProfileStatusIsNotWrittenWhenNothingChanged(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	testClock.Set(t, builders.Time("2024-12-03T00:00:00Z"))
	cp := gep32Profile()
	createProfile(t, cp)
	reconciler, _ := directCloudProfileReconciler()
	req := ctrl.Request{NamespacedName: client.ObjectKeyFromObject(cp)}
	_, err := reconciler.Reconcile(ctx, req)
	g.Expect(err).NotTo(HaveOccurred())
	// Let the manager's own reconcile of the create settle as well.
	g.Eventually(func(g Gomega) {
		g.Expect(conditions.IsReady(testenv.GetCloudProfile(g, k8sClient, cp.Name))).To(BeTrue())
	}).WithTimeout(10 * time.Second).Should(Succeed())
	before := testenv.GetCloudProfile(g, k8sClient, cp.Name).ResourceVersion

	// An hour later nothing has changed classification.
	testClock.Set(t, builders.Time("2024-12-03T01:00:00Z"))
	for range 3 {
		_, err := reconciler.Reconcile(ctx, req)
		g.Expect(err).NotTo(HaveOccurred())
	}
	g.Expect(testenv.GetCloudProfile(g, k8sClient, cp.Name).ResourceVersion).To(Equal(before))
}

func TestCloudProfileThatBreaksALifecycleRuleIsStalled(t *testing.T) {
	g := NewWithT(t)
	testClock.Set(t, builders.Time("2024-12-03T00:00:00Z"))
	// Passes CEL, but the highest Kubernetes version may not expire.
	cp := &v1alpha1.CloudProfile{
		ObjectMeta: metav1.ObjectMeta{Name: testenv.UniqueName("invalid")},
		Spec: builders.WithRequiredLists(v1alpha1.CloudProfileSpec{
			Type: "local",
			Kubernetes: v1alpha1.KubernetesSettings{Versions: []v1alpha1.ExpirableVersion{
				{Version: "1.30.0"},
				{Version: "1.31.0", ExpirationDate: builders.Date("2025-01-01T00:00:00Z")},
			}},
		}),
	}
	createProfile(t, cp)

	g.Eventually(func(g Gomega) {
		got := testenv.GetCloudProfile(g, k8sClient, cp.Name)
		g.Expect(conditions.IsFalse(got, v1alpha1.ReadyCondition)).To(BeTrue())
		g.Expect(conditions.GetReason(got, v1alpha1.ReadyCondition)).To(Equal(v1alpha1.ValidationFailedReason))
		g.Expect(conditions.IsStalled(got)).To(BeTrue())
		g.Expect(conditions.GetMessage(got, v1alpha1.ReadyCondition)).To(ContainSubstring("spec.kubernetes.versions[1] (1.31.0).expirationDate"))
		g.Expect(got.Status.Kubernetes).To(BeNil())
		g.Expect(got.Status.ObservedGeneration).To(Equal(got.Generation))
	}).WithTimeout(10 * time.Second).Should(Succeed())

	// Fixing the spec recovers without anything else.
	testenv.UpdateSpec(t, k8sClient, cp.DeepCopy(), func(cp *v1alpha1.CloudProfile) {
		cp.Spec.Kubernetes.Versions[1].ExpirationDate = nil
	})
	g.Eventually(func(g Gomega) {
		got := testenv.GetCloudProfile(g, k8sClient, cp.Name)
		g.Expect(conditions.IsReady(got)).To(BeTrue())
		g.Expect(conditions.Has(got, v1alpha1.StalledCondition)).To(BeFalse())
	}).WithTimeout(10 * time.Second).Should(Succeed())
}

// TestProfileControllersWriteOnlyStatus reads managedFields: the status field
// manager owns status fields and nothing of spec.
func TestProfileControllersWriteOnlyStatus(t *testing.T) {
	g := NewWithT(t)
	testClock.Set(t, builders.Time("2024-12-03T00:00:00Z"))
	cp := gep32Profile()
	createProfile(t, cp)
	g.Eventually(func(g Gomega) {
		got := testenv.GetCloudProfile(g, k8sClient, cp.Name)
		g.Expect(conditions.IsReady(got)).To(BeTrue())
		var statusEntries int
		for _, entry := range got.ManagedFields {
			if entry.Manager != statuspatch.FieldManager {
				continue
			}
			statusEntries++
			g.Expect(entry.Subresource).To(Equal("status"))
			fields := entry.FieldsV1.GetRawString()
			g.Expect(fields).To(ContainSubstring(`"f:status"`))
			g.Expect(fields).NotTo(ContainSubstring(`"f:spec"`))
		}
		g.Expect(statusEntries).To(BeNumerically(">", 0))
	}).WithTimeout(10 * time.Second).Should(Succeed())
}

// TestCloudProfileFlipsOnTimeWithTheRealClock measures, with real time and no
// trigger but the controller's own wake-up, how late a stage shows in status.
func TestCloudProfileFlipsOnTimeWithTheRealClock(t *testing.T) {
	g := NewWithT(t)
	// Start times have one-second resolution; start at least 2 s from now.
	start := time.Now().Add(2 * time.Second).Truncate(time.Second).Add(time.Second)
	cp := &v1alpha1.CloudProfile{
		ObjectMeta: metav1.ObjectMeta{Name: testenv.UniqueName("realclock")},
		Spec: builders.WithRequiredLists(v1alpha1.CloudProfileSpec{
			Type: "local",
			Kubernetes: v1alpha1.KubernetesSettings{Versions: []v1alpha1.ExpirableVersion{
				{Version: "1.31.0", Lifecycle: []v1alpha1.LifecycleStage{
					stage(v1alpha1.ClassificationPreview, ""),
					{Classification: v1alpha1.ClassificationSupported, StartTime: &metav1.Time{Time: start}},
				}},
			}},
		}),
	}
	createProfile(t, cp)
	g.Eventually(func(g Gomega) {
		g.Expect(builders.KubernetesClassifications(testenv.GetCloudProfile(g, k8sClient, cp.Name).Status.ProfileVersionsStatus)["1.31.0"]).
			To(Equal(v1alpha1.ClassificationPreview))
	}).WithTimeout(5 * time.Second).WithPolling(20 * time.Millisecond).Should(Succeed())

	g.Eventually(func(g Gomega) {
		g.Expect(builders.KubernetesClassifications(testenv.GetCloudProfile(g, k8sClient, cp.Name).Status.ProfileVersionsStatus)["1.31.0"]).
			To(Equal(v1alpha1.ClassificationSupported))
	}).WithTimeout(10 * time.Second).WithPolling(20 * time.Millisecond).Should(Succeed())
	lateness := time.Since(start)
	t.Logf("supported stage visible %v after its start time", lateness)
	g.Expect(lateness).To(BeNumerically("<=", time.Second))
}

func TestClassificationSummaryNamesImageVersions(t *testing.T) {
	g := NewWithT(t)
	next := metav1.NewTime(builders.Time("2025-03-01T00:00:00Z"))
	deprecated := v1alpha1.ClassificationDeprecated
	st := v1alpha1.ProfileVersionsStatus{
		Kubernetes: &v1alpha1.KubernetesStatus{Versions: []v1alpha1.VersionStatus{
			{Version: "1.31.0", Classification: v1alpha1.ClassificationSupported},
		}},
		MachineImages: []v1alpha1.MachineImageStatus{{Name: "gardenlinux", Versions: []v1alpha1.VersionStatus{
			{Version: "1592.1.0", Classification: v1alpha1.ClassificationSupported, NextClassification: &deprecated, NextTransitionTime: &next},
			{Version: "1443.3.0", Classification: v1alpha1.ClassificationExpired},
		}}},
		NextTransitionTime: &next,
	}
	msg := classificationSummary(&st)
	g.Expect(msg).To(Equal("3 versions: 2 supported, 1 expired; next: gardenlinux 1592.1.0 → deprecated at 2025-03-01T00:00:00Z"))
	g.Expect(strings.Contains(classificationSummary(&v1alpha1.ProfileVersionsStatus{}), "no transition scheduled")).To(BeTrue())
}

// TestAStoredProfileIsNotStalledByARuleJudgedOnlyWhenItIsWritten: Gardener
// requires the bastion's image version to be supported when the profile is
// written, and never judges the stored profile again. When that version is
// deprecated later, the status still shows the profile's classifications.
func TestAStoredProfileIsNotStalledByARuleJudgedOnlyWhenItIsWritten(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	testClock.Set(t, builders.Time("2024-12-03T00:00:00Z"))
	deprecation := builders.Time("2099-01-01T00:00:00Z")
	bastionVersion := "24.4.0"
	spec := builders.WithRequiredLists(v1alpha1.CloudProfileSpec{
		Type:       "local",
		Kubernetes: v1alpha1.KubernetesSettings{Versions: []v1alpha1.ExpirableVersion{{Version: "1.31.0"}}},
	})
	spec.MachineImages[0].Versions[0].Lifecycle = []v1alpha1.LifecycleStage{
		stage(v1alpha1.ClassificationSupported, ""),
		stage(v1alpha1.ClassificationDeprecated, deprecation.Format(time.RFC3339)),
	}
	spec.Bastion = &v1alpha1.Bastion{MachineImage: &v1alpha1.BastionMachineImage{Name: "ubuntu", Version: &bastionVersion}}
	cp := &v1alpha1.CloudProfile{ObjectMeta: metav1.ObjectMeta{Name: testenv.UniqueName("bastion")}, Spec: spec}
	createProfile(t, cp)
	g.Eventually(func(g Gomega) {
		g.Expect(conditions.IsReady(testenv.GetCloudProfile(g, k8sClient, cp.Name))).To(BeTrue())
	}).Should(Succeed())

	reconciler, _ := directCloudProfileReconciler()
	ownClock := clocktesting.NewFakePassiveClock(deprecation.Add(time.Hour))
	reconciler.Clock = ownClock
	_, err := reconciler.Reconcile(ctx, ctrl.Request{NamespacedName: client.ObjectKeyFromObject(cp)})
	g.Expect(err).NotTo(HaveOccurred())
	got := testenv.GetCloudProfile(g, k8sClient, cp.Name)
	g.Expect(conditions.IsReady(got)).To(BeTrue(), conditions.GetMessage(got, v1alpha1.ReadyCondition))
	g.Expect(conditions.IsStalled(got)).To(BeFalse())
	g.Expect(got.Status.MachineImages).NotTo(BeEmpty())
	g.Expect(got.Status.MachineImages[0].Versions[0].Classification).To(Equal(v1alpha1.ClassificationDeprecated))
}
