package render

import (
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"

	v1alpha1 "github.com/profilesync/profilesync/api/v1alpha1"
)

// newestKubernetesVersion is added to every test profile so that no version a
// test overrides is the highest one, which may never expire (docs/semantics.md §2).
const newestKubernetesVersion = "1.40.0"

func date(value string) *metav1.Time {
	t, err := time.Parse(time.RFC3339, value)
	if err != nil {
		panic("test date " + value + ": " + err.Error())
	}
	mt := metav1.NewTime(t)
	return &mt
}

func classification(c v1alpha1.VersionClassification) *v1alpha1.VersionClassification {
	return &c
}

func strategy(s v1alpha1.MachineImageUpdateStrategy) *v1alpha1.MachineImageUpdateStrategy {
	return &s
}

func ptrTo[T any](v T) *T { return &v }

// stage is a lifecycle stage; an empty start means the stage has no startTime.
func stage(c v1alpha1.VersionClassification, start string) v1alpha1.LifecycleStage {
	s := v1alpha1.LifecycleStage{Classification: c}
	if start != "" {
		s.StartTime = date(start)
	}
	return s
}

func plainVersion(version string) v1alpha1.ExpirableVersion {
	return v1alpha1.ExpirableVersion{Version: version}
}

// deprecatedAPIVersion uses classification and expirationDate; empty values
// leave the field unset.
func deprecatedAPIVersion(version string, c v1alpha1.VersionClassification, expires string) v1alpha1.ExpirableVersion {
	v := v1alpha1.ExpirableVersion{Version: version}
	if c != "" {
		v.Classification = classification(c)
	}
	if expires != "" {
		v.ExpirationDate = date(expires)
	}
	return v
}

func staged(version string, stages ...v1alpha1.LifecycleStage) v1alpha1.ExpirableVersion {
	return v1alpha1.ExpirableVersion{Version: version, Lifecycle: stages}
}

// withNewest appends the newest Kubernetes version to a test's versions.
func withNewest(versions ...v1alpha1.ExpirableVersion) []v1alpha1.ExpirableVersion {
	return append(versions, plainVersion(newestKubernetesVersion))
}

// profile is a small valid parent: one Kubernetes version per minor, one
// image, one machine and one volume type, one region.
func profile() *v1alpha1.CloudProfileSpec {
	return &v1alpha1.CloudProfileSpec{
		Type:       "local",
		Kubernetes: v1alpha1.KubernetesSettings{Versions: withNewest(plainVersion("1.30.0"))},
		MachineImages: []v1alpha1.MachineImage{{
			Name:           "gardenlinux",
			UpdateStrategy: strategy(v1alpha1.UpdateStrategyMinor),
			Versions: []v1alpha1.MachineImageVersion{{
				ExpirableVersion:         plainVersion("1592.1.0"),
				Architectures:            []string{"amd64", "arm64"},
				CRI:                      []v1alpha1.CRI{{Name: "containerd"}},
				KubeletVersionConstraint: ptrTo(">= 1.30"),
			}},
		}},
		MachineTypes: []v1alpha1.MachineType{machineType("m5.large", "4")},
		VolumeTypes:  []v1alpha1.VolumeType{{Name: "gp3", Class: "standard"}},
		Regions:      []v1alpha1.Region{{Name: "eu-1", Zones: []v1alpha1.AvailabilityZone{{Name: "eu-1a"}}}},
	}
}

func machineType(name, cpu string) v1alpha1.MachineType {
	return v1alpha1.MachineType{
		Name:   name,
		CPU:    resource.MustParse(cpu),
		GPU:    resource.MustParse("0"),
		Memory: resource.MustParse("8Gi"),
	}
}

// namespaced is an override of profile() with nothing overridden yet.
func namespaced() *v1alpha1.NamespacedCloudProfileSpec {
	return &v1alpha1.NamespacedCloudProfileSpec{
		Parent: v1alpha1.CloudProfileReference{Kind: v1alpha1.CloudProfileKind, Name: "local"},
	}
}

// errorFields renders each error as "path: type", which pins where a problem
// is reported and what kind it is without repeating every message.
func errorFields(errs field.ErrorList) []string {
	var fields []string
	for _, e := range errs {
		fields = append(fields, e.Field+": "+e.Type.String())
	}
	return fields
}

// errorLines renders errors one per line, as the golden errors.txt files hold them.
func errorLines(errs field.ErrorList) string {
	var b strings.Builder
	for _, e := range errs {
		b.WriteString(e.Error())
		b.WriteString("\n")
	}
	return b.String()
}
