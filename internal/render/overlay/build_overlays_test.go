package overlay

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
)

// TestEveryLandscapeChangesOnlyByAVersionAddedAtTheTopOfTheBase adds a
// Kubernetes version in front of all others in a copy of a repository's
// base: a patch that counted positions would now change the version before
// the one it meant, a patch that names versions changes what it did before.
func TestEveryLandscapeChangesOnlyByAVersionAddedAtTheTopOfTheBase(t *testing.T) {
	const (
		versions = "  kubernetes:\n    versions:\n"
		added    = "    - version: 1.29.15\n      lifecycle:\n      - classification: deprecated\n      - classification: expired\n        startTime: \"2025-03-01T00:00:00Z\"\n"
	)
	tests := []struct {
		name string
		repo string
	}{
		{"the fixture repository", profilesRepo},
		{"the example repository", examplesRepo},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			root := filepath.Join(t.TempDir(), "repo")
			g.Expect(os.CopyFS(root, os.DirFS(tt.repo))).To(Succeed())
			overlays, err := os.ReadDir(filepath.Join(root, "overlays"))
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(overlays).NotTo(BeEmpty())
			before := make(map[string][]map[string]any)
			for _, overlay := range overlays {
				docs, err := buildWithDefaults(t, root, filepath.Join("overlays", overlay.Name()))
				g.Expect(err).NotTo(HaveOccurred())
				before[overlay.Name()] = decodedDocs(t, docs)
			}

			profiles := filepath.Join(root, "base", "cloudprofiles.yaml")
			content, err := os.ReadFile(profiles)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(string(content)).To(ContainSubstring(versions), "the first profile lists Kubernetes versions")
			g.Expect(os.WriteFile(profiles, []byte(strings.Replace(string(content), versions, versions+added, 1)), 0o644)).To(Succeed())

			for _, overlay := range overlays {
				docs, err := buildWithDefaults(t, root, filepath.Join("overlays", overlay.Name()))
				g.Expect(err).NotTo(HaveOccurred())
				after := decodedDocs(t, docs)
				kubernetes := fieldAt(after[0], "spec", "kubernetes").(map[string]any)
				versions := kubernetes["versions"].([]any)
				g.Expect(fieldAt(versions, 0, "version")).To(Equal("1.29.15"), "%s: the added version is first, where the base has it", overlay.Name())
				kubernetes["versions"] = versions[1:]
				g.Expect(after).To(Equal(before[overlay.Name()]), "%s: nothing changes but the added version", overlay.Name())
			}
		})
	}
}
