package cli

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
)

// manyLandscapes is a rollout file of n landscapes whose overlays do not
// exist: a run refused by its build count fails before it looks for them.
func manyLandscapes(n int) string {
	var b strings.Builder
	b.WriteString(rolloutHeader)
	for i := range n {
		fmt.Fprintf(&b, "- {name: l%d, path: overlays/l%d}\n", i, i)
	}
	return b.String()
}

func TestDiffRefusesARolloutFileOfMoreBuildsThanMaxBuildsBeforeBuilding(t *testing.T) {
	g := NewWithT(t)
	head := t.TempDir()
	g.Expect(os.WriteFile(filepath.Join(head, "profilesync-rollout.yaml"), []byte(manyLandscapes(26)), 0o644)).To(Succeed())

	status, stdout, stderr := run(t, "diff", "", "--base-dir", head, "--head-dir", head)
	g.Expect(status).To(Equal(exitInvalidInput))
	g.Expect(stdout).To(BeEmpty())
	g.Expect(stderr).To(Equal("profilesync-rollout.yaml: landscapes: 26 landscapes, each built 2 times (base and head), make 52 builds, " +
		"more than --max-builds allows (50): select the landscapes to build, or raise --max-builds\n"))

	status, _, stderr = run(t, "diff", "", "--base-dir", head, "--head-dir", head, "--max-builds", "52")
	g.Expect(stderr).NotTo(ContainSubstring("--max-builds"), "raising the bound lets the run go on (to the missing overlays)")
	g.Expect(status).NotTo(Equal(exitOK))

	status, _, stderr = run(t, "diff", "", "--base-dir", head, "--head-dir", head, "overlays/l0", "overlays/l1", "--max-builds", "3")
	g.Expect(status).To(Equal(exitInvalidInput))
	g.Expect(stderr).To(Equal("2 landscapes, each built 2 times (base and head), make 4 builds, more than --max-builds allows (3): select fewer, or raise --max-builds\n"),
		"overlays named on the command line count too")
}

func TestTimelineRefusesMoreLandscapesThanMaxBuildsBeforeBuilding(t *testing.T) {
	g := NewWithT(t)
	root := t.TempDir()
	g.Expect(os.WriteFile(filepath.Join(root, "profilesync-rollout.yaml"), []byte(manyLandscapes(3)), 0o644)).To(Succeed())

	status, _, stderr := run(t, "timeline", "", "--root", root, "--all-landscapes", "--max-builds", "2")
	g.Expect(status).To(Equal(exitInvalidInput))
	g.Expect(stderr).To(Equal("profilesync-rollout.yaml: landscapes: 3 landscapes make 3 builds, more than --max-builds allows (2): select the landscapes to build, or raise --max-builds\n"))
}

func TestRolloutStatusRefusesMoreLandscapesThanMaxBuildsBeforeBuilding(t *testing.T) {
	g := NewWithT(t)
	repo := newStatusRepo(t)

	status, stdout, stderr := statusOutput(t, repo.dir, "--at", statusAt, "--max-builds", "1")
	g.Expect(status).To(Equal(exitInvalidInput))
	g.Expect(stdout).To(BeEmpty())
	g.Expect(stderr).To(HaveSuffix("profilesync-rollout.yaml: landscapes: 2 landscapes make 2 builds, more than --max-builds allows (1): select the landscapes to build, or raise --max-builds\n"))
}

func TestMaxBuildsMustBePositive(t *testing.T) {
	g := NewWithT(t)
	root := t.TempDir()
	g.Expect(os.WriteFile(filepath.Join(root, "profilesync-rollout.yaml"), []byte(manyLandscapes(1)), 0o644)).To(Succeed())

	status, _, stderr := run(t, "diff", "", "--base-dir", root, "--head-dir", root, "--max-builds", "0")
	g.Expect(status).To(Equal(exitUsage))
	g.Expect(stderr).To(ContainSubstring("--max-builds must be at least 1, not 0"))
}
