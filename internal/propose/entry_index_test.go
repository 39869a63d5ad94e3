package propose

import (
	"testing"

	. "github.com/onsi/gomega"
	"sigs.k8s.io/kustomize/kyaml/yaml"
)

// TestEntryIndexEditsTheEntryWrittenAsAsked: a versions list may hold 24.4
// and 24.4.0 (Gardener accepts both, comparing strings); an edit of 24.4.0
// edits 24.4.0, never the 24.4 before it, and the semver match is only the
// fallback for a version not written as asked.
func TestEntryIndexEditsTheEntryWrittenAsAsked(t *testing.T) {
	tests := []struct {
		name     string
		versions string
		version  string
		want     int
	}{
		{name: "24.4.0 after 24.4 is the entry 24.4.0", versions: `[{version: "24.4"}, {version: 24.4.0}]`, version: "24.4.0", want: 1},
		{name: "24.4 after 24.4.0 is the entry 24.4", versions: `[{version: 24.4.0}, {version: "24.4"}]`, version: "24.4", want: 1},
		{name: "a version written shorter is found by semver when not written as asked", versions: `[{version: "1.6"}, {version: "1.7"}]`, version: "1.7.0", want: 1},
		{name: "an entry without a version is skipped", versions: `[{cri: []}, {version: 1.7.0}]`, version: "1.7.0", want: 1},
		{name: "a version that is not listed is not found", versions: `[{version: 1.6.0}]`, version: "1.7.0", want: -1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			node, err := yaml.Parse(tt.versions)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(entryIndex(node.YNode(), tt.version)).To(Equal(tt.want))
		})
	}
}
