package cli

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/object"
	. "github.com/onsi/gomega"

	"github.com/profilesync/profilesync/test/gitserver"
)

// binaryMemoryLimit bounds the data segment of every run of the binary in
// TestTheBinaryReadsOnlyTheRepositoryWithinItsMemory, through prlimit(1)
// when the machine has it, and its peak resident memory in any case: far
// below the gigabyte each hostile input would take to read.
const binaryMemoryLimit = 384 << 20

// buildBinary builds the profilesync binary from the module root into a
// temporary directory and returns its path.
func buildBinary(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "profilesync")
	build := exec.Command("go", "build", "-o", bin, ".")
	build.Dir = filepath.Join("..", "..")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

// binaryRun is how one run of the binary ended.
type binaryRun struct {
	status         int
	stdout, stderr string
	// maxRSS is the peak resident memory, in bytes, of the binary and the
	// children it waited for (its build sandboxes). Linux counts it from
	// before the exec, so it may be the test's own: an upper bound.
	maxRSS int64
}

// runBinary runs bin with args in dir, with an environment of its own and
// under binaryMemoryLimit.
func runBinary(t *testing.T, bin, dir string, args ...string) binaryRun {
	t.Helper()
	return runBinaryWithEnv(t, bin, dir, nil, args...)
}

// runBinaryWithEnv is runBinary with env added to the binary's own
// environment.
func runBinaryWithEnv(t *testing.T, bin, dir string, env []string, args ...string) binaryRun {
	t.Helper()
	name, argv := bin, args
	if prlimit, err := exec.LookPath("prlimit"); err == nil {
		name, argv = prlimit, append([]string{fmt.Sprintf("--data=%d", binaryMemoryLimit), bin}, args...)
	}
	cmd := exec.Command(name, argv...)
	cmd.Dir = dir
	cmd.Env = []string{"HOME=" + t.TempDir(), "PATH=" + os.Getenv("PATH"), "GIT_CONFIG_NOSYSTEM=true", "GIT_CONFIG_GLOBAL=/dev/null"}
	cmd.Env = append(cmd.Env, env...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	var exit *exec.ExitError
	if err != nil && !errors.As(err, &exit) {
		t.Fatalf("running %s: %v", bin, err)
	}
	usage := cmd.ProcessState.SysUsage().(*syscall.Rusage)
	return binaryRun{status: cmd.ProcessState.ExitCode(), stdout: stdout.String(), stderr: stderr.String(), maxRSS: usage.Maxrss * 1024}
}

// looseZeroBlob writes a loose blob of size zero bytes into the repository at dir
// (gitserver.WriteLooseZeros).
func looseZeroBlob(t *testing.T, dir string, size int64) plumbing.Hash {
	t.Helper()
	hash, err := gitserver.WriteLooseZeros(dir, size)
	if err != nil {
		t.Fatal(err)
	}
	return hash
}

// repositoryWithALooseGigabyte makes a Git repository whose branch main
// holds a landscape and whose branch pr adds zeros.yaml to it, a loose blob
// of 1 GiB of zeros, and returns its directory.
func repositoryWithALooseGigabyte(t *testing.T) string {
	t.Helper()
	g := NewWithT(t)
	dir := t.TempDir()
	repo, err := git.PlainInit(dir, false)
	g.Expect(err).NotTo(HaveOccurred())
	worktree, err := repo.Worktree()
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(os.MkdirAll(filepath.Join(dir, "overlays", "dev"), 0o755)).To(Succeed())
	g.Expect(os.WriteFile(filepath.Join(dir, "overlays", "dev", "p.yaml"), []byte(profileWith(oneKubernetesVersion)), 0o644)).To(Succeed())
	g.Expect(os.WriteFile(filepath.Join(dir, "overlays", "dev", "kustomization.yaml"), []byte("resources:\n- p.yaml\n"), 0o644)).To(Succeed())
	g.Expect(worktree.AddWithOptions(&git.AddOptions{All: true})).To(Succeed())
	signature := &object.Signature{Name: "test", Email: "test@example.com", When: time.Date(2026, 11, 20, 12, 0, 0, 0, time.UTC)}
	main, err := worktree.Commit("main", &git.CommitOptions{Author: signature})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(repo.Storer.SetReference(plumbing.NewHashReference(plumbing.NewBranchReferenceName("main"), main))).To(Succeed())

	mainCommit, err := repo.CommitObject(main)
	g.Expect(err).NotTo(HaveOccurred())
	mainTree, err := mainCommit.Tree()
	g.Expect(err).NotTo(HaveOccurred())
	entries := append([]object.TreeEntry{}, mainTree.Entries...)
	entries = append(entries, object.TreeEntry{Name: "zeros.yaml", Mode: filemode.Regular, Hash: looseZeroBlob(t, dir, 1<<30)})
	store := func(o interface {
		Encode(plumbing.EncodedObject) error
	}) plumbing.Hash {
		obj := repo.Storer.NewEncodedObject()
		g.Expect(o.Encode(obj)).To(Succeed())
		hash, err := repo.Storer.SetEncodedObject(obj)
		g.Expect(err).NotTo(HaveOccurred())
		return hash
	}
	tree := store(&object.Tree{Entries: entries})
	pr := store(&object.Commit{Author: *signature, Committer: *signature, Message: "pr", TreeHash: tree, ParentHashes: []plumbing.Hash{main}})
	g.Expect(repo.Storer.SetReference(plumbing.NewHashReference(plumbing.NewBranchReferenceName("pr"), pr))).To(Succeed())

	// The branch bomb adds to main a commit whose message is 1 GiB of one
	// byte: about 1 MiB on disk.
	head := fmt.Sprintf("tree %s\nparent %s\nauthor attacker <a@example.com> 1767225600 +0000\ncommitter attacker <a@example.com> 1767225600 +0000\n\n", mainCommit.TreeHash, main)
	bomb, err := gitserver.WriteLooseObject(filepath.Join(dir, ".git"), plumbing.CommitObject, []byte(head), 1<<30, 'a', []byte("\n"))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(repo.Storer.SetReference(plumbing.NewHashReference(plumbing.NewBranchReferenceName("bomb"), bomb))).To(Succeed())
	return dir
}

// TestTheBinaryReadsOnlyTheRepositoryWithinItsMemory runs the profilesync
// binary, as CI runs it on a stranger's pull request, on inputs that lead
// out of the repository, into .git/, to /dev/zero, on a revision with a
// loose blob of 1 GiB, and (diff and rollout status) on a commit whose
// message is 1 GiB, 1 MiB on disk: each is refused with the path and the rule, nothing
// of a refused file is printed, and the process stays far below the size
// it would take to read them.
func TestTheBinaryReadsOnlyTheRepositoryWithinItsMemory(t *testing.T) {
	bin := buildBinary(t)
	root := hostileTree(t)
	overlays := map[string]string{
		"build-out/secret.yaml": "../../secret/creds.yaml",
		"build-zero/zero.yaml":  "/dev/zero",
		"build-git/git.yaml":    "../.git/secret.yaml",
	}
	for link, target := range overlays {
		dir := filepath.Join(root, filepath.Dir(link))
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(target, filepath.Join(root, link)); err != nil {
			t.Fatal(err)
		}
		kustomization := "resources:\n- " + filepath.Base(link) + "\n"
		if err := os.WriteFile(filepath.Join(dir, "kustomization.yaml"), []byte(kustomization), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	repo := repositoryWithALooseGigabyte(t)

	tests := []struct {
		name string
		dir  string
		args []string
		// wantErr are parts of stderr: the path and the rule.
		wantErr []string
	}{
		{name: "evaluate: a profile linked from outside the root", dir: root, args: []string{"evaluate", "-f", "out"},
			wantErr: []string{"out/out.yaml: a symbolic link that leads outside the repository root: refused"}},
		{name: "evaluate: a profile linked to /dev/zero", dir: root, args: []string{"evaluate", "-f", "zero"},
			wantErr: []string{"zero/zero.yaml: a symbolic link that leads outside the repository root: refused"}},
		{name: "timeline: a profile linked into .git/", dir: root, args: []string{"timeline", "-f", "git"},
			wantErr: []string{"git/git.yaml: a symbolic link into .git/, Git's metadata: refused"}},
		{name: "update-path: .git/ itself", dir: root, args: []string{"update-path", "-f", ".git", "--profile", "p", "--kubernetes", "1.31.0"},
			wantErr: []string{".git: in .git/"}},
		{name: "timeline: a policy linked to /dev/zero", dir: root, args: []string{"timeline", "-f", "base", "--policy", "policy-zero/profilesync-policy.yaml"},
			wantErr: []string{"policy-zero/profilesync-policy.yaml: a symbolic link that leads outside the repository root: refused"}},
		{name: "timeline: a policy linked into .git/", dir: root, args: []string{"timeline", "-f", "base", "--policy", "policy-git/profilesync-policy.yaml"},
			wantErr: []string{"policy-git/profilesync-policy.yaml: a symbolic link into .git/, Git's metadata: refused"}},
		{name: "build: a resource linked from outside the root", dir: root, args: []string{"build", "build-out", "--build-memory-limit", "256Mi"},
			wantErr: []string{"build-out/secret.yaml is a symbolic link to", "outside the repository root: refused"}},
		{name: "build: a resource linked to /dev/zero", dir: root, args: []string{"build", "build-zero", "--build-memory-limit", "256Mi"},
			wantErr: []string{"build-zero/zero.yaml is a symbolic link to /dev/zero, outside the repository root: refused"}},
		{name: "build: a resource linked into .git/", dir: root, args: []string{"build", "build-git", "--build-memory-limit", "256Mi"},
			wantErr: []string{"build-git/git.yaml is a symbolic link into .git/, Git's metadata, which is not part of the build: refused"}},
		{name: "diff: a loose blob of 1 GiB in the head", dir: repo, args: []string{"diff", "--base", "main", "--head", "pr", "--build-memory-limit", "256Mi"},
			wantErr: []string{"read file zeros.yaml: blob ", " is 1 GiB, more than the maximum checkout size of 64 MiB", "--max-checkout-size"}},
		{name: "diff: a commit whose message is 1 GiB in the head", dir: repo, args: []string{"diff", "--base", "main", "--head", "bomb", "--build-memory-limit", "256Mi"},
			wantErr: []string{`resolve revision "bomb"`, " is 1 GiB, more than the 2 MiB a commit may have", "(raise it with --max-checkout-size)"}},
		{name: "rollout status: a branch whose tip's message is 1 GiB", dir: repo, args: []string{"rollout", "status", ".", "--branch", "bomb"},
			wantErr: []string{`read commit `, ` of branch "bomb": commit `, " is 1 GiB, more than the 2 MiB a commit may have", "(raise it with --max-checkout-size)"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			got := runBinary(t, bin, tt.dir, tt.args...)
			g.Expect(got.status).To(Equal(exitInvalidInput), got.stderr)
			for _, want := range tt.wantErr {
				g.Expect(got.stderr).To(ContainSubstring(want))
			}
			g.Expect(got.stdout + got.stderr).NotTo(ContainSubstring("CANARY"))
			g.Expect(got.maxRSS).To(BeNumerically("<", binaryMemoryLimit), "peak resident memory")
		})
	}
}
