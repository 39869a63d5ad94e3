package profile

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

// TestDriftedAtFollowsRecordedFieldsByKey: the fields recorded when a hold
// began are looked up again by their entries' keys in a later desired, and
// a field Git stops setting is caught up only when live lacks it too.
func TestDriftedAtFollowsRecordedFieldsByKey(t *testing.T) {
	const startTime = "spec.kubernetes.versions[0] (1.33.0).lifecycle[0] (deprecated).startTime"
	const zones = "spec.regions[0] (eu-1).zones"
	live := `
kubernetes:
  versions:
  - version: 1.33.0
    lifecycle:
    - classification: deprecated
      startTime: "2026-12-01T00:00:00Z"
regions:
- name: eu-1
  zones:
  - name: eu-1a
  - name: eu-1b
`
	for _, tc := range []struct {
		name, desired string
		paths         []string
		want          []string
	}{
		{
			name: "Git caught up, with an entry inserted before the drifted one",
			desired: `
kubernetes:
  versions:
  - version: 1.35.0
  - version: 1.33.0
    lifecycle:
    - classification: deprecated
      startTime: "2026-12-01T00:00:00Z"
`,
			paths: []string{startTime},
		},
		{
			name: "Git still differs, at another index",
			desired: `
kubernetes:
  versions:
  - version: 1.35.0
  - version: 1.33.0
    lifecycle:
    - classification: deprecated
      startTime: "2027-01-01T00:00:00Z"
`,
			paths: []string{startTime},
			want:  []string{startTime},
		},
		{
			name: "Git no longer sets a field live has",
			desired: `
kubernetes:
  versions:
  - version: 1.33.0
`,
			paths: []string{startTime},
			want:  []string{startTime},
		},
		{
			name: "neither has it",
			desired: `
kubernetes:
  versions:
  - version: 1.34.0
`,
			paths: []string{"spec.kubernetes.versions[1] (1.34.1)", "spec.type"},
		},
		{
			name: "Git sets what live lacks",
			desired: `
type: local
`,
			paths: []string{"spec.type"},
			want:  []string{"spec.type"},
		},
		{
			name: "only what Git sets below the path counts",
			desired: `
regions:
- name: eu-1
  zones:
  - name: eu-1a
`,
			paths: []string{zones, "spec"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var d, l map[string]any
			if err := yaml.Unmarshal([]byte(tc.desired), &d); err != nil {
				t.Fatal(err)
			}
			if err := yaml.Unmarshal([]byte(live), &l); err != nil {
				t.Fatal(err)
			}
			got, err := DriftedAt("CloudProfile", "spec", d, l, tc.paths)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("drifted (-want +got):\n%s", diff)
			}
		})
	}
	if _, err := DriftedAt("CloudProfile", "spec", nil, nil, []string{"specification"}); err == nil {
		t.Error("a path not under the prefix is accepted")
	}
}

func TestContentDigestChangesWithWhatGitSays(t *testing.T) {
	decode := func(t *testing.T, metadata, version string) Object {
		t.Helper()
		objects, problems := DecodeDocuments([]Document{{File: "p.yaml", Data: []byte(
			"apiVersion: core.profilesync.io/v1alpha1\nkind: CloudProfile\nmetadata:\n  name: p\n" + metadata +
				"spec:\n  type: local\n  kubernetes:\n    versions:\n    - version: " + version + "\n")}})
		if len(problems) > 0 {
			t.Fatal(problems)
		}
		return objects[0]
	}
	digest := func(t *testing.T, o Object) string {
		t.Helper()
		d, err := ContentDigest(o)
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	base := digest(t, decode(t, "", "1.33.0"))
	if again := digest(t, decode(t, "", "1.33.0")); again != base {
		t.Errorf("the same object has two digests: %s, %s", base, again)
	}
	for name, o := range map[string]Object{
		"spec":       decode(t, "", "1.33.1"),
		"label":      decode(t, "  labels:\n    team: a\n", "1.33.0"),
		"annotation": decode(t, "  annotations:\n    note: a\n", "1.33.0"),
	} {
		if digest(t, o) == base {
			t.Errorf("a change of the %s leaves the digest as it was", name)
		}
	}
}
