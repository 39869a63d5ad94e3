package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"
	. "github.com/onsi/gomega"

	"github.com/profilesync/profilesync/internal/cli"
)

// readmeCommand is one `$ profilesync ...` line of a console block in
// README.md and the output the README shows for it: what the command prints
// on stdout, or, when the line sends stdout to a file (`> FILE`), what it
// prints on stderr, as a shell shows it.
type readmeCommand struct {
	line   string
	args   []string
	output string
	// stdoutToFile is true for a line that ends in `> FILE`.
	stdoutToFile bool
	// changes is how many of the README's ```diff blocks come before the
	// command: it runs on the example repository changed by them.
	changes int
}

// readmeBlocks extracts the commands of the README's ```console blocks and
// the unified diffs of its ```diff blocks.
func readmeBlocks(readme string) (commands []readmeCommand, patches []string) {
	block := ""
	for _, line := range strings.Split(readme, "\n") {
		switch {
		case strings.HasPrefix(line, "```console"), strings.HasPrefix(line, "```diff"):
			block = strings.TrimPrefix(line, "```")
			if block == "diff" {
				patches = append(patches, "")
			}
		case strings.HasPrefix(line, "```"):
			block = ""
		case block == "console" && strings.HasPrefix(line, "$ profilesync "):
			c := readmeCommand{line: line, args: strings.Fields(strings.TrimPrefix(line, "$ profilesync ")), changes: len(patches)}
			if n := len(c.args); n >= 2 && c.args[n-2] == ">" {
				c.args, c.stdoutToFile = c.args[:n-2], true
			}
			commands = append(commands, c)
		case block == "console" && len(commands) > 0:
			commands[len(commands)-1].output += line + "\n"
		case block == "diff":
			patches[len(patches)-1] += line + "\n"
		}
	}
	return commands, patches
}

// TestREADMECommandsPrintWhatTheREADMEShows runs every offline command the
// README shows, in examples/profiles-repo changed as the README's ```diff
// blocks before the command show, and compares what it prints.
// `profilesync diff --base BASE --head HEAD` runs in a Git repository whose
// branch BASE holds the profiles of examples/profiles-repo (base/, overlays/,
// the versioning policy and the rollout file) and whose branch HEAD holds them changed as the README's
// ```diff blocks show: the pull request the README compares. Its commits
// are made alike in every run, so the commit names the README shows stay
// the same until those files change.
func TestREADMECommandsPrintWhatTheREADMEShows(t *testing.T) {
	readme, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	commands, patches := readmeBlocks(string(readme))
	if len(commands) < 3 {
		t.Fatalf("found %d commands in README.md's console blocks, want at least 3", len(commands))
	}
	examples, err := filepath.Abs(filepath.Join("examples", "profiles-repo"))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range commands {
		t.Run(c.line, func(t *testing.T) {
			g := NewWithT(t)
			switch {
			case c.args[0] == "diff":
				t.Chdir(readmePullRequest(t, t.TempDir(), examples, flagValue(c.args, "--base"), flagValue(c.args, "--head"), patches[:c.changes], nil))
			case c.changes > 0:
				t.Chdir(readmeChangedExamples(t, examples, patches[:c.changes]))
			default:
				t.Chdir(examples)
			}
			var stdout, stderr bytes.Buffer
			code := cli.Execute(c.args, strings.NewReader(""), &stdout, &stderr)
			g.Expect(code).To(Equal(0), stderr.String())
			if c.stdoutToFile {
				g.Expect(stdout.String()).NotTo(BeEmpty())
				g.Expect(stderr.String()).To(Equal(c.output))
			} else {
				g.Expect(stdout.String()).To(Equal(c.output))
			}
		})
	}
}

// TestREADMECommandsRefuseAHostilePullRequest runs the README's
// pull-request commands on a pull request whose profiles file is a symbolic
// link out of the repository, to /dev/zero or into .git/, in its work tree
// and in its head revision, as CI checks out a stranger's pull request:
// every command refuses it, naming the file and the rule, and prints
// nothing of what the link leads to.
func TestREADMECommandsRefuseAHostilePullRequest(t *testing.T) {
	readme, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	commands, patches := readmeBlocks(string(readme))
	examples, err := filepath.Abs(filepath.Join("examples", "profiles-repo"))
	if err != nil {
		t.Fatal(err)
	}
	var base, head string
	for _, c := range commands {
		if c.args[0] == "diff" {
			base, head = flagValue(c.args, "--base"), flagValue(c.args, "--head")
			patches = patches[:c.changes]
		}
	}
	const profiles = "base/cloudprofiles.yaml"
	links := []struct {
		name, target string
		// wantErr is a part of every command's stderr: the rule.
		wantErr string
	}{
		{name: "out of the repository", target: "../../secret/creds.yaml", wantErr: "outside the repository root"},
		{name: "to /dev/zero", target: "/dev/zero", wantErr: "outside the repository root"},
		{name: "into .git/", target: "../.git/secret.yaml", wantErr: ".git/"},
	}
	for _, link := range links {
		t.Run("a profiles file linked "+link.name, func(t *testing.T) {
			parent := t.TempDir()
			secret := "metadata:\n  CANARY-SECRET-token: x\n"
			if err := os.MkdirAll(filepath.Join(parent, "secret"), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(parent, "secret", "creds.yaml"), []byte(secret), 0o644); err != nil {
				t.Fatal(err)
			}
			pullRequest := readmePullRequest(t, filepath.Join(parent, "repo"), examples, base, head, patches, func(dir string) {
				if err := os.WriteFile(filepath.Join(dir, ".git", "secret.yaml"), []byte(secret), 0o644); err != nil {
					t.Fatal(err)
				}
				path := filepath.Join(dir, filepath.FromSlash(profiles))
				if err := os.Remove(path); err != nil {
					t.Fatal(err)
				}
				if err := os.Symlink(link.target, path); err != nil {
					t.Fatal(err)
				}
			})
			for _, c := range commands {
				t.Run(c.line, func(t *testing.T) {
					g := NewWithT(t)
					t.Chdir(pullRequest)
					var stdout, stderr bytes.Buffer
					code := cli.Execute(c.args, strings.NewReader(""), &stdout, &stderr)
					g.Expect(code).To(Equal(1), stderr.String())
					g.Expect(stderr.String()).To(ContainSubstring(profiles))
					g.Expect(stderr.String()).To(ContainSubstring(link.wantErr))
					g.Expect(stdout.String() + stderr.String()).NotTo(ContainSubstring("CANARY"))
				})
			}
		})
	}
}

// readmeChangedExamples copies examples/profiles-repo to a directory of the
// test, applies patches to it and returns the directory.
func readmeChangedExamples(t *testing.T, examples string, patches []string) string {
	t.Helper()
	dir := t.TempDir()
	if err := os.CopyFS(dir, os.DirFS(examples)); err != nil {
		t.Fatal(err)
	}
	for _, patch := range patches {
		applyPatch(t, dir, patch)
	}
	return dir
}

func flagValue(args []string, flag string) string {
	for i, arg := range args[:len(args)-1] {
		if arg == flag {
			return args[i+1]
		}
	}
	return ""
}

// readmePullRequest makes the Git repository of the README's pull request
// in dir and returns dir. change, when not nil, changes the head's tree
// further before it is committed.
func readmePullRequest(t *testing.T, dir, examples, base, head string, patches []string, change func(dir string)) string {
	t.Helper()
	g := NewWithT(t)
	g.Expect(base).NotTo(BeEmpty(), "the README's diff names its base with --base")
	g.Expect(head).NotTo(BeEmpty(), "the README's diff names its head with --head")
	g.Expect(patches).NotTo(BeEmpty(), "the README shows the change it compares in a ```diff block")
	repo, err := git.PlainInit(dir, false)
	g.Expect(err).NotTo(HaveOccurred())
	worktree, err := repo.Worktree()
	g.Expect(err).NotTo(HaveOccurred())
	commit := func(branch string, minute int) {
		g.Expect(worktree.AddWithOptions(&git.AddOptions{All: true})).To(Succeed())
		signature := &object.Signature{Name: "Platform team", Email: "platform@example.com", When: time.Date(2026, 11, 20, 9, minute, 0, 0, time.UTC)}
		hash, err := worktree.Commit(branch, &git.CommitOptions{Author: signature})
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(repo.Storer.SetReference(plumbing.NewHashReference(plumbing.NewBranchReferenceName(branch), hash))).To(Succeed())
	}

	for _, tree := range []string{"base", "overlays"} {
		g.Expect(os.CopyFS(filepath.Join(dir, tree), os.DirFS(filepath.Join(examples, tree)))).To(Succeed())
	}
	for _, settings := range []string{"profilesync-policy.yaml", "profilesync-rollout.yaml"} {
		content, err := os.ReadFile(filepath.Join(examples, settings))
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(os.WriteFile(filepath.Join(dir, settings), content, 0o644)).To(Succeed())
	}
	commit(base, 0)
	for _, patch := range patches {
		applyPatch(t, dir, patch)
	}
	if change != nil {
		change(dir)
	}
	commit(head, 1)
	return dir
}

// applyPatch applies a unified diff to the files below dir: the lines of
// each hunk without those starting with "+" must appear in the file exactly
// once, and are replaced by the lines without those starting with "-".
func applyPatch(t *testing.T, dir, patch string) {
	t.Helper()
	g := NewWithT(t)
	var file string
	var before, after []string
	apply := func() {
		if len(before)+len(after) == 0 {
			return
		}
		g.Expect(file).NotTo(BeEmpty(), "the diff names its file with +++ b/FILE before its first hunk")
		path := filepath.Join(dir, filepath.FromSlash(file))
		content, err := os.ReadFile(path)
		g.Expect(err).NotTo(HaveOccurred())
		old, changed := strings.Join(before, "\n")+"\n", strings.Join(after, "\n")+"\n"
		g.Expect(strings.Count(string(content), old)).To(Equal(1), "%s has the hunk's lines exactly once:\n%s", file, old)
		g.Expect(os.WriteFile(path, []byte(strings.Replace(string(content), old, changed, 1)), 0o644)).To(Succeed())
		before, after = nil, nil
	}
	for _, line := range strings.Split(strings.TrimSuffix(patch, "\n"), "\n") {
		switch {
		case strings.HasPrefix(line, "--- "):
			apply()
		case strings.HasPrefix(line, "+++ "):
			apply()
			file = strings.TrimPrefix(strings.TrimPrefix(line, "+++ "), "b/")
		case strings.HasPrefix(line, "@@"):
			apply()
		case strings.HasPrefix(line, "+"):
			after = append(after, line[1:])
		case strings.HasPrefix(line, "-"):
			before = append(before, line[1:])
		default:
			// Context; an empty line may have lost its leading space.
			before, after = append(before, strings.TrimPrefix(line, " ")), append(after, strings.TrimPrefix(line, " "))
		}
	}
	apply()
}
