package merge

import (
	"testing"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1alpha1 "github.com/profilesync/profilesync/api/v1alpha1"
)

// guardedParent has what the children in TestCheckParentKeepsOverrides
// override: a lifecycle Kubernetes version and an image with two versions.
func guardedParent() *v1alpha1.CloudProfileSpec {
	parent := profile()
	parent.Kubernetes.Versions = withNewest(
		staged("1.30.0", stage(supported, ""), stage(deprecated, "2025-01-01T00:00:00Z"), stage(expired, "2026-01-01T00:00:00Z")),
		plainVersion("1.31.0"),
	)
	parent.MachineImages[0].Versions = append(parent.MachineImages[0].Versions, v1alpha1.MachineImageVersion{
		ExpirableVersion: staged("1443.2.0", stage(supported, ""), stage(deprecated, "2025-01-01T00:00:00Z")),
	})
	return parent
}

func child(namespace, name string, spec v1alpha1.NamespacedCloudProfileSpec) v1alpha1.NamespacedCloudProfile {
	if spec.Parent == (v1alpha1.CloudProfileReference{}) {
		spec.Parent = v1alpha1.CloudProfileReference{Kind: v1alpha1.CloudProfileKind, Name: "local"}
	}
	return v1alpha1.NamespacedCloudProfile{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name},
		Spec:       spec,
	}
}

func kubernetesOverride(versions ...v1alpha1.ExpirableVersion) v1alpha1.NamespacedCloudProfileSpec {
	return v1alpha1.NamespacedCloudProfileSpec{Kubernetes: &v1alpha1.KubernetesSettings{Versions: versions}}
}

func imageOverride(images ...v1alpha1.NamespacedMachineImage) v1alpha1.NamespacedCloudProfileSpec {
	return v1alpha1.NamespacedCloudProfileSpec{MachineImages: images}
}

func TestCheckParentKeepsOverrides(t *testing.T) {
	tests := []struct {
		name     string
		current  *v1alpha1.CloudProfileSpec
		updated  func(*v1alpha1.CloudProfileSpec) *v1alpha1.CloudProfileSpec
		children []v1alpha1.NamespacedCloudProfile
		want     []string
	}{
		{
			name:    "removing a Kubernetes version no child overrides is allowed",
			current: guardedParent(),
			updated: func(p *v1alpha1.CloudProfileSpec) *v1alpha1.CloudProfileSpec {
				p.Kubernetes.Versions = withNewest(p.Kubernetes.Versions[0])
				return p
			},
			children: []v1alpha1.NamespacedCloudProfile{child("project-a", "a", kubernetesOverride(deprecatedAPIVersion("1.30.0", "", "2027-01-01T00:00:00Z")))},
		},
		{
			name:    "removing a Kubernetes version a child overrides is refused, naming the child",
			current: guardedParent(),
			updated: func(p *v1alpha1.CloudProfileSpec) *v1alpha1.CloudProfileSpec {
				p.Kubernetes.Versions = withNewest(p.Kubernetes.Versions[1])
				return p
			},
			children: []v1alpha1.NamespacedCloudProfile{child("project-a", "a", kubernetesOverride(deprecatedAPIVersion("1.30.0", "", "2027-01-01T00:00:00Z")))},
			want: []string{`spec.kubernetes.versions: Forbidden: Kubernetes version "1.30.0" may not be removed: ` +
				`NamespacedCloudProfile project-a/a overrides it at spec.kubernetes.versions[0] (1.30.0)`},
		},
		{
			name:    "moving a stage's start a child overrides is allowed",
			current: guardedParent(),
			updated: func(p *v1alpha1.CloudProfileSpec) *v1alpha1.CloudProfileSpec {
				p.Kubernetes.Versions[0].Lifecycle[1].StartTime = date("2025-03-01T00:00:00Z")
				return p
			},
			children: []v1alpha1.NamespacedCloudProfile{child("project-a", "a", kubernetesOverride(staged("1.30.0", stage(deprecated, "2026-01-01T00:00:00Z"))))},
		},
		{
			name:    "removing a lifecycle stage a child moves is refused",
			current: guardedParent(),
			updated: func(p *v1alpha1.CloudProfileSpec) *v1alpha1.CloudProfileSpec {
				p.Kubernetes.Versions[0].Lifecycle = []v1alpha1.LifecycleStage{stage(supported, ""), stage(expired, "2026-01-01T00:00:00Z")}
				return p
			},
			children: []v1alpha1.NamespacedCloudProfile{child("project-a", "a", kubernetesOverride(staged("1.30.0", stage(deprecated, "2026-01-01T00:00:00Z"))))},
			want: []string{`spec.kubernetes.versions[0] (1.30.0): Forbidden: the deprecated stage of Kubernetes version "1.30.0" may not be removed: ` +
				`NamespacedCloudProfile project-a/a moves its start at spec.kubernetes.versions[0] (1.30.0).lifecycle[0]`},
		},
		{
			name:    "removing the expired stage a child's expirationDate replaces is allowed, as the merge adds it back",
			current: guardedParent(),
			updated: func(p *v1alpha1.CloudProfileSpec) *v1alpha1.CloudProfileSpec {
				p.Kubernetes.Versions[0].Lifecycle = p.Kubernetes.Versions[0].Lifecycle[:2]
				return p
			},
			children: []v1alpha1.NamespacedCloudProfile{child("project-a", "a", kubernetesOverride(deprecatedAPIVersion("1.30.0", "", "2027-01-01T00:00:00Z")))},
		},
		{
			name:    "rewriting a version from lifecycle to the deprecated fields keeps the stages it still means",
			current: guardedParent(),
			updated: func(p *v1alpha1.CloudProfileSpec) *v1alpha1.CloudProfileSpec {
				p.Kubernetes.Versions[0] = deprecatedAPIVersion("1.30.0", "", "2026-01-01T00:00:00Z")
				return p
			},
			children: []v1alpha1.NamespacedCloudProfile{child("project-a", "a", kubernetesOverride(staged("1.30.0", stage(expired, "2027-01-01T00:00:00Z"))))},
		},
		{
			name:    "removing a machine image a child only adds versions to is refused",
			current: guardedParent(),
			updated: func(p *v1alpha1.CloudProfileSpec) *v1alpha1.CloudProfileSpec {
				p.MachineImages = []v1alpha1.MachineImage{{Name: "ubuntu", Versions: []v1alpha1.MachineImageVersion{imageVersion(plainVersion("24.4"))}}}
				return p
			},
			children: []v1alpha1.NamespacedCloudProfile{child("project-a", "a", imageOverride(v1alpha1.NamespacedMachineImage{
				Name: "gardenlinux", UpdateStrategy: strategy(v1alpha1.UpdateStrategyPatch),
			}))},
			want: []string{`spec.machineImages: Forbidden: machine image "gardenlinux" may not be removed: ` +
				`NamespacedCloudProfile project-a/a overrides it at spec.machineImages[0] (gardenlinux)`},
		},
		{
			name:    "removing a machine image only a child defines is no business of the parent",
			current: guardedParent(),
			updated: func(p *v1alpha1.CloudProfileSpec) *v1alpha1.CloudProfileSpec { return p },
			children: []v1alpha1.NamespacedCloudProfile{child("project-a", "a", imageOverride(v1alpha1.NamespacedMachineImage{
				Name: "ubuntu", Versions: []v1alpha1.MachineImageVersion{imageVersion(plainVersion("24.4"))},
			}))},
		},
		{
			name:    "removing an image version a child overrides is refused, and so is a stage it moves",
			current: guardedParent(),
			updated: func(p *v1alpha1.CloudProfileSpec) *v1alpha1.CloudProfileSpec {
				p.MachineImages[0].Versions = []v1alpha1.MachineImageVersion{{ExpirableVersion: plainVersion("1443.2.0")}}
				return p
			},
			children: []v1alpha1.NamespacedCloudProfile{child("project-a", "a", imageOverride(v1alpha1.NamespacedMachineImage{
				Name: "gardenlinux",
				Versions: []v1alpha1.MachineImageVersion{
					imageVersion(deprecatedAPIVersion("1592.1.0", "", "2030-01-01T00:00:00Z")),
					imageVersion(staged("1443.2.0", stage(deprecated, "2026-01-01T00:00:00Z"))),
				},
			}))},
			want: []string{
				`spec.machineImages[0] (gardenlinux).versions: Forbidden: version "1592.1.0" of machine image "gardenlinux" may not be removed: ` +
					`NamespacedCloudProfile project-a/a overrides it at spec.machineImages[0] (gardenlinux).versions[0] (1592.1.0)`,
				`spec.machineImages[0] (gardenlinux).versions[0] (1443.2.0): Forbidden: the deprecated stage of version "1443.2.0" of machine image "gardenlinux" may not be removed: ` +
					`NamespacedCloudProfile project-a/a moves its start at spec.machineImages[0] (gardenlinux).versions[1] (1443.2.0).lifecycle[0]`,
			},
		},
		{
			name:    "children of another CloudProfile are not consulted",
			current: guardedParent(),
			updated: func(p *v1alpha1.CloudProfileSpec) *v1alpha1.CloudProfileSpec {
				p.Kubernetes.Versions = withNewest()
				return p
			},
			children: []v1alpha1.NamespacedCloudProfile{child("project-a", "a", v1alpha1.NamespacedCloudProfileSpec{
				Parent:     v1alpha1.CloudProfileReference{Kind: v1alpha1.CloudProfileKind, Name: "other"},
				Kubernetes: &v1alpha1.KubernetesSettings{Versions: []v1alpha1.ExpirableVersion{deprecatedAPIVersion("1.30.0", "", "2027-01-01T00:00:00Z")}},
			})},
		},
		{
			name:    "deleting a parent no child extends is allowed",
			current: guardedParent(),
			updated: func(*v1alpha1.CloudProfileSpec) *v1alpha1.CloudProfileSpec { return nil },
			children: []v1alpha1.NamespacedCloudProfile{child("project-a", "a", v1alpha1.NamespacedCloudProfileSpec{
				Parent: v1alpha1.CloudProfileReference{Kind: v1alpha1.CloudProfileKind, Name: "other"},
			})},
		},
		{
			name:    "deleting a parent is refused once for every child extending it",
			current: guardedParent(),
			updated: func(*v1alpha1.CloudProfileSpec) *v1alpha1.CloudProfileSpec { return nil },
			children: []v1alpha1.NamespacedCloudProfile{
				child("project-a", "a", v1alpha1.NamespacedCloudProfileSpec{}),
				child("project-b", "b", kubernetesOverride(deprecatedAPIVersion("1.30.0", "", "2027-01-01T00:00:00Z"))),
			},
			want: []string{
				`spec: Forbidden: CloudProfile "local" may not be deleted: NamespacedCloudProfile project-a/a extends it`,
				`spec: Forbidden: CloudProfile "local" may not be deleted: NamespacedCloudProfile project-b/b extends it`,
			},
		},
		{
			name:    "creating a parent overrides nothing yet",
			current: nil,
			updated: func(*v1alpha1.CloudProfileSpec) *v1alpha1.CloudProfileSpec { return profile() },
			children: []v1alpha1.NamespacedCloudProfile{
				child("project-a", "a", kubernetesOverride(deprecatedAPIVersion("1.29.0", "", "2027-01-01T00:00:00Z"))),
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			var currentCopy *v1alpha1.CloudProfileSpec
			if tt.current != nil {
				currentCopy = tt.current.DeepCopy()
			}

			errs := checkParentKeepsOverrides("local", tt.current, tt.updated(currentCopy), tt.children)

			var got []string
			for _, e := range errs {
				got = append(got, e.Error())
			}
			g.Expect(got).To(Equal(tt.want))
		})
	}
}

// TestCheckCloudProfileChange checks that both rules a CloudProfile change
// must pass are applied, in order, for an update and for a deletion.
func TestCheckCloudProfileChange(t *testing.T) {
	now := time.Date(2025, 6, 1, 0, 0, 0, 0, time.UTC)
	overridesKubernetes := child("project-a", "a", kubernetesOverride(deprecatedAPIVersion("1.30.0", "", "2027-01-01T00:00:00Z")))
	const madeUnavailable = `Forbidden: version 1.40.0 is supported now and may not be made unavailable again: a version that has been offered may already be in use`
	const overriddenRemoved = `spec.kubernetes.versions: Forbidden: Kubernetes version "1.30.0" may not be removed: ` +
		`NamespacedCloudProfile project-a/a overrides it at spec.kubernetes.versions[0] (1.30.0)`
	postponed := staged(newestKubernetesVersion, stage(preview, "2030-01-01T00:00:00Z"))
	tests := []struct {
		name     string
		current  *v1alpha1.CloudProfileSpec
		updated  func(*v1alpha1.CloudProfileSpec) *v1alpha1.CloudProfileSpec
		children []v1alpha1.NamespacedCloudProfile
		want     []string
	}{
		{
			name:     "an unchanged profile passes",
			current:  guardedParent(),
			updated:  func(p *v1alpha1.CloudProfileSpec) *v1alpha1.CloudProfileSpec { return p },
			children: []v1alpha1.NamespacedCloudProfile{overridesKubernetes},
		},
		{
			name:    "a version made unavailable again is refused",
			current: guardedParent(),
			updated: func(p *v1alpha1.CloudProfileSpec) *v1alpha1.CloudProfileSpec {
				p.Kubernetes.Versions[1] = postponed
				return p
			},
			want: []string{"spec.kubernetes.versions[1] (1.40.0).lifecycle: " + madeUnavailable},
		},
		{
			name:    "removing what a child overrides is refused",
			current: guardedParent(),
			updated: func(p *v1alpha1.CloudProfileSpec) *v1alpha1.CloudProfileSpec {
				p.Kubernetes.Versions = p.Kubernetes.Versions[1:]
				return p
			},
			children: []v1alpha1.NamespacedCloudProfile{overridesKubernetes},
			want:     []string{overriddenRemoved},
		},
		{
			name:    "both rules are reported, the update rule first",
			current: guardedParent(),
			updated: func(p *v1alpha1.CloudProfileSpec) *v1alpha1.CloudProfileSpec {
				p.Kubernetes.Versions = []v1alpha1.ExpirableVersion{postponed}
				return p
			},
			children: []v1alpha1.NamespacedCloudProfile{overridesKubernetes},
			want:     []string{"spec.kubernetes.versions[0] (1.40.0).lifecycle: " + madeUnavailable, overriddenRemoved},
		},
		{
			name:     "children of another parent do not count",
			current:  guardedParent(),
			updated:  func(p *v1alpha1.CloudProfileSpec) *v1alpha1.CloudProfileSpec { return nil },
			children: []v1alpha1.NamespacedCloudProfile{child("project-a", "a", v1alpha1.NamespacedCloudProfileSpec{Parent: v1alpha1.CloudProfileReference{Kind: v1alpha1.CloudProfileKind, Name: "other"}})},
		},
		{
			name:     "deleting a profile a child extends is refused",
			current:  guardedParent(),
			updated:  func(p *v1alpha1.CloudProfileSpec) *v1alpha1.CloudProfileSpec { return nil },
			children: []v1alpha1.NamespacedCloudProfile{overridesKubernetes},
			want:     []string{`spec: Forbidden: CloudProfile "local" may not be deleted: NamespacedCloudProfile project-a/a extends it`},
		},
		{
			name:    "deleting a profile no child extends passes",
			current: guardedParent(),
			updated: func(p *v1alpha1.CloudProfileSpec) *v1alpha1.CloudProfileSpec { return nil },
		},
		{
			name:     "creating a profile passes",
			current:  nil,
			updated:  func(*v1alpha1.CloudProfileSpec) *v1alpha1.CloudProfileSpec { return guardedParent() },
			children: []v1alpha1.NamespacedCloudProfile{overridesKubernetes},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			var currentCopy *v1alpha1.CloudProfileSpec
			if tt.current != nil {
				currentCopy = tt.current.DeepCopy()
			}

			errs := CheckCloudProfileChange("local", tt.current, tt.updated(currentCopy), tt.children, now)

			var got []string
			for _, e := range errs {
				got = append(got, e.Error())
			}
			g.Expect(got).To(Equal(tt.want))
		})
	}
}
