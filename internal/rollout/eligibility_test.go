package rollout

import (
	"errors"
	"testing"
	"time"

	. "github.com/onsi/gomega"
)

// history is an ancestry oracle over a commit graph given as parents.
type history map[string][]string

func (h history) IsAncestor(ancestor, descendant string) (bool, error) {
	seen := map[string]bool{}
	queue := []string{descendant}
	for len(queue) > 0 {
		commit := queue[0]
		queue = queue[1:]
		if commit == ancestor {
			return true, nil
		}
		if seen[commit] {
			continue
		}
		seen[commit] = true
		queue = append(queue, h[commit]...)
	}
	return false, nil
}

// branch is c1 ← c2 ← c3 ← c4, and c4 ← fix, a commit off the branch that
// contains c4.
var branch = history{"c2": {"c1"}, "c3": {"c2"}, "c4": {"c3"}, "fix": {"c4"}}

var decisionTime = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

func applied(revision string, readyBefore time.Duration) Record {
	return Record{Kind: RecordApplied, Revision: revision, ReadyAt: decisionTime.Add(-readyBefore), AppliedAt: decisionTime.Add(-readyBefore - time.Minute)}
}

func hotfixed(revision string, readyBefore time.Duration) Record {
	record := applied(revision, readyBefore)
	record.Kind = RecordHotfix
	return record
}

func refused(revision string, before time.Duration) Record {
	return Record{Kind: RecordRefused, Revision: revision, AppliedAt: decisionTime.Add(-before), Reason: "ValidationFailed"}
}

// holdRecord is a held or released record of revision, written before
// the decision by before.
func holdRecord(kind RecordKind, revision string, before time.Duration) Record {
	return Record{Kind: kind, Revision: revision, AppliedAt: decisionTime.Add(-before)}
}

func upstream(name string, newestFirst ...Record) Upstream {
	return Upstream{Landscape: name, Records: newestFirst}
}

func TestDecide(t *testing.T) {
	for _, tc := range []struct {
		name       string
		candidates []string
		upstreams  []Upstream
		soak       time.Duration
		hotfix     string

		promote    string
		since      []time.Time // of PromotedHolds, per upstream
		waiting    string
		eligibleAt time.Time
		requeueAt  time.Time
		holds      []Hold // of Waiting
	}{
		{
			name:       "without upstream the newest candidate is taken at once",
			candidates: []string{"c3", "c2"},
			soak:       time.Hour,
			promote:    "c3",
		},
		{
			name:       "a candidate whose soak is not over waits until exactly the end of the soak",
			candidates: []string{"c3"},
			upstreams:  []Upstream{upstream("dev", applied("c3", 20*time.Minute))},
			soak:       time.Hour,
			waiting:    "c3",
			eligibleAt: decisionTime.Add(40 * time.Minute),
			requeueAt:  decisionTime.Add(40 * time.Minute),
			holds:      []Hold{{Landscape: "dev", Running: "c3", Holds: true, Since: decisionTime.Add(-20 * time.Minute)}},
		},
		{
			name:       "a candidate is taken the moment its soak ends",
			candidates: []string{"c3"},
			upstreams:  []Upstream{upstream("dev", applied("c3", time.Hour))},
			soak:       time.Hour,
			promote:    "c3",
			since:      []time.Time{decisionTime.Add(-time.Hour)},
		},
		{
			name:       "an older candidate that has soaked is taken while a newer one waits",
			candidates: []string{"c3", "c2"},
			upstreams:  []Upstream{upstream("dev", applied("c3", 30*time.Minute), applied("c2", 5*time.Hour))},
			soak:       time.Hour,
			promote:    "c2",
			since:      []time.Time{decisionTime.Add(-5 * time.Hour)},
			waiting:    "c3",
			eligibleAt: decisionTime.Add(30 * time.Minute),
			requeueAt:  decisionTime.Add(30 * time.Minute),
			holds:      []Hold{{Landscape: "dev", Running: "c3", Holds: true, Since: decisionTime.Add(-30 * time.Minute)}},
		},
		{
			name:       "a descendant of the candidate counts as holding it",
			candidates: []string{"c3", "c2"},
			upstreams:  []Upstream{upstream("dev", applied("fix", 3*time.Hour))},
			soak:       time.Hour,
			promote:    "c3",
			since:      []time.Time{decisionTime.Add(-3 * time.Hour)},
		},
		{
			name:       "the clock runs across records that all contain the candidate",
			candidates: []string{"c2"},
			upstreams:  []Upstream{upstream("dev", applied("c4", 10*time.Minute), applied("c3", 50*time.Minute), applied("c2", 2*time.Hour))},
			soak:       time.Hour,
			promote:    "c2",
			since:      []time.Time{decisionTime.Add(-2 * time.Hour)},
		},
		{
			name:       "a rollback restarts the clock",
			candidates: []string{"c3"},
			upstreams: []Upstream{upstream("dev",
				applied("c3", 30*time.Minute), // applied again after the rollback
				applied("c1", 2*time.Hour),    // the rollback, which does not contain c3
				applied("c3", 10*time.Hour))},
			soak:       time.Hour,
			waiting:    "c3",
			eligibleAt: decisionTime.Add(30 * time.Minute),
			requeueAt:  decisionTime.Add(30 * time.Minute),
			holds:      []Hold{{Landscape: "dev", Running: "c3", Holds: true, Since: decisionTime.Add(-30 * time.Minute)}},
		},
		{
			name:       "an upstream rolled back to before the candidate does not hold it, and no time will make it qualify",
			candidates: []string{"c3"},
			upstreams:  []Upstream{upstream("dev", applied("c2", 30*time.Minute), applied("c3", 10*time.Hour))},
			soak:       time.Hour,
			waiting:    "c3",
			holds:      []Hold{{Landscape: "dev", Running: "c2"}},
		},
		{
			name:       "a candidate the upstream refused is never promoted, however long it held a descendant",
			candidates: []string{"c3"},
			upstreams:  []Upstream{upstream("dev", applied("c4", 10*time.Hour), refused("c3", 11*time.Hour))},
			soak:       time.Hour,
			waiting:    "c3",
			holds:      []Hold{{Landscape: "dev", Running: "c4", Holds: true, Since: decisionTime.Add(-10 * time.Hour), Refused: true}},
		},
		{
			name:       "a refusal neither holds nor interrupts: the revision held before stays held",
			candidates: []string{"c4", "c3"},
			upstreams:  []Upstream{upstream("dev", refused("c4", 10*time.Minute), applied("c3", 2*time.Hour))},
			soak:       time.Hour,
			promote:    "c3",
			since:      []time.Time{decisionTime.Add(-2 * time.Hour)},
			waiting:    "c4",
			holds:      []Hold{{Landscape: "dev", Running: "c3", Refused: true}},
		},
		{
			name:       "with two upstreams the one that took the candidate later decides",
			candidates: []string{"c3"},
			upstreams: []Upstream{
				upstream("dev", applied("c3", 5*time.Hour)),
				upstream("staging", applied("c3", 30*time.Minute)),
			},
			soak:       time.Hour,
			waiting:    "c3",
			eligibleAt: decisionTime.Add(30 * time.Minute),
			requeueAt:  decisionTime.Add(30 * time.Minute),
			holds: []Hold{
				{Landscape: "dev", Running: "c3", Holds: true, Since: decisionTime.Add(-5 * time.Hour)},
				{Landscape: "staging", Running: "c3", Holds: true, Since: decisionTime.Add(-30 * time.Minute)},
			},
		},
		{
			name:       "with two upstreams one that does not hold the candidate blocks it",
			candidates: []string{"c3"},
			upstreams: []Upstream{
				upstream("dev", applied("c3", 5*time.Hour)),
				upstream("staging"),
			},
			soak:    time.Hour,
			waiting: "c3",
			holds: []Hold{
				{Landscape: "dev", Running: "c3", Holds: true, Since: decisionTime.Add(-5 * time.Hour)},
				{Landscape: "staging"},
			},
		},
		{
			name:       "the candidate waited for is the newest that every upstream holds, and the requeue is the earliest soak end",
			candidates: []string{"c4", "c3", "c2"},
			upstreams:  []Upstream{upstream("dev", applied("c3", 40*time.Minute), applied("c2", 50*time.Minute))},
			soak:       time.Hour,
			waiting:    "c3",
			eligibleAt: decisionTime.Add(20 * time.Minute),
			requeueAt:  decisionTime.Add(10 * time.Minute), // when c2 qualifies
			holds:      []Hold{{Landscape: "dev", Running: "c3", Holds: true, Since: decisionTime.Add(-40 * time.Minute)}},
		},
		{
			name:       "an upstream's hotfix counts as holding its revision, soak included",
			candidates: []string{"c3"},
			upstreams:  []Upstream{upstream("dev", hotfixed("c3", 2*time.Hour))},
			soak:       time.Hour,
			promote:    "c3",
			since:      []time.Time{decisionTime.Add(-2 * time.Hour)},
		},
		{
			name:       "a hotfix is taken at once, whatever the upstreams hold",
			candidates: []string{"c4", "c3"},
			upstreams:  []Upstream{upstream("dev")},
			soak:       time.Hour,
			hotfix:     "fix",
			promote:    "fix",
		},
		{
			name:      "without candidates there is nothing to take or wait for",
			upstreams: []Upstream{upstream("dev", applied("c3", 2*time.Hour))},
			soak:      time.Hour,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			decision, err := Decide(Input{
				Candidates: tc.candidates, Upstreams: tc.upstreams, Soak: tc.soak, Now: decisionTime, Ancestry: branch, Hotfix: tc.hotfix,
			})
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(decision.Promote).To(Equal(tc.promote))
			g.Expect(decision.Hotfix).To(Equal(tc.hotfix != ""))
			var since []time.Time
			for _, hold := range decision.PromotedHolds {
				g.Expect(hold.Holds).To(BeTrue())
				since = append(since, hold.Since)
			}
			g.Expect(since).To(Equal(tc.since))
			g.Expect(decision.RequeueAt).To(Equal(tc.requeueAt))
			if tc.waiting == "" {
				g.Expect(decision.Waiting).To(BeNil())
				return
			}
			g.Expect(decision.Waiting).NotTo(BeNil())
			g.Expect(decision.Waiting.Candidate).To(Equal(tc.waiting))
			g.Expect(decision.Waiting.EligibleAt).To(Equal(tc.eligibleAt))
			g.Expect(decision.Waiting.Holds).To(Equal(tc.holds))
		})
	}
}

func TestDecideRefusesANegativeSoakAndUpstreamsWithoutAncestry(t *testing.T) {
	g := NewWithT(t)
	_, err := Decide(Input{Candidates: []string{"c3"}, Soak: -time.Second, Now: decisionTime})
	g.Expect(err).To(MatchError(ContainSubstring("soak -1s is negative")))
	_, err = Decide(Input{Candidates: []string{"c3"}, Upstreams: []Upstream{upstream("dev")}, Now: decisionTime})
	g.Expect(err).To(MatchError(ErrNoAncestry))
}

type failingAncestry struct{}

func (failingAncestry) IsAncestor(string, string) (bool, error) {
	return false, errors.New("object not found")
}

func TestDecideReportsAnAncestryFailureWithTheRecord(t *testing.T) {
	g := NewWithT(t)
	record := applied("c4", time.Hour)
	record.Commit = "0123456789abcdef0123456789abcdef01234567"
	_, err := Decide(Input{Candidates: []string{"c3"}, Upstreams: []Upstream{upstream("dev", record)}, Soak: time.Hour, Now: decisionTime, Ancestry: failingAncestry{}})
	g.Expect(err).To(MatchError(ContainSubstring("upstream dev, record 0123456789abcdef0123456789abcdef01234567: is c3 an ancestor of c4: object not found")))
}
