package profile

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	sigsyaml "sigs.k8s.io/yaml"
)

// profileWith is a CloudProfile whose Kubernetes versions are the given
// YAML lines, indented as list items of spec.kubernetes.versions.
func profileWith(versions ...string) string {
	return "apiVersion: core.profilesync.io/v1alpha1\nkind: CloudProfile\nmetadata:\n  name: p\nspec:\n  type: local\n  kubernetes:\n    versions:\n" +
		strings.Join(versions, "\n") + "\n"
}

func TestCheckYAMLTyping(t *testing.T) {
	tests := []struct {
		name    string
		content string
		// want are the problems' lines; empty when the file is accepted.
		want []string
	}{
		{
			name:    "quoted values are read as written",
			content: profileWith(`    - version: "1.30"`, `      expirationDate: "2025-03-01T00:00:00Z"`),
		},
		{
			name:    "an unquoted version typed as a number is refused as written, with the advice to quote it",
			content: profileWith(`    - version: 1.30`),
			want:    []string{`p.yaml: CloudProfile/p: spec.kubernetes.versions[0].version: Invalid value: 1.30 as written: YAML reads it as a number, and this field is a string; quote it: "1.30"`},
		},
		{
			name:    "an unquoted date is refused: kustomize would rewrite it silently",
			content: profileWith(`    - version: 1.30.0`, `      expirationDate: 2025-03-01`),
			want:    []string{`p.yaml: CloudProfile/p: spec.kubernetes.versions[0] (1.30.0).expirationDate: Invalid value: 2025-03-01 as written: YAML types an unquoted date or time as a timestamp, which is converted silently; quote it: "2025-03-01"`},
		},
		{
			name:    "an unquoted RFC 3339 time with seconds and a zone is read as written, as Gardener's example profile writes it",
			content: profileWith(`    - version: 1.30.0`, `      expirationDate: 2025-11-30T01:02:03Z`),
		},
		{
			name:    "an unquoted time written with a space and without a zone is refused",
			content: profileWith(`    - version: 1.30.0`, `      expirationDate: 2025-11-30 01:02:03`),
			want:    []string{`p.yaml: CloudProfile/p: spec.kubernetes.versions[0] (1.30.0).expirationDate: Invalid value: 2025-11-30 01:02:03 as written: YAML types an unquoted date or time as a timestamp, which is converted silently; quote it: "2025-11-30 01:02:03"`},
		},
		{
			name:    "an unquoted time whose zero fraction kustomize drops is refused",
			content: profileWith(`    - version: 1.30.0`, `      expirationDate: 2025-11-30T01:02:03.000Z`),
			want:    []string{`p.yaml: CloudProfile/p: spec.kubernetes.versions[0] (1.30.0).expirationDate: Invalid value: 2025-11-30T01:02:03.000Z as written: YAML types an unquoted date or time as a timestamp, which is converted silently; quote it: "2025-11-30T01:02:03.000Z"`},
		},
		{
			name:    "a value YAML 1.1 reads as a boolean is refused",
			content: "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c\ndata:\n  enabled: yes\n",
			want:    []string{`p.yaml: data.enabled: Invalid value: yes as written: YAML 1.2, which the sync reads, takes it as the string "yes", YAML 1.1 as a boolean; quote it ("yes") or write true or false`},
		},
		{
			name:    "a number YAML 1.1 and 1.2 read differently is refused",
			content: "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c\ndata:\n  mode: 0755\n",
			want:    []string{`p.yaml: data.mode: Invalid value: 0755 as written: YAML 1.1 and YAML 1.2, which the sync reads, take it as different values; quote it ("0755") or write a plain decimal number`},
		},
		{
			name: "a keyed list entry written twice is refused, before a patch could merge it away",
			content: profileWith(`    - version: 1.31.0`, `      lifecycle:`,
				`      - classification: supported`, `        startTime: "2025-01-01T00:00:00Z"`,
				`      - classification: supported`, `        startTime: "2025-02-01T00:00:00Z"`,
				`    - version: 1.31.0`),
			want: []string{
				`p.yaml: CloudProfile/p: spec.kubernetes.versions[1] (1.31.0): Duplicate value: {"version":"1.31.0"}: each key may appear once in this list`,
				`p.yaml: CloudProfile/p: spec.kubernetes.versions[0] (1.31.0).lifecycle[1]: Duplicate value: {"classification":"supported"}: each key may appear once in this list`,
			},
		},
		{
			name:    "lists without keys may repeat entries",
			content: "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c\n  finalizers: [a, a]\n",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			var lines []string
			for _, p := range CheckYAMLTyping("p.yaml", []byte(tt.content)) {
				lines = append(lines, p.String())
			}
			if len(tt.want) == 0 {
				g.Expect(lines).To(BeEmpty())
				return
			}
			g.Expect(lines).To(Equal(tt.want))
		})
	}
}

// TestTimestampsAreAcceptedExactlyWhenKubectlKeepsTheirString round-trips
// each unquoted timestamp through kubectl's reader (sigs.k8s.io/yaml's
// YAMLToJSON): the typing check accepts an RFC 3339 time exactly when that
// reader passes on the string as written, and refuses every other one. (A
// time without a zone, 2025-11-30T01:02:03, is no timestamp to YAML: it stays
// a string, which the decoder refuses as no RFC 3339 time.)
func TestTimestampsAreAcceptedExactlyWhenKubectlKeepsTheirString(t *testing.T) {
	tests := []struct {
		name, value string
		accepted    bool
	}{
		{name: "Gardener's example expirationDate", value: "2025-11-30T01:02:03Z", accepted: true},
		{name: "a time with a numeric zone", value: "2025-11-30T01:02:03+01:00", accepted: true},
		{name: "a time with a fraction of a second", value: "2025-11-30T01:02:03.5Z", accepted: true},
		{name: "a date without a time, which kustomize makes midnight UTC", value: "2025-03-01"},
		{name: "a time written with a space and without a zone", value: "2025-11-30 01:02:03"},
		{name: "a lowercase t, which kustomize makes uppercase", value: "2025-11-30t01:02:03Z"},
		{name: "a time with single digits, which kustomize pads", value: "2025-1-3T01:02:03Z"},
		{name: "a zero fraction, which kustomize drops", value: "2025-11-30T01:02:03.000Z"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			byKubectl, err := sigsyaml.YAMLToJSON([]byte("expirationDate: " + tt.value + "\n"))
			g.Expect(err).NotTo(HaveOccurred())
			var read map[string]any
			g.Expect(json.Unmarshal(byKubectl, &read)).To(Succeed())
			_, rfc3339 := time.Parse(time.RFC3339, tt.value)
			keptByKubectl := read["expirationDate"] == tt.value
			problems := CheckYAMLTyping("p.yaml", []byte(profileWith(`    - version: 1.30.0`, `      expirationDate: `+tt.value)))
			if tt.accepted {
				g.Expect(keptByKubectl && rfc3339 == nil).To(BeTrue(), "kubectl reads %s as %s", tt.value, byKubectl)
				g.Expect(problems).To(BeEmpty())
				return
			}
			g.Expect(problems).To(HaveLen(1))
			g.Expect(problems[0].Message).To(ContainSubstring("YAML types an unquoted date or time as a timestamp"))
		})
	}
}
