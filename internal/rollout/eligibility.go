package rollout

import (
	"errors"
	"fmt"
	"time"
)

// Ancestry answers questions about the history of the branch's commits.
// gitsource implements it over a repository; the rules here need no Git.
type Ancestry interface {
	// IsAncestor says whether ancestor is descendant itself or a commit in
	// its history, as `git merge-base --is-ancestor` does.
	IsAncestor(ancestor, descendant string) (bool, error)
}

// Upstream is one upstream landscape and what its records say.
type Upstream struct {
	// Landscape is its name.
	Landscape string
	// Records are its records, newest first, as far back as they were read.
	// They must reach back at least to the first record that was Ready at or
	// before Now minus the soak; older records change nothing.
	Records []Record
}

// Input is everything a landscape's promotion depends on.
type Input struct {
	// Candidates are the commits of the branch the landscape does not run
	// yet, newest first: the branch's tip back to, not including, what it
	// runs.
	Candidates []string
	// Upstreams are the landscapes in the rollout file's after, each with
	// its records. None: every candidate qualifies at once.
	Upstreams []Upstream
	// Soak is how long every upstream must have held a candidate, Ready,
	// before it qualifies.
	Soak time.Duration
	// Now is the time of the decision, from the caller's clock.
	Now time.Time
	// Ancestry answers whether a revision an upstream holds contains a
	// candidate. Needed only with upstreams.
	Ancestry Ancestry
	// Hotfix, when set, is a commit to take now whatever the upstreams hold
	// (the landscape's record of it is of kind hotfix).
	Hotfix string
}

// Decision is what a landscape should run now and what it waits for.
type Decision struct {
	// Promote is the newest candidate that qualifies, or the hotfix; empty
	// when none does.
	Promote string
	// Hotfix says Promote is Input.Hotfix, taken without the upstreams.
	Hotfix bool
	// PromotedHolds says, per upstream, since when it held Promote; empty
	// for a hotfix or without upstreams.
	PromotedHolds []Hold
	// Waiting is the candidate newer than Promote that the landscape waits
	// for; nil when Promote is the newest candidate (or there is none).
	Waiting *Waiting
	// RequeueAt is the earliest time a candidate newer than Promote
	// qualifies by the passing of time alone: when to decide again. Zero
	// when none will without a new record (an upstream has yet to apply
	// or hold one).
	RequeueAt time.Time
}

// Waiting is a candidate that does not qualify yet, and why.
type Waiting struct {
	// Candidate is the commit. It is the newest candidate that every
	// upstream holds, if there is one; otherwise the newest candidate.
	Candidate string
	// Holds says, per upstream, whether and since when it has held it.
	Holds []Hold
	// EligibleAt is when it qualifies if nothing changes; zero when an
	// upstream does not hold it or refused it.
	EligibleAt time.Time
}

// Hold is what one upstream's records say about one candidate.
type Hold struct {
	// Landscape is the upstream.
	Landscape string
	// Running is the revision the upstream runs: that of its newest applied
	// or hotfix record; empty when it has none.
	Running string
	// Holds says Running is the candidate or a descendant of it.
	Holds bool
	// Since is when the upstream started to hold the candidate without
	// interruption: when the oldest of its newest records that all contain
	// the candidate became Ready. Zero unless Holds.
	Since time.Time
	// Refused says the upstream refused the candidate itself; a refused
	// candidate never qualifies.
	Refused bool
}

// ErrNoAncestry is returned when upstream records need an ancestry
// oracle and none was given.
var ErrNoAncestry = errors.New("upstream records need an ancestry oracle")

// Decide computes which candidate a landscape takes now: the newest one
// that every upstream landscape
//   - runs, itself or a descendant of it (a revision that contains it);
//   - has held without interruption for at least Soak up to Now: the clock
//     starts when the oldest of the upstream's newest records that all
//     contain the candidate became Ready, so a later record of a revision
//     that does not contain it (a rollback) restarts it;
//   - did not refuse.
//
// Refused, held and released records are neither a hold nor an
// interruption: the landscape kept what it ran. Hotfix records count as
// applied. A hotfix in Input is
// taken at once. Without upstreams the newest candidate is taken at once.
//
// The decision also says what the landscape waits for and exactly when to
// decide again (RequeueAt), so the caller needs no polling.
func Decide(in Input) (Decision, error) {
	if in.Soak < 0 {
		return Decision{}, fmt.Errorf("soak %s is negative", in.Soak)
	}
	if in.Hotfix != "" {
		return Decision{Promote: in.Hotfix, Hotfix: true}, nil
	}
	if len(in.Candidates) == 0 {
		return Decision{}, nil
	}
	if len(in.Upstreams) == 0 {
		return Decision{Promote: in.Candidates[0]}, nil
	}
	if in.Ancestry == nil {
		return Decision{}, ErrNoAncestry
	}

	judge := newJudge(in)
	var decision Decision
	var newestHeld, tip *Waiting
	for _, candidate := range in.Candidates {
		holds, eligibleAt, err := judge.holds(candidate)
		if err != nil {
			return Decision{}, err
		}
		if !eligibleAt.IsZero() && !eligibleAt.After(in.Now) {
			decision.Promote = candidate
			decision.PromotedHolds = holds
			break
		}
		waiting := &Waiting{Candidate: candidate, Holds: holds, EligibleAt: eligibleAt}
		if tip == nil {
			tip = waiting
		}
		if !eligibleAt.IsZero() {
			if newestHeld == nil {
				newestHeld = waiting
			}
			if decision.RequeueAt.IsZero() || eligibleAt.Before(decision.RequeueAt) {
				decision.RequeueAt = eligibleAt
			}
		}
	}
	decision.Waiting = tip
	if newestHeld != nil {
		decision.Waiting = newestHeld
	}
	return decision, nil
}

// judge reads the upstreams' records for one decision, remembering the
// ancestry answers, which may each walk history.
type judge struct {
	in        Input
	refused   []map[string]bool
	contained map[[2]string]bool
}

func newJudge(in Input) *judge {
	j := &judge{in: in, refused: make([]map[string]bool, len(in.Upstreams)), contained: map[[2]string]bool{}}
	for i, upstream := range in.Upstreams {
		j.refused[i] = map[string]bool{}
		for _, record := range upstream.Records {
			if record.Kind == RecordRefused {
				j.refused[i][record.Revision] = true
			}
		}
	}
	return j
}

// holds is what every upstream holds of candidate, and when it qualifies:
// zero when some upstream does not hold it or refused it.
func (j *judge) holds(candidate string) ([]Hold, time.Time, error) {
	holds := make([]Hold, len(j.in.Upstreams))
	var latestSince time.Time
	everyUpstream := true
	for i, upstream := range j.in.Upstreams {
		hold, err := j.hold(upstream, candidate)
		if err != nil {
			return nil, time.Time{}, err
		}
		hold.Refused = j.refused[i][candidate]
		holds[i] = hold
		if !hold.Holds || hold.Refused {
			everyUpstream = false
			continue
		}
		if hold.Since.After(latestSince) {
			latestSince = hold.Since
		}
	}
	if !everyUpstream {
		return holds, time.Time{}, nil
	}
	return holds, latestSince.Add(j.in.Soak), nil
}

// hold walks one upstream's records from the newest while each contains
// candidate; the last one reached says since when it has been held.
func (j *judge) hold(upstream Upstream, candidate string) (Hold, error) {
	hold := Hold{Landscape: upstream.Landscape}
	for _, record := range upstream.Records {
		if !record.Kind.Runs() {
			continue
		}
		if hold.Running == "" {
			hold.Running = record.Revision
		}
		contains, err := j.contains(record.Revision, candidate)
		if err != nil {
			return Hold{}, fmt.Errorf("upstream %s, record %s: %w", upstream.Landscape, record.Commit, err)
		}
		if !contains {
			break
		}
		hold.Holds = true
		hold.Since = record.ReadyAt
	}
	return hold, nil
}

// contains says whether revision is candidate or a descendant of it.
func (j *judge) contains(revision, candidate string) (bool, error) {
	if revision == candidate {
		return true, nil
	}
	key := [2]string{revision, candidate}
	if answer, known := j.contained[key]; known {
		return answer, nil
	}
	answer, err := j.in.Ancestry.IsAncestor(candidate, revision)
	if err != nil {
		return false, fmt.Errorf("is %s an ancestor of %s: %w", candidate, revision, err)
	}
	j.contained[key] = answer
	return answer, nil
}
