package cli

import (
	"os"
	"path/filepath"
	"testing"

	. "github.com/onsi/gomega"
)

// TestBuildOutsideGitUsesTheWorkingDirectoryAsRoot: in a copy of the
// fixture repository without .git, an overlay reaches ../../base when the
// working directory holds both; when it does not, the refusal says which
// root was used and how to set --root.
func TestBuildOutsideGitUsesTheWorkingDirectoryAsRoot(t *testing.T) {
	copyOf := t.TempDir()
	if err := os.CopyFS(copyOf, os.DirFS(filepath.Join("..", "..", "test", "testdata", "profiles-repo"))); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, workingDirectory, path string
		wantErr                      []string
	}{
		{name: "the working directory holds the overlay and its base", workingDirectory: copyOf, path: filepath.Join("overlays", "dev")},
		{name: "the working directory holds only the overlay", workingDirectory: filepath.Join(copyOf, "overlays"), path: "dev",
			wantErr: []string{
				"is outside the repository root",
				"build: the root is " + filepath.Join(copyOf, "overlays") + ", the working directory: no Git work tree contains the path; set --root to use another",
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			t.Chdir(tt.workingDirectory)
			status, _, stderr := run(t, "build", "", tt.path, "--at", "2025-06-01T00:00:00Z")
			if tt.wantErr == nil {
				g.Expect(status).To(Equal(exitOK), stderr)
				return
			}
			g.Expect(status).NotTo(Equal(exitOK))
			for _, want := range tt.wantErr {
				g.Expect(stderr).To(ContainSubstring(want))
			}
		})
	}
}
