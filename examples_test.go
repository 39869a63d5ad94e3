package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"
	. "github.com/onsi/gomega"
	"go.yaml.in/yaml/v3"
)

// runAsProfilesync, set in the environment of this test binary, makes it run
// main (the profilesync command line) instead of the tests: the CI examples'
// shell steps call it as `profilesync`.
const runAsProfilesync = "PROFILESYNC_TEST_RUN_AS_CLI"

func TestMain(m *testing.M) {
	if os.Getenv(runAsProfilesync) != "" {
		main()
		return
	}
	os.Exit(m.Run())
}

// exampleAt is the time every profilesync command of the CI examples runs
// at in TestCIExamplesMeanWhatTheOperatorMeans, the README's: the example
// repository's lifecycles are dated, and a test must not depend on the day
// it runs.
const exampleAt = "2026-11-22T00:00:00Z"

// ciWorkflow is what the test reads of a GitHub Actions workflow.
type ciWorkflow struct {
	On struct {
		PullRequest struct {
			Paths []string `yaml:"paths"`
		} `yaml:"pull_request"`
	} `yaml:"on"`
	Jobs map[string]struct {
		Steps []struct {
			Name string            `yaml:"name"`
			Run  string            `yaml:"run"`
			Env  map[string]string `yaml:"env"`
		} `yaml:"steps"`
	} `yaml:"jobs"`
}

// invokesProfilesync matches a shell line that runs the profilesync command
// (not `go install github.com/profilesync/profilesync`).
var invokesProfilesync = regexp.MustCompile(`(^|[\s;|&(])profilesync\s`)

// TestCIExamplesMeanWhatTheOperatorMeans runs every step of
// docs/examples/profiles-ci.yaml and profiles-pr.yaml that calls profilesync,
// as GitHub runs it (bash -eo pipefail, in order, stopping at the first that
// fails), with this test binary as profilesync, in a Git repository holding
// examples/profiles-repo (origin/main) and a pull request on it (HEAD): the
// unchanged repository passes, and so must every change the operator would
// accept; a change that breaks the rollout file's lag of severity error, or
// that breaks an error rule of the versioning policy from a later date,
// fails with exit status 1. It also checks that the examples' path filters
// start the job for every file the operator reads.
func TestCIExamplesMeanWhatTheOperatorMeans(t *testing.T) {
	examples, err := filepath.Abs(filepath.Join("examples", "profiles-repo"))
	if err != nil {
		t.Fatal(err)
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	bin := t.TempDir()
	wrapper := "#!/bin/sh\n" + runAsProfilesync + "=1 exec '" + self + "' \"$@\" --at " + exampleAt + "\n"
	if err := os.WriteFile(filepath.Join(bin, "profilesync"), []byte(wrapper), 0o755); err != nil {
		t.Fatal(err)
	}

	const prodOverlay = "overlays/prod/kustomization.yaml"
	changes := []struct {
		name string
		// change edits the pull request's tree; nil changes nothing.
		change func(t *testing.T, dir string)
		// failsIn is the examples that must fail (exit 1), with a part of
		// their output; the others must pass.
		failsIn map[string]string
	}{
		{name: "the unchanged repository passes"},
		{
			// 1.33.7 becomes supported in prod two days after dev, where the
			// rollout file asks for a week (severity error): --rollout dev,prod
			// used to drop that lag.
			name: "a change breaking a lag of the rollout file fails the pull-request check",
			change: func(t *testing.T, dir string) {
				replaceInFile(t, filepath.Join(dir, prodOverlay), `"2027-01-15T00:00:00Z"`, `"2026-12-03T00:00:00Z"`, 2)
			},
			failsIn: map[string]string{"profiles-pr.yaml": "profilesync-rollout.yaml: prod: CloudProfile/aws: kubernetes 1.33.7 is supported from 2026-12-03T00:00:00Z, 5d before dev (2026-12-01T00:00:00Z) plus the lag of 7d"},
		},
		{
			// prod deprecates 1.33.5 on 20 December, 1.33.7 takes over on 15
			// January: in between minor 1.33 has no supported patch, which
			// the policy's supported rule (severity error) refuses from then on.
			name: "a change that schedules a policy refusal fails both checks",
			change: func(t *testing.T, dir string) {
				replaceInFile(t, filepath.Join(dir, prodOverlay),
					"- version: 1.33.5\n          lifecycle:\n          - classification: deprecated\n            startTime: \"2027-01-15T00:00:00Z\"",
					"- version: 1.33.5\n          lifecycle:\n          - classification: deprecated\n            startTime: \"2026-12-20T00:00:00Z\"", 1)
			},
			failsIn: map[string]string{
				"profiles-ci.yaml": "from 2026-12-20T00:00:00Z (28d after 2026-11-22T00:00:00Z) the operator refuses every revision with this: policy supported: minor 1.33 has no supported patch",
				"profiles-pr.yaml": "from 2026-12-20T00:00:00Z (28d after 2026-11-22T00:00:00Z) the operator refuses every revision with this: policy supported: minor 1.33 has no supported patch",
			},
		},
	}

	for _, file := range []string{"profiles-ci.yaml", "profiles-pr.yaml"} {
		t.Run(file, func(t *testing.T) {
			workflow := readWorkflow(t, filepath.Join("docs", "examples", file))
			t.Run("its path filter starts the job for every file the operator reads", func(t *testing.T) {
				g := NewWithT(t)
				read := []string{"profilesync-policy.yaml", "profilesync-rollout.yaml", "overlays/dev/profilesync-policy.yaml"}
				g.Expect(filepath.WalkDir(examples, func(path string, entry os.DirEntry, err error) error {
					if err == nil && !entry.IsDir() && entry.Name() != "README.md" {
						rel, _ := filepath.Rel(examples, path)
						read = append(read, filepath.ToSlash(rel))
					}
					return err
				})).To(Succeed())
				for _, path := range read {
					g.Expect(matchesAnyPathFilter(workflow.On.PullRequest.Paths, path)).To(BeTrue(), "%s: paths %v skip a pull request touching only %s", file, workflow.On.PullRequest.Paths, path)
				}
			})
			for _, c := range changes {
				t.Run(c.name, func(t *testing.T) {
					g := NewWithT(t)
					dir := examplePullRequest(t, examples, c.change)
					status, output := runWorkflowSteps(t, workflow, dir, bin)
					if want, fails := c.failsIn[file]; fails {
						g.Expect(status).To(Equal(1), output)
						g.Expect(output).To(ContainSubstring(want))
					} else {
						g.Expect(status).To(Equal(0), output)
					}
				})
			}
		})
	}
}

func readWorkflow(t *testing.T, path string) ciWorkflow {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var workflow ciWorkflow
	if err := yaml.Unmarshal(data, &workflow); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return workflow
}

// runWorkflowSteps runs, in order, the steps of every job that call
// profilesync, as GitHub runs a step's script, in dir with bin first on the
// PATH, and returns the status of the first that fails (0 when none does)
// and everything they printed.
func runWorkflowSteps(t *testing.T, workflow ciWorkflow, dir, bin string) (int, string) {
	t.Helper()
	g := NewWithT(t)
	summary := filepath.Join(t.TempDir(), "summary.md")
	expressions := strings.NewReplacer("${{ github.base_ref }}", "main")
	var output bytes.Buffer
	ran := 0
	for _, job := range workflow.Jobs {
		for _, step := range job.Steps {
			if !invokesProfilesync.MatchString(step.Run) {
				continue
			}
			ran++
			cmd := exec.Command("bash", "--noprofile", "--norc", "-eo", "pipefail", "-c", step.Run)
			cmd.Dir = dir
			cmd.Env = []string{"PATH=" + bin + string(os.PathListSeparator) + os.Getenv("PATH"), "HOME=" + t.TempDir(), "GITHUB_STEP_SUMMARY=" + summary}
			for name, value := range step.Env {
				value = expressions.Replace(value)
				g.Expect(value).NotTo(ContainSubstring("${{"), "step %q: an expression the test does not know", step.Name)
				cmd.Env = append(cmd.Env, name+"="+value)
			}
			cmd.Stdout, cmd.Stderr = &output, &output
			err := cmd.Run()
			if exit, ok := err.(*exec.ExitError); ok {
				return exit.ExitCode(), output.String()
			}
			g.Expect(err).NotTo(HaveOccurred())
		}
	}
	g.Expect(ran).To(BeNumerically(">", 0), "the example runs profilesync")
	return 0, output.String()
}

// examplePullRequest makes a Git repository in a temporary directory whose
// origin/main holds examples/profiles-repo and whose HEAD, checked out, is a
// pull request on it changed by change (nothing when nil).
func examplePullRequest(t *testing.T, examples string, change func(t *testing.T, dir string)) string {
	t.Helper()
	g := NewWithT(t)
	dir := t.TempDir()
	g.Expect(os.CopyFS(dir, os.DirFS(examples))).To(Succeed())
	repo, err := git.PlainInit(dir, false)
	g.Expect(err).NotTo(HaveOccurred())
	worktree, err := repo.Worktree()
	g.Expect(err).NotTo(HaveOccurred())
	commit := func(minute int) plumbing.Hash {
		g.Expect(worktree.AddWithOptions(&git.AddOptions{All: true})).To(Succeed())
		signature := &object.Signature{Name: "Platform team", Email: "platform@example.com", When: time.Date(2026, 11, 20, 9, minute, 0, 0, time.UTC)}
		hash, err := worktree.Commit("change", &git.CommitOptions{Author: signature, AllowEmptyCommits: true})
		g.Expect(err).NotTo(HaveOccurred())
		return hash
	}
	main := commit(0)
	g.Expect(repo.Storer.SetReference(plumbing.NewHashReference(plumbing.NewRemoteReferenceName("origin", "main"), main))).To(Succeed())
	if change != nil {
		change(t, dir)
	}
	commit(1)
	return dir
}

// replaceInFile replaces old with new in path, which must hold old exactly
// count times.
func replaceInFile(t *testing.T, path, old, replacement string, count int) {
	t.Helper()
	g := NewWithT(t)
	content, err := os.ReadFile(path)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(strings.Count(string(content), old)).To(Equal(count), "%s holds %q", path, old)
	g.Expect(os.WriteFile(path, []byte(strings.ReplaceAll(string(content), old, replacement)), 0o644)).To(Succeed())
}

// matchesAnyPathFilter reports whether path matches one of GitHub Actions'
// paths filters: * matches within a directory, ** across directories (and
// **/ also matches no directory at all), ? one character.
func matchesAnyPathFilter(filters []string, path string) bool {
	for _, filter := range filters {
		var pattern strings.Builder
		pattern.WriteString("^")
		for i := 0; i < len(filter); i++ {
			switch {
			case strings.HasPrefix(filter[i:], "**/"):
				pattern.WriteString("(.*/)?")
				i += 2
			case strings.HasPrefix(filter[i:], "**"):
				pattern.WriteString(".*")
				i++
			case filter[i] == '*':
				pattern.WriteString("[^/]*")
			case filter[i] == '?':
				pattern.WriteString("[^/]")
			default:
				pattern.WriteString(regexp.QuoteMeta(filter[i : i+1]))
			}
		}
		pattern.WriteString("$")
		if regexp.MustCompile(pattern.String()).MatchString(path) {
			return true
		}
	}
	return false
}
