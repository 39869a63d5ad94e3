package cli

import (
	"os"
	"path/filepath"
	"testing"

	. "github.com/onsi/gomega"
)

// TestEverySizeLimitNamesItsFlag runs build and diff into each limit of
// what they read and checks that the refusal names the file and the flag
// that raises the limit.
func TestEverySizeLimitNamesItsFlag(t *testing.T) {
	root := t.TempDir()
	policy, err := os.ReadFile(filepath.Join("..", "..", "examples", "profiles-repo", "profilesync-policy.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	profile := profileWith(oneKubernetesVersion)
	files := map[string]string{
		".git/HEAD":                      "ref: refs/heads/main\n",
		"o/kustomization.yaml":           "resources:\n- p.yaml\n",
		"o/p.yaml":                       profile,
		"policy/kustomization.yaml":      "resources:\n- p.yaml\n",
		"policy/p.yaml":                  profile,
		"policy/profilesync-policy.yaml": string(policy),
	}
	for name, content := range files {
		path := filepath.Join(root, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	in := func(name string) string { return filepath.Join(root, name) }
	tests := []struct {
		name string
		args []string
		// file is the file named, flag the flag the refusal names.
		file, flag string
	}{
		{name: "build: a resource over --max-file-size", args: []string{"build", in("o"), "--max-file-size", "100"},
			file: "o/p.yaml", flag: "max-file-size"},
		{name: "build: the policy over --max-file-size", args: []string{"build", in("policy"), "--max-file-size", "400"},
			file: "policy/profilesync-policy.yaml", flag: "max-file-size"},
		{name: "build: reading over --max-rendered-size", args: []string{"build", in("o"), "--max-rendered-size", "100"},
			file: "o/p.yaml", flag: "max-rendered-size"},
		{name: "build: over --build-timeout", args: []string{"build", in("o"), "--build-timeout", "1ms"},
			file: "build of o", flag: "build-timeout"},
		{name: "diff: the policy over --max-file-size", args: []string{"diff", "--base-dir", root, "--head-dir", root, "policy", "--max-file-size", "400"},
			file: "profilesync-policy.yaml", flag: "max-file-size"},
		{name: "diff: reading over --max-rendered-size", args: []string{"diff", "--base-dir", root, "--head-dir", root, "o", "--max-rendered-size", "100"},
			file: "o/p.yaml", flag: "max-rendered-size"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			status, _, stderr := run(t, tt.args[0], "", tt.args[1:]...)
			g.Expect(status).To(Equal(exitInvalidInput), stderr)
			g.Expect(stderr).To(ContainSubstring(tt.file))
			g.Expect(stderr).To(ContainSubstring("(raise it with --" + tt.flag + ")"))
		})
	}
}
