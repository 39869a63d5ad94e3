package rollout

import (
	"errors"
	"fmt"
	"slices"
	"time"
)

// MaxCandidates bounds the commits of the branch one decision looks at: a
// landscape this far behind takes the newest that qualifies among them,
// and the next decision looks again from there. The operator and
// `rollout status` look at the same window, so they decide alike.
const MaxCandidates = 500

// MaxTime is the latest time a decision may produce: RFC 3339, and with it
// JSON, metav1.Time and the API server, have four-digit years only.
var MaxTime = time.Date(9999, time.December, 31, 23, 59, 59, 0, time.UTC)

// DefaultMaxRecords bounds how many record commits one landscape's history
// is read back when RecordLimits sets no maximum.
const DefaultMaxRecords = 1000

// RecordLimits bounds how far back a landscape's history is read.
type RecordLimits struct {
	// Since stops the reading after the first record that was Ready at or
	// before it. A decision at Now with a soak needs nothing older than
	// Now minus the soak, which is what to pass. Zero reads to Max.
	Since time.Time
	// Max bounds the record commits read, garbled ones included; zero is
	// DefaultMaxRecords.
	Max int
}

// RecordHistory is what was read of one landscape's records.
type RecordHistory struct {
	// Records are the valid records, newest first.
	Records []Record
	// Warnings are the records skipped, one error each, naming the ref,
	// the record commit and the field.
	Warnings []error
	// Truncated says the reading stopped at Max before reaching Since or
	// the first record; a hold then looks younger than it is, so a
	// decision waits rather than promotes too early.
	Truncated bool
}

// Repository is the Git a decision reads: gitsource's Landscapes over the
// operator's mirror or the repository `rollout status` reads.
type Repository interface {
	// Candidates lists the commits of branch after running, newest first:
	// from the tip back along first parents, to but not including
	// running, at most maxCandidates.
	Candidates(branch, running string, maxCandidates int) ([]string, error)
	// Records reads a landscape's records, newest first, within limits,
	// skipping what is garbled or names an unknown commit with a warning.
	Records(landscape string, limits RecordLimits) (RecordHistory, error)
	// Ancestry walks the history once, from every tip, and answers for
	// each tip which of commits it contains. commits, newest first, are
	// consecutive first-parent commits of one branch: nothing below the
	// first parent of the oldest contains any of them, so the walk stops
	// there. The answer covers only those tips and commits.
	Ancestry(tips, commits []string) (Ancestry, error)
}

// Question is what a decision is asked: which commit of its branch a
// landscape of the rollout file takes now.
type Question struct {
	// Landscape is the landscape, as the rollout file lists it.
	Landscape Landscape
	// Branch is the branch it follows.
	Branch string
	// Running is the commit it runs; empty for none. Hold is
	// spec.rollout.hold: the landscape takes nothing new. With
	// FromRecords, the landscape's own records say both instead (what
	// `rollout status`, without a cluster, knows): its newest applied or
	// hotfix record what it runs, and its newest held or released record
	// newer than that whether it holds.
	Running     string
	Hold        bool
	FromRecords bool
	// Hotfix is spec.rollout.hotfix: a commit of the branch newer than
	// Running to take at once; empty for none.
	Hotfix string
	// Now is the time of the decision, from the caller's clock. Records
	// applied after it are left out.
	Now time.Time
	// RequireSigned names the upstream landscapes whose records count only
	// when their signature verified (Record.Signature.Verified, which the
	// Repository marks): spec.rollout.upstreamKeys, or `rollout status
	// --upstream-keys`. Any other record of theirs, unsigned, signed by
	// another key or changed after signing, is left out with a warning
	// (ErrUnverifiedRecord), so a forged record cannot make the landscape
	// skip its soak.
	RequireSigned []string
}

// Answer is the decision and what it was made of.
type Answer struct {
	Decision
	// Running is the commit the landscape runs (Question.Running, or its
	// newest applied or hotfix record's).
	Running string
	// Applied is its newest applied or hotfix record at or before Now;
	// nil without one.
	Applied *Record
	// Refused is its own refusal newer than Applied: that revision is not
	// taken again (Promote is never it). Nil without one.
	Refused *Record
	// HoldRecord is its own newest held or released record newer than
	// Applied: the hold it recorded last. Nil without one.
	HoldRecord *Record
	// Held says the landscape holds (Question.Hold, or with FromRecords
	// a HoldRecord of kind held): Promote is empty, and Waiting is the
	// candidate held back, the one it would take else (eligible since
	// EligibleAt), or the one it would wait for; RequeueAt is zero, since
	// only the release of the hold moves it. A hotfix is taken whatever the
	// hold (the API server refuses both at once).
	Held bool
	// Candidates are the commits of the branch after Running that it does
	// not contain yet, newest first, at most MaxCandidates.
	Candidates []string
	// Upstreams are what was read of each upstream landscape, in the
	// order of Landscape.After.
	Upstreams []UpstreamReading
	// OwnWarnings are the landscape's own records that were left out.
	OwnWarnings []error
}

// UpstreamReading is what a decision read of one upstream landscape.
type UpstreamReading struct {
	Landscape string
	// Records are the records the decision used.
	Records []Record
	// Warnings are its records left out: garbled, naming an unknown
	// commit, or with a time the decision could not report.
	Warnings []error
	// Unverified are its records left out because their signature did
	// not verify while Question.RequireSigned names it; each is a warning
	// too.
	Unverified []Record
	// Truncated says the history was cut at its maximum.
	Truncated bool
	// NoRecords says the upstream has recorded no applied (or hotfix)
	// revision the decision could use: it holds nothing, and NoRecordsNote
	// says why that may be.
	NoRecords bool
}

// ErrTimeOutOfRange marks an upstream record whose time, or that time plus
// the soak, is past MaxTime: no status or report could hold the eligibility
// time it makes, so the record is left out.
var ErrTimeOutOfRange = errors.New("a time out of range")

// ErrUnverifiedRecord marks an upstream record left out because the
// landscape requires that upstream's records to be signed
// (Question.RequireSigned) and its signature did not verify.
var ErrUnverifiedRecord = errors.New("the record's signature does not verify")

// ErrHotfixNotOnBranch marks a hotfix that is no commit of the branch newer
// than the one the landscape runs.
var ErrHotfixNotOnBranch = errors.New("not a commit of the branch newer than the revision applied")

// NoRecordsNote says why a landscape waits for an upstream that has
// recorded no applied revision: the upstream's ProfileSync does not record
// (spec.rollout.record set to false), cannot push, or has applied nothing.
func NoRecordsNote(upstream string) string {
	return fmt.Sprintf("%s has recorded no applied revision under %s%s: the ProfileSync of landscape %s must record it "+
		"(spec.rollout.record, on unless set to false) with credentials that may push; its Recorded condition says why a push failed",
		upstream, LandscapeRefPrefix, upstream, upstream)
}

// DecideLandscape is the one decision of which commit a landscape takes,
// which the operator and `rollout status` both make. It reads, from repo:
//   - the landscape's own records back to its newest applied one: what it
//     runs (with RunningFromRecords) and a refusal since, which it does
//     not take again;
//   - the commits of the branch after what it runs, at most MaxCandidates,
//     leaving out those it contains already (a branch that merged it
//     through a second parent);
//   - each upstream's records back to the soak window (RecordLimits.Since
//     is Now minus the soak), leaving out those applied after Now and
//     those whose times, soak added, are past MaxTime (with a warning);
//   - whether each upstream record contains each candidate, from one walk
//     of the history (Repository.Ancestry).
//
// and decides with Decide. A hotfix is taken at once while it is a
// candidate it has not refused; Waiting and RequeueAt are then those of the
// commits after it.
// A hotfix the landscape runs or contains changes nothing; any other
// commit is ErrHotfixNotOnBranch.
func DecideLandscape(repo Repository, q Question) (Answer, error) {
	if q.Landscape.Soak < 0 {
		return Answer{}, fmt.Errorf("soak %s is negative", q.Landscape.Soak)
	}
	answer := Answer{Running: q.Running}
	if err := readOwn(repo, q, &answer); err != nil {
		return Answer{}, err
	}
	candidates, err := repo.Candidates(q.Branch, answer.Running, MaxCandidates)
	if err != nil {
		return Answer{}, fmt.Errorf("list the commits of branch %q after %s: %w", q.Branch, answer.Running, err)
	}
	for _, upstream := range q.Landscape.After {
		reading, err := readUpstream(repo, upstream, q)
		if err != nil {
			return Answer{}, err
		}
		answer.Upstreams = append(answer.Upstreams, reading)
	}
	ancestry, err := walkAncestry(repo, q.Branch, answer.Running, answer.Upstreams, candidates)
	if err != nil {
		return Answer{}, err
	}
	if answer.Candidates, err = uncontained(ancestry, answer.Running, candidates); err != nil {
		return Answer{}, err
	}
	if answer.Decision, err = decideOn(repo, q, answer, ancestry); err != nil {
		return Answer{}, err
	}
	answer.Held = q.Hold
	if q.FromRecords {
		answer.Held = answer.HoldRecord != nil && answer.HoldRecord.Kind == RecordHeld
	}
	if answer.Held && !answer.Hotfix {
		answer.Decision = heldBack(answer.Decision, q.Landscape.Soak)
	}
	return answer, nil
}

// heldBack is what a held landscape does with decision: it takes nothing,
// and shows as waiting the candidate it holds back, the one it would take
// (with the time it became eligible) or else the one it would wait for.
func heldBack(decision Decision, soak time.Duration) Decision {
	held := Decision{Waiting: decision.Waiting}
	if decision.Promote != "" {
		held.Waiting = &Waiting{Candidate: decision.Promote, Holds: decision.PromotedHolds}
		for _, hold := range decision.PromotedHolds {
			if eligible := hold.Since.Add(soak); eligible.After(held.Waiting.EligibleAt) {
				held.Waiting.EligibleAt = eligible
			}
		}
	}
	return held
}

// readOwn reads the landscape's own records for a decision at q.Now into
// answer: its newest applied or hotfix record at or before Now, its own
// refusal and its hold record newer than that, and the records left out.
// With FromRecords, the revision it runs is that applied record's.
func readOwn(repo Repository, q Question, answer *Answer) error {
	var own RecordHistory
	if q.Landscape.Name != "" { // a hold or hotfix outside every landscape
		var err error
		if own, err = repo.Records(q.Landscape.Name, RecordLimits{Since: q.Now}); err != nil {
			return fmt.Errorf("read the records of landscape %s: %w", q.Landscape.Name, err)
		}
	}
	answer.OwnWarnings = own.Warnings
	for i, record := range own.Records {
		if record.AppliedAt.After(q.Now) {
			continue
		}
		switch record.Kind {
		case RecordRefused:
			if answer.Refused == nil {
				answer.Refused = &own.Records[i]
			}
			continue
		case RecordHeld, RecordReleased:
			if answer.HoldRecord == nil {
				answer.HoldRecord = &own.Records[i]
			}
			continue
		}
		answer.Applied = &own.Records[i]
		break
	}
	if q.FromRecords {
		answer.Running = ""
		if answer.Applied != nil {
			answer.Running = answer.Applied.Revision
		}
	}
	return nil
}

// walkAncestry answers, in one walk of the history, every question of the
// decision: does the running revision contain a candidate (merged through a
// second parent), does each upstream record's revision. Without a
// candidate or a revision to ask about, there is nothing to walk.
func walkAncestry(repo Repository, branch, running string, upstreams []UpstreamReading, candidates []string) (Ancestry, error) {
	tips := []string{}
	if running != "" {
		tips = append(tips, running)
	}
	for _, reading := range upstreams {
		for _, record := range reading.Records {
			if record.Kind.Runs() {
				tips = append(tips, record.Revision)
			}
		}
	}
	if len(candidates) == 0 || len(tips) == 0 {
		return noTips{}, nil
	}
	ancestry, err := repo.Ancestry(tips, candidates)
	if err != nil {
		return nil, fmt.Errorf("walk the history of branch %q: %w", branch, err)
	}
	return ancestry, nil
}

// uncontained are the candidates the running revision does not contain
// yet, newest first.
func uncontained(ancestry Ancestry, running string, candidates []string) ([]string, error) {
	if running == "" || len(candidates) == 0 {
		return candidates, nil
	}
	var left []string
	for _, candidate := range candidates {
		contained, err := ancestry.IsAncestor(candidate, running)
		if err != nil {
			return nil, err
		}
		if !contained {
			left = append(left, candidate)
		}
	}
	return left, nil
}

// decideOn decides with Decide on what answer holds: a pending hotfix is
// taken at once, with Waiting and RequeueAt those of the commits after it;
// the revision the landscape refused last is not promoted again.
func decideOn(repo Repository, q Question, answer Answer, ancestry Ancestry) (Decision, error) {
	in := Input{Candidates: answer.Candidates, Soak: q.Landscape.Soak, Now: q.Now, Ancestry: ancestry}
	for _, reading := range answer.Upstreams {
		in.Upstreams = append(in.Upstreams, Upstream{Landscape: reading.Landscape, Records: reading.Records})
	}
	if q.Hotfix != "" {
		pending, err := hotfixPending(repo, q.Hotfix, answer.Running, answer.Candidates)
		if err != nil {
			return Decision{}, err
		}
		// A hotfix the landscape refused is refused like any revision: it
		// is not taken again, and the landscape goes on with the rollout,
		// as its records show it to whoever reads them.
		if pending && (answer.Refused == nil || answer.Refused.Revision != q.Hotfix) {
			in.Hotfix = q.Hotfix
		}
	}
	decision, err := Decide(in)
	if err == nil && decision.Hotfix {
		in.Hotfix, in.Candidates = "", answer.Candidates[:slices.Index(answer.Candidates, q.Hotfix)]
		var after Decision
		after, err = Decide(in)
		decision.Waiting, decision.RequeueAt = after.Waiting, after.RequeueAt
	}
	if err != nil {
		return Decision{}, fmt.Errorf("decide what landscape %s takes: %w", q.Landscape.Name, err)
	}
	// A landscape does not take again a revision it refused: it builds a
	// refused revision again only once the branch moves on.
	if answer.Refused != nil && !decision.Hotfix && decision.Promote == answer.Refused.Revision {
		decision.Promote, decision.PromotedHolds = "", nil
	}
	return decision, nil
}

// readUpstream reads one upstream's records for a decision at q.Now: back
// to the soak window, without those applied after Now or whose times the
// decision could not report.
func readUpstream(repo Repository, upstream string, q Question) (UpstreamReading, error) {
	history, err := repo.Records(upstream, RecordLimits{Since: q.Now.Add(-q.Landscape.Soak)})
	if err != nil {
		return UpstreamReading{}, fmt.Errorf("read the records of landscape %s: %w", upstream, err)
	}
	reading := UpstreamReading{Landscape: upstream, Warnings: history.Warnings, Truncated: history.Truncated}
	requireSigned := slices.Contains(q.RequireSigned, upstream)
	for _, record := range history.Records {
		if requireSigned && !record.Signature.Verified {
			reading.Warnings = append(reading.Warnings, unverified(record))
			reading.Unverified = append(reading.Unverified, record)
			continue
		}
		if err := timesInRange(record, q.Landscape.Soak); err != nil {
			reading.Warnings = append(reading.Warnings, err)
			continue
		}
		if record.AppliedAt.After(q.Now) {
			continue
		}
		reading.Records = append(reading.Records, record)
	}
	reading.NoRecords = !slices.ContainsFunc(reading.Records, func(r Record) bool { return r.Kind.Runs() })
	return reading, nil
}

// unverified is the warning of an upstream record left out for its
// signature: the record commit, the landscape and why.
func unverified(record Record) error {
	why := record.Signature.Describe()
	if !record.Signature.Checked {
		why = "no key of landscape " + record.Landscape + " was given to check it with"
	}
	return fmt.Errorf("%w: record %s of landscape %s (%s %s): %s; the record is ignored",
		ErrUnverifiedRecord, record.Commit, record.Landscape, record.Kind, record.Revision, why)
}

// timesInRange checks that the times a record makes a decision report, its
// own and the eligibility time its readyAt plus the soak gives, fit in
// RFC 3339 (years 0000 to 9999).
func timesInRange(record Record, soak time.Duration) error {
	source := "record " + record.Commit
	for _, stamp := range []struct {
		field string
		at    time.Time
		add   time.Duration
	}{{"appliedAt", record.AppliedAt, 0}, {"readyAt", record.ReadyAt, soak}} {
		if stamp.at.IsZero() {
			continue
		}
		if !TimeInRange(stamp.at, stamp.add) {
			return fmt.Errorf("%w: %s of landscape %s: %s: %s plus the soak of %s is after %s, the latest time a status can hold; the record is ignored",
				ErrTimeOutOfRange, source, record.Landscape, stamp.field, stamp.at.UTC().Format(time.RFC3339), stamp.add, MaxTime.Format(time.RFC3339))
		}
	}
	return nil
}

// hotfixPending says whether the hotfix is still to be taken: it is a
// candidate. One the landscape runs already, or contains, is done; any
// other commit is ErrHotfixNotOnBranch.
func hotfixPending(repo Repository, hotfix, running string, candidates []string) (bool, error) {
	if slices.Contains(candidates, hotfix) {
		return true, nil
	}
	if running != "" {
		if hotfix == running {
			return false, nil
		}
		// Rare: a hotfix left set after the landscape moved on. Its own
		// walk, from running down to the hotfix's parent.
		ancestry, err := repo.Ancestry([]string{running}, []string{hotfix})
		if err == nil {
			if contained, err := ancestry.IsAncestor(hotfix, running); err == nil && contained {
				return false, nil
			}
		}
	}
	return false, fmt.Errorf("spec.rollout.hotfix: commit %s is %w", hotfix, ErrHotfixNotOnBranch)
}

// noTips is the ancestry of a decision without a revision to ask about:
// no running revision, no upstream record.
type noTips struct{}

func (noTips) IsAncestor(ancestor, descendant string) (bool, error) {
	return ancestor == descendant, nil
}
