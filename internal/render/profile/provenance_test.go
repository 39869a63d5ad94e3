package profile

import (
	"testing"
	"time"

	. "github.com/onsi/gomega"
)

func TestSourceOfFindsThePatchOfAFieldOrOfTheNearestFieldHoldingIt(t *testing.T) {
	sources := []FieldSource{
		{Field: "spec.kubernetes.versions[3]", File: "overlays/dev/add.yaml"},
		{Field: "spec.kubernetes.versions[3].expirationDate", File: "overlays/dev/expire.yaml"},
		{Field: "spec.type", File: "overlays/dev/kustomization.yaml", Patch: "patches[0]"},
	}
	tests := []struct {
		name, field string
		want        string // the source's file; "" for none
	}{
		{"a field a patch set names that patch", "spec.kubernetes.versions[3] (1.30.0).expirationDate", "overlays/dev/expire.yaml"},
		{"a field below an entry a patch added names the patch that added it", "spec.kubernetes.versions[3] (1.30.0).lifecycle[0].classification", "overlays/dev/add.yaml"},
		{"the entry itself names the patch that added it", "spec.kubernetes.versions[3] (1.30.0)", "overlays/dev/add.yaml"},
		{"an entry's name may hold dots and brackets", "spec.kubernetes.versions[3] (1.30.0-rc.1[x]).expirationDate", "overlays/dev/expire.yaml"},
		{"another entry of the list is the base's", "spec.kubernetes.versions[30] (1.31.0)", ""},
		{"a field that only starts like a patched one is the base's", "spec.typeOf", ""},
		{"a field holding a patched one is the base's", "spec.kubernetes.versions", ""},
		{"a problem of the whole object is the base's", "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			source, ok := SourceOf(sources, tt.field)
			NewWithT(t).Expect(ok).To(Equal(tt.want != ""))
			NewWithT(t).Expect(source.File).To(Equal(tt.want))
		})
	}
}

func TestAProblemOfAFieldAPatchSetNamesThePatchAndTheObjectsFile(t *testing.T) {
	const profiles = `apiVersion: core.profilesync.io/v1alpha1
kind: CloudProfile
metadata:
  name: aws
spec:
  type: aws
  kubernetes:
    versions:
    - version: 1.31.0
      expirationDate: "2026-01-01T00:00:00Z"
    - version: 1.30.0
      expirationDate: 2025-01-01T00:00:00Z
      lifecycle:
      - classification: supported
  machineImages:
  - name: ubuntu
    versions:
    - version: 24.4.0
      architectures: [amd64]
  machineTypes:
  - {name: m5.large, cpu: "2", gpu: "0", memory: 8Gi}
  regions:
  - name: eu-1
`
	const typo = `apiVersion: core.profilesync.io/v1alpha1
kind: CloudProfile
metadata:
  name: gcp
spec:
  type: gcp
  unknownField: x
`
	docs := []Document{{File: "base/cloudprofiles.yaml", Data: []byte(profiles), SetBy: []FieldSource{
		{Field: "spec.kubernetes.versions[0].expirationDate", File: "overlays/dev/expire.yaml", Patch: "the patch's entry spec.kubernetes.versions (1.31.0)"},
		{Field: "spec.kubernetes.versions[1]", File: "overlays/dev/kustomization.yaml", Patch: "patches[1], entry spec.kubernetes.versions (1.30.0)"},
	}}, {File: "base/cloudprofiles.yaml", Data: []byte(typo), SetBy: []FieldSource{{Field: "spec.unknownField", File: "overlays/dev/typo.yaml"}}}}
	set, err := Load(docs, nil, time.Date(2025, 6, 1, 0, 0, 0, 0, time.UTC))
	g := NewWithT(t)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(set.Problems.Lines()).To(ConsistOf(
		"base/cloudprofiles.yaml: CloudProfile/gcp: spec.kubernetes: Required value",
		"overlays/dev/typo.yaml: CloudProfile/gcp: spec.unknownField: unknown field: the API has no such field (check spelling and indentation) "+
			"(set by this patch, on the object of base/cloudprofiles.yaml)",
		"overlays/dev/kustomization.yaml: CloudProfile/aws: spec.kubernetes.versions[1] (1.30.0).expirationDate: Forbidden: may not be combined with lifecycle: add an expired stage instead "+
			"(set by patches[1], entry spec.kubernetes.versions (1.30.0), on the object of base/cloudprofiles.yaml)",
		"overlays/dev/expire.yaml: CloudProfile/aws: spec.kubernetes.versions[0] (1.31.0).expirationDate: Forbidden: 1.31.0 is the highest Kubernetes version and may not expire: "+
			"clusters must always have a version to move to (set by the patch's entry spec.kubernetes.versions (1.31.0), on the object of base/cloudprofiles.yaml)",
	))
}

func TestAProblemOfAMergedSpecFindsThePatchByTheEntriesNames(t *testing.T) {
	sources := []FieldSource{
		{Field: "spec.kubernetes.versions[1].expirationDate", KeyedField: "spec.kubernetes.versions (1.31.0).expirationDate", File: "overlays/dev/expire.yaml"},
		{Field: "spec.machineImages[0]", KeyedField: "spec.machineImages (ubuntu)", File: "overlays/dev/image.yaml"},
		{Field: "spec.regions", KeyedField: "spec.regions", File: "overlays/dev/regions.yaml"},
		{Field: "spec.type", File: "overlays/dev/kustomization.yaml"}, // recorded before KeyedField was
	}
	tests := []struct {
		name, field string
		want        string // the source's file; "" for none
	}{
		{"the merged entry is found by its name, whatever its index", "status.cloudProfileSpec.kubernetes.versions[0] (1.31.0).expirationDate", "overlays/dev/expire.yaml"},
		{"a field below an entry the patch set", "status.cloudProfileSpec.machineImages[2] (ubuntu).versions[0] (24.4.0).cri", "overlays/dev/image.yaml"},
		{"an entry without a name below a list the patch set", "status.cloudProfileSpec.regions[3].zones[0]", "overlays/dev/regions.yaml"},
		{"another entry of the list is the parent's or the file's", "status.cloudProfileSpec.kubernetes.versions[0] (1.31.1).expirationDate", ""},
		{"an entry whose name only starts like the patched one", "status.cloudProfileSpec.machineImages[0] (ubuntu-pro)", ""},
		{"a field of the object's own spec is matched by index, not here", "spec.kubernetes.versions[0] (1.31.0).expirationDate", ""},
		{"a source without a keyed field matches no merged field", "status.cloudProfileSpec.type", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			source, ok := mergedSourceOf(sources, tt.field)
			NewWithT(t).Expect(ok).To(Equal(tt.want != ""))
			NewWithT(t).Expect(source.File).To(Equal(tt.want))
		})
	}
}
