package cli

import (
	"os"
	"path/filepath"
	"testing"

	. "github.com/onsi/gomega"
)

// TestBuildsDefaultRootIsTheRepositoryOfItsPath: without --root, build is
// confined to the Git work tree that holds PATH, else to PATH itself, as
// every other command is; never to the directory it happens to run in.
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
	t.Run("outside a Git work tree, a base above PATH is outside the root", func(t *testing.T) {
		g := NewWithT(t)
		status, _, stderr := run(t, "build", "", filepath.Join("plain", "reaching"))
		g.Expect(status).To(Equal(exitInvalidInput), stderr)
		g.Expect(stderr).To(ContainSubstring(`resources entry "../base"`))
		g.Expect(stderr).To(ContainSubstring("outside the repository root"))
	})
	t.Run("in a Git work tree, the work tree is the root", func(t *testing.T) {
		g := NewWithT(t)
		status, stdout, stderr := run(t, "build", "", filepath.Join("repo", "overlay"))
		g.Expect(status).To(Equal(exitOK), stderr)
		g.Expect(stdout).To(ContainSubstring("name: p"))
	})
}
