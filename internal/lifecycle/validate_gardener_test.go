package lifecycle

import (
	"fmt"
	"testing"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"

	v1alpha1 "github.com/profilesync/profilesync/api/v1alpha1"
)

// capabilitySpec is validSpec with the capability model in use: two
// architectures and a second capability, a machine type per architecture,
// an image version with one flavor per architecture and the other image
// versions built for amd64.
func capabilitySpec() *v1alpha1.CloudProfileSpec {
	spec := validSpec()
	spec.MachineCapabilities = []v1alpha1.CapabilityDefinition{
		{Name: "architecture", Values: []string{"amd64", "arm64"}},
		{Name: "network", Values: []string{"accelerated", "basic"}},
	}
	spec.MachineTypes = []v1alpha1.MachineType{
		machineType("m5.large", v1alpha1.Capabilities{"architecture": {"amd64"}}),
		machineType("m6g.large", v1alpha1.Capabilities{"architecture": {"arm64"}, "network": {"basic"}}),
	}
	for i := range spec.MachineImages {
		for j := range spec.MachineImages[i].Versions {
			spec.MachineImages[i].Versions[j].CapabilityFlavors = []v1alpha1.Capabilities{{"architecture": {"amd64"}}}
		}
	}
	gardenlinux := &spec.MachineImages[0].Versions[0]
	gardenlinux.CapabilityFlavors = []v1alpha1.Capabilities{
		{"architecture": {"amd64"}, "network": {"accelerated", "basic"}},
		{"architecture": {"arm64"}},
	}
	return spec
}

// withoutFlavors removes the capabilityFlavors of every image version.
func withoutFlavors(s *v1alpha1.CloudProfileSpec) {
	for i := range s.MachineImages {
		for j := range s.MachineImages[i].Versions {
			s.MachineImages[i].Versions[j].CapabilityFlavors = nil
		}
	}
}

func machineType(name string, capabilities v1alpha1.Capabilities) v1alpha1.MachineType {
	return v1alpha1.MachineType{
		Name: name, CPU: resource.MustParse("2"), GPU: resource.MustParse("0"), Memory: resource.MustParse("8Gi"),
		Capabilities: capabilities,
	}
}

func TestValidateGardenerFields(t *testing.T) {
	tests := []struct {
		name       string
		spec       func() *v1alpha1.CloudProfileSpec
		change     func(*v1alpha1.CloudProfileSpec)
		wantErrors []string
	}{
		{
			name:   "a profile using capabilities consistently is valid",
			spec:   capabilitySpec,
			change: func(*v1alpha1.CloudProfileSpec) {},
		},
		// machineCapabilities
		{
			name: "machineCapabilities must define architecture",
			spec: capabilitySpec,
			change: func(s *v1alpha1.CloudProfileSpec) {
				s.MachineCapabilities = s.MachineCapabilities[1:]
				s.MachineTypes = []v1alpha1.MachineType{machineType("m5.large", nil)}
				withoutFlavors(s)
			},
			wantErrors: []string{"FieldValueRequired spec.machineCapabilities"},
		},
		{
			name: "an architecture capability value must be amd64 or arm64",
			spec: capabilitySpec,
			change: func(s *v1alpha1.CloudProfileSpec) {
				s.MachineCapabilities[0].Values = append(s.MachineCapabilities[0].Values, "riscv64")
			},
			wantErrors: []string{"FieldValueNotSupported spec.machineCapabilities[0] (architecture).values[2]"},
		},
		{
			name: "a capability defined twice is a duplicate",
			spec: capabilitySpec,
			change: func(s *v1alpha1.CloudProfileSpec) {
				s.MachineCapabilities = append(s.MachineCapabilities, v1alpha1.CapabilityDefinition{Name: "network", Values: []string{"basic"}})
			},
			wantErrors: []string{"FieldValueDuplicate spec.machineCapabilities[2] (network).name"},
		},
		{
			name: "a capability needs values, none empty; one listed twice is fine, as in Gardener",
			spec: capabilitySpec,
			change: func(s *v1alpha1.CloudProfileSpec) {
				s.MachineCapabilities[1].Values = []string{"accelerated", "basic", "basic", ""}
				s.MachineCapabilities = append(s.MachineCapabilities, v1alpha1.CapabilityDefinition{Name: "gpu"})
			},
			wantErrors: []string{
				"FieldValueRequired spec.machineCapabilities[1] (network).values[3]",
				"FieldValueRequired spec.machineCapabilities[2] (gpu).values",
			},
		},
		{
			name: "a machine type's or flavor's capability may list no value or one twice, as in Gardener",
			spec: capabilitySpec,
			change: func(s *v1alpha1.CloudProfileSpec) {
				s.MachineTypes[1].Capabilities["network"] = []string{}
				s.MachineTypes[0].Capabilities["network"] = []string{"basic", "basic"}
				s.MachineImages[0].Versions[0].CapabilityFlavors[0]["network"] = []string{"accelerated", "accelerated"}
				s.MachineImages[0].Versions[0].CapabilityFlavors[1]["network"] = nil
			},
		},
		{
			name: "an empty capability value is not a defined value",
			spec: capabilitySpec,
			change: func(s *v1alpha1.CloudProfileSpec) {
				s.MachineTypes[1].Capabilities["network"] = []string{""}
			},
			wantErrors: []string{"FieldValueNotSupported spec.machineTypes[1] (m6g.large).capabilities.network[0]"},
		},
		// machine types
		{
			name: "machine type capabilities need machineCapabilities",
			spec: capabilitySpec,
			change: func(s *v1alpha1.CloudProfileSpec) {
				s.MachineCapabilities = nil
				withoutFlavors(s)
			},
			wantErrors: []string{
				"FieldValueForbidden spec.machineTypes[0] (m5.large).capabilities",
				"FieldValueForbidden spec.machineTypes[1] (m6g.large).capabilities",
			},
		},
		{
			name: "a machine type capability must be defined",
			spec: capabilitySpec,
			change: func(s *v1alpha1.CloudProfileSpec) {
				s.MachineTypes[0].Capabilities["gpu"] = []string{"nvidia"}
			},
			wantErrors: []string{"FieldValueNotSupported spec.machineTypes[0] (m5.large).capabilities[gpu]"},
		},
		{
			name: "a machine type capability value must be among the defined values",
			spec: capabilitySpec,
			change: func(s *v1alpha1.CloudProfileSpec) {
				s.MachineTypes[1].Capabilities["network"] = []string{"basic", "turbo"}
			},
			wantErrors: []string{"FieldValueNotSupported spec.machineTypes[1] (m6g.large).capabilities.network[1]"},
		},
		{
			name: "a machine type names at most one architecture, and may leave it out even with several, as in Gardener",
			spec: capabilitySpec,
			change: func(s *v1alpha1.CloudProfileSpec) {
				delete(s.MachineTypes[0].Capabilities, "architecture")
				s.MachineTypes[1].Capabilities["architecture"] = []string{"amd64", "arm64"}
			},
			wantErrors: []string{"FieldValueInvalid spec.machineTypes[1] (m6g.large).capabilities.architecture"},
		},
		{
			name: "with one architecture a machine type may leave it out",
			spec: capabilitySpec,
			change: func(s *v1alpha1.CloudProfileSpec) {
				s.MachineCapabilities[0].Values = []string{"amd64"}
				s.MachineTypes = s.MachineTypes[:1]
				s.MachineTypes[0].Capabilities = nil
				s.MachineImages[0].Versions[0].CapabilityFlavors = s.MachineImages[0].Versions[0].CapabilityFlavors[:1]
				s.MachineImages[0].Versions[0].Architectures = []string{"amd64"}
			},
		},
		{
			name: "a machine type's architecture field must agree with its capabilities",
			spec: capabilitySpec,
			change: func(s *v1alpha1.CloudProfileSpec) {
				s.MachineTypes[0].Architecture = new("arm64")
				s.MachineTypes[1].Architecture = new("arm64")
			},
			wantErrors: []string{"FieldValueInvalid spec.machineTypes[0] (m5.large).architecture"},
		},
		{
			name: "a machine type's architecture field is compared only with a written capabilities.architecture, as in Gardener",
			spec: capabilitySpec,
			change: func(s *v1alpha1.CloudProfileSpec) {
				s.MachineCapabilities[0].Values = []string{"amd64"}
				s.MachineTypes = s.MachineTypes[:1]
				s.MachineTypes[0].Capabilities = nil
				s.MachineTypes[0].Architecture = new("arm64")
				s.MachineImages[0].Versions[0].CapabilityFlavors = s.MachineImages[0].Versions[0].CapabilityFlavors[:1]
				s.MachineImages[0].Versions[0].Architectures = []string{"amd64"}
			},
		},
		// image versions
		{
			name: "capabilityFlavors need machineCapabilities",
			spec: capabilitySpec,
			change: func(s *v1alpha1.CloudProfileSpec) {
				s.MachineCapabilities = nil
				s.MachineTypes = []v1alpha1.MachineType{machineType("m5.large", nil)}
				flavors := s.MachineImages[0].Versions[0].CapabilityFlavors
				withoutFlavors(s)
				s.MachineImages[0].Versions[0].CapabilityFlavors = flavors
			},
			wantErrors: []string{"FieldValueForbidden spec.machineImages[0] (gardenlinux).versions[0] (1443.3).capabilityFlavors"},
		},
		{
			name: "a flavor's values must be among the defined values",
			spec: capabilitySpec,
			change: func(s *v1alpha1.CloudProfileSpec) {
				s.MachineImages[0].Versions[0].CapabilityFlavors[1]["architecture"] = []string{"s390x"}
			},
			wantErrors: []string{"FieldValueNotSupported spec.machineImages[0] (gardenlinux).versions[0] (1443.3).capabilityFlavors[1].architecture[0]"},
		},
		{
			name: "an image version's architectures must be among its flavors'",
			spec: capabilitySpec,
			change: func(s *v1alpha1.CloudProfileSpec) {
				s.MachineImages[0].Versions[0].CapabilityFlavors = s.MachineImages[0].Versions[0].CapabilityFlavors[:1]
			},
			wantErrors: []string{"FieldValueInvalid spec.machineImages[0] (gardenlinux).versions[0] (1443.3).architectures[1]"},
		},
		{
			name: "an image version's architectures may list fewer than its flavors, as in Gardener",
			spec: capabilitySpec,
			change: func(s *v1alpha1.CloudProfileSpec) {
				s.MachineImages[0].Versions[0].Architectures = []string{"arm64"}
			},
		},
		{
			name: "with several architectures an image version needs a flavor, as in Gardener",
			spec: capabilitySpec,
			change: func(s *v1alpha1.CloudProfileSpec) {
				s.MachineImages[0].Versions[0].CapabilityFlavors = nil
				s.MachineImages[0].Versions[0].Architectures = nil
			},
			wantErrors: []string{"FieldValueRequired spec.machineImages[0] (gardenlinux).versions[0] (1443.3).capabilityFlavors"},
		},
		{
			name: "with several architectures each flavor names exactly one, as in Gardener",
			spec: capabilitySpec,
			change: func(s *v1alpha1.CloudProfileSpec) {
				s.MachineImages[0].Versions[0].CapabilityFlavors = []v1alpha1.Capabilities{
					{"network": {"basic"}},
					{"architecture": {"amd64", "arm64"}},
				}
			},
			wantErrors: []string{
				"FieldValueRequired spec.machineImages[0] (gardenlinux).versions[0] (1443.3).capabilityFlavors[0].architecture",
				"FieldValueInvalid spec.machineImages[0] (gardenlinux).versions[0] (1443.3).capabilityFlavors[1].architecture",
			},
		},
		{
			name: "with one architecture an image version without flavors, or a flavor without architecture, has it",
			spec: capabilitySpec,
			change: func(s *v1alpha1.CloudProfileSpec) {
				s.MachineCapabilities[0].Values = []string{"amd64"}
				s.MachineTypes = s.MachineTypes[:1]
				s.MachineImages[0].Versions[0].CapabilityFlavors = []v1alpha1.Capabilities{{"network": {"basic"}}}
				s.MachineImages[0].Versions[0].Architectures = []string{"amd64"}
				s.MachineImages[0].Versions[1].CapabilityFlavors = nil
			},
		},
		// inPlaceUpdates
		{
			name: "minVersionForUpdate must be a semantic version",
			spec: validSpec,
			change: func(s *v1alpha1.CloudProfileSpec) {
				s.MachineImages[0].Versions[1].InPlaceUpdates = &v1alpha1.InPlaceUpdates{Supported: true, MinVersionForUpdate: new("latest")}
			},
			wantErrors: []string{"FieldValueInvalid spec.machineImages[0] (gardenlinux).versions[1] (1443.2).inPlaceUpdates.minVersionForUpdate"},
		},
		{
			name: "minVersionForUpdate may be higher than the version, as in Gardener",
			spec: validSpec,
			change: func(s *v1alpha1.CloudProfileSpec) {
				s.MachineImages[0].Versions[1].InPlaceUpdates = &v1alpha1.InPlaceUpdates{Supported: true, MinVersionForUpdate: new("1443.3")}
			},
		},
		{
			name: "minVersionForUpdate at or below the version is fine",
			spec: validSpec,
			change: func(s *v1alpha1.CloudProfileSpec) {
				s.MachineImages[0].Versions[1].InPlaceUpdates = &v1alpha1.InPlaceUpdates{Supported: true, MinVersionForUpdate: new("1312")}
			},
		},
		// bastion
		{
			name: "a bastion names a machine type and image of the profile",
			spec: capabilitySpec,
			change: func(s *v1alpha1.CloudProfileSpec) {
				s.Bastion = &v1alpha1.Bastion{
					MachineType:  &v1alpha1.BastionMachineType{Name: "m6g.large"},
					MachineImage: &v1alpha1.BastionMachineImage{Name: "gardenlinux", Version: new("1443.3")},
				}
			},
		},
		{
			name: "a bastion needs a machine type or image",
			spec: validSpec,
			change: func(s *v1alpha1.CloudProfileSpec) {
				s.Bastion = &v1alpha1.Bastion{}
			},
			wantErrors: []string{"FieldValueInvalid spec.bastion"},
		},
		{
			name: "a bastion's machine type, image and version must be in the profile",
			spec: capabilitySpec,
			change: func(s *v1alpha1.CloudProfileSpec) {
				s.Bastion = &v1alpha1.Bastion{
					MachineType:  &v1alpha1.BastionMachineType{Name: "t3.nano"},
					MachineImage: &v1alpha1.BastionMachineImage{Name: "gardenlinux", Version: new("1.0.0")},
				}
			},
			wantErrors: []string{
				"FieldValueInvalid spec.bastion.machineType.name",
				"FieldValueInvalid spec.bastion.machineImage.version",
			},
		},
		{
			name: "a bastion's image must be built for its machine type's architecture",
			spec: validSpec,
			change: func(s *v1alpha1.CloudProfileSpec) {
				s.MachineTypes = []v1alpha1.MachineType{machineType("m6g.large", nil)}
				s.MachineTypes[0].Architecture = new("arm64")
				s.Bastion = &v1alpha1.Bastion{
					MachineType:  &v1alpha1.BastionMachineType{Name: "m6g.large"},
					MachineImage: &v1alpha1.BastionMachineImage{Name: "suse"},
				}
			},
			wantErrors: []string{"FieldValueInvalid spec.bastion.machineImage.name"},
		},
		{
			name: "a machine type without an architecture is amd64, as Gardener defaults it, so an arm64-only image is no bastion for it",
			spec: validSpec,
			change: func(s *v1alpha1.CloudProfileSpec) {
				s.MachineTypes = []v1alpha1.MachineType{machineType("m5.large", nil)}
				s.MachineImages[0].Versions[0].Architectures = []string{"arm64"}
				s.MachineImages[0].Versions = s.MachineImages[0].Versions[:1]
				s.Bastion = &v1alpha1.Bastion{
					MachineType:  &v1alpha1.BastionMachineType{Name: "m5.large"},
					MachineImage: &v1alpha1.BastionMachineImage{Name: s.MachineImages[0].Name},
				}
			},
			wantErrors: []string{"FieldValueInvalid spec.bastion.machineImage.name"},
		},
		{
			name: "an image version without architectures is amd64, as Gardener defaults it, so it is a bastion for an amd64 type",
			spec: validSpec,
			change: func(s *v1alpha1.CloudProfileSpec) {
				s.MachineTypes = []v1alpha1.MachineType{machineType("m5.large", nil)}
				s.MachineTypes[0].Architecture = new("amd64")
				for i := range s.MachineImages[0].Versions {
					s.MachineImages[0].Versions[i].Architectures = nil
				}
				s.Bastion = &v1alpha1.Bastion{
					MachineType:  &v1alpha1.BastionMachineType{Name: "m5.large"},
					MachineImage: &v1alpha1.BastionMachineImage{Name: s.MachineImages[0].Name},
				}
			},
		},
		// limits, seedSelector, accessRestrictions
		{
			name:       "maxNodesTotal must be positive",
			spec:       validSpec,
			change:     func(s *v1alpha1.CloudProfileSpec) { s.Limits = &v1alpha1.Limits{MaxNodesTotal: new(int32(0))} },
			wantErrors: []string{"FieldValueInvalid spec.limits.maxNodesTotal"},
		},
		{
			name: "a seedSelector is a valid label selector with distinct provider types",
			spec: validSpec,
			change: func(s *v1alpha1.CloudProfileSpec) {
				s.SeedSelector = &v1alpha1.SeedSelector{
					LabelSelector: metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "landscape", Operator: "Near"}}},
					ProviderTypes: []string{"aws", "aws"},
				}
			},
			wantErrors: []string{
				"FieldValueInvalid spec.seedSelector.matchExpressions[0].operator",
				"FieldValueDuplicate spec.seedSelector.providerTypes[1]",
			},
		},
		{
			name: "a seedSelector's label values must be valid label values, as in Gardener since #12708",
			spec: validSpec,
			change: func(s *v1alpha1.CloudProfileSpec) {
				s.SeedSelector = &v1alpha1.SeedSelector{LabelSelector: metav1.LabelSelector{
					MatchLabels:      map[string]string{"landscape": "eu west"},
					MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "tier", Operator: metav1.LabelSelectorOpIn, Values: []string{"gold", "-silver"}}},
				}}
			},
			wantErrors: []string{
				"FieldValueInvalid spec.seedSelector.matchLabels",
				"FieldValueInvalid spec.seedSelector.matchExpressions[0].values[1]",
			},
		},
		{
			name: "a region's access restrictions are distinct",
			spec: validSpec,
			change: func(s *v1alpha1.CloudProfileSpec) {
				s.Regions = []v1alpha1.Region{{Name: "eu-west-1", AccessRestrictions: []v1alpha1.AccessRestriction{{Name: "eu-access-only"}, {Name: "eu-access-only"}}}}
			},
			wantErrors: []string{"FieldValueDuplicate spec.regions[0] (eu-west-1).accessRestrictions[1]"},
		},
		{
			name: "an empty provider type or access restriction name is accepted, as Gardener accepts it",
			spec: validSpec,
			change: func(s *v1alpha1.CloudProfileSpec) {
				s.SeedSelector = &v1alpha1.SeedSelector{ProviderTypes: []string{"", "aws"}}
				s.Regions = []v1alpha1.Region{{Name: "eu-west-1", AccessRestrictions: []v1alpha1.AccessRestriction{{Name: ""}, {Name: "eu-access-only"}}}}
			},
		},
		{
			name: "a region's labels are Kubernetes labels, as in Gardener",
			spec: validSpec,
			change: func(s *v1alpha1.CloudProfileSpec) {
				s.Regions = []v1alpha1.Region{
					{Name: "eu-west-1", Labels: map[string]string{"quality": "gold tier"}},
					{Name: "eu-west-2", Labels: map[string]string{"-quality": "gold"}},
					{Name: "eu-west-3", Labels: map[string]string{"example.com/quality": "gold-tier", "reliability": ""}},
				}
			},
			wantErrors: []string{
				"FieldValueInvalid spec.regions[0] (eu-west-1).labels",
				"FieldValueInvalid spec.regions[1] (eu-west-2).labels",
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			spec := tt.spec()
			tt.change(spec)
			errs, _ := ValidateCloudProfileSpec(spec, field.NewPath("spec"))
			g.Expect(errorsOf(errs)).To(ConsistOf(tt.wantErrors))
		})
	}
}

func TestArchitecturesOfMachineTypesAndImageVersions(t *testing.T) {
	g := NewWithT(t)
	spec := capabilitySpec()
	g.Expect(MachineTypeArchitecture(&spec.MachineTypes[1], spec.MachineCapabilities)).To(Equal("arm64"))
	g.Expect(ImageVersionArchitectures(&spec.MachineImages[0].Versions[0], spec.MachineCapabilities)).To(Equal([]string{"amd64", "arm64"}))

	plainType := machineType("m5.large", nil)
	plainType.Architecture = new("amd64")
	g.Expect(MachineTypeArchitecture(&plainType, nil)).To(Equal("amd64"))
	g.Expect(ImageVersionArchitectures(&spec.MachineImages[0].Versions[0], nil)).To(Equal([]string{"amd64", "arm64"}))
}

// TestTheBastionsImageMustBeSupportedAtTheMomentOfValidationAsGardenerRequires
// checks Gardener's rule for the bastion's image: the named version, or some
// version when none is named, declares a classification that is supported at
// the moment of validation and is built for the machine type's architecture.
func TestTheBastionsImageMustBeSupportedAtTheMomentOfValidationAsGardenerRequires(t *testing.T) {
	now := at("2025-06-01T00:00:00Z")
	bastionSpec := func(bastionVersion *string, versions ...v1alpha1.ExpirableVersion) *v1alpha1.CloudProfileSpec {
		s := validSpec()
		s.MachineImages = []v1alpha1.MachineImage{{Name: "gardenlinux", Versions: imageVersions(versions...)}}
		s.Bastion = &v1alpha1.Bastion{MachineImage: &v1alpha1.BastionMachineImage{Name: "gardenlinux", Version: bastionVersion}}
		return s
	}
	const refusal = "spec.bastion.machineImage.%s: Invalid value: \"gardenlinux\": no image with classification supported and arch %q found"
	tests := []struct {
		name    string
		spec    *v1alpha1.CloudProfileSpec
		wantErr string // empty: accepted
	}{
		{
			name: "a named version whose supported stage is current is a bastion",
			spec: bastionSpec(new("1.1.0"), withLifecycle("1.1.0", stage(preview, ""), stage(supported, "2025-05-01T00:00:00Z"))),
		},
		{
			name:    "a named version whose supported stage starts after now is refused at the version",
			spec:    bastionSpec(new("1.1.0"), withLifecycle("1.1.0", stage(preview, ""), stage(supported, "2025-07-01T00:00:00Z"))),
			wantErr: fmt.Sprintf(refusal, "version", "<nil>"),
		},
		{
			name:    "a named version deprecated at now is refused",
			spec:    bastionSpec(new("1.1.0"), withLifecycle("1.1.0", stage(supported, ""), stage(deprecated, "2025-05-01T00:00:00Z"))),
			wantErr: fmt.Sprintf(refusal, "version", "<nil>"),
		},
		{
			name:    "a named version classified supported in the deprecated API but expired at now is refused",
			spec:    bastionSpec(new("1.1.0"), withDeprecatedAPI("1.1.0", supported, "2025-05-01T00:00:00Z")),
			wantErr: fmt.Sprintf(refusal, "version", "<nil>"),
		},
		{
			name: "a named version classified supported in the deprecated API that expires later is a bastion",
			spec: bastionSpec(new("1.1.0"), withDeprecatedAPI("1.1.0", supported, "2025-07-01T00:00:00Z")),
		},
		{
			name:    "a version that declares no classification is refused, as Gardener counts only a declared one",
			spec:    bastionSpec(new("1.1.0"), plain("1.1.0")),
			wantErr: fmt.Sprintf(refusal, "version", "<nil>"),
		},
		{
			name: "without a named version some version supported at now is enough",
			spec: bastionSpec(nil, withLifecycle("1.2.0", stage(preview, "")), withDeprecatedAPI("1.1.0", supported, "")),
		},
		{
			name:    "without a named version and none supported at now the image name is refused",
			spec:    bastionSpec(nil, withLifecycle("1.2.0", stage(preview, "")), withDeprecatedAPI("1.1.0", deprecated, "")),
			wantErr: fmt.Sprintf(refusal, "name", "<nil>"),
		},
		{
			name: "with a machine type the supported version must be built for its architecture",
			spec: func() *v1alpha1.CloudProfileSpec {
				s := bastionSpec(nil, withDeprecatedAPI("1.1.0", supported, ""))
				s.MachineImages[0].Versions[0].Architectures = []string{"arm64"}
				s.MachineTypes = []v1alpha1.MachineType{machineType("m5.large", nil)}
				s.Bastion.MachineType = &v1alpha1.BastionMachineType{Name: "m5.large"}
				return s
			}(),
			wantErr: fmt.Sprintf(refusal, "name", "amd64"),
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			errs, _ := ValidateCloudProfileSpecAt(tt.spec, field.NewPath("spec"), now)
			if tt.wantErr == "" {
				g.Expect(errs).To(BeEmpty())
				return
			}
			g.Expect(errs).To(HaveLen(1))
			g.Expect(errs[0].Error()).To(Equal(tt.wantErr))
		})
	}
}
