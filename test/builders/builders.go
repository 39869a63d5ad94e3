// Package builders makes the profiles, versions, lifecycles and times that
// tests of several packages build, so that each test says what is special
// about its input and no package keeps its own copy of the rest. It also
// holds the one golden-file comparison. Only tests import it.
package builders

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1alpha1 "github.com/profilesync/profilesync/api/v1alpha1"
)

// NewestKubernetesVersion is added to every profile Profile and WithNewest
// make, so that no version a test overrides is the highest one, which may
// never expire (docs/semantics.md §2).
const NewestKubernetesVersion = "1.40.0"

// Time is an RFC 3339 time; it panics on a test's typo.
func Time(value string) time.Time {
	t, err := time.Parse(time.RFC3339, value)
	if err != nil {
		panic("test time " + value + ": " + err.Error())
	}
	return t
}

// Date is Time for an API field.
func Date(value string) *metav1.Time {
	mt := metav1.NewTime(Time(value))
	return &mt
}

// Classification is c, for a pointer field.
func Classification(c v1alpha1.VersionClassification) *v1alpha1.VersionClassification {
	return &c
}

// Strategy is s, for a pointer field.
func Strategy(s v1alpha1.MachineImageUpdateStrategy) *v1alpha1.MachineImageUpdateStrategy {
	return &s
}

// Stage is a lifecycle stage; an empty start means the stage has no
// startTime.
func Stage(c v1alpha1.VersionClassification, start string) v1alpha1.LifecycleStage {
	s := v1alpha1.LifecycleStage{Classification: c}
	if start != "" {
		s.StartTime = Date(start)
	}
	return s
}

// PlainVersion is a version without lifecycle or deprecated fields.
func PlainVersion(version string) v1alpha1.ExpirableVersion {
	return v1alpha1.ExpirableVersion{Version: version}
}

// DeprecatedAPIVersion uses classification and expirationDate; empty values
// leave the field unset.
func DeprecatedAPIVersion(version string, c v1alpha1.VersionClassification, expires string) v1alpha1.ExpirableVersion {
	v := v1alpha1.ExpirableVersion{Version: version}
	if c != "" {
		v.Classification = Classification(c)
	}
	if expires != "" {
		v.ExpirationDate = Date(expires)
	}
	return v
}

// Staged is a version with the lifecycle stages.
func Staged(version string, stages ...v1alpha1.LifecycleStage) v1alpha1.ExpirableVersion {
	return v1alpha1.ExpirableVersion{Version: version, Lifecycle: stages}
}

// ImageVersions are machine image versions of versions, with no
// architectures, CRI or kubelet constraint.
func ImageVersions(versions ...v1alpha1.ExpirableVersion) []v1alpha1.MachineImageVersion {
	out := make([]v1alpha1.MachineImageVersion, len(versions))
	for i, v := range versions {
		out[i] = v1alpha1.MachineImageVersion{ExpirableVersion: v}
	}
	return out
}

// WithNewest appends NewestKubernetesVersion to a test's versions.
func WithNewest(versions ...v1alpha1.ExpirableVersion) []v1alpha1.ExpirableVersion {
	return append(versions, PlainVersion(NewestKubernetesVersion))
}

// GEP32Now is the date of GEP-32's example ("assume that the current date
// is 2024-12-03").
const GEP32Now = "2024-12-03T00:00:00Z"

// GEP32KubernetesVersions are the Kubernetes versions of GEP-32's example,
// whose classifications at GEP32Now the GEP states.
func GEP32KubernetesVersions() []v1alpha1.ExpirableVersion {
	return []v1alpha1.ExpirableVersion{
		Staged("1.30.6",
			Stage(v1alpha1.ClassificationPreview, ""),
			Stage(v1alpha1.ClassificationSupported, "2024-12-01T00:00:00Z"),
			Stage(v1alpha1.ClassificationDeprecated, "2025-03-01T00:00:00Z"),
			Stage(v1alpha1.ClassificationExpired, "2025-04-01T00:00:00Z")),
		PlainVersion("1.27.0"),
		Staged("1.28.0",
			Stage(v1alpha1.ClassificationPreview, ""),
			Stage(v1alpha1.ClassificationSupported, "2024-12-01T00:00:00Z")),
		Staged("1.18.0",
			Stage(v1alpha1.ClassificationSupported, ""),
			Stage(v1alpha1.ClassificationDeprecated, "2022-01-01T00:00:00Z"),
			Stage(v1alpha1.ClassificationExpired, "2022-06-01T00:00:00Z")),
		Staged("2.0.0",
			Stage(v1alpha1.ClassificationPreview, "2036-02-07T06:28:16Z")),
	}
}

// Profile is a small valid parent: one Kubernetes version per minor, one
// image, one machine and one volume type, one region.
func Profile() *v1alpha1.CloudProfileSpec {
	constraint := ">= 1.30"
	return &v1alpha1.CloudProfileSpec{
		Type:       "local",
		Kubernetes: v1alpha1.KubernetesSettings{Versions: WithNewest(PlainVersion("1.30.0"))},
		MachineImages: []v1alpha1.MachineImage{{
			Name:           "gardenlinux",
			UpdateStrategy: Strategy(v1alpha1.UpdateStrategyMinor),
			Versions: []v1alpha1.MachineImageVersion{{
				ExpirableVersion:         PlainVersion("1592.1.0"),
				Architectures:            []string{"amd64", "arm64"},
				CRI:                      []v1alpha1.CRI{{Name: "containerd"}},
				KubeletVersionConstraint: &constraint,
			}},
		}},
		MachineTypes: []v1alpha1.MachineType{MachineType("m5.large", "4")},
		VolumeTypes:  []v1alpha1.VolumeType{{Name: "gp3", Class: "standard"}},
		Regions:      []v1alpha1.Region{{Name: "eu-1", Zones: []v1alpha1.AvailabilityZone{{Name: "eu-1a"}}}},
	}
}

// MachineType is a machine type of cpu CPUs, no GPU and 8Gi.
func MachineType(name, cpu string) v1alpha1.MachineType {
	return v1alpha1.MachineType{
		Name:   name,
		CPU:    resource.MustParse(cpu),
		GPU:    resource.MustParse("0"),
		Memory: resource.MustParse("8Gi"),
	}
}

// Namespaced is an override of Profile() with nothing overridden yet.
func Namespaced() *v1alpha1.NamespacedCloudProfileSpec {
	return &v1alpha1.NamespacedCloudProfileSpec{
		Parent: v1alpha1.CloudProfileReference{Kind: v1alpha1.CloudProfileKind, Name: "local"},
	}
}

// AssertGolden compares got with the golden file at path, or rewrites the
// file when update is set (a test package's -update flag).
func AssertGolden(t testing.TB, path string, got []byte, update bool) {
	t.Helper()
	if update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatalf("writing golden file %s: %v", path, err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("reading golden file %s (run the test with -update to create it): %v", path, err)
	}
	if string(got) != string(want) {
		t.Errorf("golden file %s differs; run with -update if the change is intended:\n--- want\n%s\n--- got\n%s", path, want, got)
	}
}

// MarkdownYAMLBlocks returns the ```yaml blocks of a Markdown document, each
// without the indentation of its opening fence, so that a block shown
// inside a list item reads as the file it stands for: the examples a
// document shows are what its tests decode.
func MarkdownYAMLBlocks(markdown string) []string {
	var blocks []string
	var block strings.Builder
	inBlock, indent := false, ""
	for _, line := range strings.Split(markdown, "\n") {
		trimmed := strings.TrimSpace(line)
		switch {
		case !inBlock && trimmed == "```yaml":
			inBlock = true
			block.Reset()
			indent = line[:len(line)-len(strings.TrimLeft(line, " "))]
		case inBlock && trimmed == "```":
			inBlock = false
			blocks = append(blocks, block.String())
		case inBlock:
			block.WriteString(strings.TrimPrefix(line, indent))
			block.WriteByte('\n')
		}
	}
	return blocks
}

// RequiredListsYAML is one machine image, one machine type and one region as
// spec lines: Gardener requires each in every CloudProfile.
const RequiredListsYAML = "  machineImages:\n  - name: ubuntu\n    versions: [{version: 24.4.0}]\n" +
	"  machineTypes:\n  - {name: m5.large, cpu: \"2\", gpu: \"0\", memory: 8Gi}\n" +
	"  regions:\n  - name: eu-1\n"

// WithRequiredLists gives spec one machine image, one machine type and one
// region where it has none, for the tests that are about something else. The
// image states the updateStrategy the API server would default, so that the
// spec is the same as the cluster stores it.
func WithRequiredLists(spec v1alpha1.CloudProfileSpec) v1alpha1.CloudProfileSpec {
	if len(spec.MachineImages) == 0 {
		major := v1alpha1.UpdateStrategyMajor
		spec.MachineImages = []v1alpha1.MachineImage{{Name: "ubuntu", UpdateStrategy: &major, Versions: []v1alpha1.MachineImageVersion{
			{ExpirableVersion: v1alpha1.ExpirableVersion{Version: "24.4.0"}},
		}}}
	}
	if len(spec.MachineTypes) == 0 {
		spec.MachineTypes = []v1alpha1.MachineType{{
			Name: "m5.large", CPU: resource.MustParse("2"), GPU: resource.MustParse("0"), Memory: resource.MustParse("8Gi"),
		}}
	}
	if len(spec.Regions) == 0 {
		spec.Regions = []v1alpha1.Region{{Name: "eu-1"}}
	}
	return spec
}

// KubernetesClassifications maps each Kubernetes version of a status to its
// classification.
func KubernetesClassifications(st v1alpha1.ProfileVersionsStatus) map[string]v1alpha1.VersionClassification {
	out := map[string]v1alpha1.VersionClassification{}
	if st.Kubernetes != nil {
		for _, v := range st.Kubernetes.Versions {
			out[v.Version] = v.Classification
		}
	}
	return out
}

// WriteTree writes files (path → content, relative to root) below root,
// with their directories.
func WriteTree(t testing.TB, root string, files map[string]string) {
	t.Helper()
	for path, content := range files {
		full := filepath.Join(root, path)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}
