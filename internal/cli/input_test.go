package cli

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	. "github.com/onsi/gomega"
)

// hostileTree is a repository (with .git/) whose profiles lead out of it in
// every way a pull request can make them, next to a secret outside it.
func hostileTree(t *testing.T) (root string) {
	t.Helper()
	parent := t.TempDir()
	root = filepath.Join(parent, "repo")
	write := func(name, content string) {
		path := filepath.Join(parent, name)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("secret/creds.yaml", "metadata:\n  CANARY-SECRET-token: x\n")
	write("repo/.git/secret.yaml", "metadata:\n  CANARY-GIT-token: x\n")
	write("repo/base/p.yaml", profileWith(oneKubernetesVersion))
	for _, dir := range []string{"out", "zero", "git", "policy-out", "policy-git", "policy-zero"} {
		if err := os.MkdirAll(filepath.Join(root, dir), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	links := map[string]string{
		"out/out.yaml":                        "../../secret/creds.yaml",
		"zero/zero.yaml":                      "/dev/zero",
		"git/git.yaml":                        "../.git/secret.yaml",
		"policy-out/profilesync-policy.yaml":  "../../secret/creds.yaml",
		"policy-git/profilesync-policy.yaml":  "../.git/secret.yaml",
		"policy-zero/profilesync-policy.yaml": "/dev/zero",
	}
	for name, target := range links {
		if err := os.Symlink(target, filepath.Join(root, name)); err != nil {
			t.Fatal(err)
		}
	}
	return root
}

func TestProfileCommandsReadOnlyTheRepository(t *testing.T) {
	root := hostileTree(t)
	in := func(name string) string { return filepath.Join(root, name) }
	tests := []struct {
		name string
		args []string
		// wantStatus and wantErr: the exit status and a part of stderr.
		wantStatus int
		wantErr    string
	}{
		{name: "a profile linked from outside the root is refused", args: []string{"evaluate", "-f", in("out")},
			wantStatus: exitInvalidInput, wantErr: "out/out.yaml: a symbolic link that leads outside the repository root: refused"},
		{name: "a profile linked to /dev/zero is refused unread", args: []string{"evaluate", "-f", in("zero")},
			wantStatus: exitInvalidInput, wantErr: "zero/zero.yaml: a symbolic link that leads outside the repository root: refused"},
		{name: "a profile linked into .git/ is refused", args: []string{"timeline", "-f", in("git")},
			wantStatus: exitInvalidInput, wantErr: "git/git.yaml: a symbolic link into .git/, Git's metadata: refused"},
		{name: ".git/ itself is refused", args: []string{"update-path", "-f", in(".git"), "--profile", "p", "--kubernetes", "1.31.0"},
			wantStatus: exitInvalidInput, wantErr: ".git: in .git/"},
		{name: "an input outside --root is refused", args: []string{"evaluate", "--root", in("base"), "-f", in("out")},
			wantStatus: exitInvalidInput, wantErr: "outside the repository root: refused"},
		{name: "a file over --max-file-size is refused naming the flag", args: []string{"evaluate", "--max-file-size", "100", "-f", in("base")},
			wantStatus: exitInvalidInput, wantErr: fmt.Sprintf("base/p.yaml: %d bytes is over", len(profileWith(oneKubernetesVersion)))},
		{name: "a read over --max-rendered-size is refused naming the flag", args: []string{"evaluate", "--max-rendered-size", "150", "-f", in("base"), "-f", in("base")},
			wantStatus: exitInvalidInput, wantErr: "(raise it with --max-rendered-size)"},
		{name: "a policy linked from outside the root is refused", args: []string{"timeline", "-f", in("base"), "--policy", in("policy-out/profilesync-policy.yaml")},
			wantStatus: exitInvalidInput, wantErr: "reading the policy: policy-out/profilesync-policy.yaml: a symbolic link that leads outside the repository root: refused"},
		{name: "a policy linked into .git/ is refused", args: []string{"timeline", "-f", in("base"), "--policy", in("policy-git/profilesync-policy.yaml")},
			wantStatus: exitInvalidInput, wantErr: "policy-git/profilesync-policy.yaml: a symbolic link into .git/"},
		{name: "a policy linked to /dev/zero is refused unread", args: []string{"timeline", "-f", in("base"), "--policy", in("policy-zero/profilesync-policy.yaml")},
			wantStatus: exitInvalidInput, wantErr: "policy-zero/profilesync-policy.yaml: a symbolic link that leads outside"},
		{name: "a policy over --max-file-size is refused naming the flag", args: []string{"timeline", "--max-file-size", "10", "-f", in("base"), "--policy", in("base/p.yaml")},
			wantStatus: exitInvalidInput, wantErr: "(raise it with --max-file-size)"},
		{name: "the profiles of the root are read", args: []string{"evaluate", "-f", in("base")}, wantStatus: exitOK},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			status, _, stderr := run(t, tt.args[0], "", tt.args[1:]...)
			g.Expect(status).To(Equal(tt.wantStatus), stderr)
			g.Expect(stderr).To(ContainSubstring(tt.wantErr))
			g.Expect(stderr).NotTo(ContainSubstring("CANARY"))
		})
	}
}

func TestStdinIsBoundedByTheMaximumFileSize(t *testing.T) {
	g := NewWithT(t)
	status, _, stderr := run(t, "evaluate", profileWith(oneKubernetesVersion), "--max-file-size", "20", "-f", "-")
	g.Expect(status).To(Equal(exitInvalidInput))
	g.Expect(stderr).To(ContainSubstring("<stdin>: exceeds the maximum file size of 20 bytes (raise it with --max-file-size)"))
}
