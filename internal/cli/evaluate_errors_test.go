package cli

import (
	"fmt"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
)

// semanticsParent is the CloudProfile the error cases start from; each case
// replaces one part of it.
const semanticsParent = `apiVersion: core.profilesync.io/v1alpha1
kind: CloudProfile
metadata:
  name: aws
spec:
  type: aws
  kubernetes:
    versions:
    - version: 1.30.0
      lifecycle:
      - classification: supported
      - classification: deprecated
        startTime: "2025-01-01T00:00:00Z"
    - version: 1.31.0
  machineImages:
  - name: gardenlinux
    versions:
    - version: 1592.1.0
      architectures: [amd64]
  machineTypes:
  - {name: m5.large, cpu: "2", gpu: "0", memory: 8Gi}
  regions:
  - name: eu-1
`

// namespacedOverride is a NamespacedCloudProfile of semanticsParent with
// spec lines appended.
func namespacedOverride(spec string) string {
	return semanticsParent + `---
apiVersion: core.profilesync.io/v1alpha1
kind: NamespacedCloudProfile
metadata:
  name: team-a
  namespace: team-a
spec:
  parent:
    kind: CloudProfile
    name: aws
` + spec
}

// profileWith returns a CloudProfile "p" with the given spec lines, and a
// machine image, a machine type and a region where they write none, so that
// the profile breaks only the rules its lines break.
func profileWith(spec string) string {
	for _, list := range requiredLists {
		if !strings.HasPrefix(spec, list.field) && !strings.Contains(spec, "\n"+list.field) {
			spec += list.lines
		}
	}
	return bareProfileWith(spec)
}

// bareProfileWith returns a CloudProfile "p" with only the given spec lines.
func bareProfileWith(spec string) string {
	return "apiVersion: core.profilesync.io/v1alpha1\nkind: CloudProfile\nmetadata:\n  name: p\nspec:\n" + spec
}

// requiredLists are the lists every CloudProfile needs an entry in, each
// with one entry.
var requiredLists = []struct{ field, lines string }{
	{"  machineImages:", "  machineImages:\n  - name: ubuntu\n    versions: [{version: 24.4.0}]\n"},
	{"  machineTypes:", "  machineTypes:\n  - {name: m5.large, cpu: \"2\", gpu: \"0\", memory: 8Gi}\n"},
	{"  regions:", "  regions:\n  - name: eu-1\n"},
}

const oneKubernetesVersion = "  type: aws\n  kubernetes:\n    versions:\n    - version: 1.31.0\n"

// TestEvaluateRejectsEverySemanticsErrorWithItsFieldPath runs every error
// rule of docs/semantics.md §2 and §3 through the CLI: exit 1, nothing on
// stdout, and the problem names its field.
func TestEvaluateRejectsEverySemanticsErrorWithItsFieldPath(t *testing.T) {
	tests := []struct {
		name  string
		input string
		// want is the start of the problem line after "<stdin>: ".
		want string
	}{
		{"spec.type is required", profileWith("  kubernetes:\n    versions:\n    - version: 1.31.0\n"),
			"CloudProfile/p: spec.type: Required value"},
		{"at least one Kubernetes version", profileWith("  type: aws\n  kubernetes: {}\n"),
			"CloudProfile/p: spec.kubernetes.versions: Required value"},
		{"Kubernetes versions are MAJOR.MINOR.PATCH", profileWith("  type: aws\n  kubernetes:\n    versions:\n    - version: v1.31.0\n"),
			`CloudProfile/p: spec.kubernetes.versions[0] (v1.31.0).version: Invalid value: "v1.31.0"`},
		{"no duplicate Kubernetes versions", profileWith("  type: aws\n  kubernetes:\n    versions:\n    - version: 1.31.0\n    - version: 1.31.0\n"),
			`CloudProfile/p: spec.kubernetes.versions[1] (1.31.0): Duplicate value: {"version":"1.31.0"}`},
		{"a machine image has a version", profileWith(oneKubernetesVersion + "  machineImages:\n  - name: gardenlinux\n    versions: []\n"),
			"CloudProfile/p: spec.machineImages[0] (gardenlinux).versions: Invalid value: 0: spec.machineImages[0].versions in body should have at least 1 items"},
		{"machine image names are unique", profileWith(oneKubernetesVersion + "  machineImages:\n  - name: gl\n    versions: [{version: 1.0.0}]\n  - name: gl\n    versions: [{version: 1.0.0}]\n"),
			`CloudProfile/p: spec.machineImages[1] (gl): Duplicate value: {"name":"gl"}`},
		{"updateStrategy is patch, minor or major", profileWith(oneKubernetesVersion + "  machineImages:\n  - name: gl\n    updateStrategy: always\n    versions: [{version: 1.0.0}]\n"),
			`CloudProfile/p: spec.machineImages[0] (gl).updateStrategy: Unsupported value: "always"`},
		{"machine image versions are semver", profileWith(oneKubernetesVersion + "  machineImages:\n  - name: gl\n    versions: [{version: latest}]\n"),
			`CloudProfile/p: spec.machineImages[0] (gl).versions[0] (latest).version: Invalid value: "latest"`},
		{"no duplicate machine image versions, compared as written as Gardener compares them", profileWith(oneKubernetesVersion + "  machineImages:\n  - name: gl\n    versions: [{version: 1.7.0}, {version: \"1.7\"}, {version: \"1.7.0\"}]\n"),
			`CloudProfile/p: spec.machineImages[0] (gl).versions[2] (1.7.0): Duplicate value: {"version":"1.7.0"}: each key may appear once in this list`},
		{"architectures are amd64 or arm64", profileWith(oneKubernetesVersion + "  machineImages:\n  - name: gl\n    versions: [{version: 1.0.0, architectures: [s390x]}]\n"),
			`CloudProfile/p: spec.machineImages[0] (gl).versions[0] (1.0.0).architectures[0]: Unsupported value: "s390x"`},
		{"kubeletVersionConstraint is a semver constraint", profileWith(oneKubernetesVersion + "  machineImages:\n  - name: gl\n    versions: [{version: 1.0.0, kubeletVersionConstraint: \"about 1.30\"}]\n"),
			`CloudProfile/p: spec.machineImages[0] (gl).versions[0] (1.0.0).kubeletVersionConstraint: Invalid value: "about 1.30"`},
		{"expired is not a classification", profileWith("  type: aws\n  kubernetes:\n    versions:\n    - version: 1.30.0\n      classification: expired\n    - version: 1.31.0\n"),
			`CloudProfile/p: spec.kubernetes.versions[0] (1.30.0).classification: Invalid value: "expired"`},
		{"lifecycle is not combined with classification", profileWith("  type: aws\n  kubernetes:\n    versions:\n    - version: 1.30.0\n      classification: supported\n      lifecycle: [{classification: supported}]\n    - version: 1.31.0\n"),
			"CloudProfile/p: spec.kubernetes.versions[0] (1.30.0).classification: Forbidden"},
		{"lifecycle is not combined with expirationDate", profileWith("  type: aws\n  kubernetes:\n    versions:\n    - version: 1.30.0\n      expirationDate: \"2025-01-01T00:00:00Z\"\n      lifecycle: [{classification: supported}]\n    - version: 1.31.0\n"),
			"CloudProfile/p: spec.kubernetes.versions[0] (1.30.0).expirationDate: Forbidden"},
		{"unavailable is never declared", profileWith("  type: aws\n  kubernetes:\n    versions:\n    - version: 1.30.0\n      lifecycle: [{classification: unavailable}]\n    - version: 1.31.0\n"),
			`CloudProfile/p: spec.kubernetes.versions[0] (1.30.0).lifecycle[0].classification: Unsupported value: "unavailable": supported values: "preview", "supported", "deprecated", "expired"`},
		{"no stage twice", profileWith("  type: aws\n  kubernetes:\n    versions:\n    - version: 1.30.0\n      lifecycle: [{classification: supported}, {classification: supported, startTime: \"2025-01-01T00:00:00Z\"}]\n    - version: 1.31.0\n"),
			"CloudProfile/p: spec.kubernetes.versions[0] (1.30.0).lifecycle[1]: Duplicate value"},
		{"stages in rank order", profileWith("  type: aws\n  kubernetes:\n    versions:\n    - version: 1.30.0\n      lifecycle: [{classification: deprecated}, {classification: preview, startTime: \"2025-01-01T00:00:00Z\"}]\n    - version: 1.31.0\n"),
			`CloudProfile/p: spec.kubernetes.versions[0] (1.30.0).lifecycle[1].classification: Invalid value: "preview"`},
		{"only the first stage omits startTime", profileWith("  type: aws\n  kubernetes:\n    versions:\n    - version: 1.30.0\n      lifecycle: [{classification: preview}, {classification: supported}]\n    - version: 1.31.0\n"),
			"CloudProfile/p: spec.kubernetes.versions[0] (1.30.0).lifecycle[1].startTime: Required value"},
		{"start times never decrease", profileWith("  type: aws\n  kubernetes:\n    versions:\n    - version: 1.30.0\n      lifecycle: [{classification: preview, startTime: \"2025-02-01T00:00:00Z\"}, {classification: supported, startTime: \"2025-01-01T00:00:00Z\"}]\n    - version: 1.31.0\n"),
			`CloudProfile/p: spec.kubernetes.versions[0] (1.30.0).lifecycle[1].startTime: Invalid value: "2025-01-01T00:00:00Z"`},
		{"the highest Kubernetes version has no expirationDate", profileWith("  type: aws\n  kubernetes:\n    versions:\n    - version: 1.31.0\n      expirationDate: \"2030-01-01T00:00:00Z\"\n"),
			"CloudProfile/p: spec.kubernetes.versions[0] (1.31.0).expirationDate: Forbidden"},
		{"the highest Kubernetes version's lifecycle does not end in expired", profileWith("  type: aws\n  kubernetes:\n    versions:\n    - version: 1.31.0\n      lifecycle: [{classification: supported}, {classification: expired, startTime: \"2030-01-01T00:00:00Z\"}]\n"),
			"CloudProfile/p: spec.kubernetes.versions[0] (1.31.0).lifecycle[1].classification: Forbidden"},
		{"one supported version per minor (deprecated API)", profileWith("  type: aws\n  kubernetes:\n    versions:\n    - version: 1.31.0\n      classification: supported\n    - version: 1.31.1\n      classification: supported\n"),
			"CloudProfile/p: spec.kubernetes.versions[1] (1.31.1).classification: Forbidden"},
		{"a namespaced override names a parent version", namespacedOverride("  kubernetes:\n    versions:\n    - version: 1.29.0\n"),
			`NamespacedCloudProfile/team-a/team-a: spec.kubernetes.versions[0] (1.29.0).version: Not found: "1.29.0"`},
		{"a namespaced override does not set classification", namespacedOverride("  kubernetes:\n    versions:\n    - version: 1.31.0\n      classification: deprecated\n"),
			"NamespacedCloudProfile/team-a/team-a: spec.kubernetes.versions[0] (1.31.0).classification: "},
		{"a namespaced override stage the parent lacks", namespacedOverride("  kubernetes:\n    versions:\n    - version: 1.30.0\n      lifecycle: [{classification: preview, startTime: \"2024-01-01T00:00:00Z\"}]\n"),
			"NamespacedCloudProfile/team-a/team-a: spec.kubernetes.versions[0] (1.30.0).lifecycle[0]"},
		{"a namespaced image version override changes only expiry", namespacedOverride("  machineImages:\n  - name: gardenlinux\n    versions:\n    - version: 1592.1.0\n      architectures: [arm64]\n"),
			"NamespacedCloudProfile/team-a/team-a: spec.machineImages[0] (gardenlinux).versions[0] (1592.1.0).architectures"},
		{"a namespaced profile's parent is a CloudProfile", strings.Replace(namespacedOverride(""), "    kind: CloudProfile\n    name: aws\n", "    kind: NamespacedCloudProfile\n    name: aws\n", 1),
			`NamespacedCloudProfile/team-a/team-a: spec.parent.kind: Unsupported value: "NamespacedCloudProfile"`},
		{"a namespaced profile's parent exists", strings.Replace(namespacedOverride(""), "    name: aws\n", "    name: gcp\n", 1),
			`NamespacedCloudProfile/team-a/team-a: spec.parent.name: Not found: "gcp"`},
		{"the merged spec must validate", namespacedOverride("  kubernetes:\n    versions:\n    - version: 1.31.0\n      expirationDate: \"2030-01-01T00:00:00Z\"\n"),
			"NamespacedCloudProfile/team-a/team-a: status.cloudProfileSpec.kubernetes.versions[1] (1.31.0).expirationDate: Forbidden"},
		{"an added machine image is a full image", namespacedOverride("  machineImages:\n  - name: ubuntu\n"),
			"NamespacedCloudProfile/team-a/team-a: spec.machineImages[0] (ubuntu).versions: Required value"},
		{"a machine image is required", bareProfileWith(oneKubernetesVersion + requiredLists[1].lines + requiredLists[2].lines),
			"CloudProfile/p: spec.machineImages: Required value: must provide at least one machine image"},
		{"a machine type is required", bareProfileWith(oneKubernetesVersion + requiredLists[0].lines + requiredLists[2].lines),
			"CloudProfile/p: spec.machineTypes: Required value: must provide at least one machine type"},
		{"a region is required, an empty list is none", bareProfileWith(oneKubernetesVersion + requiredLists[0].lines + requiredLists[1].lines + "  regions: []\n"),
			"CloudProfile/p: spec.regions: Required value: must provide at least one region"},
		{"an unknown field", profileWith(oneKubernetesVersion + "  regionz: []\n"),
			"CloudProfile/p: spec.regionz: unknown field"},
		{"the same profile twice", profileWith(oneKubernetesVersion) + "---\n" + profileWith(oneKubernetesVersion),
			`CloudProfile/p: metadata.name: Duplicate value: "p"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			status, stdout, stderr := run(t, "evaluate", tt.input, "-f", "-")
			g.Expect(status).To(Equal(exitInvalidInput), "stderr: %s", stderr)
			g.Expect(stdout).To(BeEmpty())
			g.Expect(strings.Split(strings.TrimSuffix(stderr, "\n"), "\n")).To(ContainElement(HavePrefix("<stdin>: "+tt.want)), stderr)
		})
	}
}

// TestEvaluateCutsAMistakeRepeatedManyTimesShort prints the first ten of
// 1,000 versions with the same mistake and counts the rest on one line.
func TestEvaluateCutsAMistakeRepeatedManyTimesShort(t *testing.T) {
	g := NewWithT(t)
	var spec strings.Builder
	spec.WriteString("  type: aws\n  kubernetes:\n    versions:\n")
	for i := range 1000 {
		fmt.Fprintf(&spec, "    - version: v1.%d.0\n", i)
	}
	status, stdout, stderr := run(t, "evaluate", profileWith(spec.String()), "-f", "-")
	g.Expect(status).To(Equal(exitInvalidInput))
	g.Expect(stdout).To(BeEmpty())
	lines := strings.Split(strings.TrimSuffix(stderr, "\n"), "\n")
	g.Expect(lines).To(HaveLen(11), stderr)
	for i, line := range lines[:10] {
		g.Expect(line).To(HavePrefix(fmt.Sprintf(`<stdin>: CloudProfile/p: spec.kubernetes.versions[%d] (v1.%d.0).version: Invalid value: "v1.%d.0"`, i, i, i)))
	}
	g.Expect(lines[10]).To(Equal("<stdin>: CloudProfile/p: spec.kubernetes.versions[*].version: ... and 990 more like it"))
}
