package cli

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
)

// largeOverlay writes an overlay within every build limit that takes a
// build hundreds of MB: 250 ConfigMaps of 100 KiB.
func largeOverlay(t *testing.T) string {
	t.Helper()
	root := t.TempDir()
	value := strings.Repeat("x", 100<<10)
	var resources strings.Builder
	for f := range 10 {
		var objects strings.Builder
		for i := range 25 {
			fmt.Fprintf(&objects, "---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c%d-%d\ndata:\n  v: %s\n", f, i, value)
		}
		name := fmt.Sprintf("objects%d.yaml", f)
		if err := os.WriteFile(filepath.Join(root, name), []byte(objects.String()), 0o644); err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(&resources, "- %s\n", name)
	}
	if err := os.WriteFile(filepath.Join(root, "kustomization.yaml"), []byte("resources:\n"+resources.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	return root
}

// TestBuildAndDiffRunTheBuildInAProcessOfItsOwn runs build and diff on an
// overlay whose build needs more memory than --build-memory-limit allows:
// each fails with an error that names the limit and its flag, and the
// command itself goes on to report it.
func TestBuildAndDiffRunTheBuildInAProcessOfItsOwn(t *testing.T) {
	root := largeOverlay(t)
	want := "it went past the memory limit of 160Mi (raise it with --build-memory-limit)"
	t.Run("build", func(t *testing.T) {
		g := NewWithT(t)
		status, stdout, stderr := run(t, "build", "", "--root", root, "--build-memory-limit", "160Mi", root)
		g.Expect(status).To(Equal(exitInvalidInput), stderr)
		g.Expect(stdout).To(BeEmpty())
		g.Expect(stderr).To(ContainSubstring(want))
	})
	t.Run("diff", func(t *testing.T) {
		g := NewWithT(t)
		base := t.TempDir()
		status, _, stderr := run(t, "diff", "", "--base-dir", base, "--head-dir", root, ".", "--build-memory-limit", "160Mi")
		g.Expect(status).NotTo(Equal(exitOK), stderr)
		g.Expect(stderr).To(ContainSubstring(want))
	})
	t.Run("the object limit is a flag of both", func(t *testing.T) {
		g := NewWithT(t)
		status, _, stderr := run(t, "build", "", "--root", root, "--max-objects", "100", root)
		g.Expect(status).To(Equal(exitInvalidInput), stderr)
		g.Expect(stderr).To(ContainSubstring("objects read in all are over the maximum number of objects a build reads of 100 (raise it with --max-objects)"))
	})
}
