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
// README.md and the output the README shows for it.
type readmeCommand struct {
	line   string
	args   []string
	output string
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
			commands = append(commands, readmeCommand{line: line, args: strings.Fields(strings.TrimPrefix(line, "$ profilesync "))})
		case block == "console" && len(commands) > 0:
			commands[len(commands)-1].output += line + "\n"
		case block == "diff":
			patches[len(patches)-1] += line + "\n"
		}
	}
	return commands, patches
}

// TestREADMECommandsPrintWhatTheREADMEShows runs every offline command the
// README shows, in examples/profiles-repo, and compares what it prints.
// `profilesync diff --base BASE --head HEAD` runs in a Git repository whose
// branch BASE holds the profiles of examples/profiles-repo (base/, overlays/
// and the versioning policy) and whose branch HEAD holds them changed as the README's
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
	pullRequest := ""
	for _, c := range commands {
		if c.args[0] == "diff" && pullRequest == "" {
			pullRequest = readmePullRequest(t, examples, flagValue(c.args, "--base"), flagValue(c.args, "--head"), patches)
		}
	}
	for _, c := range commands {
		t.Run(c.line, func(t *testing.T) {
			g := NewWithT(t)
			if c.args[0] == "diff" {
				t.Chdir(pullRequest)
			} else {
				t.Chdir(examples)
			}
			var stdout, stderr bytes.Buffer
			code := cli.Execute(c.args, strings.NewReader(""), &stdout, &stderr)
			g.Expect(code).To(Equal(0), stderr.String())
			g.Expect(stdout.String()).To(Equal(c.output))
		})
	}
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
// and returns its directory.
func readmePullRequest(t *testing.T, examples, base, head string, patches []string) string {
	t.Helper()
	g := NewWithT(t)
	g.Expect(base).NotTo(BeEmpty(), "the README's diff names its base with --base")
	g.Expect(head).NotTo(BeEmpty(), "the README's diff names its head with --head")
	g.Expect(patches).NotTo(BeEmpty(), "the README shows the change it compares in a ```diff block")
	dir := t.TempDir()
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
	policy, err := os.ReadFile(filepath.Join(examples, "profilesync-policy.yaml"))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(os.WriteFile(filepath.Join(dir, "profilesync-policy.yaml"), policy, 0o644)).To(Succeed())
	commit(base, 0)
	for _, patch := range patches {
		applyPatch(t, dir, patch)
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
