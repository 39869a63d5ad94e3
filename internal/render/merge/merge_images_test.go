package merge

import (
	"testing"

	. "github.com/onsi/gomega"
	"k8s.io/utils/ptr"

	v1alpha1 "github.com/profilesync/profilesync/api/v1alpha1"
)

func imageVersion(v v1alpha1.ExpirableVersion) v1alpha1.MachineImageVersion {
	return v1alpha1.MachineImageVersion{ExpirableVersion: v}
}

// addedImageVersion is an image version a namespaced profile adds, with the
// container runtime and architecture Gardener requires of it.
func addedImageVersion(v v1alpha1.ExpirableVersion) v1alpha1.MachineImageVersion {
	return v1alpha1.MachineImageVersion{ExpirableVersion: v, CRI: []v1alpha1.CRI{{Name: "containerd"}}, Architectures: []string{"amd64"}}
}

// parentImageVersion is the version profile() gives its gardenlinux image,
// with the expiry replaced.
func parentImageVersion(v v1alpha1.ExpirableVersion) v1alpha1.MachineImageVersion {
	version := profile().MachineImages[0].Versions[0]
	version.ExpirableVersion = v
	return version
}

func TestMergeNamespacedMachineImages(t *testing.T) {
	tests := []struct {
		name      string
		overrides []v1alpha1.NamespacedMachineImage
		want      []v1alpha1.MachineImage
		wantErrs  []string
	}{
		{
			name: "an image the parent lacks is appended as written",
			overrides: []v1alpha1.NamespacedMachineImage{{
				Name:           "ubuntu",
				UpdateStrategy: strategy(v1alpha1.UpdateStrategyPatch),
				Versions:       []v1alpha1.MachineImageVersion{addedImageVersion(plainVersion("24.4"))},
			}},
			want: []v1alpha1.MachineImage{profile().MachineImages[0], {
				Name:           "ubuntu",
				Versions:       []v1alpha1.MachineImageVersion{addedImageVersion(plainVersion("24.4"))},
				UpdateStrategy: strategy(v1alpha1.UpdateStrategyPatch),
			}},
		},
		{
			name: "an image the parent lacks needs an update strategy, and its versions a container runtime and an architecture, as in Gardener",
			overrides: []v1alpha1.NamespacedMachineImage{{
				Name:     "ubuntu",
				Versions: []v1alpha1.MachineImageVersion{imageVersion(plainVersion("24.4"))},
			}},
			wantErrs: []string{
				"spec.machineImages[0] (ubuntu).updateStrategy: Required value",
				"spec.machineImages[0] (ubuntu).versions[0] (24.4).cri: Required value",
				"spec.machineImages[0] (ubuntu).versions[0] (24.4).architectures: Required value",
			},
		},
		{
			name: "a version added to a parent's image needs a container runtime and an architecture, as in Gardener",
			overrides: []v1alpha1.NamespacedMachineImage{{
				Name: "gardenlinux",
				Versions: []v1alpha1.MachineImageVersion{
					{ExpirableVersion: plainVersion("1592.8.0"), Architectures: []string{"amd64"}},
					{ExpirableVersion: plainVersion("1592.9.0"), CRI: []v1alpha1.CRI{{Name: "containerd"}}},
				},
			}},
			wantErrs: []string{
				"spec.machineImages[0] (gardenlinux).versions[0] (1592.8.0).cri: Required value",
				"spec.machineImages[0] (gardenlinux).versions[1] (1592.9.0).architectures: Required value",
			},
		},
		{
			name:      "an image the parent lacks needs at least one version",
			overrides: []v1alpha1.NamespacedMachineImage{{Name: "ubuntu", UpdateStrategy: strategy(v1alpha1.UpdateStrategyPatch)}},
			wantErrs:  []string{"spec.machineImages[0] (ubuntu).versions: Required value"},
		},
		{
			name: "an appended image is validated as a full image in the merged spec",
			overrides: []v1alpha1.NamespacedMachineImage{{
				Name:           "ubuntu",
				UpdateStrategy: strategy(v1alpha1.UpdateStrategyMajor),
				Versions:       []v1alpha1.MachineImageVersion{{ExpirableVersion: plainVersion("24.4"), CRI: []v1alpha1.CRI{{Name: "containerd"}}, Architectures: []string{"s390x"}}},
			}},
			wantErrs: []string{"status.cloudProfileSpec.machineImages[1] (ubuntu).versions[0] (24.4).architectures[0]: Unsupported value"},
		},
		{
			name:      "an override may change the update strategy of a parent image",
			overrides: []v1alpha1.NamespacedMachineImage{{Name: "gardenlinux", UpdateStrategy: strategy(v1alpha1.UpdateStrategyPatch)}},
			want: func() []v1alpha1.MachineImage {
				images := profile().MachineImages
				images[0].UpdateStrategy = strategy(v1alpha1.UpdateStrategyPatch)
				return images
			}(),
		},
		{
			name:      "an unknown update strategy is an error",
			overrides: []v1alpha1.NamespacedMachineImage{{Name: "gardenlinux", UpdateStrategy: strategy("sideways")}},
			wantErrs:  []string{"spec.machineImages[0] (gardenlinux).updateStrategy: Unsupported value"},
		},
		{
			name: "an override may change the expiry of a parent image version and keeps its other fields",
			overrides: []v1alpha1.NamespacedMachineImage{{
				Name:     "gardenlinux",
				Versions: []v1alpha1.MachineImageVersion{imageVersion(deprecatedAPIVersion("1592.1.0", "", "2030-01-01T00:00:00Z"))},
			}},
			want: []v1alpha1.MachineImage{{
				Name:           "gardenlinux",
				UpdateStrategy: strategy(v1alpha1.UpdateStrategyMinor),
				Versions:       []v1alpha1.MachineImageVersion{parentImageVersion(deprecatedAPIVersion("1592.1.0", "", "2030-01-01T00:00:00Z"))},
			}},
		},
		{
			name: "an override may not restate a parent version's cri, architectures or kubelet constraint, even unchanged, as in Gardener",
			overrides: []v1alpha1.NamespacedMachineImage{{
				Name: "gardenlinux",
				Versions: []v1alpha1.MachineImageVersion{{
					ExpirableVersion:         deprecatedAPIVersion("1592.1.0", "", "2030-01-01T00:00:00Z"),
					Architectures:            []string{"arm64", "amd64"},
					CRI:                      []v1alpha1.CRI{{Name: "containerd"}},
					KubeletVersionConstraint: ptr.To(">= 1.30"),
				}},
			}},
			wantErrs: []string{
				"spec.machineImages[0] (gardenlinux).versions[0] (1592.1.0).cri: Forbidden",
				"spec.machineImages[0] (gardenlinux).versions[0] (1592.1.0).architectures: Forbidden",
				"spec.machineImages[0] (gardenlinux).versions[0] (1592.1.0).kubeletVersionConstraint: Forbidden",
			},
		},
		{
			name: "an empty kubelet constraint on an override of a parent version counts as unset, as in Gardener",
			overrides: []v1alpha1.NamespacedMachineImage{{
				Name: "gardenlinux",
				Versions: []v1alpha1.MachineImageVersion{{
					ExpirableVersion:         deprecatedAPIVersion("1592.1.0", "", "2030-01-01T00:00:00Z"),
					KubeletVersionConstraint: ptr.To(""),
				}},
			}},
			want: []v1alpha1.MachineImage{{
				Name:           "gardenlinux",
				UpdateStrategy: strategy(v1alpha1.UpdateStrategyMinor),
				Versions:       []v1alpha1.MachineImageVersion{parentImageVersion(deprecatedAPIVersion("1592.1.0", "", "2030-01-01T00:00:00Z"))},
			}},
		},
		{
			name: "an override of a parent image version without expiry or lifecycle is refused",
			overrides: []v1alpha1.NamespacedMachineImage{{
				Name:     "gardenlinux",
				Versions: []v1alpha1.MachineImageVersion{imageVersion(plainVersion("1592.1.0"))},
			}},
			wantErrs: []string{"spec.machineImages[0] (gardenlinux).versions[0] (1592.1.0).expirationDate: Required value"},
		},
		{
			name: "an added version needs no expiry",
			overrides: []v1alpha1.NamespacedMachineImage{{
				Name:     "gardenlinux",
				Versions: []v1alpha1.MachineImageVersion{addedImageVersion(plainVersion("1592.9.0"))},
			}},
			want: []v1alpha1.MachineImage{{
				Name:           "gardenlinux",
				UpdateStrategy: strategy(v1alpha1.UpdateStrategyMinor),
				Versions:       []v1alpha1.MachineImageVersion{parentImageVersion(plainVersion("1592.1.0")), addedImageVersion(plainVersion("1592.9.0"))},
			}},
		},
		{
			name: "an override of a parent image version may not change anything but its expiry",
			overrides: []v1alpha1.NamespacedMachineImage{{
				Name: "gardenlinux",
				Versions: []v1alpha1.MachineImageVersion{{
					ExpirableVersion:         deprecatedAPIVersion("1592.1.0", "", "2030-01-01T00:00:00Z"),
					Architectures:            []string{"amd64"},
					CRI:                      []v1alpha1.CRI{{Name: "containerd", ContainerRuntimes: []v1alpha1.ContainerRuntime{{Type: "gvisor"}}}},
					KubeletVersionConstraint: ptr.To(">= 1.28"),
				}},
			}},
			wantErrs: []string{
				"spec.machineImages[0] (gardenlinux).versions[0] (1592.1.0).cri: Forbidden",
				"spec.machineImages[0] (gardenlinux).versions[0] (1592.1.0).architectures: Forbidden",
				"spec.machineImages[0] (gardenlinux).versions[0] (1592.1.0).kubeletVersionConstraint: Forbidden",
			},
		},
		{
			name: "an override of a parent image version may not set classification",
			overrides: []v1alpha1.NamespacedMachineImage{{
				Name:     "gardenlinux",
				Versions: []v1alpha1.MachineImageVersion{imageVersion(deprecatedAPIVersion("1592.1.0", deprecated, ""))},
			}},
			wantErrs: []string{"spec.machineImages[0] (gardenlinux).versions[0] (1592.1.0).classification: Forbidden"},
		},
		{
			name: "an override of a parent image version merges lifecycle start times",
			overrides: []v1alpha1.NamespacedMachineImage{{
				Name:     "gardenlinux",
				Versions: []v1alpha1.MachineImageVersion{imageVersion(staged("1592.1.0", stage(supported, "2024-01-01T00:00:00Z")))},
			}},
			want: []v1alpha1.MachineImage{{
				Name:           "gardenlinux",
				UpdateStrategy: strategy(v1alpha1.UpdateStrategyMinor),
				Versions:       []v1alpha1.MachineImageVersion{parentImageVersion(staged("1592.1.0", stage(supported, "2024-01-01T00:00:00Z")))},
			}},
		},
		{
			name: "an override of a parent image version may not add a lifecycle stage",
			overrides: []v1alpha1.NamespacedMachineImage{{
				Name:     "gardenlinux",
				Versions: []v1alpha1.MachineImageVersion{imageVersion(staged("1592.1.0", stage(expired, "2030-01-01T00:00:00Z")))},
			}},
			wantErrs: []string{"spec.machineImages[0] (gardenlinux).versions[0] (1592.1.0).lifecycle[0].classification: Not found"},
		},
		{
			name: "a version the parent image lacks is appended after the parent's versions",
			overrides: []v1alpha1.NamespacedMachineImage{{
				Name:     "gardenlinux",
				Versions: []v1alpha1.MachineImageVersion{addedImageVersion(plainVersion("1443.2.0"))},
			}},
			want: []v1alpha1.MachineImage{{
				Name:           "gardenlinux",
				UpdateStrategy: strategy(v1alpha1.UpdateStrategyMinor),
				Versions:       append(profile().MachineImages[0].Versions, addedImageVersion(plainVersion("1443.2.0"))),
			}},
		},
		{
			name: "an appended version is validated as a full version in the merged spec",
			overrides: []v1alpha1.NamespacedMachineImage{{
				Name:     "gardenlinux",
				Versions: []v1alpha1.MachineImageVersion{addedImageVersion(plainVersion("not-a-version"))},
			}},
			wantErrs: []string{"status.cloudProfileSpec.machineImages[0] (gardenlinux).versions[1] (not-a-version).version: Invalid value"},
		},
		{
			name: "an image or a version named twice in the override is an error",
			overrides: []v1alpha1.NamespacedMachineImage{
				{Name: "gardenlinux", Versions: []v1alpha1.MachineImageVersion{
					addedImageVersion(plainVersion("1443.2.0")), addedImageVersion(plainVersion("1443.2.0")),
				}},
				{Name: "gardenlinux", UpdateStrategy: strategy(v1alpha1.UpdateStrategyPatch)},
			},
			wantErrs: []string{
				"spec.machineImages[0] (gardenlinux).versions[1] (1443.2.0).version: Duplicate value",
				"spec.machineImages[1] (gardenlinux).name: Duplicate value",
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			ncp := namespaced()
			ncp.MachineImages = tt.overrides

			merged, errs := Namespaced(profile(), ncp)

			g.Expect(errorFields(errs)).To(Equal(tt.wantErrs))
			if tt.wantErrs != nil {
				g.Expect(merged).To(BeNil())
				return
			}
			g.Expect(merged.MachineImages).To(Equal(tt.want))
		})
	}
}
