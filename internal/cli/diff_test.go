package cli

import (
	"encoding/json"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"
	. "github.com/onsi/gomega"

	v1alpha1 "github.com/profilesync/profilesync/api/v1alpha1"
	"github.com/profilesync/profilesync/internal/prdiff"
)

// The diff fixture is a pull request on a profiles repository with two
// landscapes, dev and prod: testdata/diff/main is the tree before it,
// testdata/diff/pr the tree after. The pull request brings 1.33.7's takeover
// from 1.33.5 forward (two stages moved), adds Kubernetes 1.32.12, removes
// Garden Linux 1443.20.0, adds the image flatcar, changes ubuntu's update
// strategy, retimes the namespaced profile's override in prod, and makes
// prod support 1.34.2 before dev does (a rollout warning).
var (
	diffFixtureMain = filepath.Join("testdata", "diff", "main")
	diffFixturePR   = filepath.Join("testdata", "diff", "pr")
	// diffTime is the fixture's "now".
	diffTime = "2026-11-22T00:00:00Z"
)

// brokenChanges turn the pull request into one whose head is invalid: dev
// no longer builds, and prod's base profile has a version that is not
// semver, which also makes the namespaced profile unmergeable.
var brokenChanges = map[string][2]string{
	"overlays/dev/kustomization.yaml": {"patches:\n", "patches:\n- path: patches/missing.yaml\n"},
	"base/cloudprofiles.yaml":         {"- version: 1.32.12", "- version: 1.32.x"},
}

// diffRepo makes a Git repository with go-git whose branches main, pr and
// broken hold the fixture's trees, below prefix ("" for the top). Commits
// have fixed authors and times, so their hashes, which the reports show,
// are the same in every run.
func diffRepo(t *testing.T, prefix string) string {
	t.Helper()
	g := NewWithT(t)
	dir := t.TempDir()
	repo, err := git.PlainInit(dir, false)
	g.Expect(err).NotTo(HaveOccurred())
	worktree, err := repo.Worktree()
	g.Expect(err).NotTo(HaveOccurred())

	commits := 0
	commit := func(branch string, write func(dest string)) {
		write(filepath.Join(dir, prefix))
		g.Expect(worktree.AddWithOptions(&git.AddOptions{All: true})).To(Succeed())
		commits++
		when := time.Date(2026, 11, 20, 12, commits, 0, 0, time.UTC)
		hash, err := worktree.Commit(branch, &git.CommitOptions{Author: &object.Signature{Name: "test", Email: "test@example.com", When: when}})
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(repo.Storer.SetReference(plumbing.NewHashReference(plumbing.NewBranchReferenceName(branch), hash))).To(Succeed())
	}
	commit("main", func(dest string) { copyTree(t, diffFixtureMain, dest) })
	commit("pr", func(dest string) { copyTree(t, diffFixturePR, dest) })
	commit("broken", func(dest string) {
		for file, change := range brokenChanges {
			path := filepath.Join(dest, filepath.FromSlash(file))
			content, err := os.ReadFile(path)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(strings.Count(string(content), change[0])).To(Equal(1), "%s has %q once", file, change[0])
			g.Expect(os.WriteFile(path, []byte(strings.Replace(string(content), change[0], change[1], 1)), 0o644)).To(Succeed())
		}
	})
	return filepath.Join(dir, prefix)
}

// copyTree copies the files below src into dest, replacing what is there.
func copyTree(t *testing.T, src, dest string) {
	t.Helper()
	err := filepath.WalkDir(src, func(path string, entry fs.DirEntry, err error) error {
		if err != nil || entry.IsDir() {
			return err
		}
		rel, err := filepath.Rel(src, path)
		if err != nil {
			return err
		}
		content, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		target := filepath.Join(dest, rel)
		if err := os.MkdirAll(filepath.Dir(target), 0o755); err != nil {
			return err
		}
		return os.WriteFile(target, content, 0o644)
	})
	if err != nil {
		t.Fatalf("copying %s: %v", src, err)
	}
}

// decodeDiffJSON reads diff --output json back.
func decodeDiffJSON(t *testing.T, out string) prdiff.Report {
	t.Helper()
	var report prdiff.Report
	if err := json.Unmarshal([]byte(out), &report); err != nil {
		t.Fatalf("the output is not a diff report: %v\n%s", err, out)
	}
	return report
}

// withoutFirstLine drops a table's header line, which names the revisions.
func withoutFirstLine(s string) string {
	_, rest, _ := strings.Cut(s, "\n")
	return rest
}

func TestDiffGolden(t *testing.T) {
	repo := diffRepo(t, "")
	for _, tt := range []struct {
		output, golden string
	}{
		{"table", "diff.txt"},
		{"markdown", "diff.md"},
		{"json", "diff.json"},
	} {
		t.Run(tt.output, func(t *testing.T) {
			g := NewWithT(t)
			status, stdout, stderr := run(t, "diff", "", "--repo", repo, "--base", "main", "--head", "pr",
				"--at", diffTime, "--rollout", "dev,prod", "--output", tt.output)
			g.Expect(stderr).To(BeEmpty())
			g.Expect(status).To(Equal(exitOK))
			assertGolden(t, filepath.Join("testdata", "diff", tt.golden), stdout)
		})
	}
}

// TestDiffShowsEveryChangeOfThePullRequest checks the golden report for
// what the fixture is meant to show.
func TestDiffShowsEveryChangeOfThePullRequest(t *testing.T) {
	g := NewWithT(t)
	status, stdout, stderr := run(t, "diff", "", "--repo", diffRepo(t, ""), "--base", "main", "--head", "pr",
		"--at", diffTime, "--rollout", "dev,prod", "-o", "json")
	g.Expect(status).To(Equal(exitOK), stderr)
	report := decodeDiffJSON(t, stdout)

	g.Expect(report.Base).To(MatchRegexp(`^main \([0-9a-f]{7}\)$`), "the base is named with its commit")
	g.Expect(report.Head).To(MatchRegexp(`^pr \([0-9a-f]{7}\)$`))
	g.Expect(report.Landscapes).To(HaveLen(2))
	g.Expect(report.Landscapes[0].Landscape).To(Equal("dev"), "overlays/ is found and named by directory, sorted")
	g.Expect(report.Landscapes[1].Landscape).To(Equal("prod"))
	g.Expect(report.Landscapes[0].Until).To(Equal(report.Landscapes[0].Now.Add(prdiff.DefaultHorizon)), "the horizon defaults to 180 days")

	kinds := map[prdiff.ChangeKind]bool{}
	for _, p := range report.Landscapes[1].Profiles {
		g.Expect(p.Status).To(Equal(prdiff.ProfileChanged))
		for _, c := range p.Changes {
			kinds[c.Kind] = true
		}
	}
	g.Expect(kinds).To(HaveKey(prdiff.ChangeStageMoved))
	g.Expect(kinds).To(HaveKey(prdiff.ChangeVersionAdded))
	g.Expect(kinds).To(HaveKey(prdiff.ChangeVersionRemoved))
	g.Expect(kinds).To(HaveKey(prdiff.ChangeImageAdded))
	g.Expect(kinds).To(HaveKey(prdiff.ChangeUpdateStrategy))
	g.Expect(kinds).To(HaveKey(prdiff.ChangeClassification))

	g.Expect(report.RolloutWarnings).To(HaveExactElements(And(
		HaveField("Landscape", "prod"), HaveField("EarlierLandscape", "dev"), HaveField("Ref()", "CloudProfile/aws"),
		HaveField("Version", "1.34.2"), HaveField("Stage", v1alpha1.ClassificationSupported),
	)), "prod supports 1.34.2 before dev; the namespaced profile is in prod only")
}

func TestDiffOptions(t *testing.T) {
	repo := diffRepo(t, "")
	tests := []struct {
		name  string
		args  []string
		check func(g Gomega, report prdiff.Report)
	}{
		{
			name: "without --rollout the rollout order is not checked",
			args: []string{"--base", "main", "--head", "pr"},
			check: func(g Gomega, report prdiff.Report) {
				g.Expect(report.RolloutWarnings).To(BeEmpty())
			},
		},
		{
			name: "--rollout is in the order given: prod before dev has no warning",
			args: []string{"--base", "main", "--head", "pr", "--rollout", "prod,dev"},
			check: func(g Gomega, report prdiff.Report) {
				g.Expect(report.RolloutWarnings).To(BeEmpty())
			},
		},
		{
			name: "PATHs choose the landscapes and their order",
			args: []string{"--base", "main", "--head", "pr", "overlays/prod/", "./overlays/dev"},
			check: func(g Gomega, report prdiff.Report) {
				g.Expect(report.Landscapes).To(HaveLen(2))
				g.Expect(report.Landscapes[0].Landscape).To(Equal("prod"))
				g.Expect(report.Landscapes[1].Landscape).To(Equal("dev"))
			},
		},
		{
			name: "--horizon takes days",
			args: []string{"--base", "main", "--head", "pr", "--horizon", "30d12h"},
			check: func(g Gomega, report prdiff.Report) {
				g.Expect(report.Landscapes[0].Until.Sub(report.Landscapes[0].Now)).To(Equal(30*24*time.Hour + 12*time.Hour))
			},
		},
		{
			name: "the same revision on both sides has no changes",
			args: []string{"--base", "pr", "--head", "pr", "--rollout", "dev,prod"},
			check: func(g Gomega, report prdiff.Report) {
				g.Expect(report.Summary().ProfilesChanged).To(BeZero())
				g.Expect(report.Summary().ProfilesUnchanged).To(Equal(3))
				g.Expect(report.RolloutWarnings).NotTo(BeEmpty(), "the rollout check is of the head alone")
			},
		},
		{
			name: "revisions are anything go-git resolves",
			args: []string{"--base", "broken~2", "--head", "broken^"},
			check: func(g Gomega, report prdiff.Report) {
				g.Expect(report.Base).To(HavePrefix("broken~2 ("))
				g.Expect(report.Summary().ProfilesChanged).To(Equal(3))
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			args := append([]string{"--repo", repo, "--at", diffTime, "--output", "json"}, tt.args...)
			status, stdout, stderr := run(t, "diff", "", args...)
			g.Expect(stderr).To(BeEmpty())
			g.Expect(status).To(Equal(exitOK))
			tt.check(g, decodeDiffJSON(t, stdout))
		})
	}
}

// TestDiffOfTwoDirectoriesIsTheDiffOfTwoRevisions: --base-dir and
// --head-dir read checked-out trees the same way.
func TestDiffOfTwoDirectoriesIsTheDiffOfTwoRevisions(t *testing.T) {
	g := NewWithT(t)
	status, stdout, stderr := run(t, "diff", "", "--base-dir", diffFixtureMain, "--head-dir", diffFixturePR,
		"--at", diffTime, "--rollout", "dev,prod")
	g.Expect(stderr).To(BeEmpty())
	g.Expect(status).To(Equal(exitOK))
	g.Expect(stdout).To(HavePrefix("Base " + diffFixtureMain + ", head " + diffFixturePR + "; at 2026-11-22T00:00:00Z"))
	golden, err := os.ReadFile(filepath.Join("testdata", "diff", "diff.txt"))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(withoutFirstLine(stdout)).To(Equal(withoutFirstLine(string(golden))))
}

// TestDiffInASubdirectoryOfTheRepository: PATHs and overlays/ are relative
// to --repo, so a repository can keep its profiles below its top.
func TestDiffInASubdirectoryOfTheRepository(t *testing.T) {
	g := NewWithT(t)
	repo := diffRepo(t, filepath.Join("landscapes", "aws"))
	status, stdout, stderr := run(t, "diff", "", "--repo", repo, "--base", "main", "--head", "pr", "--at", diffTime, "--rollout", "dev,prod")
	g.Expect(stderr).To(BeEmpty())
	g.Expect(status).To(Equal(exitOK))
	golden, err := os.ReadFile(filepath.Join("testdata", "diff", "diff.txt"))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(withoutFirstLine(stdout)).To(Equal(withoutFirstLine(string(golden))))

	status, _, stderr = run(t, "diff", "", "--repo", repo, "--base", "pr", "--head", "broken", "--at", diffTime)
	g.Expect(status).To(Equal(exitInvalidInput))
	g.Expect(stderr).To(ContainSubstring("landscapes/aws/base/cloudprofiles.yaml: CloudProfile/aws: "),
		"problems name files from the top of the repository, as the operator's do")
}

func TestDiffOfAnInvalidHeadPrintsEveryProblemAndExitsOne(t *testing.T) {
	g := NewWithT(t)
	status, stdout, stderr := run(t, "diff", "", "--repo", diffRepo(t, ""), "--base", "pr", "--head", "broken", "--at", diffTime)
	g.Expect(status).To(Equal(exitInvalidInput))
	g.Expect(stdout).To(BeEmpty(), "no report for an invalid head")
	assertGolden(t, filepath.Join("testdata", "diff", "head-invalid.stderr"), stderr)

	g.Expect(stderr).To(ContainSubstring("overlays/dev/kustomization.yaml"), "dev does not build")
	g.Expect(strings.Count(stderr, `base/cloudprofiles.yaml: CloudProfile/aws: spec.kubernetes.versions[1] (1.32.x).version: Invalid value: "1.32.x"`)).
		To(Equal(1), "a problem of a file two landscapes share is printed once")
	g.Expect(stderr).To(ContainSubstring("overlays/prod/namespacedcloudprofiles.yaml: NamespacedCloudProfile/team-payments/aws-payments: spec.parent.name"))
}

func TestDiffOfAnInvalidBaseComparesItsLandscapesWithNoProfiles(t *testing.T) {
	g := NewWithT(t)
	status, stdout, stderr := run(t, "diff", "", "--repo", diffRepo(t, ""), "--base", "broken", "--head", "pr", "--at", diffTime)
	g.Expect(status).To(Equal(exitOK))
	assertGolden(t, filepath.Join("testdata", "diff", "base-invalid.stderr"), stderr)
	assertGolden(t, filepath.Join("testdata", "diff", "base-invalid.txt"), stdout)

	lines := strings.Split(strings.TrimSuffix(stderr, "\n"), "\n")
	for _, line := range lines {
		g.Expect(line).To(MatchRegexp(`^warning: base broken \([0-9a-f]{7}\): `), "the base's problems are warnings")
	}
	g.Expect(stderr).To(ContainSubstring("overlays/dev does not build or is invalid there: dev is compared with no profiles"))
	g.Expect(stdout).To(MatchRegexp(`\ndev\s+CloudProfile/aws\s+-\s+-\s+profile added\s`))
}

func TestDiffOfALandscapeTheBaseLacks(t *testing.T) {
	g := NewWithT(t)
	empty := t.TempDir()
	status, stdout, stderr := run(t, "diff", "", "--base-dir", empty, "--head-dir", diffFixturePR, "--at", diffTime, "overlays/prod")
	g.Expect(status).To(Equal(exitOK))
	g.Expect(stderr).To(Equal("warning: base " + empty + ": overlays/prod: no such overlay in " + empty + "\n" +
		"warning: base " + empty + ": overlays/prod is not there: prod is compared with no profiles, so each of its profiles shows as added\n"))
	g.Expect(stdout).To(ContainSubstring("Summary: 2 profiles added."))
}

func TestDiffFailuresToReadASideExitOne(t *testing.T) {
	repo := diffRepo(t, "")
	notARepo := t.TempDir()
	nowhere := filepath.Join(repo, "nowhere")
	tests := []struct {
		name   string
		args   []string
		stderr string
	}{
		{"a revision that is not there", []string{"--repo", repo, "--base", "origin/main", "--head", "pr"},
			`revision "origin/main" not found in ` + repo},
		{"a revision larger than --max-checkout-size", []string{"--repo", repo, "--base", "main", "--head", "pr", "--max-checkout-size", "1Ki"},
			"raise --max-checkout-size to compare it"},
		{"a directory that is not a repository", []string{"--repo", notARepo, "--base", "main", "--head", "pr"},
			"open Git repository " + notARepo},
		{"a PATH the head lacks", []string{"--repo", repo, "--base", "main", "--head", "pr", "overlays/staging"},
			"overlays/staging: no such overlay in pr ("},
		{"a --head-dir that is not there", []string{"--base-dir", diffFixtureMain, "--head-dir", nowhere},
			"reading --head-dir " + nowhere + ": "},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			status, stdout, stderr := run(t, "diff", "", append([]string{"--at", diffTime}, tt.args...)...)
			g.Expect(status).To(Equal(exitInvalidInput))
			g.Expect(stdout).To(BeEmpty())
			g.Expect(stderr).To(ContainSubstring(tt.stderr))
		})
	}
}

func TestDiffUsageErrorsExitTwo(t *testing.T) {
	repo := diffRepo(t, "")
	tests := []struct {
		name   string
		args   []string
		stderr string
	}{
		{"nothing to compare", nil, "diff: nothing to compare: give --base REV --head REV, --base-dir DIR --head-dir DIR, or --cluster"},
		{"--base without --head", []string{"--base", "main"}, "diff: --base and --head go together: give both revisions"},
		{"--head-dir without --base-dir", []string{"--head-dir", "."}, "diff: --base-dir and --head-dir go together: give both trees"},
		{"revisions mixed with trees", []string{"--base", "main", "--head-dir", "."},
			"diff: give either --base and --head (two revisions of a repository) or --base-dir and --head-dir (two trees), not both"},
		{"--repo without revisions", []string{"--repo", ".", "--base-dir", ".", "--head-dir", "."}, "diff: --repo goes with --base and --head"},
		{"--cluster with revisions", []string{"--cluster", "--base", "main"}, "diff: --cluster compares the cluster with the tree at --head-dir; it takes no --base, --head, --base-dir or --repo"},
		{"--cluster with --rollout", []string{"--cluster", "--rollout", "dev,prod"}, "diff: --rollout compares several landscapes; --cluster compares one"},
		{"--context without --cluster", []string{"--base", "main", "--head", "pr", "--context", "prod"}, "diff: --kubeconfig and --context go with --cluster"},
		{"an unknown output format", []string{"--base", "main", "--head", "pr", "--output", "yaml"},
			`diff: invalid argument "yaml" for "-o, --output" flag: not a report format: "yaml" (table, markdown or json)`},
		{"a horizon that is not a duration", []string{"--base", "main", "--head", "pr", "--horizon", "half a year"},
			`diff: invalid argument "half a year" for "--horizon" flag: not a duration like 180d, 90d12h or 2160h: "half a year"`},
		{"a horizon of zero", []string{"--base", "main", "--head", "pr", "--horizon", "0d"}, `the horizon must be positive: "0d"`},
		{"a time that is not RFC 3339", []string{"--base", "main", "--head", "pr", "--at", "tomorrow"}, `invalid argument "tomorrow" for "--at" flag`},
		{"a PATH outside the repository", []string{"--base", "main", "--head", "pr", "../overlays/dev"},
			`diff: PATH "../overlays/dev" must be relative to the repository and stay inside it`},
		{"an absolute PATH", []string{"--base", "main", "--head", "pr", "/overlays/dev"}, `diff: PATH "/overlays/dev" must be relative`},
		{"a PATH given twice", []string{"--base", "main", "--head", "pr", "overlays/dev", "overlays/dev/"}, `diff: PATH "overlays/dev/" is given twice`},
		{"--rollout with one landscape", []string{"--base", "main", "--head", "pr", "--rollout", "prod"}, "diff: --rollout needs at least two landscapes"},
		{"--rollout naming a landscape twice", []string{"--base", "main", "--head", "pr", "--rollout", "dev,prod,dev"}, `diff: --rollout names "dev" twice`},
		{"--rollout naming a landscape that is not diffed", []string{"--base", "main", "--head", "pr", "--rollout", "dev,staging,prod"},
			`diff: --rollout names "staging", which is not a landscape of this diff (dev, prod)`},
		{"no overlays/ and no PATH", []string{"--base-dir", ".", "--head-dir", "."}, "diff: no PATH given and . has no overlays/ directory: name the overlays to compare"},
		{"--cluster with several overlays", []string{"--cluster", "--head-dir", diffFixturePR},
			"diff: --cluster compares one overlay with the cluster; name one of overlays/dev, overlays/prod"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			args := tt.args
			if len(args) > 1 && args[0] == "--base" {
				args = append([]string{"--repo", repo}, args...)
			}
			status, stdout, stderr := run(t, "diff", "", args...)
			g.Expect(status).To(Equal(exitUsage), stderr)
			g.Expect(stdout).To(BeEmpty())
			g.Expect(stderr).To(ContainSubstring(tt.stderr))
			g.Expect(stderr).To(HaveSuffix("Run 'profilesync diff --help' for usage.\n"))
		})
	}
}

func TestDiffHorizonFlag(t *testing.T) {
	tests := []struct {
		value string
		want  time.Duration
		shown string
	}{
		{"180d", 180 * 24 * time.Hour, "180d"},
		{"90d12h", 90*24*time.Hour + 12*time.Hour, "90d12h0m0s"},
		{"2160h", 90 * 24 * time.Hour, "90d"},
		{"36h", 36 * time.Hour, "1d12h0m0s"},
		{"90m", 90 * time.Minute, "1h30m0s"},
	}
	for _, tt := range tests {
		t.Run(tt.value, func(t *testing.T) {
			g := NewWithT(t)
			var d time.Duration
			flag := horizonFlag{&d}
			g.Expect(flag.Set(tt.value)).To(Succeed())
			g.Expect(d).To(Equal(tt.want))
			g.Expect(flag.String()).To(Equal(tt.shown))
			var again time.Duration
			g.Expect(horizonFlag{&again}.Set(flag.String())).To(Succeed(), "what is shown parses back")
			g.Expect(again).To(Equal(d))
		})
	}
	for _, value := range []string{"", "d", "1.5d", "-1d", "1d-1h", "-1h", "0s", "99999999999d", "1w"} {
		t.Run("refuses "+value, func(t *testing.T) {
			var d time.Duration
			NewWithT(t).Expect(horizonFlag{&d}.Set(value)).NotTo(Succeed())
		})
	}
}

// TestDiffPrintsTheWarningsOfTheHead: the head's build and validation
// warnings are printed as 'build' prints them, each once; the report is
// still made.
func TestDiffPrintsTheWarningsOfTheHead(t *testing.T) {
	g := NewWithT(t)
	head := t.TempDir()
	copyTree(t, diffFixturePR, head)
	indexPatch := "- target:\n    kind: CloudProfile\n    name: aws\n  patch: |-\n" +
		"    - op: replace\n      path: /spec/kubernetes/versions/4/lifecycle/1/startTime\n      value: \"2026-12-01T00:00:00Z\"\n"
	overlay := filepath.Join(head, "overlays", "dev", "kustomization.yaml")
	content, err := os.ReadFile(overlay)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(os.WriteFile(overlay, []byte(strings.SplitAfter(string(content), "patches:\n")[0]+indexPatch), 0o644)).To(Succeed())
	overlapping := "    - version: 1.32.13\n      lifecycle:\n      - classification: supported\n      - classification: deprecated\n        startTime: \"2030-01-01T00:00:00Z\"\n"
	profiles := filepath.Join(head, "base", "cloudprofiles.yaml")
	content, err = os.ReadFile(profiles)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(os.WriteFile(profiles, []byte(strings.Replace(string(content), "    # 1.33.7 takes over", overlapping+"    # 1.33.7 takes over", 1)), 0o644)).To(Succeed())

	status, stdout, stderr := run(t, "diff", "", "--base-dir", diffFixtureMain, "--head-dir", head, "--at", diffTime)
	g.Expect(status).To(Equal(exitOK))
	g.Expect(stdout).To(ContainSubstring("version added"))
	lines := strings.Split(strings.TrimSuffix(stderr, "\n"), "\n")
	g.Expect(lines).To(ConsistOf(
		HavePrefix("warning: overlays/dev/kustomization.yaml: CloudProfile/aws: "),
		HavePrefix("warning: base/cloudprofiles.yaml: CloudProfile/aws: spec.kubernetes.versions[1] (1.32.12): supported window"),
		HavePrefix("warning: base/cloudprofiles.yaml: CloudProfile/aws: spec.kubernetes.versions[2] (1.32.13): supported window"),
	), "the warnings of the base both landscapes share are printed once")
}

func TestDiffDoesNotListOverlaysThroughALinkOutOfTheTree(t *testing.T) {
	g := NewWithT(t)
	parent := t.TempDir()
	outside := filepath.Join(parent, "outside")
	g.Expect(os.MkdirAll(filepath.Join(outside, "CANARY-secret-dir"), 0o755)).To(Succeed())
	g.Expect(os.WriteFile(filepath.Join(outside, "CANARY-secret-dir", "kustomization.yaml"), []byte("resources: []\n"), 0o644)).To(Succeed())
	head := filepath.Join(parent, "head")
	copyTree(t, diffFixturePR, head)
	g.Expect(os.RemoveAll(filepath.Join(head, "overlays"))).To(Succeed())
	g.Expect(os.Symlink(filepath.Join("..", "outside"), filepath.Join(head, "overlays"))).To(Succeed())

	status, stdout, stderr := run(t, "diff", "", "--at", diffTime, "--base-dir", diffFixtureMain, "--head-dir", head)

	g.Expect(status).To(Equal(exitInvalidInput), stderr)
	g.Expect(stdout).To(BeEmpty())
	g.Expect(stderr).To(ContainSubstring("overlays: a symbolic link that leads outside the repository root: refused"))
	g.Expect(stderr).NotTo(ContainSubstring("CANARY"))
}

// TestDiffNamesThePatchThatSetAnInvalidValue: a head whose dev overlay
// makes the highest Kubernetes version expire, through a patch file, is
// refused, and the problem names the patch file and its entry, and the base
// file as the object's origin, as build names it.
func TestDiffNamesThePatchThatSetAnInvalidValue(t *testing.T) {
	g := NewWithT(t)
	head := t.TempDir()
	copyTree(t, diffFixturePR, head)
	overlay := filepath.Join(head, "overlays", "dev", "kustomization.yaml")
	content, err := os.ReadFile(overlay)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(os.WriteFile(overlay, []byte(strings.Replace(string(content), "patches:\n", "patches:\n- path: expire.yaml\n", 1)), 0o644)).To(Succeed())
	g.Expect(os.WriteFile(filepath.Join(head, "overlays", "dev", "expire.yaml"), []byte("apiVersion: core.profilesync.io/v1alpha1\nkind: CloudProfile\nmetadata:\n  name: aws\n"+
		"spec:\n  kubernetes:\n    versions:\n    - version: 1.34.2\n      expirationDate: \"2027-06-01T00:00:00Z\"\n"), 0o644)).To(Succeed())

	status, stdout, stderr := run(t, "diff", "", "--base-dir", diffFixtureMain, "--head-dir", head, "--at", diffTime)
	g.Expect(status).To(Equal(exitInvalidInput), stderr)
	g.Expect(stdout).To(BeEmpty())
	g.Expect(stderr).To(ContainSubstring("overlays/dev/expire.yaml: CloudProfile/aws: spec.kubernetes.versions[4] (1.34.2).expirationDate: Forbidden: " +
		"1.34.2 is the highest Kubernetes version and may not expire: clusters must always have a version to move to " +
		"(set by the patch's entry spec.kubernetes.versions (1.34.2), on the object of base/cloudprofiles.yaml)"))
}
