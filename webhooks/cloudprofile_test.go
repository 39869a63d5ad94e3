package webhooks

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	. "github.com/onsi/gomega"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	v1alpha1 "github.com/profilesync/profilesync/api/v1alpha1"
	"github.com/profilesync/profilesync/test/builders"
)

// updateParent re-reads cp, applies mutate and updates it as the admin.
func updateParent(cp *v1alpha1.CloudProfile, mutate func(*v1alpha1.CloudProfile)) error {
	ctx := context.Background()
	if err := adminClient.Get(ctx, client.ObjectKeyFromObject(cp), cp); err != nil {
		return err
	}
	mutate(cp)
	return adminClient.Update(ctx, cp)
}

func withoutKubernetesVersion(version string) func(*v1alpha1.CloudProfile) {
	return func(cp *v1alpha1.CloudProfile) {
		var kept []v1alpha1.ExpirableVersion
		for _, v := range cp.Spec.Kubernetes.Versions {
			if v.Version != version {
				kept = append(kept, v)
			}
		}
		cp.Spec.Kubernetes.Versions = kept
	}
}

func TestRemovingAParentVersionThatANamespacedProfileOverridesIsRefusedUntilTheOverrideIsGone(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	namespace := newNamespace(t)
	parent := newParent(t)
	ncp := namespacedProfile(namespace, parent.Name)
	ncp.Spec.Kubernetes = kubernetesOverride("2025-12-01T00:00:00Z")
	g.Expect(adminClient.Create(ctx, ncp)).To(Succeed())

	err := updateParent(parent, withoutKubernetesVersion("1.30.1"))
	g.Expect(apierrors.IsInvalid(err)).To(BeTrue(), "want Invalid, got %v", err)
	g.Expect(err.Error()).To(ContainSubstring(`CloudProfile.core.profilesync.io "` + parent.Name + `" is invalid`))
	g.Expect(err.Error()).To(ContainSubstring(`spec.kubernetes.versions: Forbidden: Kubernetes version "1.30.1" may not be removed: NamespacedCloudProfile ` +
		namespace + "/" + ncp.Name + ` overrides it at spec.kubernetes.versions[0]`))

	g.Expect(updateAs(adminClient, ncp, func(ncp *v1alpha1.NamespacedCloudProfile) {
		ncp.Spec.Kubernetes = nil
	})).To(Succeed())
	g.Expect(updateParent(parent, withoutKubernetesVersion("1.30.1"))).To(Succeed())
}

func TestRemovingAMachineImageVersionThatANamespacedProfileOverridesIsRefused(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	namespace := newNamespace(t)
	parent := newParent(t)
	ncp := namespacedProfile(namespace, parent.Name)
	ncp.Spec.MachineImages = machineImagesOverride("2025-12-01T00:00:00Z")
	g.Expect(adminClient.Create(ctx, ncp)).To(Succeed())

	err := updateParent(parent, func(cp *v1alpha1.CloudProfile) {
		cp.Spec.MachineImages[0].Versions[0].Version = "1592.2.0"
	})
	g.Expect(apierrors.IsInvalid(err)).To(BeTrue(), "want Invalid, got %v", err)
	g.Expect(err.Error()).To(ContainSubstring(`spec.machineImages[0] (gardenlinux).versions: Forbidden: version "1592.1.0" of machine image "gardenlinux" may not be removed: NamespacedCloudProfile ` +
		namespace + "/" + ncp.Name))
}

func TestDeletingAParentThatNamespacedProfilesUseIsRefusedNamingThem(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	teamA, teamB := newNamespace(t), newNamespace(t)
	parent := newParent(t)
	first := namespacedProfile(teamA, parent.Name)
	second := namespacedProfile(teamB, parent.Name)
	g.Expect(adminClient.Create(ctx, first)).To(Succeed())
	g.Expect(adminClient.Create(ctx, second)).To(Succeed())
	unrelated := namespacedProfile(teamA, newParent(t).Name)
	g.Expect(adminClient.Create(ctx, unrelated)).To(Succeed())

	err := adminClient.Delete(ctx, parent)
	g.Expect(apierrors.IsForbidden(err)).To(BeTrue(), "want Forbidden, got %v", err)
	g.Expect(err.Error()).To(ContainSubstring(`cloudprofiles.core.profilesync.io "` + parent.Name + `" is forbidden`))
	g.Expect(err.Error()).To(ContainSubstring(`CloudProfile "` + parent.Name + `" may not be deleted: NamespacedCloudProfile ` + teamA + "/" + first.Name + " extends it"))
	g.Expect(err.Error()).To(ContainSubstring(`CloudProfile "` + parent.Name + `" may not be deleted: NamespacedCloudProfile ` + teamB + "/" + second.Name + " extends it"))
	g.Expect(err.Error()).NotTo(ContainSubstring(unrelated.Name))

	g.Expect(adminClient.Delete(ctx, first)).To(Succeed())
	g.Expect(adminClient.Delete(ctx, parent)).NotTo(Succeed(), "the second profile still extends it")
	g.Expect(adminClient.Delete(ctx, second)).To(Succeed())
	g.Expect(adminClient.Delete(ctx, parent)).To(Succeed())
}

func TestTurningAStartedVersionBackToUnavailableIsRefused(t *testing.T) {
	g := NewWithT(t)
	parent := newParent(t)

	// At testNow (2025-06-01) 1.30.1 is supported; a first stage starting
	// later would make it unavailable again.
	err := updateParent(parent, func(cp *v1alpha1.CloudProfile) {
		cp.Spec.Kubernetes.Versions[0].Lifecycle = []v1alpha1.LifecycleStage{
			{Classification: v1alpha1.ClassificationPreview, StartTime: builders.Date("2025-07-01T00:00:00Z")},
			{Classification: v1alpha1.ClassificationExpired, StartTime: builders.Date("2025-09-01T00:00:00Z")},
		}
	})
	g.Expect(apierrors.IsInvalid(err)).To(BeTrue(), "want Invalid, got %v", err)
	g.Expect(err.Error()).To(ContainSubstring(`CloudProfile.core.profilesync.io "` + parent.Name + `" is invalid`))
	g.Expect(err.Error()).To(ContainSubstring(`spec.kubernetes.versions[0] (1.30.1).lifecycle: Forbidden: version 1.30.1 is supported now and may not be made unavailable again`))
}

func TestAVersionThatHasNotStartedMayStillBeMovedLater(t *testing.T) {
	g := NewWithT(t)
	parent := newParent(t)
	g.Expect(updateParent(parent, func(cp *v1alpha1.CloudProfile) {
		cp.Spec.Kubernetes.Versions = append(cp.Spec.Kubernetes.Versions, v1alpha1.ExpirableVersion{
			Version:   "1.32.0",
			Lifecycle: []v1alpha1.LifecycleStage{{Classification: v1alpha1.ClassificationPreview, StartTime: builders.Date("2025-07-01T00:00:00Z")}},
		})
	})).To(Succeed())

	g.Expect(updateParent(parent, func(cp *v1alpha1.CloudProfile) {
		cp.Spec.Kubernetes.Versions[2].Lifecycle[0].StartTime = builders.Date("2025-08-01T00:00:00Z")
	})).To(Succeed(), "1.32.0 is still unavailable at testNow")
}

// The webhook is registered for the main resources only, so status writes of
// the controllers never pass through it; a failing or unreachable webhook
// refuses the request (failurePolicy Fail) and it has no side effects, so dry
// runs are checked too.
func TestTheGeneratedWebhookConfigurationLeavesStatusAlone(t *testing.T) {
	g := NewWithT(t)
	content, err := os.ReadFile(filepath.Join("..", "config", "webhook", "manifests.yaml"))
	g.Expect(err).NotTo(HaveOccurred())
	var config admissionregistrationv1.ValidatingWebhookConfiguration
	g.Expect(yaml.UnmarshalStrict(content, &config)).To(Succeed())

	rules := map[string][]admissionregistrationv1.OperationType{}
	for _, w := range config.Webhooks {
		g.Expect(w.FailurePolicy).To(HaveValue(Equal(admissionregistrationv1.Fail)), w.Name)
		g.Expect(w.SideEffects).To(HaveValue(Equal(admissionregistrationv1.SideEffectClassNone)), w.Name)
		for _, r := range w.Rules {
			for _, resource := range r.Resources {
				rules[resource] = append(rules[resource], r.Operations...)
			}
		}
	}
	g.Expect(rules).To(Equal(map[string][]admissionregistrationv1.OperationType{
		"cloudprofiles":           {admissionregistrationv1.Create, admissionregistrationv1.Update, admissionregistrationv1.Delete},
		"namespacedcloudprofiles": {admissionregistrationv1.Create, admissionregistrationv1.Update},
	}))
}
