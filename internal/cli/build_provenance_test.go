package cli

import (
	"os"
	"path/filepath"
	"testing"

	. "github.com/onsi/gomega"
)

// TestBuildNamesThePatchThatSetAnInvalidValue builds an overlay whose patch
// sets an expiration date on the highest Kubernetes version, which may not
// expire: the problem names the patch file and its entry, where the value
// is, and the base file as the object's origin.
func TestBuildNamesThePatchThatSetAnInvalidValue(t *testing.T) {
	g := NewWithT(t)
	repo := t.TempDir()
	files := map[string]string{
		".git/HEAD":                       "ref: refs/heads/main\n",
		"base/kustomization.yaml":         "resources:\n- p.yaml\n",
		"base/p.yaml":                     profileWith(oneKubernetesVersion),
		"overlays/dev/kustomization.yaml": "resources:\n- ../../base\npatches:\n- path: expire.yaml\n",
		"overlays/dev/expire.yaml": bareProfileWith("  kubernetes:\n    versions:\n    - version: 1.31.0\n" +
			"      expirationDate: \"2026-01-01T00:00:00Z\"\n"),
	}
	for name, content := range files {
		path := filepath.Join(repo, filepath.FromSlash(name))
		g.Expect(os.MkdirAll(filepath.Dir(path), 0o755)).To(Succeed())
		g.Expect(os.WriteFile(path, []byte(content), 0o644)).To(Succeed())
	}
	status, stdout, stderr := run(t, "build", "", "--root", repo, filepath.Join(repo, "overlays", "dev"), "--at", "2025-06-01T00:00:00Z")
	g.Expect(status).To(Equal(exitInvalidInput), stderr)
	g.Expect(stdout).To(BeEmpty())
	g.Expect(stderr).To(ContainSubstring("overlays/dev/expire.yaml: CloudProfile/p: spec.kubernetes.versions[0] (1.31.0).expirationDate: Forbidden: " +
		"1.31.0 is the highest Kubernetes version and may not expire: clusters must always have a version to move to " +
		"(set by the patch's entry spec.kubernetes.versions (1.31.0), on the object of base/p.yaml)"))
}
