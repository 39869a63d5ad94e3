package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"
	. "github.com/onsi/gomega"

	"github.com/profilesync/profilesync/internal/policy"
)

// The policy fixture is a pull request on a repository with two landscapes
// and versioning policies: testdata/policy/main before it, testdata/policy/pr
// after. The root's policy applies to prod, overlays/dev has its own. The
// pull request brings 1.32.5's deprecation and expiry forward to 25 and 30
// November, with too little notice, and so makes 1.31.8's expiry on 31
// December force clusters across two minors at once; prod's namespaced
// profile keeps 1.32.5 until January.
var (
	policyFixtureMain = filepath.Join("testdata", "policy", "main")
	policyFixturePR   = filepath.Join("testdata", "policy", "pr")
	policyTime        = "2026-11-22T00:00:00Z"
)

// policyRepo makes a Git repository whose branches main and pr hold the
// policy fixture's trees, committed at fixed times: pr at 2026-11-20T12:02Z.
func policyRepo(t *testing.T) string {
	t.Helper()
	return policyRepoWithPRAt(t, time.Date(2026, 11, 20, 12, 2, 0, 0, time.UTC))
}

// policyRepoWithPRAt is policyRepo with pr committed at prWhen.
func policyRepoWithPRAt(t *testing.T, prWhen time.Time) string {
	t.Helper()
	g := NewWithT(t)
	dir := t.TempDir()
	repo, err := git.PlainInit(dir, false)
	g.Expect(err).NotTo(HaveOccurred())
	worktree, err := repo.Worktree()
	g.Expect(err).NotTo(HaveOccurred())
	for i, side := range []struct{ branch, tree string }{{"main", policyFixtureMain}, {"pr", policyFixturePR}} {
		copyTree(t, side.tree, dir)
		g.Expect(worktree.AddWithOptions(&git.AddOptions{All: true})).To(Succeed())
		when := time.Date(2026, 11, 20, 12, i+1, 0, 0, time.UTC)
		if side.branch == "pr" {
			when = prWhen
		}
		hash, err := worktree.Commit(side.branch, &git.CommitOptions{Author: &object.Signature{Name: "test", Email: "test@example.com", When: when}})
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(repo.Storer.SetReference(plumbing.NewHashReference(plumbing.NewBranchReferenceName(side.branch), hash))).To(Succeed())
	}
	return dir
}

func TestBuildChecksTheOverlaysPolicy(t *testing.T) {
	for _, tt := range []struct {
		tree, overlay string
		status        int
	}{
		// main satisfies prod's policy but warns of the ends of minors.
		{policyFixtureMain, "prod", exitOK},
		// The pull request's forced jump across two minors is an error in
		// every landscape.
		{policyFixturePR, "dev", exitInvalidInput},
		{policyFixturePR, "prod", exitInvalidInput},
	} {
		name := filepath.Base(tt.tree) + "-" + tt.overlay
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			status, stdout, stderr := run(t, "build", "", filepath.Join(tt.tree, "overlays", tt.overlay), "--root", tt.tree, "--at", policyTime)
			g.Expect(status).To(Equal(tt.status), stderr)
			if tt.status != exitOK {
				g.Expect(stdout).To(BeEmpty(), "a refused build prints no profiles")
			} else {
				g.Expect(stdout).To(ContainSubstring("kind: CloudProfile"))
			}
			assertGolden(t, filepath.Join("testdata", "policy", "build-"+name+".stderr"), stderr)
		})
	}
}

func TestBuildRefusesAnInvalidPolicy(t *testing.T) {
	g := NewWithT(t)
	root := t.TempDir()
	copyTree(t, policyFixtureMain, root)
	g.Expect(os.WriteFile(filepath.Join(root, "overlays", "dev", policy.FileName),
		[]byte("apiVersion: policy.profilesync.io/v1alpha1\nkind: VersioningPolicy\nrules:\n  notice: {severity: error, dayz: 7}\n"), 0o644)).To(Succeed())
	status, stdout, stderr := run(t, "build", "", filepath.Join(root, "overlays", "dev"), "--root", root, "--at", policyTime)
	g.Expect(status).To(Equal(exitInvalidInput))
	g.Expect(stdout).To(BeEmpty())
	g.Expect(stderr).To(Equal("overlays/dev/profilesync-policy.yaml: rules.notice.dayz: unknown field: the policy has no such field (check spelling and indentation; docs/policy.md lists the fields)\n" +
		"overlays/dev/profilesync-policy.yaml: rules.notice.days: Invalid value: 0: must be at least 1\n"))
}

func TestBuildWithoutPolicyChecksNone(t *testing.T) {
	g := NewWithT(t)
	root := t.TempDir()
	copyTree(t, policyFixturePR, root)
	g.Expect(os.Remove(filepath.Join(root, policy.FileName))).To(Succeed())
	status, _, stderr := run(t, "build", "", filepath.Join(root, "overlays", "prod"), "--root", root, "--at", policyTime)
	g.Expect(status).To(Equal(exitOK), stderr)
	g.Expect(stderr).To(BeEmpty())
}

func TestDiffReportsThePolicyOfEveryLandscape(t *testing.T) {
	repo := policyRepo(t)
	for _, tt := range []struct{ output, golden string }{
		{"table", "diff.txt"},
		{"markdown", "diff.md"},
	} {
		t.Run(tt.output, func(t *testing.T) {
			g := NewWithT(t)
			status, stdout, stderr := run(t, "diff", "", "--repo", repo, "--base", "main", "--head", "pr", "--at", policyTime, "--output", tt.output)
			g.Expect(status).To(Equal(exitInvalidInput), "the head breaks rules of severity error")
			assertGolden(t, filepath.Join("testdata", "policy", tt.golden), stdout)
			assertGolden(t, filepath.Join("testdata", "policy", "diff.stderr"), stderr)
			// The notice is measured from the head's commit, not from --at.
			g.Expect(stdout).To(ContainSubstring("after the commit (2026-11-20T12:02:00Z)"))
		})
	}
}

// TestDiffIgnoresACommitTimeNoReportCanHold diffs a head whose committer
// claims year 10000 (Git stores any unix seconds): the time is ignored with
// a warning naming the commit and the field, the notice is measured from
// --at, and the JSON report is written whole.
func TestDiffIgnoresACommitTimeNoReportCanHold(t *testing.T) {
	g := NewWithT(t)
	repo := policyRepoWithPRAt(t, time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC))
	status, stdout, stderr := run(t, "diff", "", "--repo", repo, "--base", "main", "--head", "pr", "--at", policyTime, "--output", "json")
	g.Expect(status).To(Equal(exitInvalidInput), stderr)
	g.Expect(stderr).To(MatchRegexp(`warning: head pr \([0-9a-f]{7}\): a time out of range: commit [0-9a-f]{40}: committer time: unix 253402300800 is outside years 0000 to 9999, the times a status can hold; the policy's notice is measured from now \(--at\)`))
	var report struct {
		Policy []struct{ Errors, Warnings []string }
	}
	g.Expect(json.Unmarshal([]byte(stdout), &report)).To(Succeed())
	var findings []string
	for _, section := range report.Policy {
		findings = append(findings, section.Errors...)
		findings = append(findings, section.Warnings...)
	}
	g.Expect(findings).To(ContainElement(ContainSubstring("after the commit (2026-11-22T00:00:00Z)")))
	g.Expect(stdout).NotTo(ContainSubstring("10000-"))
}

func TestDiffPolicyInJSON(t *testing.T) {
	g := NewWithT(t)
	status, stdout, _ := run(t, "diff", "", "--base-dir", policyFixtureMain, "--head-dir", policyFixturePR, "--at", policyTime, "--output", "json", "overlays/dev")
	g.Expect(status).To(Equal(exitInvalidInput))
	var report struct {
		Policy []struct {
			Landscape, File  string
			Errors, Warnings []string
		}
	}
	g.Expect(json.Unmarshal([]byte(stdout), &report)).To(Succeed())
	g.Expect(report.Policy).To(HaveLen(1))
	g.Expect(report.Policy[0].Landscape).To(Equal("dev"))
	g.Expect(report.Policy[0].File).To(Equal("overlays/dev/profilesync-policy.yaml"))
	g.Expect(report.Policy[0].Errors).To(ConsistOf(ContainSubstring("across 2 minors: 1.31.8 → 1.32.5 → 1.33.2")))
	// Without a commit, the notice is measured from --at.
	g.Expect(report.Policy[0].Warnings).To(ContainElement(ContainSubstring("3d after the commit (2026-11-22T00:00:00Z)")))
}

func TestDiffWithPolicyWarningsOnlyExitsZero(t *testing.T) {
	g := NewWithT(t)
	status, stdout, stderr := run(t, "diff", "", "--base-dir", policyFixtureMain, "--head-dir", policyFixtureMain, "--at", policyTime, "--output", "markdown", "overlays/prod")
	g.Expect(status).To(Equal(exitOK), stderr)
	g.Expect(stdout).To(ContainSubstring("### Versioning policy\n\nprod (`profilesync-policy.yaml`): 3 warnings.\n"))
}

func TestTimelineWithPolicyGolden(t *testing.T) {
	g := NewWithT(t)
	status, stdout, stderr := run(t, "timeline", "", "--at", policyTime, "-f", filepath.Join(policyFixtureMain, "base"),
		"--policy", filepath.Join(policyFixtureMain, policy.FileName))
	g.Expect(status).To(Equal(exitInvalidInput), "an error is scheduled for 2027-09-01")
	g.Expect(stderr).To(BeEmpty())
	assertGolden(t, filepath.Join("testdata", "policy", "timeline.txt"), stdout)

	status, _, _ = run(t, "timeline", "", "--at", policyTime, "--until", "2027-08-31T00:00:00Z", "-f", filepath.Join(policyFixtureMain, "base"),
		"--policy", filepath.Join(policyFixtureMain, policy.FileName))
	g.Expect(status).To(Equal(exitOK), "warnings alone exit 0")

	examples := filepath.Join("..", "..", "examples", "profiles-repo")
	status, stdout, _ = run(t, "timeline", "", "--at", policyTime, "--until", "2026-12-01T00:00:00Z", "-f", filepath.Join(examples, "base"),
		"--policy", filepath.Join(examples, policy.FileName))
	g.Expect(status).To(Equal(exitOK))
	g.Expect(stdout).To(Equal("The profiles satisfy the policy until 2026-12-01T00:00:00Z.\n"))

	status, _, stderr = run(t, "timeline", "", "-f", filepath.Join(policyFixtureMain, "base"), "--policy", filepath.Join(policyFixtureMain, "missing.yaml"))
	g.Expect(status).To(Equal(exitInvalidInput))
	g.Expect(stderr).To(ContainSubstring("reading the policy"))
}

// TestExampleRepositorySatisfiesItsPolicy builds every overlay of
// examples/profiles-repo, which make run-local serves, at the README's time:
// its policy holds there.
func TestExampleRepositorySatisfiesItsPolicy(t *testing.T) {
	examples := filepath.Join("..", "..", "examples", "profiles-repo")
	overlays, err := os.ReadDir(filepath.Join(examples, "overlays"))
	if err != nil {
		t.Fatal(err)
	}
	for _, overlay := range overlays {
		t.Run(overlay.Name(), func(t *testing.T) {
			g := NewWithT(t)
			p, file, err := policy.Find(examples, filepath.Join("overlays", overlay.Name()), 0)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(p).NotTo(BeNil(), "the example repository has a policy")
			g.Expect(file).To(Equal(policy.FileName))
			status, _, stderr := run(t, "build", "", filepath.Join(examples, "overlays", overlay.Name()), "--root", examples, "--at", "2026-11-22T00:00:00Z")
			g.Expect(status).To(Equal(exitOK), stderr)
			g.Expect(stderr).NotTo(ContainSubstring("policy "), "no findings at all")
		})
	}
}

// TestPullRequestThatSchedulesARefusalFails: the main fixture breaks prod's
// supported rule from 2027-09-01 on (1.33.3 is deprecated with nothing to
// take over), 283 days after policyTime. Within --policy-horizon, build and
// diff fail, naming the date, the rule, the object and the field; beyond it
// they pass, as they did before the horizon existed.
func TestPullRequestThatSchedulesARefusalFails(t *testing.T) {
	const want = "base/cloudprofiles.yaml: CloudProfile/aws: spec.kubernetes.versions[3]: from 2027-09-01T00:00:00Z (283d after 2026-11-22T00:00:00Z) " +
		"the operator refuses every revision with this: policy supported: minor 1.33 has no supported patch; each of the newest 2 minors needs exactly one\n"
	for _, tt := range []struct {
		name    string
		horizon []string
		status  int
	}{
		{"the default horizon of 180 days ends before the refusal", nil, exitOK},
		{"a horizon of 300 days reaches it", []string{"--policy-horizon", "300d"}, exitInvalidInput},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Run("build", func(t *testing.T) {
				g := NewWithT(t)
				args := append([]string{"build", "", filepath.Join(policyFixtureMain, "overlays", "prod"), "--root", policyFixtureMain, "--at", policyTime}, tt.horizon...)
				status, stdout, stderr := run(t, args[0], args[1], args[2:]...)
				g.Expect(status).To(Equal(tt.status), stderr)
				if tt.status == exitOK {
					g.Expect(stderr).NotTo(ContainSubstring("refuses"))
					return
				}
				g.Expect(stdout).To(BeEmpty())
				g.Expect(stderr).To(HaveSuffix(want))
			})
			t.Run("diff", func(t *testing.T) {
				g := NewWithT(t)
				args := append([]string{"diff", "", "--base-dir", policyFixtureMain, "--head-dir", policyFixtureMain, "--at", policyTime, "overlays/prod"}, tt.horizon...)
				status, stdout, stderr := run(t, args[0], args[1], args[2:]...)
				g.Expect(status).To(Equal(tt.status), stderr)
				if tt.status == exitOK {
					g.Expect(stderr).NotTo(ContainSubstring("refuses"))
					return
				}
				g.Expect(stderr).To(HaveSuffix(want))
				g.Expect(stdout).To(ContainSubstring("from 2027-09-01T00:00:00Z"), "the report names it too")
			})
		})
	}
}
