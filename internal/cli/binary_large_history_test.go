package cli

import (
	"io/fs"
	"os"
	"path/filepath"
	"testing"
	"time"

	. "github.com/onsi/gomega"

	"github.com/profilesync/profilesync/internal/rollout"
	"github.com/profilesync/profilesync/test/largehistory"
)

// Issue 31's scale for the command line: a branch of largeHistoryCommits
// commits and an upstream, dev, with largeHistoryRecords records naming
// commits all along it; the status must answer within
// largeHistoryDeadline (the code before the one walk of ancestry took
// 161 s and more).
const (
	largeHistoryCommits  = 30000
	largeHistoryRecords  = 1000
	largeHistoryDeadline = 60 * time.Second
)

// TestRolloutStatusOnALargeHistoryWithinItsMemory runs the profilesync
// binary's 'rollout status', under prlimit with the address-space limit of
// TestTheBinaryReadsOnlyTheRepositoryWithinItsMemory (binaryMemoryLimit),
// on a repository of largeHistoryCommits commits, one in ten a merge, each
// holding the diff fixture and statusRollout, where dev has
// largeHistoryRecords records from the first commit to the tip within
// prod's soak. It exits 0 with prod waiting for the tip, within
// largeHistoryDeadline. The repository is written once under TMPDIR by
// test/largehistory, which gitsource's BenchmarkDecideOnALargeHistory
// shares.
func TestRolloutStatusOnALargeHistoryWithinItsMemory(t *testing.T) {
	g := NewWithT(t)
	bin := buildBinary(t)
	files := map[string]string{rollout.FileName: rolloutHeader +
		"- {name: dev, path: overlays/dev}\n- {name: prod, path: overlays/prod, after: [dev], soak: 60d}\n"}
	g.Expect(filepath.WalkDir(diffFixtureMain, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		content, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		relative, err := filepath.Rel(diffFixtureMain, p)
		files[filepath.ToSlash(relative)] = string(content)
		return err
	})).To(Succeed())
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	history := largehistory.Build(t, largehistory.Spec{
		Commits: largeHistoryCommits, Records: largeHistoryRecords, Upstream: "dev", Start: start, Files: files,
	})
	at := start.Add(largeHistoryRecords*time.Hour + time.Hour).Format(time.RFC3339)

	began := time.Now()
	run := runBinary(t, bin, history.Dir, "rollout", "status", history.Dir, "--branch", "main", "--at", at, "--output", "json")
	took := time.Since(began)
	t.Logf("rollout status on %d commits and %d records: %s, peak RSS %d MiB", largeHistoryCommits, largeHistoryRecords, took, run.maxRSS>>20)
	g.Expect(run.status).To(Equal(exitOK), run.stderr)
	g.Expect(took).To(BeNumerically("<", largeHistoryDeadline))
	g.Expect(run.stdout).To(ContainSubstring(history.Mainline[len(history.Mainline)-1]), "prod waits for the tip")
}
