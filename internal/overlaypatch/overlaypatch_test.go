package overlaypatch

import (
	"testing"

	. "github.com/onsi/gomega"
	"sigs.k8s.io/yaml"
)

// spec decodes a spec written in YAML into JSON values.
func spec(t *testing.T, content string) map[string]any {
	t.Helper()
	var out map[string]any
	if err := yaml.Unmarshal([]byte(content), &out); err != nil {
		t.Fatalf("decode spec: %v", err)
	}
	return out
}

func TestPatch(t *testing.T) {
	const base = `
type: aws
kubernetes:
  versions:
  - version: 1.33.5
    lifecycle:
    - classification: supported
    - classification: deprecated
      startTime: "2026-12-01T00:00:00Z"
  - version: 1.34.2
machineImages:
- name: gardenlinux
  updateStrategy: minor
  versions:
  - version: 1877.3.0
    architectures: [amd64, arm64]
regions:
- name: eu-1
`
	tests := []struct {
		name      string
		live      string
		wantPatch string
	}{
		{
			name: "the same spec needs no patch",
			live: base,
		},
		{
			name: "a changed stage is named by the keys of its version and its classification",
			live: `
type: aws
kubernetes:
  versions:
  - version: 1.33.5
    lifecycle:
    - classification: supported
    - classification: deprecated
      startTime: "2026-11-22T02:00:00Z"
  - version: 1.34.2
machineImages:
- name: gardenlinux
  updateStrategy: minor
  versions:
  - version: 1877.3.0
    architectures: [amd64, arm64]
regions:
- name: eu-1
`,
			wantPatch: `spec:
  kubernetes:
    versions:
    - lifecycle:
      - classification: deprecated
        startTime: "2026-11-22T02:00:00Z"
      version: 1.33.5
`,
		},
		{
			name: "a list without merge keys is replaced whole, a field the cluster dropped is null, an entry added first needs no predecessor",
			live: `
type: aws
kubernetes:
  versions:
  - version: 1.33.4
  - version: 1.33.5
    lifecycle:
    - classification: supported
    - classification: deprecated
      startTime: "2026-12-01T00:00:00Z"
  - version: 1.34.2
machineImages:
- name: gardenlinux
  versions:
  - version: 1877.3.0
    architectures: [amd64]
regions:
- name: eu-1
`,
			wantPatch: `spec:
  kubernetes:
    versions:
    - version: 1.33.4
  machineImages:
  - name: gardenlinux
    updateStrategy: null
    versions:
    - architectures:
      - amd64
      version: 1877.3.0
`,
		},
		{
			name: "an entry added at the end follows the key of the last entry; a removed one is deleted by its key",
			live: `
type: aws
kubernetes:
  versions:
  - version: 1.33.5
    lifecycle:
    - classification: supported
    - classification: deprecated
      startTime: "2026-12-01T00:00:00Z"
  - version: 1.34.2
machineImages:
- name: gardenlinux
  updateStrategy: minor
  versions:
  - version: 1877.3.0
    architectures: [amd64, arm64]
regions:
- name: eu-2
`,
			wantPatch: `spec:
  regions:
  - name: eu-2
  - $patch: delete
    name: eu-1
`,
		},
		{
			name: "an entry added after an unchanged one is written after that one's key",
			live: `
type: aws
kubernetes:
  versions:
  - version: 1.33.5
    lifecycle:
    - classification: supported
    - classification: deprecated
      startTime: "2026-12-01T00:00:00Z"
  - version: 1.34.2
  - version: 1.35.0
machineImages:
- name: gardenlinux
  updateStrategy: minor
  versions:
  - version: 1877.3.0
    architectures: [amd64, arm64]
regions:
- name: eu-1
`,
			wantPatch: `spec:
  kubernetes:
    versions:
    - version: 1.34.2
    - version: 1.35.0
`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			patch, changed, err := Patch(Object{Kind: "CloudProfile", Name: "aws", Spec: spec(t, base)},
				Object{Kind: "CloudProfile", Name: "aws", Spec: spec(t, tt.live)})
			g.Expect(err).NotTo(HaveOccurred())
			if tt.wantPatch == "" {
				g.Expect(changed).To(BeFalse())
				g.Expect(patch).To(BeNil())
				return
			}
			g.Expect(changed).To(BeTrue())
			out, err := YAML(patch)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(string(out)).To(Equal("apiVersion: core.profilesync.io/v1alpha1\nkind: CloudProfile\nmetadata:\n  name: aws\n" + tt.wantPatch))
		})
	}
}

func TestPatchNamesANamespacedProfileByNamespaceAndName(t *testing.T) {
	g := NewWithT(t)
	built := Object{Kind: "NamespacedCloudProfile", Namespace: "team-a", Name: "aws-team", Spec: spec(t, "parent: {kind: CloudProfile, name: aws}\n")}
	live := built
	live.Spec = spec(t, "parent: {kind: CloudProfile, name: aws}\nmachineTypes: [{name: m5.large, cpu: \"2\"}]\n")
	patch, changed, err := Patch(built, live)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(changed).To(BeTrue())
	out, err := YAML(patch)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(string(out)).To(Equal(`apiVersion: core.profilesync.io/v1alpha1
kind: NamespacedCloudProfile
metadata:
  name: aws-team
  namespace: team-a
spec:
  machineTypes:
  - cpu: "2"
    name: m5.large
`))
}

func TestPatchRefusesAKindTheBuildDoesNotMerge(t *testing.T) {
	_, _, err := Patch(Object{Kind: "Shoot", Name: "x"}, Object{Kind: "Shoot", Name: "x"})
	NewWithT(t).Expect(err).To(MatchError(`the build's OpenAPI schema has no spec of kind "Shoot"`))
}
