package gitsource

import (
	"testing"
	"time"

	"github.com/profilesync/profilesync/internal/rollout"
	"github.com/profilesync/profilesync/test/largehistory"
)

// Issue 31's scale: a branch of decideBenchCommits commits, and an upstream
// landscape with decideBenchRecords records in the soak window, naming
// commits all along the branch.
const (
	decideBenchCommits = 30000
	decideBenchRecords = 1000
)

var decideBenchStart = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// BenchmarkDecideOnALargeHistory measures one decision of prod, a
// landscape after dev, as the operator and `rollout status` make it
// (rollout.DecideLandscape) on a packed repository of decideBenchCommits
// commits, one in ten a merge of a side branch, where dev has
// decideBenchRecords records within prod's soak naming commits from the
// tip to the first: its records are read, the 500 candidates listed, and
// every question answered from one walk. It reports ms per decision; the
// target is under a second. The repository is built once and kept under
// TMPDIR.
func BenchmarkDecideOnALargeHistory(b *testing.B) {
	dir, mainline := decideBenchRepository(b)
	landscapes, err := OpenLandscapes(dir, ObjectLimitsFor(0))
	if err != nil {
		b.Fatal(err)
	}
	defer landscapes.Close()
	now := decideBenchStart.Add(decideBenchRecords*time.Hour + time.Hour)
	question := rollout.Question{
		Landscape: rollout.Landscape{Name: "prod", After: []string{"dev"}, Soak: 60 * 24 * time.Hour},
		Branch:    "main", Running: mainline[len(mainline)-1000], Now: now,
	}
	var answer rollout.Answer
	for b.Loop() {
		if answer, err = rollout.DecideLandscape(landscapes, question); err != nil {
			b.Fatal(err)
		}
	}
	if len(answer.Upstreams[0].Records) != decideBenchRecords || len(answer.Candidates) != rollout.MaxCandidates {
		b.Fatalf("decided on %d records and %d candidates", len(answer.Upstreams[0].Records), len(answer.Candidates))
	}
	if answer.Waiting == nil || answer.Waiting.Candidate != mainline[len(mainline)-1] {
		b.Fatalf("unexpected decision: %+v", answer.Decision)
	}
	perDecision := b.Elapsed() / time.Duration(b.N)
	b.ReportMetric(float64(perDecision.Microseconds())/1000, "ms/decision")
	b.Logf("one decision on %d commits and %d records: %s", decideBenchCommits, decideBenchRecords, perDecision)
}

// decideBenchRepository returns the directory of the benchmark's
// repository, written once under TMPDIR by test/largehistory, and the
// branch's mainline commits, oldest first.
func decideBenchRepository(b *testing.B) (string, []string) {
	b.Helper()
	history := largehistory.Build(b, largehistory.Spec{
		Commits: decideBenchCommits, Records: decideBenchRecords, Upstream: "dev", Start: decideBenchStart,
	})
	return history.Dir, history.Mainline
}
