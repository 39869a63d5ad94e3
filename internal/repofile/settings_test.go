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
	type item struct {
		Name string `json:"name"`
		On   bool   `json:"enabled"`
	}
	type document struct {
		Kind  string            `json:"kind"`
		Rules rules             `json:"rules"`
		Items []item            `json:"items"`
		Tags  map[string]string `json:"tags"`
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
		{name: "empty documents around the one are no second", data: "---\nkind: Policy\n---\n", wantDecoded: true},
		{name: "a second document", data: "kind: Policy\n---\nkind: Other\n", want: []string{
			"a second YAML document at line 3: a policy file is one document, and the rest would be ignored; remove the --- before it and merge it into the first, or delete it",
		}},
		{name: "a type error in a list keeps the index", data: "items:\n- {name: a}\n- {name: b, enabled: [x]}\n", want: []string{
			"items[1].enabled: Invalid value: must be of type boolean (true or false), not list",
		}},
		{name: "a type error in a mapping keeps the key", data: "tags: {team: 7}\n", want: []string{
			`tags[team]: Invalid value: 7 as written: YAML reads it as a number, and this field is a string; quote it: "7"`,
		}},
		{name: "an unquoted no in a string asks to quote it", data: "items:\n- {name: no}\n", want: []string{
			`items[0].name: Invalid value: no as written: YAML 1.1, which reads this file, takes it as a boolean, YAML 1.2 as the string "no"; quote it ("no") or write true or false`,
		}},
		{name: "an unquoted date in a string asks to quote it", data: "kind: 2025-03-01\n", want: []string{
			`kind: Invalid value: 2025-03-01 as written: YAML types an unquoted date or time as a timestamp, which is converted silently; quote it: "2025-03-01"`,
		}},
		{name: "an alias is checked as what it points to", data: "kind: &n Policy\nitems:\n- {name: *n, enabled: *n}\n", want: []string{
			"items[0].enabled: Invalid value: must be of type boolean (true or false), not string",
		}},
		{name: "an unquoted key YAML 1.1 reads as a boolean asks to quote it", data: "tags: {on: a}\nitems: [{name: a, yes: 1}]\n", want: []string{
			`tags[on]: Invalid key: on as written: YAML 1.1, which reads this file, takes it as a boolean, YAML 1.2 as the string "on"; quote it ("on")`,
			`items[0].yes: Invalid key: yes as written: YAML 1.1, which reads this file, takes it as a boolean, YAML 1.2 as the string "yes"; quote it ("yes")`,
		}},
		{name: "quoted values are strings as written", data: "kind: 'no'\nitems:\n- {name: \"on\", enabled: true}\ntags: {team: '7', 'on': x}\n", wantDecoded: true},
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
