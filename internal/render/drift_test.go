package render

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"sigs.k8s.io/yaml"
)

func TestDriftedFieldsNamesTheFieldsGitSetsThatDiffer(t *testing.T) {
	desired := `
type: local
kubernetes:
  versions:
  - version: 1.33.0
    lifecycle:
    - classification: deprecated
      startTime: "2027-01-01T00:00:00Z"
  - version: 1.34.1
regions:
- name: eu-1
  zones:
  - name: eu-1a
`
	for _, tc := range []struct {
		name string
		live string
		want []string
	}{
		{name: "equal", live: desired, want: nil},
		{
			name: "a scalar inside keyed lists",
			live: `
type: local
kubernetes:
  versions:
  - version: 1.34.1
  - version: 1.33.0
    lifecycle:
    - classification: deprecated
      startTime: "2026-12-01T00:00:00Z"
regions:
- name: eu-1
  zones:
  - name: eu-1a
`,
			want: []string{"spec.kubernetes.versions[0] (1.33.0).lifecycle[0] (deprecated).startTime"},
		},
		{
			name: "an entry removed and a field changed",
			live: `
type: openstack
kubernetes:
  versions:
  - version: 1.33.0
    lifecycle:
    - classification: deprecated
      startTime: "2027-01-01T00:00:00Z"
regions:
- name: eu-1
`,
			want: []string{"spec.kubernetes.versions[1] (1.34.1)", "spec.regions[0] (eu-1).zones", "spec.type"},
		},
		{
			name: "what only the cluster has is not drift",
			live: `
type: local
kubernetes:
  versions:
  - version: 1.33.0
    lifecycle:
    - classification: deprecated
      startTime: "2027-01-01T00:00:00Z"
  - version: 1.34.1
  - version: 1.99.0
regions:
- name: eu-1
  zones:
  - name: eu-1a
  - name: eu-1b
caBundle: added-by-hand
`,
			want: nil,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var d, l map[string]any
			if err := yaml.Unmarshal([]byte(desired), &d); err != nil {
				t.Fatal(err)
			}
			if err := yaml.Unmarshal([]byte(tc.live), &l); err != nil {
				t.Fatal(err)
			}
			got, err := DriftedFields("CloudProfile", "spec", d, l)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("drifted fields (-want +got):\n%s", diff)
			}
		})
	}
}
