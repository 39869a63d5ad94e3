package webhooks

import (
	"context"
	"testing"

	. "github.com/onsi/gomega"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1alpha1 "github.com/profilesync/profilesync/api/v1alpha1"
	"github.com/profilesync/profilesync/test/builders"
)

// updateAs re-reads ncp as c sees it, applies mutate and updates it as c.
func updateAs(c client.Client, ncp *v1alpha1.NamespacedCloudProfile, mutate func(*v1alpha1.NamespacedCloudProfile)) error {
	ctx := context.Background()
	if err := c.Get(ctx, client.ObjectKeyFromObject(ncp), ncp); err != nil {
		return err
	}
	mutate(ncp)
	return c.Update(ctx, ncp)
}

// projectAdmin is a user holding the sample project admin role in namespace.
func projectAdmin(t *testing.T, namespace string) (client.Client, string) {
	t.Helper()
	roles := createClusterRoles(t, "role_project_admin.yaml", "-"+namespace)
	user := uniqueName("project-admin")
	bindInNamespace(t, namespace, roles[0], userSubject(user))
	return clientAs(t, user, "project-admins"), user
}

// landscapeOperator is a user holding the sample landscape operator role in
// every namespace.
func landscapeOperator(t *testing.T) client.Client {
	t.Helper()
	roles := createClusterRoles(t, "role_landscape_operator.yaml", "-"+uniqueName("test"))
	user := uniqueName("landscape-operator")
	bindClusterWide(t, roles[0], userSubject(user))
	return clientAs(t, user, "landscape-operators")
}

func TestAProjectAdminCannotChangeKubernetesVersionsButCanChangeMachineTypes(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	namespace := newNamespace(t)
	parent := newParent(t)
	ncp := namespacedProfile(namespace, parent.Name)
	ncp.Spec.Kubernetes = kubernetesOverride("2025-12-01T00:00:00Z")
	g.Expect(adminClient.Create(ctx, ncp)).To(Succeed())
	alice, user := projectAdmin(t, namespace)

	err := updateAs(alice, ncp, func(ncp *v1alpha1.NamespacedCloudProfile) {
		ncp.Spec.Kubernetes = kubernetesOverride("2026-01-01T00:00:00Z")
	})
	g.Expect(apierrors.IsForbidden(err)).To(BeTrue(), "want Forbidden, got %v", err)
	g.Expect(err.Error()).To(ContainSubstring(`namespacedcloudprofiles.core.profilesync.io "` + ncp.Name + `" is forbidden`))
	g.Expect(err.Error()).To(ContainSubstring(`spec.kubernetes: Forbidden: user "` + user + `" may not change spec.kubernetes`))
	g.Expect(err.Error()).To(ContainSubstring(`the verb "modify-spec-kubernetes"`))

	g.Expect(updateAs(alice, ncp, func(ncp *v1alpha1.NamespacedCloudProfile) {
		ncp.Spec.MachineTypes = append(ncp.Spec.MachineTypes, machineType("m5.8xlarge", "32", "128Gi"))
	})).To(Succeed())
	g.Expect(adminClient.Get(ctx, client.ObjectKeyFromObject(ncp), ncp)).To(Succeed())
	g.Expect(ncp.Spec.MachineTypes).To(HaveLen(2))
	g.Expect(ncp.Spec.Kubernetes).To(BeComparableTo(kubernetesOverride("2025-12-01T00:00:00Z")), "the Kubernetes override is unchanged")
}

func TestAProjectAdminCannotChangeMachineImages(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	namespace := newNamespace(t)
	parent := newParent(t)
	ncp := namespacedProfile(namespace, parent.Name)
	g.Expect(adminClient.Create(ctx, ncp)).To(Succeed())
	alice, _ := projectAdmin(t, namespace)

	err := updateAs(alice, ncp, func(ncp *v1alpha1.NamespacedCloudProfile) {
		ncp.Spec.MachineImages = machineImagesOverride("2025-12-01T00:00:00Z")
	})
	g.Expect(apierrors.IsForbidden(err)).To(BeTrue(), "want Forbidden, got %v", err)
	g.Expect(err.Error()).To(ContainSubstring(`spec.machineImages: Forbidden:`))
	g.Expect(err.Error()).To(ContainSubstring(`the verb "modify-spec-machineimages"`))
}

func TestAProjectAdminMayCreateProfilesOnlyWithoutKubernetesAndMachineImages(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	namespace := newNamespace(t)
	parent := newParent(t)
	alice, _ := projectAdmin(t, namespace)

	withBoth := namespacedProfile(namespace, parent.Name)
	withBoth.Spec.Kubernetes = kubernetesOverride("2025-12-01T00:00:00Z")
	withBoth.Spec.MachineImages = machineImagesOverride("2025-12-01T00:00:00Z")
	err := alice.Create(ctx, withBoth)
	g.Expect(apierrors.IsForbidden(err)).To(BeTrue(), "want Forbidden, got %v", err)
	g.Expect(err.Error()).To(ContainSubstring(`spec.kubernetes: Forbidden:`))
	g.Expect(err.Error()).To(ContainSubstring(`spec.machineImages: Forbidden:`))

	emptyKubernetes := namespacedProfile(namespace, parent.Name)
	emptyKubernetes.Spec.Kubernetes = &v1alpha1.KubernetesSettings{}
	g.Expect(alice.Create(ctx, emptyKubernetes)).To(Succeed(), "a kubernetes field without versions changes nothing")
	g.Expect(alice.Create(ctx, namespacedProfile(namespace, parent.Name))).To(Succeed())
}

func TestALandscapeOperatorCanChangeKubernetesVersionsAndMachineImages(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	namespace := newNamespace(t)
	parent := newParent(t)
	bob := landscapeOperator(t)

	ncp := namespacedProfile(namespace, parent.Name)
	ncp.Spec.Kubernetes = kubernetesOverride("2025-12-01T00:00:00Z")
	g.Expect(bob.Create(ctx, ncp)).To(Succeed())
	g.Expect(updateAs(bob, ncp, func(ncp *v1alpha1.NamespacedCloudProfile) {
		ncp.Spec.Kubernetes = kubernetesOverride("2026-01-01T00:00:00Z")
		ncp.Spec.MachineImages = machineImagesOverride("2026-01-01T00:00:00Z")
	})).To(Succeed())
	g.Expect(adminClient.Get(ctx, client.ObjectKeyFromObject(ncp), ncp)).To(Succeed())
	g.Expect(ncp.Spec.Kubernetes).To(BeComparableTo(kubernetesOverride("2026-01-01T00:00:00Z")))
	g.Expect(ncp.Spec.MachineImages).To(BeComparableTo(machineImagesOverride("2026-01-01T00:00:00Z")))
}

func TestTheGEPSpellingOfTheMachineImagesVerbGrantsNothing(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	namespace := newNamespace(t)
	parent := newParent(t)
	alice, user := projectAdmin(t, namespace)
	gepSpelling := &rbacv1.ClusterRole{
		ObjectMeta: metav1.ObjectMeta{Name: uniqueName("gep-spelling")},
		Rules: []rbacv1.PolicyRule{{
			APIGroups: []string{v1alpha1.GroupVersion.Group},
			Resources: []string{"namespacedcloudprofiles"},
			Verbs:     []string{"modify-spec-machineImages"},
		}},
	}
	g.Expect(adminClient.Create(ctx, gepSpelling)).To(Succeed())
	bindInNamespace(t, namespace, gepSpelling.Name, userSubject(user))

	ncp := namespacedProfile(namespace, parent.Name)
	ncp.Spec.MachineImages = machineImagesOverride("2025-12-01T00:00:00Z")
	err := alice.Create(ctx, ncp)
	g.Expect(apierrors.IsForbidden(err)).To(BeTrue(), "want Forbidden, got %v", err)
	g.Expect(err.Error()).To(ContainSubstring(`the verb "modify-spec-machineimages"`))
}

func TestTheCustomVerbsAreCheckedInTheProfilesNamespace(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	own, other := newNamespace(t), newNamespace(t)
	parent := newParent(t)
	roles := createClusterRoles(t, "role_landscape_operator.yaml", "-"+own)
	user := uniqueName("project-operator")
	bindInNamespace(t, own, roles[0], userSubject(user))
	bindInNamespace(t, other, createClusterRoles(t, "role_project_admin.yaml", "-"+other)[0], userSubject(user))
	carol := clientAs(t, user)

	inOwn := namespacedProfile(own, parent.Name)
	inOwn.Spec.Kubernetes = kubernetesOverride("2025-12-01T00:00:00Z")
	g.Expect(carol.Create(ctx, inOwn)).To(Succeed())

	inOther := namespacedProfile(other, parent.Name)
	inOther.Spec.Kubernetes = kubernetesOverride("2025-12-01T00:00:00Z")
	err := carol.Create(ctx, inOther)
	g.Expect(apierrors.IsForbidden(err)).To(BeTrue(), "want Forbidden, got %v", err)
	g.Expect(err.Error()).To(ContainSubstring(`in namespace "` + other + `"`))
}

func TestANamespacedProfileNeedsAnExistingParent(t *testing.T) {
	g := NewWithT(t)
	namespace := newNamespace(t)
	ncp := namespacedProfile(namespace, "no-such-parent")

	err := adminClient.Create(context.Background(), ncp)
	g.Expect(apierrors.IsInvalid(err)).To(BeTrue(), "want Invalid, got %v", err)
	g.Expect(err.Error()).To(ContainSubstring(`NamespacedCloudProfile.core.profilesync.io "` + ncp.Name + `" is invalid`))
	g.Expect(err.Error()).To(ContainSubstring(`spec.parent.name: Not found: "no-such-parent": no CloudProfile of that name in the cluster`))
}

func TestAnOverrideOfSomethingTheParentLacksIsInvalidAtItsSpecPath(t *testing.T) {
	g := NewWithT(t)
	namespace := newNamespace(t)
	parent := newParent(t)
	ncp := namespacedProfile(namespace, parent.Name)
	ncp.Spec.Kubernetes = &v1alpha1.KubernetesSettings{Versions: []v1alpha1.ExpirableVersion{{
		Version:        "1.29.9",
		ExpirationDate: builders.Date("2025-12-01T00:00:00Z"),
	}}}

	err := adminClient.Create(context.Background(), ncp)
	g.Expect(apierrors.IsInvalid(err)).To(BeTrue(), "want Invalid, got %v", err)
	g.Expect(err.Error()).To(ContainSubstring(`spec.kubernetes.versions[0] (1.29.9).version: Not found: "1.29.9": Kubernetes version not in parent CloudProfile "` + parent.Name + `"`))
}

func TestAMergedProfileThatBreaksARuleIsInvalidUnderStatusCloudProfileSpec(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	namespace := newNamespace(t)
	parent := newParent(t)
	ncp := namespacedProfile(namespace, parent.Name)
	g.Expect(adminClient.Create(ctx, ncp)).To(Succeed())

	// 1.31.0 is the parent's highest version: clusters must always have
	// somewhere to go, so it may not expire.
	err := updateAs(adminClient, ncp, func(ncp *v1alpha1.NamespacedCloudProfile) {
		ncp.Spec.Kubernetes = &v1alpha1.KubernetesSettings{Versions: []v1alpha1.ExpirableVersion{{
			Version:        "1.31.0",
			ExpirationDate: builders.Date("2025-12-01T00:00:00Z"),
		}}}
	})
	g.Expect(apierrors.IsInvalid(err)).To(BeTrue(), "want Invalid, got %v", err)
	g.Expect(err.Error()).To(ContainSubstring(`NamespacedCloudProfile.core.profilesync.io "` + ncp.Name + `" is invalid`))
	g.Expect(err.Error()).To(ContainSubstring(`status.cloudProfileSpec.kubernetes.versions[1]`))
}

func TestAnUpdateThatLeavesTheSpecAloneIsAlwaysAdmitted(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	namespace := newNamespace(t)
	parent := newParent(t)
	ncp := namespacedProfile(namespace, parent.Name)
	ncp.Spec.Kubernetes = kubernetesOverride("2025-12-01T00:00:00Z")
	g.Expect(adminClient.Create(ctx, ncp)).To(Succeed())
	alice, _ := projectAdmin(t, namespace)

	g.Expect(updateAs(alice, ncp, func(ncp *v1alpha1.NamespacedCloudProfile) {
		ncp.Labels = map[string]string{"team": "a"}
	})).To(Succeed(), "labels need no custom verb, although the profile overrides Kubernetes versions")
}

func TestChangeDetectionComparesMeaningNotSpelling(t *testing.T) {
	withKubernetes := func(k *v1alpha1.KubernetesSettings) *v1alpha1.NamespacedCloudProfile {
		return &v1alpha1.NamespacedCloudProfile{Spec: v1alpha1.NamespacedCloudProfileSpec{Kubernetes: k}}
	}
	withImages := func(images []v1alpha1.NamespacedMachineImage) *v1alpha1.NamespacedCloudProfile {
		return &v1alpha1.NamespacedCloudProfile{Spec: v1alpha1.NamespacedCloudProfileSpec{MachineImages: images}}
	}
	tests := []struct {
		name     string
		old, obj *v1alpha1.NamespacedCloudProfile
		changed  func(old, obj *v1alpha1.NamespacedCloudProfile) bool
		want     bool
	}{
		{"creating a profile without kubernetes changes nothing", nil, withKubernetes(nil), kubernetesChanged, false},
		{"creating a profile with empty kubernetes changes nothing", nil, withKubernetes(&v1alpha1.KubernetesSettings{}), kubernetesChanged, false},
		{"creating a profile with a Kubernetes version changes kubernetes", nil, withKubernetes(kubernetesOverride("2025-12-01T00:00:00Z")), kubernetesChanged, true},
		{"removing kubernetes is a change", withKubernetes(kubernetesOverride("2025-12-01T00:00:00Z")), withKubernetes(nil), kubernetesChanged, true},
		{"the same start time written anew is no change", withKubernetes(kubernetesOverride("2025-12-01T00:00:00Z")), withKubernetes(kubernetesOverride("2025-12-01T00:00:00Z")), kubernetesChanged, false},
		{"another start time is a change", withKubernetes(kubernetesOverride("2025-12-01T00:00:00Z")), withKubernetes(kubernetesOverride("2025-12-02T00:00:00Z")), kubernetesChanged, true},
		{"an empty image list equals none", withImages(nil), withImages([]v1alpha1.NamespacedMachineImage{}), machineImagesChanged, false},
		{"creating a profile with an image changes machineImages", nil, withImages(machineImagesOverride("2025-12-01T00:00:00Z")), machineImagesChanged, true},
		{"another image expiry is a change", withImages(machineImagesOverride("2025-12-01T00:00:00Z")), withImages(machineImagesOverride("2026-01-01T00:00:00Z")), machineImagesChanged, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			NewWithT(t).Expect(tt.changed(tt.old, tt.obj)).To(Equal(tt.want))
		})
	}
}

// providerConfig is a provider configuration of a namespaced profile.
func providerConfig(image string) *runtime.RawExtension {
	return &runtime.RawExtension{Raw: []byte(`{"apiVersion":"local.provider.extensions.gardener.cloud/v1alpha1","kind":"CloudProfileConfig","machineImages":[{"name":"custom","versions":[{"version":"1.0.0","image":"` + image + `"}]}]}`)}
}

func TestAProjectAdminCannotChangeTheProviderConfig(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	namespace := newNamespace(t)
	parent := newParent(t)
	ncp := namespacedProfile(namespace, parent.Name)
	ncp.Spec.ProviderConfig = providerConfig("registry.example/custom:v1")
	g.Expect(adminClient.Create(ctx, ncp)).To(Succeed())
	alice, user := projectAdmin(t, namespace)

	err := updateAs(alice, ncp, func(ncp *v1alpha1.NamespacedCloudProfile) {
		ncp.Spec.ProviderConfig = providerConfig("registry.example/custom:v2")
	})
	g.Expect(apierrors.IsForbidden(err)).To(BeTrue(), "want Forbidden, got %v", err)
	g.Expect(err.Error()).To(ContainSubstring(`spec.providerConfig: Forbidden: user "` + user + `" may not change spec.providerConfig`))
	g.Expect(err.Error()).To(ContainSubstring(`the verb "modify-spec-providerconfig"`))

	g.Expect(updateAs(alice, ncp, func(ncp *v1alpha1.NamespacedCloudProfile) {
		ncp.Spec.MachineTypes = append(ncp.Spec.MachineTypes, machineType("m5.8xlarge", "32", "128Gi"))
	})).To(Succeed(), "other fields stay the project admin's, the provider config unchanged")

	withConfig := namespacedProfile(namespace, parent.Name)
	withConfig.Spec.ProviderConfig = providerConfig("registry.example/custom:v1")
	err = alice.Create(ctx, withConfig)
	g.Expect(apierrors.IsForbidden(err)).To(BeTrue(), "creating a profile with a provider config needs the verb too, got %v", err)
	g.Expect(err.Error()).To(ContainSubstring(`the verb "modify-spec-providerconfig"`))
}

func TestALandscapeOperatorCanChangeTheProviderConfig(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	namespace := newNamespace(t)
	parent := newParent(t)
	bob := landscapeOperator(t)

	ncp := namespacedProfile(namespace, parent.Name)
	ncp.Spec.ProviderConfig = providerConfig("registry.example/custom:v1")
	g.Expect(bob.Create(ctx, ncp)).To(Succeed())
	g.Expect(updateAs(bob, ncp, func(ncp *v1alpha1.NamespacedCloudProfile) {
		ncp.Spec.ProviderConfig = providerConfig("registry.example/custom:v2")
	})).To(Succeed())
	g.Expect(adminClient.Get(ctx, client.ObjectKeyFromObject(ncp), ncp)).To(Succeed())
	g.Expect(string(ncp.Spec.ProviderConfig.Raw)).To(MatchJSON(providerConfig("registry.example/custom:v2").Raw))
}

func TestProviderConfigChangedComparesJSONValues(t *testing.T) {
	withConfig := func(raw string) *v1alpha1.NamespacedCloudProfile {
		ncp := &v1alpha1.NamespacedCloudProfile{}
		if raw != "" {
			ncp.Spec.ProviderConfig = &runtime.RawExtension{Raw: []byte(raw)}
		}
		return ncp
	}
	tests := []struct {
		name     string
		old      *v1alpha1.NamespacedCloudProfile
		new      *v1alpha1.NamespacedCloudProfile
		wantDiff bool
	}{
		{name: "no config before and after is no change", old: withConfig(""), new: withConfig("")},
		{name: "other key order and spacing is no change", old: withConfig(`{"a":1,"b":[1,2]}`), new: withConfig(`{ "b": [1, 2], "a": 1 }`)},
		{name: "JSON null is the same as no config", old: withConfig(""), new: withConfig("null")},
		{name: "another value is a change", old: withConfig(`{"a":1}`), new: withConfig(`{"a":2}`), wantDiff: true},
		{name: "adding a config is a change", old: withConfig(""), new: withConfig(`{"a":1}`), wantDiff: true},
		{name: "a config on create is a change", old: nil, new: withConfig(`"placeholder"`), wantDiff: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			NewWithT(t).Expect(providerConfigChanged(tt.old, tt.new)).To(Equal(tt.wantDiff))
		})
	}
}

// TestTheMergedSpecIsValidatedNow admits a namespaced profile whose parent
// has two deprecated-API supported versions of one minor that both expired
// before the webhook's now: neither is supported any more, as in Gardener.
func TestTheMergedSpecIsValidatedNow(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	namespace := newNamespace(t)
	parent := newParent(t)
	supported := v1alpha1.ClassificationSupported
	parent.Spec.Kubernetes.Versions = append(parent.Spec.Kubernetes.Versions,
		v1alpha1.ExpirableVersion{Version: "1.29.1", Classification: &supported, ExpirationDate: builders.Date("2025-03-01T00:00:00Z")},
		v1alpha1.ExpirableVersion{Version: "1.29.0", Classification: &supported, ExpirationDate: builders.Date("2025-02-01T00:00:00Z")})
	g.Expect(adminClient.Update(ctx, parent)).To(Succeed())

	g.Expect(adminClient.Create(ctx, namespacedProfile(namespace, parent.Name))).To(Succeed())
}

// TestMovingAnOverridesExpiryIntoThePastIsRefusedAsGardenerRefusesIt: the
// rule of Gardener's NamespacedCloudProfile admission on update, with its
// words: an override the profile already has may not expire in the past
// (unless the merged status already expires the version then), while a new
// override with a past date is admitted, as Gardener admits it.
func TestMovingAnOverridesExpiryIntoThePastIsRefusedAsGardenerRefusesIt(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	namespace := newNamespace(t)
	parent := newParent(t)
	overriding := func(expires string) *v1alpha1.KubernetesSettings {
		return &v1alpha1.KubernetesSettings{Versions: []v1alpha1.ExpirableVersion{{Version: "1.30.1", ExpirationDate: builders.Date(expires)}}}
	}
	ncp := namespacedProfile(namespace, parent.Name)
	ncp.Spec.Kubernetes = overriding("2025-12-01T00:00:00Z")
	g.Expect(adminClient.Create(ctx, ncp)).To(Succeed())

	err := updateAs(adminClient, ncp, func(ncp *v1alpha1.NamespacedCloudProfile) {
		ncp.Spec.Kubernetes = overriding("2025-05-01T00:00:00Z")
	})
	g.Expect(apierrors.IsInvalid(err)).To(BeTrue(), "want Invalid, got %v", err)
	g.Expect(err.Error()).To(ContainSubstring(`spec.kubernetes.versions[0] (1.30.1).expirationDate: Invalid value: "2025-05-01T00:00:00Z": expiration date for version "1.30.1" is in the past`))

	created := namespacedProfile(namespace, parent.Name)
	created.Spec.Kubernetes = overriding("2025-05-01T00:00:00Z")
	g.Expect(adminClient.Create(ctx, created)).To(Succeed(), "a new override with a past date is Gardener's to drop, not to refuse")
}
