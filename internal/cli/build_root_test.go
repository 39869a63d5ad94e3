package cli

import (
	"os"
	"path/filepath"
	"testing"

	. "github.com/onsi/gomega"
)

// TestBuildsDefaultRootIsTheRepositoryOfItsPath: without --root, build is
// confined to the Git work tree that holds PATH, else to the working
// directory when it holds PATH, else to PATH itself, as every other command
// is.
func TestBuildsDefaultRootIsTheRepositoryOfItsPath(t *testing.T) {
	parent := t.TempDir()
	write := func(name, content string) {
		path := filepath.Join(parent, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	profile := profileWith(oneKubernetesVersion)
	write("plain/overlay/kustomization.yaml", "resources:\n- p.yaml\n")
	write("plain/overlay/p.yaml", profile)
	write("plain/reaching/kustomization.yaml", "resources:\n- ../base\n")
	write("plain/base/kustomization.yaml", "resources:\n- p.yaml\n")
	write("plain/base/p.yaml", profile)
	write("repo/.git/HEAD", "ref: refs/heads/main\n")
	write("repo/overlay/kustomization.yaml", "resources:\n- ../base\n")
	write("repo/base/kustomization.yaml", "resources:\n- p.yaml\n")
	write("repo/base/p.yaml", profile)
	// The current directory holds all of them, and is no repository.
	t.Chdir(parent)

	t.Run("outside a Git work tree, PATH is the root", func(t *testing.T) {
		g := NewWithT(t)
		status, stdout, stderr := run(t, "build", "", filepath.Join("plain", "overlay"))
		g.Expect(status).To(Equal(exitOK), stderr)
		g.Expect(stdout).To(ContainSubstring("name: p"))
	})
	t.Run("outside a Git work tree, the working directory holding PATH is the root, so a base above PATH is read", func(t *testing.T) {
		g := NewWithT(t)
		status, stdout, stderr := run(t, "build", "", filepath.Join("plain", "reaching"))
		g.Expect(status).To(Equal(exitOK), stderr)
		g.Expect(stdout).To(ContainSubstring("name: p"))
	})
	t.Run("outside a Git work tree, a base above the working directory is outside the root, and the message says which root was used", func(t *testing.T) {
		g := NewWithT(t)
		t.Chdir(filepath.Join(parent, "plain", "reaching"))
		status, _, stderr := run(t, "build", "", ".")
		g.Expect(status).To(Equal(exitInvalidInput), stderr)
		g.Expect(stderr).To(ContainSubstring(`resources entry "../base"`))
		g.Expect(stderr).To(ContainSubstring("outside the repository root"))
		g.Expect(stderr).To(ContainSubstring("build: the root is " + filepath.Join(parent, "plain", "reaching") +
			", the working directory: no Git work tree contains the path; set --root to use another"))
	})
	t.Run("in a Git work tree, the work tree is the root", func(t *testing.T) {
		g := NewWithT(t)
		status, stdout, stderr := run(t, "build", "", filepath.Join("repo", "overlay"))
		g.Expect(status).To(Equal(exitOK), stderr)
		g.Expect(stdout).To(ContainSubstring("name: p"))
	})
}

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
