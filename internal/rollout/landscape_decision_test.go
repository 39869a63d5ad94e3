package rollout

import (
	"errors"
	"testing"
	"time"

	. "github.com/onsi/gomega"
)

// fakeRepository is a Repository over a commit graph in memory: the
// branch "main" with its tip, the landscapes' records newest first. It
// counts the ancestry walks a decision asks for.
type fakeRepository struct {
	graph   history
	tip     string
	records map[string][]Record
	walks   int
}

func (f *fakeRepository) Candidates(branch, running string, maxCandidates int) ([]string, error) {
	if branch != "main" {
		return nil, errors.New("no such branch")
	}
	var candidates []string
	for next := f.tip; next != "" && next != running && len(candidates) < maxCandidates; {
		candidates = append(candidates, next)
		parents := f.graph[next]
		if len(parents) == 0 {
			break
		}
		next = parents[0]
	}
	return candidates, nil
}

func (f *fakeRepository) Records(landscape string, limits RecordLimits) (RecordHistory, error) {
	var history RecordHistory
	for _, record := range f.records[landscape] {
		record.Landscape = landscape
		history.Records = append(history.Records, record)
		if record.Kind.Runs() && !limits.Since.IsZero() && !record.ReadyAt.After(limits.Since) {
			break
		}
	}
	return history, nil
}

func (f *fakeRepository) Ancestry(_, _ []string) (Ancestry, error) {
	f.walks++
	return f.graph, nil
}

// mainline is c1 ← c2 ← c3 ← c4 ← c5 on main, with side ← c1 merged by c4
// as its second parent.
var mainline = history{"c2": {"c1"}, "c3": {"c2"}, "c4": {"c3", "side"}, "side": {"c1"}, "c5": {"c4"}}

func TestDecideLandscape(t *testing.T) {
	prod := Landscape{Name: "prod", After: []string{"dev"}, Soak: time.Hour}
	for _, tc := range []struct {
		name    string
		records map[string][]Record
		q       Question
		// promote, waiting and eligibleAt are the decision expected;
		// candidates the commits it judged.
		promote, waiting string
		eligibleAt       time.Time
		candidates       []string
		warning          error
		noRecords        bool
		// held says the landscape holds.
		held bool
		// walks is how many walks of the history it asks for: one, but
		// for a hotfix left set after the landscape moved past it.
		walks int
	}{
		{
			name:    "the newest commit dev held for the soak is taken, the newer one waits until dev's soak of it ends",
			records: map[string][]Record{"dev": {applied("c5", 10*time.Minute), applied("c3", 2*time.Hour)}, "prod": {applied("c2", 3*time.Hour)}},
			q:       Question{Landscape: prod, Branch: "main", FromRecords: true},
			promote: "c3", waiting: "c5", eligibleAt: decisionTime.Add(50 * time.Minute), candidates: []string{"c5", "c4", "c3"},
		},
		{
			name:    "a commit the running revision contains through a second parent is no candidate, so prod never moves back to it",
			records: map[string][]Record{"dev": {applied("c1", 5*time.Hour)}},
			q:       Question{Landscape: prod, Branch: "main", Running: "side"},
			waiting: "c5", candidates: []string{"c5", "c4", "c3", "c2"},
		},
		{
			name:    "a revision prod refused itself since it last applied is not taken again",
			records: map[string][]Record{"dev": {applied("c3", 2*time.Hour)}, "prod": {refused("c3", time.Hour), applied("c2", 3*time.Hour)}},
			q:       Question{Landscape: prod, Branch: "main", FromRecords: true},
			waiting: "c5", candidates: []string{"c5", "c4", "c3"},
		},
		{
			name: "a record whose readyAt plus the soak is past year 9999 is left out with a warning, and the older hold decides",
			records: map[string][]Record{"dev": {
				{Kind: RecordApplied, Revision: "c5", AppliedAt: decisionTime.Add(-time.Minute), ReadyAt: time.Date(9999, 12, 31, 23, 30, 0, 0, time.UTC), Commit: "r2"},
				applied("c3", 2*time.Hour),
			}},
			q:       Question{Landscape: prod, Branch: "main", Running: "c2"},
			promote: "c3", waiting: "c5", candidates: []string{"c5", "c4", "c3"},
			warning: ErrTimeOutOfRange,
		},
		{
			name:    "an upstream without records holds nothing, and the reading says so",
			records: map[string][]Record{},
			q:       Question{Landscape: prod, Branch: "main", Running: "c2"},
			waiting: "c5", candidates: []string{"c5", "c4", "c3"}, noRecords: true,
		},
		{
			name:    "a landscape that runs nothing, after an upstream without records, waits for the tip",
			records: map[string][]Record{},
			q:       Question{Landscape: prod, Branch: "main", FromRecords: true},
			waiting: "c5", candidates: []string{"c5", "c4", "c3", "c2", "c1"}, noRecords: true, walks: -1,
		},
		{
			name:    "a record applied after the decision's time is left out, as rollout status --at leaves it out",
			records: map[string][]Record{"dev": {applied("c5", -time.Hour), applied("c3", 2*time.Hour)}},
			q:       Question{Landscape: prod, Branch: "main", Running: "c2"},
			promote: "c3", waiting: "c5", candidates: []string{"c5", "c4", "c3"},
		},
		{
			name:    "a hotfix among the candidates is taken at once, and what comes after it waits",
			records: map[string][]Record{"dev": {applied("c5", 10*time.Minute)}},
			q:       Question{Landscape: prod, Branch: "main", Running: "c2", Hotfix: "c3"},
			promote: "c3", waiting: "c5", eligibleAt: decisionTime.Add(50 * time.Minute), candidates: []string{"c5", "c4", "c3"},
		},
		{
			name: "a hold prod recorded keeps it where it is: it takes nothing, and shows the commit it would take as held back since it became eligible",
			records: map[string][]Record{
				"dev":  {applied("c5", 10*time.Minute), applied("c3", 2*time.Hour)},
				"prod": {holdRecord(RecordHeld, "c2", 30*time.Minute), applied("c2", 3*time.Hour)},
			},
			q:       Question{Landscape: prod, Branch: "main", FromRecords: true},
			waiting: "c3", eligibleAt: decisionTime.Add(-time.Hour), candidates: []string{"c5", "c4", "c3"}, held: true,
		},
		{
			name: "a release recorded after the hold lets prod take what qualifies again",
			records: map[string][]Record{
				"dev":  {applied("c5", 10*time.Minute), applied("c3", 2*time.Hour)},
				"prod": {holdRecord(RecordReleased, "c2", 10*time.Minute), holdRecord(RecordHeld, "c2", 30*time.Minute), applied("c2", 3*time.Hour)},
			},
			q:       Question{Landscape: prod, Branch: "main", FromRecords: true},
			promote: "c3", waiting: "c5", eligibleAt: decisionTime.Add(50 * time.Minute), candidates: []string{"c5", "c4", "c3"},
		},
		{
			name: "a hold recorded before prod's newest applied record is over: prod applied since",
			records: map[string][]Record{
				"dev":  {applied("c5", 10*time.Minute), applied("c3", 2*time.Hour)},
				"prod": {applied("c2", 2*time.Hour), holdRecord(RecordHeld, "c1", 3*time.Hour), applied("c1", 4*time.Hour)},
			},
			q:       Question{Landscape: prod, Branch: "main", FromRecords: true},
			promote: "c3", waiting: "c5", eligibleAt: decisionTime.Add(50 * time.Minute), candidates: []string{"c5", "c4", "c3"},
		},
		{
			name:    "the operator's hold (spec.rollout.hold) holds whatever the records say, and shows what it would wait for when nothing qualifies",
			records: map[string][]Record{"dev": {applied("c5", 10*time.Minute)}},
			q:       Question{Landscape: prod, Branch: "main", Running: "c2", Hold: true},
			waiting: "c5", eligibleAt: decisionTime.Add(50 * time.Minute), candidates: []string{"c5", "c4", "c3"}, held: true,
		},
		{
			name:    "a hotfix prod refused is not taken again: prod goes on with the rollout, as its records show it",
			records: map[string][]Record{"dev": {applied("c3", 2*time.Hour)}, "prod": {refused("c4", 30*time.Minute), applied("c2", 3*time.Hour)}},
			q:       Question{Landscape: prod, Branch: "main", Running: "c2", Hotfix: "c4"},
			promote: "c3", waiting: "c5", candidates: []string{"c5", "c4", "c3"},
		},
		{
			name:    "a hotfix the running revision contains is done",
			records: map[string][]Record{"dev": {applied("c5", 2*time.Hour)}},
			q:       Question{Landscape: prod, Branch: "main", Running: "c4", Hotfix: "c2"},
			promote: "c5", candidates: []string{"c5"}, walks: 2,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			repo := &fakeRepository{graph: mainline, tip: "c5", records: tc.records}
			tc.q.Now = decisionTime
			answer, err := DecideLandscape(repo, tc.q)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(answer.Promote).To(Equal(tc.promote))
			g.Expect(answer.Held).To(Equal(tc.held))
			if tc.held {
				g.Expect(answer.RequeueAt).To(BeZero(), "only the release of the hold moves a held landscape")
			}
			g.Expect(answer.Candidates).To(Equal(tc.candidates))
			if tc.waiting == "" {
				g.Expect(answer.Waiting).To(BeNil())
			} else {
				g.Expect(answer.Waiting).NotTo(BeNil())
				g.Expect(answer.Waiting.Candidate).To(Equal(tc.waiting))
				g.Expect(answer.Waiting.EligibleAt).To(Equal(tc.eligibleAt))
			}
			g.Expect(answer.Upstreams).To(HaveLen(1))
			dev := answer.Upstreams[0]
			g.Expect(dev.NoRecords).To(Equal(tc.noRecords))
			if tc.warning != nil {
				g.Expect(dev.Warnings).To(HaveLen(1))
				g.Expect(dev.Warnings[0]).To(MatchError(tc.warning))
				g.Expect(dev.Warnings[0].Error()).To(ContainSubstring("record r2 of landscape dev: readyAt: 9999-12-31T23:30:00Z plus the soak of 1h0m0s is after 9999-12-31T23:59:59Z"))
			} else {
				g.Expect(dev.Warnings).To(BeEmpty())
			}
			walks := max(tc.walks, 1)
			if tc.walks < 0 {
				walks = 0 // nothing to ask: no running revision, no record
			}
			g.Expect(repo.walks).To(Equal(walks), "one walk of the history per decision")
		})
	}
}

func TestDecideLandscapeAsksForOneWalkWhateverTheRecords(t *testing.T) {
	g := NewWithT(t)
	var dev, staging []Record
	for i := range 300 {
		dev = append(dev, applied([]string{"c5", "c4", "c3"}[i%3], time.Duration(i)*time.Minute))
		staging = append(staging, applied([]string{"c4", "c2"}[i%2], time.Duration(i)*time.Minute))
	}
	repo := &fakeRepository{graph: mainline, tip: "c5", records: map[string][]Record{"dev": dev, "staging": staging}}
	answer, err := DecideLandscape(repo, Question{
		Landscape: Landscape{Name: "prod", After: []string{"dev", "staging"}, Soak: 2 * time.Hour},
		Branch:    "main", Running: "c1", Now: decisionTime,
	})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(repo.walks).To(Equal(1))
	g.Expect(answer.Promote).To(Equal("c2"), "every record of both contains c2; staging's records of c2 interrupt its hold of c3 and c4")
	g.Expect(answer.Waiting.Candidate).To(Equal("c4"))
}

func TestDecideLandscapeRefusesAHotfixOffTheBranch(t *testing.T) {
	g := NewWithT(t)
	repo := &fakeRepository{graph: mainline, tip: "c5", records: map[string][]Record{}}
	_, err := DecideLandscape(repo, Question{Landscape: Landscape{Name: "prod", After: []string{"dev"}}, Branch: "main", Running: "c4", Hotfix: "side-2", Now: decisionTime})
	g.Expect(err).To(MatchError(ErrHotfixNotOnBranch))
	g.Expect(err).To(MatchError(ContainSubstring("spec.rollout.hotfix: commit side-2 is not a commit of the branch")))
}

func TestNoRecordsNoteNamesTheUpstreamAndTheField(t *testing.T) {
	NewWithT(t).Expect(NoRecordsNote("dev")).To(Equal(
		"dev has recorded no applied revision under refs/profilesync/landscapes/dev: the ProfileSync of landscape dev must record it " +
			"(spec.rollout.record, on unless set to false) with credentials that may push; its Recorded condition says why a push failed"))
}

// signedBy marks record as gitsource marks a record whose signature it
// checked: verified, or not, and why.
func signedBy(record Record, commit string, signature RecordSignature) Record {
	record.Commit, record.Signature = commit, signature
	return record
}

func TestDecideLandscapeCountsOnlyVerifiedRecordsOfAnUpstreamThatMustSign(t *testing.T) {
	prod := Landscape{Name: "prod", After: []string{"dev"}, Soak: time.Hour}
	verified := RecordSignature{Checked: true, Verified: true, Signer: "SHA256:dev"}
	forgedUnsigned := RecordSignature{Checked: true, Failure: "unsigned", Detail: "the record commit carries no signature"}
	otherKey := RecordSignature{Checked: true, Signer: "SHA256:stranger", Failure: "unknown key", Detail: "no key of landscape dev made it"}
	tampered := RecordSignature{Checked: true, Signer: "SHA256:dev", Failure: "bad signature", Detail: "the signature does not match the record commit"}
	for _, tc := range []struct {
		name          string
		dev           []Record
		requireSigned []string
		promote       string
		// ignored is the warning expected of the one record left out.
		ignored string
	}{
		{
			name:          "a forged unsigned applied record with an old readyAt is ignored, so prod waits for the genuine record's soak",
			dev:           []Record{signedBy(applied("c5", 30*24*time.Hour), "forged", forgedUnsigned), signedBy(applied("c3", 10*time.Minute), "genuine", verified)},
			requireSigned: []string{"dev"},
			ignored:       "record forged of landscape dev (applied c5): unsigned (signed by none): the record commit carries no signature; the record is ignored",
		},
		{
			name:          "a record signed by another key than dev's is ignored",
			dev:           []Record{signedBy(applied("c5", 2*time.Hour), "stranger", otherKey)},
			requireSigned: []string{"dev"},
			ignored:       "record stranger of landscape dev (applied c5): unknown key (signed by SHA256:stranger): no key of landscape dev made it; the record is ignored",
		},
		{
			name:          "a record changed after dev signed it is ignored",
			dev:           []Record{signedBy(applied("c5", 2*time.Hour), "tampered", tampered)},
			requireSigned: []string{"dev"},
			ignored:       "record tampered of landscape dev (applied c5): bad signature (signed by SHA256:dev): the signature does not match the record commit; the record is ignored",
		},
		{
			name:          "a record nobody checked counts as unverified when dev must sign: no key was given to check it",
			dev:           []Record{signedBy(applied("c5", 2*time.Hour), "unchecked", RecordSignature{})},
			requireSigned: []string{"dev"},
			ignored:       "record unchecked of landscape dev (applied c5): no key of landscape dev was given to check it with; the record is ignored",
		},
		{
			name:          "a genuine record signed by dev's key counts: prod takes what dev held for the soak",
			dev:           []Record{signedBy(applied("c5", 2*time.Hour), "genuine", verified)},
			requireSigned: []string{"dev"},
			promote:       "c5",
		},
		{
			name:    "without upstream keys the forged record counts, as it did before signatures: the soak guards against mistakes only",
			dev:     []Record{signedBy(applied("c5", 30*24*time.Hour), "forged", forgedUnsigned)},
			promote: "c5",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			repo := &fakeRepository{graph: mainline, tip: "c5", records: map[string][]Record{"dev": tc.dev}}
			answer, err := DecideLandscape(repo, Question{Landscape: prod, Branch: "main", Running: "c2", Now: decisionTime, RequireSigned: tc.requireSigned})
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(answer.Promote).To(Equal(tc.promote))
			dev := answer.Upstreams[0]
			if tc.ignored == "" {
				g.Expect(dev.Warnings).To(BeEmpty())
				g.Expect(dev.Unverified).To(BeEmpty())
				return
			}
			g.Expect(dev.Warnings).To(HaveLen(1))
			g.Expect(dev.Warnings[0]).To(MatchError(ErrUnverifiedRecord))
			g.Expect(dev.Warnings[0].Error()).To(ContainSubstring(tc.ignored))
			g.Expect(dev.Unverified).To(HaveLen(1))
		})
	}
}
