package gitsource

import (
	"fmt"
	"testing"
	"time"

	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/storage/memory"

	"github.com/profilesync/profilesync/internal/rollout"
	"github.com/profilesync/profilesync/test/largehistory"
)

// benchRecords is the length of dev's record history in
// BenchmarkReadRecords: years of a landscape that applies a few revisions
// a day.
const benchRecords = 10000

// BenchmarkReadRecords measures what a downstream landscape pays per
// decision once its upstream has benchRecords records: reading them from
// a packed repository (as a fetched mirror is) and deciding with
// rollout.Decide. "window" reads as the controller does, back to the soak
// window; "whole-history" reads every record, the worst case. Each reports
// ms per read and decision, and the records read.
func BenchmarkReadRecords(b *testing.B) {
	const branchLength, soak = 200, time.Hour
	repo := &recordRepo{t: &testing.T{}, tips: map[plumbing.ReferenceName]plumbing.Hash{}, when: recordTime}
	var err error
	// Built in memory and written as one pack, as a fetch leaves it:
	// loose objects on disk would take far longer to write.
	if repo.repository, err = git.Init(memory.NewStorage(), nil); err != nil {
		b.Fatal(err)
	}
	branch := make([]string, branchLength)
	for i := range branch {
		branch[i] = repo.commit("refs/heads/main", map[string][]byte{"profile.yaml": fmt.Appendf(nil, "version: %d\n", i)})
	}
	// dev applies the branch's commits in order, each for 50 records, one
	// record a minute.
	recordsPerRevision := benchRecords / branchLength
	for i := range benchRecords {
		record := appliedRecord("dev", branch[i/recordsPerRevision], time.Duration(i)*time.Minute)
		if i%1000 == 500 {
			record = appliedRecord("dev", branch[0], time.Duration(i)*time.Minute) // a rollback now and then
		}
		repo.recordOf(record)
	}
	landscapes, err := OpenLandscapes(largehistory.Pack(b, repo.repository), ObjectLimitsFor(0))
	if err != nil {
		b.Fatal(err)
	}
	defer landscapes.Close()
	now := recordTime.Add(benchRecords*time.Minute + 5*time.Minute)
	// prod runs branch[190]; the nine commits after it are its candidates.
	candidates := make([]string, 0, 9)
	for i := branchLength - 1; i > 190; i-- {
		candidates = append(candidates, branch[i])
	}

	for _, bench := range []struct {
		name   string
		limits RecordLimits
	}{
		{"window", RecordLimits{Since: now.Add(-soak)}},
		{"whole-history", RecordLimits{Max: benchRecords}},
	} {
		b.Run(bench.name, func(b *testing.B) {
			var read int
			for b.Loop() {
				history, err := landscapes.Records("dev", bench.limits)
				if err != nil || len(history.Warnings) > 0 {
					b.Fatalf("read records: %v %v", err, history.Warnings)
				}
				decision, err := rollout.Decide(rollout.Input{
					Candidates: candidates, Upstreams: []rollout.Upstream{{Landscape: "dev", Records: history.Records}},
					Soak: soak, Now: now, Ancestry: landscapes,
				})
				if err != nil {
					b.Fatalf("decide: %v", err)
				}
				if decision.Promote != branch[198] || decision.Waiting == nil || decision.Waiting.Candidate != branch[199] {
					b.Fatalf("unexpected decision: promote %s, waiting %+v", decision.Promote, decision.Waiting)
				}
				read = len(history.Records)
			}
			b.ReportMetric(float64(b.Elapsed().Microseconds())/1000/float64(b.N), "ms/decision")
			b.ReportMetric(float64(read), "records")
		})
	}
}
