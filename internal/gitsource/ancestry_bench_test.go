package gitsource

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/storage/memory"

	"github.com/profilesync/profilesync/internal/rollout"
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
// repository, writing it the first time, and the branch's mainline commits,
// oldest first.
func decideBenchRepository(b *testing.B) (string, []string) {
	b.Helper()
	commits := make([]graphCommit, 0, decideBenchCommits)
	var mainline []int
	for i := range decideBenchCommits {
		c := graphCommit{when: decideBenchStart.Add(time.Duration(i) * time.Second)}
		switch {
		case i == 0:
		case i%10 == 9: // a side commit off the previous mainline commit
			c.parents = []int{mainline[len(mainline)-1]}
		case i%10 == 0: // merging it
			c.parents = []int{mainline[len(mainline)-1], i - 1}
		default:
			c.parents = []int{mainline[len(mainline)-1]}
		}
		commits = append(commits, c)
		if i%10 != 9 {
			mainline = append(mainline, i)
		}
	}
	source, err := git.Init(memory.NewStorage(), nil)
	if err != nil {
		b.Fatal(err)
	}
	hashes := writeGraph(b, source.Storer, commits)
	names := make([]string, len(mainline))
	for i, m := range mainline {
		names[i] = hashes[m].String()
	}
	dir := filepath.Join(os.TempDir(), fmt.Sprintf("profilesync-bench-decide-%d-%d-%s", decideBenchCommits, decideBenchRecords, names[len(names)-1][:12]))
	if _, err := os.Stat(filepath.Join(dir, "packed")); err == nil {
		return dir, names
	}
	if err := source.Storer.SetReference(plumbing.NewHashReference(plumbing.NewBranchReferenceName("main"), hashes[len(hashes)-1])); err != nil {
		b.Fatal(err)
	}
	// dev applies a mainline commit an hour, from the first to the tip.
	var parent plumbing.Hash
	for i := range decideBenchRecords {
		revision := names[i*(len(names)-1)/(decideBenchRecords-1)]
		at := decideBenchStart.Add(time.Duration(i+1) * time.Hour)
		record := rollout.Record{Landscape: "dev", Kind: rollout.RecordApplied, Revision: revision, AppliedAt: at, ReadyAt: at.Add(time.Minute), OperatorVersion: "v0.1.0"}
		content, err := rollout.EncodeRecord(record)
		if err != nil {
			b.Fatal(err)
		}
		if parent, err = writeRecordCommit(source, record, content, parent); err != nil {
			b.Fatal(err)
		}
	}
	if err := source.Storer.SetReference(plumbing.NewHashReference(rollout.LandscapeRefPrefix+"dev", parent)); err != nil {
		b.Fatal(err)
	}
	packed := writePacked(b, source)
	_ = os.RemoveAll(dir)
	if err := os.Rename(packed, dir); err != nil {
		b.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "packed"), nil, 0o600); err != nil {
		b.Fatal(err)
	}
	return dir, names
}
