package policy

import (
	"fmt"
	"slices"
	"sort"
	"time"

	v1alpha1 "github.com/profilesync/profilesync/api/v1alpha1"
	"github.com/profilesync/profilesync/internal/render/profile"
)

// Findings are a landscape's breaches of its policy, as problems located in
// the usual FILE: KIND/NAME: FIELD: message form, split by severity. Each
// message starts with "policy RULE: ".
type Findings struct {
	Errors   profile.Problems
	Warnings profile.Problems
}

// Empty reports whether there is nothing to report.
func (f Findings) Empty() bool { return len(f.Errors) == 0 && len(f.Warnings) == 0 }

func (f *Findings) add(severity Severity, p profile.Problem) {
	if severity == SeverityError {
		f.Errors = append(f.Errors, p)
	} else {
		f.Warnings = append(f.Warnings, p)
	}
}

// Check checks one landscape's profiles, head, against the policy at now.
// head holds the profiles as profile.Set.Evaluate returns them (a
// NamespacedCloudProfile with its merged spec, which is what the policy
// reads). base, when not nil, is the landscape's profiles before the change,
// made by a commit at commit: the notice rule compares them, matching
// profiles by kind, namespace and name; without base it is not checked.
//
// A NamespacedCloudProfile is reported under status.cloudProfileSpec, and
// only for what its parent, when head holds it, does not already break the
// same way: the parent's finding is the one to fix.
func (p *Policy) Check(head, base []profile.Object, now, commit time.Time) Findings {
	var out Findings
	if p == nil {
		return out
	}
	baseByRef := make(map[string]*v1alpha1.CloudProfileSpec, len(base))
	for _, o := range base {
		if spec := o.EffectiveSpec(); spec != nil {
			if _, seen := baseByRef[o.Ref()]; !seen {
				baseByRef[o.Ref()] = spec
			}
		}
	}
	parents := make(map[string][]finding)
	findingsOf := func(o profile.Object) []finding {
		spec := o.EffectiveSpec()
		findings := p.checkSpec(spec, now)
		if r := p.Rules.Notice; r != nil && base != nil {
			if old, ok := baseByRef[o.Ref()]; ok {
				findings = append(findings, r.check(old, spec, commit)...)
			}
		}
		return findings
	}
	for _, o := range head {
		if o.CloudProfile != nil {
			if _, seen := parents[o.Name()]; !seen {
				parents[o.Name()] = findingsOf(o)
			}
		}
	}
	reported := make(map[string]bool)
	for _, o := range head {
		if o.EffectiveSpec() == nil {
			continue
		}
		prefix := "spec"
		var findings, parentFindings []finding
		if o.CloudProfile != nil {
			if reported[o.Ref()] {
				continue
			}
			reported[o.Ref()] = true
			findings = parents[o.Name()]
		} else {
			prefix = "status.cloudProfileSpec"
			findings = findingsOf(o)
			parentFindings = parents[o.NamespacedCloudProfile.Spec.Parent.Name]
		}
		for _, f := range findings {
			if slices.ContainsFunc(parentFindings, f.same) {
				continue
			}
			out.add(f.severity, o.ProblemAt(prefix+"."+f.field.String(), "policy "+f.rule+": "+f.message))
		}
	}
	return out
}

func (f finding) same(other finding) bool {
	return f.rule == other.rule && f.severity == other.severity && f.message == other.message && f.field.String() == other.field.String()
}

// DatedFinding is a finding and the time from which it holds.
type DatedFinding struct {
	At       time.Time
	Severity Severity
	Problem  profile.Problem
}

// Timeline lists when head, left as it is, starts breaking the policy: the
// findings Check reports at from, then each finding that is new at a later
// instant up to until (no bound when zero), in time order. The instants
// checked are the only ones at which a finding can appear: every lifecycle
// stage start of every version, and the end of every preview stage's allowed
// time. The notice rule is about changes and takes no part.
func (p *Policy) Timeline(head []profile.Object, from, until time.Time) []DatedFinding {
	if p == nil {
		return nil
	}
	instants := p.instants(head, from, until)
	var dated []DatedFinding
	var previous map[string]bool
	for _, t := range instants {
		findings := p.Check(head, nil, t, t)
		current := make(map[string]bool)
		note := func(severity Severity, problems profile.Problems) {
			for _, problem := range problems {
				key := string(severity) + " " + problem.String()
				if !previous[key] && !current[key] {
					dated = append(dated, DatedFinding{At: t, Severity: severity, Problem: problem})
				}
				current[key] = true
			}
		}
		note(SeverityError, findings.Errors)
		note(SeverityWarning, findings.Warnings)
		previous = current
	}
	return dated
}

// NextChange is the earliest instant after from at which the findings of
// head at from may change (one of the instants Timeline checks); ok is false
// when there is none, or no policy: the findings then stand whatever the
// time. The notice rule compares with the commit's time, not with now, and
// takes no part. The sync remembers a revision's verdict until then.
func (p *Policy) NextChange(head []profile.Object, from time.Time) (at time.Time, ok bool) {
	if p == nil {
		return time.Time{}, false
	}
	instants := p.instants(head, from, time.Time{})
	if len(instants) < 2 {
		return time.Time{}, false
	}
	return instants[1], true
}

// instants returns from and every instant after it, up to until unless that
// is zero, at which the findings of head may change, sorted and each once.
func (p *Policy) instants(head []profile.Object, from, until time.Time) []time.Time {
	set := map[time.Time]bool{}
	add := func(t time.Time) {
		if t.After(from) && (until.IsZero() || !t.After(until)) {
			set[t.UTC()] = true
		}
	}
	var previewDays *int
	if p.Rules.Preview != nil {
		previewDays = p.Rules.Preview.MaxDays
	}
	for _, o := range head {
		spec := o.EffectiveSpec()
		if spec == nil {
			continue
		}
		for _, s := range subjectsOf(spec) {
			for _, v := range s.versions {
				for _, stage := range v.v.Lifecycle {
					if stage.StartTime == nil {
						continue
					}
					add(stage.StartTime.Time)
					if previewDays != nil && stage.Classification == v1alpha1.ClassificationPreview {
						add(stage.StartTime.Add(days(*previewDays)))
					}
				}
				if v.v.ExpirationDate != nil {
					add(v.v.ExpirationDate.Time)
				}
			}
		}
	}
	instants := make([]time.Time, 0, 1+len(set))
	instants = append(instants, from)
	for t := range set {
		instants = append(instants, t)
	}
	sort.Slice(instants[1:], func(i, j int) bool { return instants[1+i].Before(instants[1+j]) })
	return instants
}

// DefaultHorizon is how far ahead of a revision's time 'build' and 'diff'
// look for policy errors that time alone will bring (--policy-horizon):
// half a year, the horizon 'diff' compares classifications over, which is
// longer than a version's usual deprecation notice and than the time a
// pull request stays open, so a change that schedules a refusal fails its
// own pull request, while the planned end of a minor years ahead does not
// fail every unrelated one.
const DefaultHorizon = 180 * day

// ScheduledErrors returns the findings of severity error that head, left as
// it is, starts to have after now and up to until: from each of those
// instants the operator refuses every new revision of the landscape that
// still has them. Each problem's message starts with "from DATE" so that the
// date, the rule ("policy RULE: "), the object and the field are all on its
// line. Errors head already has at now are Check's, not repeated here.
func (p *Policy) ScheduledErrors(head []profile.Object, now, until time.Time) profile.Problems {
	var out profile.Problems
	for _, f := range p.Timeline(head, now, until) {
		if f.Severity != SeverityError || !f.At.After(now) {
			continue
		}
		problem := f.Problem
		problem.Message = fmt.Sprintf("from %s (%s after %s) the operator refuses every revision with this: %s",
			formatTime(f.At), formatDuration(f.At.Sub(now)), formatTime(now), problem.Message)
		out = append(out, problem)
	}
	return out
}
