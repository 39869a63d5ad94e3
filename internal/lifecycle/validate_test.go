package lifecycle

import (
	"fmt"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/util/validation/field"

	v1alpha1 "github.com/profilesync/profilesync/api/v1alpha1"
)

// validSpec is a profile that breaks no rule; each test row changes one thing.
func validSpec() *v1alpha1.CloudProfileSpec {
	constraint := ">= 1.28"
	return &v1alpha1.CloudProfileSpec{
		Type: "aws",
		Kubernetes: v1alpha1.KubernetesSettings{Versions: []v1alpha1.ExpirableVersion{
			withLifecycle("1.31.0", stage(preview, "")),
			withLifecycle("1.30.2",
				stage(preview, ""),
				stage(supported, "2024-02-01T00:00:00Z"),
				stage(deprecated, "2024-06-01T00:00:00Z"),
				stage(expired, "2024-09-01T00:00:00Z")),
			withDeprecatedAPI("1.29.5", supported, ""),
			withDeprecatedAPI("1.29.4", deprecated, "2024-06-01T00:00:00Z"),
			plain("1.28.0"),
		}},
		MachineImages: []v1alpha1.MachineImage{
			{
				Name:           "gardenlinux",
				UpdateStrategy: strategy(v1alpha1.UpdateStrategyMinor),
				Versions: []v1alpha1.MachineImageVersion{
					{
						ExpirableVersion:         withLifecycle("1443.3", stage(supported, ""), stage(expired, "2025-01-01T00:00:00Z")),
						Architectures:            []string{"amd64", "arm64"},
						KubeletVersionConstraint: &constraint,
					},
					{ExpirableVersion: plain("1443.2")},
					{ExpirableVersion: plain("1312")},
				},
			},
			{Name: "suse", Versions: imageVersions(plain("15.4"))},
		},
		MachineTypes: []v1alpha1.MachineType{{Name: "m5.large"}},
		Regions:      []v1alpha1.Region{{Name: "eu-west-1"}},
	}
}

// errorsOf renders errors as "Type Field" so a table can list them.
func errorsOf(errs field.ErrorList) []string {
	out := make([]string, len(errs))
	for i, err := range errs {
		out[i] = string(err.Type) + " " + err.Field
	}
	return out
}

func TestValidateCloudProfileSpec(t *testing.T) {
	tests := []struct {
		name         string
		change       func(*v1alpha1.CloudProfileSpec)
		wantErrors   []string
		wantWarnings []string // prefixes: "PATH: "
	}{
		{
			name:   "a profile breaking no rule is valid",
			change: func(*v1alpha1.CloudProfileSpec) {},
		},
		// spec.type
		{
			name:       "the provider type is required",
			change:     func(s *v1alpha1.CloudProfileSpec) { s.Type = "" },
			wantErrors: []string{"FieldValueRequired spec.type"},
		},
		// Kubernetes versions
		{
			name:       "at least one Kubernetes version is required",
			change:     func(s *v1alpha1.CloudProfileSpec) { s.Kubernetes.Versions = nil },
			wantErrors: []string{"FieldValueRequired spec.kubernetes.versions"},
		},
		{
			name: "a Kubernetes version with a v prefix is rejected",
			change: func(s *v1alpha1.CloudProfileSpec) {
				s.Kubernetes.Versions[4].Version = "v1.28.0"
			},
			wantErrors: []string{"FieldValueInvalid spec.kubernetes.versions[4] (v1.28.0).version"},
		},
		{
			name: "a Kubernetes version without a patch is rejected",
			change: func(s *v1alpha1.CloudProfileSpec) {
				s.Kubernetes.Versions[4].Version = "1.28"
			},
			wantErrors: []string{"FieldValueInvalid spec.kubernetes.versions[4] (1.28).version"},
		},
		{
			name: "a Kubernetes pre-release version is rejected",
			change: func(s *v1alpha1.CloudProfileSpec) {
				s.Kubernetes.Versions[4].Version = "1.28.0-rc.1"
			},
			wantErrors: []string{"FieldValueInvalid spec.kubernetes.versions[4] (1.28.0-rc.1).version"},
		},
		{
			name: "a duplicate Kubernetes version is rejected on the second entry",
			change: func(s *v1alpha1.CloudProfileSpec) {
				s.Kubernetes.Versions = append(s.Kubernetes.Versions, plain("1.28.0"))
			},
			wantErrors: []string{"FieldValueDuplicate spec.kubernetes.versions[5] (1.28.0).version"},
		},
		// Deprecated classification
		{
			name: "expired may not be written as a classification",
			change: func(s *v1alpha1.CloudProfileSpec) {
				s.Kubernetes.Versions[4] = withDeprecatedAPI("1.28.0", expired, "")
			},
			wantErrors: []string{"FieldValueInvalid spec.kubernetes.versions[4] (1.28.0).classification"},
		},
		{
			name: "unavailable may not be written as a classification",
			change: func(s *v1alpha1.CloudProfileSpec) {
				s.Kubernetes.Versions[4] = withDeprecatedAPI("1.28.0", unavailable, "")
			},
			wantErrors: []string{"FieldValueInvalid spec.kubernetes.versions[4] (1.28.0).classification"},
		},
		{
			name: "an unknown classification is not supported",
			change: func(s *v1alpha1.CloudProfileSpec) {
				s.Kubernetes.Versions[4] = withDeprecatedAPI("1.28.0", "retired", "")
			},
			wantErrors: []string{"FieldValueNotSupported spec.kubernetes.versions[4] (1.28.0).classification"},
		},
		{
			name: "preview may be written as a classification",
			change: func(s *v1alpha1.CloudProfileSpec) {
				s.Kubernetes.Versions[4] = withDeprecatedAPI("1.28.0", preview, "2024-01-01T00:00:00Z")
			},
		},
		// lifecycle exclusive with the deprecated fields
		{
			name: "lifecycle may not be combined with classification",
			change: func(s *v1alpha1.CloudProfileSpec) {
				c := supported
				s.Kubernetes.Versions[1].Classification = &c
			},
			wantErrors: []string{"FieldValueForbidden spec.kubernetes.versions[1] (1.30.2).classification"},
		},
		{
			name: "lifecycle may not be combined with expirationDate",
			change: func(s *v1alpha1.CloudProfileSpec) {
				s.Kubernetes.Versions[1].ExpirationDate = metaAt("2025-01-01T00:00:00Z")
			},
			wantErrors: []string{"FieldValueForbidden spec.kubernetes.versions[1] (1.30.2).expirationDate"},
		},
		// lifecycle stages
		{
			name: "unavailable may not be declared as a stage",
			change: func(s *v1alpha1.CloudProfileSpec) {
				s.Kubernetes.Versions[4] = withLifecycle("1.28.0", stage(unavailable, ""), stage(supported, "2024-01-01T00:00:00Z"))
			},
			wantErrors: []string{"FieldValueInvalid spec.kubernetes.versions[4] (1.28.0).lifecycle[0].classification"},
		},
		{
			name: "an unknown stage is not supported",
			change: func(s *v1alpha1.CloudProfileSpec) {
				s.Kubernetes.Versions[4] = withLifecycle("1.28.0", stage("retired", ""))
			},
			wantErrors: []string{"FieldValueNotSupported spec.kubernetes.versions[4] (1.28.0).lifecycle[0].classification"},
		},
		{
			name: "a stage may not appear twice",
			change: func(s *v1alpha1.CloudProfileSpec) {
				s.Kubernetes.Versions[4] = withLifecycle("1.28.0", stage(supported, ""), stage(supported, "2024-01-01T00:00:00Z"))
			},
			wantErrors: []string{"FieldValueDuplicate spec.kubernetes.versions[4] (1.28.0).lifecycle[1].classification"},
		},
		{
			name: "stages must be in rank order",
			change: func(s *v1alpha1.CloudProfileSpec) {
				s.Kubernetes.Versions[4] = withLifecycle("1.28.0", stage(deprecated, ""), stage(supported, "2024-01-01T00:00:00Z"))
			},
			wantErrors: []string{"FieldValueInvalid spec.kubernetes.versions[4] (1.28.0).lifecycle[1].classification"},
		},
		{
			name: "stages may leave gaps in the rank order",
			change: func(s *v1alpha1.CloudProfileSpec) {
				s.Kubernetes.Versions[4] = withLifecycle("1.28.0", stage(preview, ""), stage(expired, "2024-01-01T00:00:00Z"))
			},
		},
		{
			name: "only the first stage may omit startTime",
			change: func(s *v1alpha1.CloudProfileSpec) {
				s.Kubernetes.Versions[4] = withLifecycle("1.28.0", stage(supported, ""), stage(deprecated, ""))
			},
			wantErrors: []string{"FieldValueRequired spec.kubernetes.versions[4] (1.28.0).lifecycle[1].startTime"},
		},
		{
			name: "the first stage may have a startTime",
			change: func(s *v1alpha1.CloudProfileSpec) {
				s.Kubernetes.Versions[4] = withLifecycle("1.28.0", stage(supported, "2024-01-01T00:00:00Z"))
			},
		},
		{
			name: "start times may not decrease",
			change: func(s *v1alpha1.CloudProfileSpec) {
				s.Kubernetes.Versions[1].Lifecycle[3].StartTime = metaAt("2024-05-01T00:00:00Z")
			},
			wantErrors: []string{"FieldValueInvalid spec.kubernetes.versions[1] (1.30.2).lifecycle[3].startTime"},
		},
		{
			name: "equal start times are allowed",
			change: func(s *v1alpha1.CloudProfileSpec) {
				s.Kubernetes.Versions[1].Lifecycle[3].StartTime = metaAt("2024-06-01T00:00:00Z")
			},
		},
		// highest Kubernetes version
		{
			name: "the highest Kubernetes version may not have an expirationDate",
			change: func(s *v1alpha1.CloudProfileSpec) {
				s.Kubernetes.Versions[0] = withDeprecatedAPI("1.31.0", preview, "2030-01-01T00:00:00Z")
			},
			wantErrors: []string{"FieldValueForbidden spec.kubernetes.versions[0] (1.31.0).expirationDate"},
		},
		{
			name: "the highest Kubernetes version's lifecycle may not end in expired",
			change: func(s *v1alpha1.CloudProfileSpec) {
				s.Kubernetes.Versions[0] = withLifecycle("1.31.0", stage(preview, ""), stage(expired, "2030-01-01T00:00:00Z"))
			},
			wantErrors: []string{"FieldValueForbidden spec.kubernetes.versions[0] (1.31.0).lifecycle[1].classification"},
		},
		{
			name: "the highest Kubernetes version is found by semver, not by list order or string order",
			change: func(s *v1alpha1.CloudProfileSpec) {
				s.Kubernetes.Versions = append(s.Kubernetes.Versions, withDeprecatedAPI("1.100.0", "", "2030-01-01T00:00:00Z"))
			},
			wantErrors: []string{"FieldValueForbidden spec.kubernetes.versions[5] (1.100.0).expirationDate"},
		},
		{
			name: "a version below the highest may expire",
			change: func(s *v1alpha1.CloudProfileSpec) {
				s.Kubernetes.Versions[4] = withDeprecatedAPI("1.28.0", "", "2030-01-01T00:00:00Z")
			},
		},
		{
			name: "the latest machine image version may expire",
			change: func(s *v1alpha1.CloudProfileSpec) {
				s.MachineImages[1].Versions[0].ExpirationDate = metaAt("2024-01-01T00:00:00Z")
			},
		},
		// one supported per minor
		{
			name: "two deprecated-API versions classified supported in one minor are an error on both",
			change: func(s *v1alpha1.CloudProfileSpec) {
				s.Kubernetes.Versions[3] = withDeprecatedAPI("1.29.4", supported, "")
			},
			wantErrors: []string{
				"FieldValueForbidden spec.kubernetes.versions[2] (1.29.5).classification",
				"FieldValueForbidden spec.kubernetes.versions[3] (1.29.4).classification",
			},
		},
		{
			name: "three deprecated-API versions classified supported in one minor are an error on each",
			change: func(s *v1alpha1.CloudProfileSpec) {
				s.Kubernetes.Versions[3] = withDeprecatedAPI("1.29.4", supported, "")
				s.Kubernetes.Versions = append(s.Kubernetes.Versions, withDeprecatedAPI("1.29.1", supported, ""))
			},
			wantErrors: []string{
				"FieldValueForbidden spec.kubernetes.versions[2] (1.29.5).classification",
				"FieldValueForbidden spec.kubernetes.versions[3] (1.29.4).classification",
				"FieldValueForbidden spec.kubernetes.versions[5] (1.29.1).classification",
			},
		},
		{
			name: "versions supported only by default do not count towards one supported per minor",
			change: func(s *v1alpha1.CloudProfileSpec) {
				s.Kubernetes.Versions = append(s.Kubernetes.Versions, plain("1.29.3"), plain("1.29.2"))
			},
		},
		{
			name: "supported versions of different minors are fine",
			change: func(s *v1alpha1.CloudProfileSpec) {
				s.Kubernetes.Versions[4] = withDeprecatedAPI("1.28.0", supported, "")
			},
		},
		{
			name: "one supported version per minor applies to machine images too",
			change: func(s *v1alpha1.CloudProfileSpec) {
				s.MachineImages[0].Versions[1].Classification = new(v1alpha1.VersionClassification)
				*s.MachineImages[0].Versions[1].Classification = supported
				s.MachineImages[0].Versions = append(s.MachineImages[0].Versions, v1alpha1.MachineImageVersion{ExpirableVersion: withDeprecatedAPI("1443.2.1", supported, "")})
			},
			wantErrors: []string{
				"FieldValueForbidden spec.machineImages[0] (gardenlinux).versions[1] (1443.2).classification",
				"FieldValueForbidden spec.machineImages[0] (gardenlinux).versions[3] (1443.2.1).classification",
			},
		},
		{
			name: "overlapping bounded supported windows of lifecycle versions in one minor are a warning, not an error",
			change: func(s *v1alpha1.CloudProfileSpec) {
				s.Kubernetes.Versions = append(s.Kubernetes.Versions, withLifecycle("1.30.3",
					stage(preview, ""), stage(supported, "2024-05-01T00:00:00Z"), stage(deprecated, "2025-01-01T00:00:00Z")))
			},
			wantWarnings: []string{"spec.kubernetes.versions[5] (1.30.3): "},
		},
		{
			name: "at no particular time a supported window that never ends and overlaps another is an error on both",
			change: func(s *v1alpha1.CloudProfileSpec) {
				s.Kubernetes.Versions = append(s.Kubernetes.Versions, withLifecycle("1.30.3",
					stage(preview, ""), stage(supported, "2024-05-01T00:00:00Z")))
			},
			wantErrors: []string{
				"FieldValueForbidden spec.kubernetes.versions[1] (1.30.2)",
				"FieldValueForbidden spec.kubernetes.versions[5] (1.30.3)",
			},
		},
		{
			name: "supported windows that abut do not overlap",
			change: func(s *v1alpha1.CloudProfileSpec) {
				s.Kubernetes.Versions = append(s.Kubernetes.Versions, withLifecycle("1.30.3",
					stage(preview, ""), stage(supported, "2024-06-01T00:00:00Z")))
			},
		},
		{
			name: "a lifecycle version supported while a deprecated-API version is supported is an error on the deprecated-API version",
			change: func(s *v1alpha1.CloudProfileSpec) {
				s.Kubernetes.Versions = append(s.Kubernetes.Versions, withLifecycle("1.29.6",
					stage(supported, "2024-05-01T00:00:00Z")))
			},
			wantErrors: []string{"FieldValueForbidden spec.kubernetes.versions[2] (1.29.5).classification"},
		},
		{
			name: "a lifecycle version supported only after a deprecated-API version expired is fine",
			change: func(s *v1alpha1.CloudProfileSpec) {
				s.Kubernetes.Versions[2] = withDeprecatedAPI("1.29.5", supported, "2024-05-01T00:00:00Z")
				s.Kubernetes.Versions = append(s.Kubernetes.Versions, withLifecycle("1.29.6",
					stage(preview, ""), stage(supported, "2024-05-01T00:00:00Z")))
			},
		},
		{
			name: "a supported stage replaced at its own start time has an empty window",
			change: func(s *v1alpha1.CloudProfileSpec) {
				s.Kubernetes.Versions = append(s.Kubernetes.Versions, withLifecycle("1.30.3",
					stage(supported, "2024-03-01T00:00:00Z"), stage(deprecated, "2024-03-01T00:00:00Z")))
			},
		},
		// machine images
		{
			name: "a machine image needs a name",
			change: func(s *v1alpha1.CloudProfileSpec) {
				s.MachineImages[1].Name = ""
			},
			wantErrors: []string{"FieldValueRequired spec.machineImages[1].name"},
		},
		{
			name: "machine image names are unique",
			change: func(s *v1alpha1.CloudProfileSpec) {
				s.MachineImages[1].Name = "gardenlinux"
			},
			wantErrors: []string{"FieldValueDuplicate spec.machineImages[1] (gardenlinux).name"},
		},
		{
			name: "a machine image needs at least one version",
			change: func(s *v1alpha1.CloudProfileSpec) {
				s.MachineImages[1].Versions = nil
			},
			wantErrors: []string{"FieldValueRequired spec.machineImages[1] (suse).versions"},
		},
		{
			name: "an unknown update strategy is not supported",
			change: func(s *v1alpha1.CloudProfileSpec) {
				s.MachineImages[1].UpdateStrategy = strategy("latest")
			},
			wantErrors: []string{"FieldValueNotSupported spec.machineImages[1] (suse).updateStrategy"},
		},
		{
			name: "update strategy patch is accepted",
			change: func(s *v1alpha1.CloudProfileSpec) {
				s.MachineImages[1].UpdateStrategy = strategy(v1alpha1.UpdateStrategyPatch)
			},
		},
		{
			name: "a machine image version must parse as semver",
			change: func(s *v1alpha1.CloudProfileSpec) {
				s.MachineImages[1].Versions[0].Version = "fifteen"
			},
			wantErrors: []string{"FieldValueInvalid spec.machineImages[1] (suse).versions[0] (fifteen).version"},
		},
		{
			name: "a machine image version may not be empty",
			change: func(s *v1alpha1.CloudProfileSpec) {
				s.MachineImages[1].Versions[0].Version = ""
			},
			wantErrors: []string{"FieldValueRequired spec.machineImages[1] (suse).versions[0].version"},
		},
		{
			name: "short machine image versions are semver",
			change: func(s *v1alpha1.CloudProfileSpec) {
				s.MachineImages[1].Versions = imageVersions(plain("15"), plain("16.1"))
			},
		},
		{
			name: "a duplicate machine image version as written is rejected",
			change: func(s *v1alpha1.CloudProfileSpec) {
				s.MachineImages[1].Versions = imageVersions(plain("15.4"), plain("15.4"))
			},
			wantErrors: []string{"FieldValueDuplicate spec.machineImages[1] (suse).versions[1] (15.4).version"},
		},
		{
			name: "1.7 next to 1.7.0 is two entries, as Gardener compares versions as written",
			change: func(s *v1alpha1.CloudProfileSpec) {
				s.MachineImages[1].Versions = imageVersions(plain("1.7"), plain("1.7.0"))
			},
		},
		{
			name: "1.7 and 1.7.0 both classified supported are two supported versions of one minor",
			change: func(s *v1alpha1.CloudProfileSpec) {
				s.MachineImages[1].Versions = imageVersions(plain("1.8"))
				s.MachineImages[1].Versions = append(s.MachineImages[1].Versions,
					v1alpha1.MachineImageVersion{ExpirableVersion: withDeprecatedAPI("1.7", supported, "")},
					v1alpha1.MachineImageVersion{ExpirableVersion: withDeprecatedAPI("1.7.0", supported, "")})
			},
			wantErrors: []string{
				"FieldValueForbidden spec.machineImages[1] (suse).versions[1] (1.7).classification",
				"FieldValueForbidden spec.machineImages[1] (suse).versions[2] (1.7.0).classification",
			},
		},
		{
			name: "the same version in two images is fine",
			change: func(s *v1alpha1.CloudProfileSpec) {
				s.MachineImages[1].Versions = imageVersions(plain("1443.3"))
			},
		},
		{
			name: "architectures are amd64 or arm64",
			change: func(s *v1alpha1.CloudProfileSpec) {
				s.MachineImages[0].Versions[0].Architectures = []string{"amd64", "s390x"}
			},
			wantErrors: []string{"FieldValueNotSupported spec.machineImages[0] (gardenlinux).versions[0] (1443.3).architectures[1]"},
		},
		{
			name: "an architecture is listed once",
			change: func(s *v1alpha1.CloudProfileSpec) {
				s.MachineImages[0].Versions[0].Architectures = []string{"arm64", "arm64"}
			},
			wantErrors: []string{"FieldValueDuplicate spec.machineImages[0] (gardenlinux).versions[0] (1443.3).architectures[1]"},
		},
		{
			name: "the kubelet version constraint must parse",
			change: func(s *v1alpha1.CloudProfileSpec) {
				c := ">= one.twenty"
				s.MachineImages[0].Versions[1].KubeletVersionConstraint = &c
			},
			wantErrors: []string{"FieldValueInvalid spec.machineImages[0] (gardenlinux).versions[1] (1443.2).kubeletVersionConstraint"},
		},
		{
			name: "a range kubelet version constraint parses",
			change: func(s *v1alpha1.CloudProfileSpec) {
				c := ">= 1.26, < 1.32"
				s.MachineImages[0].Versions[1].KubeletVersionConstraint = &c
			},
		},
		{
			name: "machine image versions follow the lifecycle rules too",
			change: func(s *v1alpha1.CloudProfileSpec) {
				s.MachineImages[1].Versions[0].Lifecycle = []v1alpha1.LifecycleStage{stage(expired, ""), stage(preview, "2024-01-01T00:00:00Z")}
			},
			wantErrors: []string{"FieldValueInvalid spec.machineImages[1] (suse).versions[0] (15.4).lifecycle[1].classification"},
		},
		// as Gardener: already expired when first applied (its API server drops it on create, gardener/gardener#8297)
		{
			name: "a version already expired is accepted",
			change: func(s *v1alpha1.CloudProfileSpec) {
				s.Kubernetes.Versions[4] = withDeprecatedAPI("1.28.0", "", "2000-01-01T00:00:00Z")
			},
		},
		{
			name: "all errors are collected, not only the first",
			change: func(s *v1alpha1.CloudProfileSpec) {
				s.Type = ""
				s.Kubernetes.Versions[4].Version = "1.28"
				s.MachineImages[1].Versions[0].Version = "x"
			},
			wantErrors: []string{
				"FieldValueRequired spec.type",
				"FieldValueInvalid spec.kubernetes.versions[4] (1.28).version",
				"FieldValueInvalid spec.machineImages[1] (suse).versions[0] (x).version",
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			spec := validSpec()
			tt.change(spec)

			errs, warnings := ValidateCloudProfileSpec(spec, field.NewPath("spec"))

			if len(tt.wantErrors) == 0 {
				g.Expect(errs).To(BeEmpty())
			} else {
				g.Expect(errorsOf(errs)).To(ConsistOf(tt.wantErrors))
			}
			g.Expect(warnings).To(HaveLen(len(tt.wantWarnings)))
			for i, prefix := range tt.wantWarnings {
				g.Expect(warnings[i]).To(HavePrefix(prefix))
			}
		})
	}
}

func TestValidateCloudProfileSpecMessagesNameTheVersions(t *testing.T) {
	g := NewWithT(t)
	spec := validSpec()
	spec.Kubernetes.Versions = append(spec.Kubernetes.Versions, withLifecycle("1.30.3",
		stage(preview, ""), stage(supported, "2024-05-01T00:00:00Z"), stage(deprecated, "2025-01-01T00:00:00Z")))
	spec.Kubernetes.Versions[3] = withDeprecatedAPI("1.29.4", supported, "")

	errs, warnings := ValidateCloudProfileSpec(spec, field.NewPath("spec"))

	g.Expect(errs).To(HaveLen(2))
	g.Expect(errs[0].Field).To(Equal("spec.kubernetes.versions[2] (1.29.5).classification"))
	g.Expect(errs[0].Detail).To(Equal("only one supported version per minor is allowed, but spec.kubernetes.versions[3] (1.29.4) is classified supported too"))
	g.Expect(errs[1].Field).To(Equal("spec.kubernetes.versions[3] (1.29.4).classification"))
	g.Expect(errs[1].Detail).To(Equal("only one supported version per minor is allowed, but spec.kubernetes.versions[2] (1.29.5) is classified supported too"))
	g.Expect(warnings).To(ConsistOf(
		"spec.kubernetes.versions[5] (1.30.3): supported window [2024-05-01T00:00:00Z, 2025-01-01T00:00:00Z) of 1.30.3 overlaps supported window [2024-02-01T00:00:00Z, 2024-06-01T00:00:00Z) of 1.30.2 (versions[1]) in the same minor; only one version per minor should be supported at a time",
	))
}

func TestValidateRequiredLists(t *testing.T) {
	tests := []struct {
		name       string
		change     func(*v1alpha1.CloudProfileSpec)
		wantErrors []string
	}{
		{name: "all three present", change: func(*v1alpha1.CloudProfileSpec) {}},
		{
			name:       "no machine image",
			change:     func(s *v1alpha1.CloudProfileSpec) { s.MachineImages = nil },
			wantErrors: []string{"spec.machineImages: Required value: must provide at least one machine image"},
		},
		{
			name:       "no machine type",
			change:     func(s *v1alpha1.CloudProfileSpec) { s.MachineTypes = nil },
			wantErrors: []string{"spec.machineTypes: Required value: must provide at least one machine type"},
		},
		{
			name:       "no region",
			change:     func(s *v1alpha1.CloudProfileSpec) { s.Regions = nil },
			wantErrors: []string{"spec.regions: Required value: must provide at least one region"},
		},
		{
			name: "empty lists count as missing",
			change: func(s *v1alpha1.CloudProfileSpec) {
				s.MachineImages = []v1alpha1.MachineImage{}
				s.MachineTypes = []v1alpha1.MachineType{}
				s.Regions = []v1alpha1.Region{}
			},
			wantErrors: []string{
				"spec.machineImages: Required value: must provide at least one machine image",
				"spec.machineTypes: Required value: must provide at least one machine type",
				"spec.regions: Required value: must provide at least one region",
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			spec := validSpec()
			tt.change(spec)

			errs := validateRequiredLists(spec, field.NewPath("spec"))
			messages := make([]string, len(errs))
			for i, err := range errs {
				messages[i] = err.Error()
			}
			g.Expect(messages).To(ConsistOf(tt.wantErrors))

			// ValidateCloudProfileSpec refuses the profile for the same reasons.
			specErrs, _ := ValidateCloudProfileSpec(spec, field.NewPath("spec"))
			g.Expect(specErrs).To(HaveLen(len(tt.wantErrors)))
		})
	}
}

func TestValidateCloudProfileSpecWithoutPathOrSpec(t *testing.T) {
	g := NewWithT(t)
	spec := validSpec()
	spec.Type = ""
	errs, _ := ValidateCloudProfileSpec(spec, nil)
	g.Expect(errorsOf(errs)).To(ConsistOf("FieldValueRequired type"))

	errs, _ = ValidateCloudProfileSpec(nil, field.NewPath("spec"))
	g.Expect(errorsOf(errs)).To(ConsistOf("FieldValueRequired spec"))
}

func TestValidateExpirableVersion(t *testing.T) {
	g := NewWithT(t)
	path := field.NewPath("spec", "kubernetes", "versions").Index(3)

	g.Expect(ValidateExpirableVersion(withLifecycle("1.30.0", stage(preview, ""), stage(supported, "2024-01-01T00:00:00Z")), path)).To(BeEmpty())

	errs := ValidateExpirableVersion(withLifecycle("1.30.0",
		stage(supported, "2024-06-01T00:00:00Z"),
		stage(deprecated, "2024-01-01T00:00:00Z")), path)
	g.Expect(errorsOf(errs)).To(ConsistOf("FieldValueInvalid spec.kubernetes.versions[3].lifecycle[1].startTime"))
	g.Expect(errs[0].Detail).To(ContainSubstring("lifecycle[0] (supported) starts at 2024-06-01T00:00:00Z"))
}

func TestValidateCloudProfileSpecWarningsAreOnePerVersion(t *testing.T) {
	g := NewWithT(t)
	spec := validSpec()
	for _, patch := range []string{"3", "4", "5", "6"} {
		spec.Kubernetes.Versions = append(spec.Kubernetes.Versions, withLifecycle("1.30."+patch, stage(supported, "2024-03-01T00:00:00Z"), stage(deprecated, "2025-01-01T00:00:00Z")))
	}
	_, warnings := ValidateCloudProfileSpec(spec, field.NewPath("spec"))
	g.Expect(warnings).To(HaveLen(4))
	for _, w := range warnings {
		g.Expect(strings.Count(w, "overlaps")).To(Equal(1))
	}
}

func TestIsDeclarableStage(t *testing.T) {
	path := field.NewPath("spec", "kubernetes", "versions").Index(0).Child("lifecycle").Index(1).Child("classification")
	const supportedValues = `supported values: "preview", "supported", "deprecated", "expired"`
	tests := []struct {
		name           string
		classification v1alpha1.VersionClassification
		want           bool
	}{
		{"preview may be declared", preview, true},
		{"supported may be declared", supported, true},
		{"deprecated may be declared", deprecated, true},
		{"expired may be declared", expired, true},
		{"unavailable is derived, never declared", unavailable, false},
		{"an unknown classification may not be declared", "retired", false},
		{"an empty classification may not be declared", "", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			g.Expect(IsDeclarableStage(tt.classification)).To(Equal(tt.want))
			if !tt.want {
				g.Expect(StageNotDeclarable(path, tt.classification).Error()).To(Equal(
					fmt.Sprintf("spec.kubernetes.versions[0].lifecycle[1].classification: Unsupported value: %q: %s", tt.classification, supportedValues)))
			}
		})
	}
}
