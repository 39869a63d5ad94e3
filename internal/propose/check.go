package propose

import (
	"fmt"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/profilesync/profilesync/internal/lifecycle"

	"github.com/profilesync/profilesync/internal/policy"
	"github.com/profilesync/profilesync/internal/render/profile"
)

// checker says what a change of the profiles would make the sync refuse
// that it does not refuse already: the validation's problems and the
// policy's errors at now (with the notice rule, the change counted as a
// commit at now) and at every instant the change schedules, and the
// policy's errors time brings up to the last of those instants, or the
// policy's horizon when that is later.
//
// Problems are compared without their field path: adding or removing a
// version moves the indices of the versions after it, not what is wrong
// with them.
type checker struct {
	base          []profile.Object
	baseSet       *profile.Set
	baseEvaluated []profile.Object
	policy        *policy.Policy
	now           time.Time
	// known caches the base's refusals by what was checked.
	known map[string]map[string]bool
}

func newChecker(base []profile.Object, p *policy.Policy, now time.Time) *checker {
	c := &checker{base: base, policy: p, now: now, known: map[string]map[string]bool{}}
	if set, err := profile.Validate(base, nil, now); err == nil {
		c.baseSet = set
		c.baseEvaluated = set.Evaluate()
	}
	return c
}

// refusals lists what after adds to the base's refusals, each a line naming
// the file, object, field and, for a later instant, when.
func (c *checker) refusals(after []profile.Object, instants []time.Time) []string {
	var out []string
	seen := map[string]bool{}
	report := func(check string, problems, baseProblems func() profile.Problems, when string) {
		known, ok := c.known[check]
		if !ok {
			known = keys(baseProblems())
			c.known[check] = known
		}
		for _, p := range problems() {
			k := key(p)
			if known[k] || seen[k] {
				continue
			}
			seen[k] = true
			out = append(out, when+p.String())
		}
	}
	validate := func(objects []profile.Object, t time.Time) *profile.Set {
		set, err := profile.Validate(objects, nil, t)
		if err != nil { // only a parent lookup fails, and there is none
			return &profile.Set{Problems: profile.Problems{{Message: err.Error()}}}
		}
		return set
	}
	afterNow := validate(after, c.now)
	report("validate now", func() profile.Problems { return afterNow.Problems },
		func() profile.Problems { return validate(c.base, c.now).Problems }, "")
	// At a later instant only the rules that depend on the time can say
	// otherwise (one supported version per minor): the rest of the
	// validation (schema, sizes, the merge) is the same as now.
	for _, t := range instants {
		baseSet := c.baseSet
		report("validate "+t.String(), func() profile.Problems { return lifecycleProblemsAt(afterNow, t) },
			func() profile.Problems { return lifecycleProblemsAt(baseSet, t) }, "from "+t.UTC().Format(time.RFC3339)+": ")
	}
	if c.policy == nil {
		return out
	}
	evaluated := afterNow.Evaluate()
	report("policy now", func() profile.Problems {
		return c.policy.Check(evaluated, c.baseEvaluated, c.now, c.now).Errors
	}, func() profile.Problems {
		return c.policy.Check(c.baseEvaluated, nil, c.now, c.now).Errors
	}, "")
	// At every transition the change schedules, compared with the base at
	// the same instant: a finding the base has there too is not the
	// change's, one the base has lost by then is.
	for _, t := range instants {
		report("policy at "+t.String(), func() profile.Problems {
			return c.policy.Check(evaluated, nil, t, t).Errors
		}, func() profile.Problems {
			return c.policy.Check(c.baseEvaluated, nil, t, t).Errors
		}, "from "+t.UTC().Format(time.RFC3339)+": ")
	}
	until := c.now.Add(policy.DefaultHorizon)
	for _, t := range instants {
		if t.After(until) {
			until = t
		}
	}
	report(fmt.Sprintf("policy until %s", until), func() profile.Problems {
		return c.policy.ScheduledErrors(evaluated, c.now, until)
	}, func() profile.Problems {
		return c.policy.ScheduledErrors(c.baseEvaluated, c.now, until)
	}, "")
	return out
}

func key(p profile.Problem) string {
	p.Field = ""
	return p.String()
}

func keys(problems profile.Problems) map[string]bool {
	out := make(map[string]bool, len(problems))
	for _, p := range problems {
		out[key(p)] = true
	}
	return out
}

func metav1Time(t time.Time) metav1.Time { return metav1.NewTime(t.UTC()) }

// lifecycleProblemsAt is the validation of set's profiles by the rules of
// internal/lifecycle at t: every CloudProfile's spec, and every
// NamespacedCloudProfile's spec as merged with its parent, as the sync
// validates them at t.
func lifecycleProblemsAt(set *profile.Set, t time.Time) profile.Problems {
	if set == nil {
		return nil
	}
	var out profile.Problems
	add := func(o profile.Object, errs field.ErrorList) {
		for _, e := range errs {
			out = append(out, profile.Problem{File: o.File, Kind: o.Kind(), Namespace: o.Namespace(), Name: o.Name(), Field: e.Field, Message: e.ErrorBody()})
		}
	}
	for _, o := range set.Objects {
		switch {
		case o.CloudProfile != nil:
			errs, _ := lifecycle.ValidateCloudProfileSpecAt(&o.CloudProfile.Spec, field.NewPath("spec"), t)
			add(o, errs)
		case o.NamespacedCloudProfile != nil:
			if merged := set.MergedSpec(o.NamespacedCloudProfile); merged != nil {
				errs, _ := lifecycle.ValidateCloudProfileSpecAt(merged, field.NewPath("status", "cloudProfileSpec"), t)
				add(o, errs)
			}
		}
	}
	return out
}

// Checker says what a change adds to the refusals of the profiles it
// starts from: the engine's own check of the profiles' files, offered to
// the deliveries for the profiles of each landscape as the repository
// builds them (an overlay's patches and its own policy applied), which the
// engine does not see.
type Checker struct {
	check *checker
}

// NewChecker checks changes of base under p (nil: the validation alone) at
// now.
func NewChecker(base []profile.Object, p *policy.Policy, now time.Time) *Checker {
	return &Checker{check: newChecker(base, p, now.UTC().Truncate(time.Second))}
}

// Refusals lists what after, the base with edits made, adds to the base's
// refusals now and at every instant the edits schedule, each a line naming
// the file, object and field and, for a later instant, when.
func (c *Checker) Refusals(after []profile.Object, edits []Edit) []string {
	return c.check.refusals(after, instantsOf(edits, c.check.now))
}
