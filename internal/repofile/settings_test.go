package repofile

import (
	"reflect"
	"testing"
)

func TestDecodeSettingsNamesTheFieldOfEveryProblem(t *testing.T) {
	file := SettingsFile{Kind: "policy", Shape: "a mapping with apiVersion, kind and rules", Docs: "docs/policy.md"}
	type rules struct {
		Days  int      `json:"days"`
		Names []string `json:"names"`
	}
	type document struct {
		Kind  string `json:"kind"`
		Rules rules  `json:"rules"`
	}
	tests := []struct {
		name        string
		data        string
		want        []string
		wantDecoded bool
	}{
		{name: "a valid file", data: "kind: Policy\nrules: {days: 3}\n", wantDecoded: true},
		{name: "not YAML", data: "kind: [", want: []string{"not valid YAML: yaml: line 1: did not find expected node content"}},
		{name: "not a mapping", data: "- a\n- b\n", want: []string{"not a policy: expected a mapping with apiVersion, kind and rules"}},
		{name: "a value of the wrong type", data: "rules: {days: three}\n", want: []string{"rules.days: Invalid value: must be of type integer, not string"}},
		{name: "a list expected", data: "rules: {names: one}\n", want: []string{"rules.names: Invalid value: must be of type list, not string"}},
		{name: "a key twice", data: "kind: Policy\nkind: Policy\n", want: []string{`not valid YAML: yaml: unmarshal errors: line 2: key "kind" already set in map`}},
		{name: "a key twice, quoted as written", data: "a  b: 1\na  b: 2\n", want: []string{`not valid YAML: yaml: unmarshal errors: line 2: key "a  b" already set in map`}},
		{
			name:        "unknown fields, all at once",
			data:        "kind: Policy\nsort: Policy\nrules: {dayz: 3}\n",
			wantDecoded: true,
			want: []string{
				"rules.dayz: unknown field: the policy has no such field (check spelling and indentation; docs/policy.md lists the fields)",
				"sort: unknown field: the policy has no such field (check spelling and indentation; docs/policy.md lists the fields)",
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var doc document
			got, decoded := file.DecodeSettings([]byte(tt.data), &doc)
			if decoded != tt.wantDecoded || !reflect.DeepEqual(got, tt.want) {
				t.Fatalf("DecodeSettings() = %q, %v; want %q, %v", got, decoded, tt.want, tt.wantDecoded)
			}
		})
	}
	err := &DecodeError{File: "p.yaml", Problems: []string{"a: one", "b: two"}}
	if got, want := err.Error(), "p.yaml: a: one\np.yaml: b: two"; got != want {
		t.Fatalf("DecodeError.Error() = %q, want %q", got, want)
	}
}
