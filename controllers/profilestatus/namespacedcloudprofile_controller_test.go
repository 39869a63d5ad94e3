package profilestatus

import (
	"context"
	"testing"
	"time"

	"github.com/fluxcd/pkg/runtime/conditions"
	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1alpha1 "github.com/profilesync/profilesync/api/v1alpha1"
	"github.com/profilesync/profilesync/test/builders"
	"github.com/profilesync/profilesync/test/testenv"
)

// gep32Override is GEP-32's namespaced compatibility example: it postpones
// 1.28.0's supported stage and 1.18.0's deprecation past its parent's expiry.
func gep32Override(parent string) *v1alpha1.NamespacedCloudProfile {
	return &v1alpha1.NamespacedCloudProfile{
		ObjectMeta: metav1.ObjectMeta{Name: testenv.UniqueName("ncp"), Namespace: "default"},
		Spec: v1alpha1.NamespacedCloudProfileSpec{
			Parent: v1alpha1.CloudProfileReference{Kind: v1alpha1.CloudProfileKind, Name: parent},
			Kubernetes: &v1alpha1.KubernetesSettings{Versions: []v1alpha1.ExpirableVersion{
				{Version: "1.28.0", Lifecycle: []v1alpha1.LifecycleStage{
					stage(v1alpha1.ClassificationSupported, "2025-12-01T00:00:00Z"),
				}},
				{Version: "1.18.0", Lifecycle: []v1alpha1.LifecycleStage{
					stage(v1alpha1.ClassificationSupported, "2022-01-01T00:00:00Z"),
					stage(v1alpha1.ClassificationDeprecated, "2024-06-01T00:00:00Z"),
				}},
			}},
			MachineTypes: []v1alpha1.MachineType{{Name: "m5.4xlarge"}},
		},
	}
}

func mergedVersion(g Gomega, ncp *v1alpha1.NamespacedCloudProfile, version string) v1alpha1.ExpirableVersion {
	g.Expect(ncp.Status.CloudProfileSpec).NotTo(BeNil())
	for _, v := range ncp.Status.CloudProfileSpec.Kubernetes.Versions {
		if v.Version == version {
			return v
		}
	}
	g.Expect(version).To(BeEmpty(), "version missing from status.cloudProfileSpec")
	return v1alpha1.ExpirableVersion{}
}

func startTimes(stages []v1alpha1.LifecycleStage) []string {
	out := make([]string, 0, len(stages))
	for _, s := range stages {
		start := "-"
		if s.StartTime != nil {
			start = s.StartTime.UTC().Format(time.RFC3339)
		}
		out = append(out, string(s.Classification)+"@"+start)
	}
	return out
}

func TestNamespacedProfileRendersTheMergedSpecAndItsStatus(t *testing.T) {
	g := NewWithT(t)
	testClock.Set(t, builders.Time("2024-12-03T00:00:00Z"))
	parent := gep32Profile()
	createProfile(t, parent)
	ncp := gep32Override(parent.Name)
	createProfile(t, ncp)

	g.Eventually(func(g Gomega) {
		got := testenv.GetNamespacedCloudProfile(g, k8sClient, ncp)
		g.Expect(conditions.IsReady(got)).To(BeTrue())
		g.Expect(got.Status.ObservedGeneration).To(Equal(got.Generation))
		g.Expect(startTimes(mergedVersion(g, got, "1.18.0").Lifecycle)).To(Equal([]string{
			"supported@2022-01-01T00:00:00Z", "deprecated@2024-06-01T00:00:00Z", "expired@2024-06-01T00:00:00Z",
		}))
		g.Expect(startTimes(mergedVersion(g, got, "1.28.0").Lifecycle)).To(Equal([]string{
			"preview@-", "supported@2025-12-01T00:00:00Z",
		}))
		g.Expect(got.Status.CloudProfileSpec.Type).To(Equal("local"))
		g.Expect(got.Status.CloudProfileSpec.MachineTypes).To(HaveLen(2), "the parent's machine type and the override's")
		// The override postponed 1.28.0's support, so it is still in preview.
		g.Expect(builders.KubernetesClassifications(got.Status.ProfileVersionsStatus)).To(HaveKeyWithValue("1.28.0", v1alpha1.ClassificationPreview))
		g.Expect(builders.KubernetesClassifications(got.Status.ProfileVersionsStatus)).To(HaveKeyWithValue("1.18.0", v1alpha1.ClassificationExpired))
	}).WithTimeout(10 * time.Second).Should(Succeed())
}

func TestNamespacedProfileRequeuesAtTheMergedNextTransition(t *testing.T) {
	g := NewWithT(t)
	now := builders.Time("2024-12-03T00:00:00Z")
	testClock.Set(t, now)
	parent := gep32Profile()
	createProfile(t, parent)
	ncp := gep32Override(parent.Name)
	// Move 1.30.6's deprecation earlier than the parent's, to 2025-01-01.
	ncp.Spec.Kubernetes.Versions = append(ncp.Spec.Kubernetes.Versions, v1alpha1.ExpirableVersion{
		Version: "1.30.6", Lifecycle: []v1alpha1.LifecycleStage{stage(v1alpha1.ClassificationDeprecated, "2025-01-01T00:00:00Z")},
	})
	createProfile(t, ncp)

	reconciler, _ := directNamespacedReconciler()
	result, err := reconciler.Reconcile(context.Background(), ctrl.Request{NamespacedName: client.ObjectKeyFromObject(ncp)})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(result.RequeueAfter).To(Equal(builders.Time("2025-01-01T00:00:00Z").Sub(now)))
}

func TestParentChangeReRendersOnlyItsChildren(t *testing.T) {
	g := NewWithT(t)
	testClock.Set(t, builders.Time("2024-12-03T00:00:00Z"))
	parentA, parentB := gep32Profile(), gep32Profile()
	createProfile(t, parentA)
	createProfile(t, parentB)
	childA, childB := gep32Override(parentA.Name), gep32Override(parentB.Name)
	createProfile(t, childA)
	createProfile(t, childB)
	g.Eventually(func(g Gomega) {
		g.Expect(conditions.IsReady(testenv.GetNamespacedCloudProfile(g, k8sClient, childA))).To(BeTrue())
		g.Expect(conditions.IsReady(testenv.GetNamespacedCloudProfile(g, k8sClient, childB))).To(BeTrue())
	}).WithTimeout(10 * time.Second).Should(Succeed())
	childBVersion := testenv.SettledResourceVersion(g, k8sClient, childB.DeepCopy())

	testenv.UpdateSpec(t, k8sClient, parentA.DeepCopy(), func(cp *v1alpha1.CloudProfile) {
		cp.Spec.Kubernetes.Versions = append(cp.Spec.Kubernetes.Versions, v1alpha1.ExpirableVersion{Version: "1.29.3"})
	})

	g.Eventually(func(g Gomega) {
		mergedVersion(g, testenv.GetNamespacedCloudProfile(g, k8sClient, childA), "1.29.3")
	}).WithTimeout(10 * time.Second).Should(Succeed())
	g.Consistently(func(g Gomega) {
		g.Expect(testenv.GetNamespacedCloudProfile(g, k8sClient, childB).ResourceVersion).To(Equal(childBVersion))
	}).WithTimeout(time.Second).Should(Succeed())
}

func TestNamespacedProfileRecoversWhenItsParentReappears(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	testClock.Set(t, builders.Time("2024-12-03T00:00:00Z"))
	parent := gep32Profile()
	createProfile(t, parent)
	ncp := gep32Override(parent.Name)
	createProfile(t, ncp)
	g.Eventually(func(g Gomega) {
		g.Expect(conditions.IsReady(testenv.GetNamespacedCloudProfile(g, k8sClient, ncp))).To(BeTrue())
	}).WithTimeout(10 * time.Second).Should(Succeed())

	g.Expect(k8sClient.Delete(ctx, parent)).To(Succeed())
	g.Eventually(func(g Gomega) {
		got := testenv.GetNamespacedCloudProfile(g, k8sClient, ncp)
		g.Expect(conditions.IsFalse(got, v1alpha1.ReadyCondition)).To(BeTrue())
		g.Expect(conditions.GetReason(got, v1alpha1.ReadyCondition)).To(Equal(v1alpha1.ParentNotFoundReason))
		g.Expect(conditions.GetMessage(got, v1alpha1.ReadyCondition)).To(ContainSubstring(parent.Name))
		// Clusters keep seeing the last rendered profile.
		g.Expect(got.Status.CloudProfileSpec).NotTo(BeNil())
	}).WithTimeout(10 * time.Second).Should(Succeed())

	recreated := gep32Profile()
	recreated.Name = parent.Name
	g.Expect(k8sClient.Create(ctx, recreated)).To(Succeed())
	g.Eventually(func(g Gomega) {
		g.Expect(conditions.IsReady(testenv.GetNamespacedCloudProfile(g, k8sClient, ncp))).To(BeTrue())
	}).WithTimeout(10 * time.Second).Should(Succeed())
}

func TestNamespacedProfileWithABadOverrideKeepsItsPreviousSpec(t *testing.T) {
	g := NewWithT(t)
	testClock.Set(t, builders.Time("2024-12-03T00:00:00Z"))
	parent := gep32Profile()
	createProfile(t, parent)
	ncp := gep32Override(parent.Name)
	createProfile(t, ncp)
	var previous *v1alpha1.CloudProfileSpec
	g.Eventually(func(g Gomega) {
		got := testenv.GetNamespacedCloudProfile(g, k8sClient, ncp)
		g.Expect(conditions.IsReady(got)).To(BeTrue())
		previous = got.Status.CloudProfileSpec
	}).WithTimeout(10 * time.Second).Should(Succeed())

	testenv.UpdateSpec(t, k8sClient, ncp.DeepCopy(), func(ncp *v1alpha1.NamespacedCloudProfile) {
		ncp.Spec.Kubernetes.Versions = append(ncp.Spec.Kubernetes.Versions, v1alpha1.ExpirableVersion{
			Version: "1.99.0", ExpirationDate: builders.Date("2026-01-01T00:00:00Z"),
		})
	})

	g.Eventually(func(g Gomega) {
		got := testenv.GetNamespacedCloudProfile(g, k8sClient, ncp)
		g.Expect(conditions.GetReason(got, v1alpha1.ReadyCondition)).To(Equal(v1alpha1.ValidationFailedReason))
		g.Expect(conditions.IsStalled(got)).To(BeTrue())
		g.Expect(conditions.GetMessage(got, v1alpha1.ReadyCondition)).To(ContainSubstring("spec.kubernetes.versions[2] (1.99.0)"))
		g.Expect(got.Status.CloudProfileSpec).To(Equal(previous))
	}).WithTimeout(10 * time.Second).Should(Succeed())
}
