package policy

import (
	"fmt"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/util/validation/field"

	v1alpha1 "github.com/profilesync/profilesync/api/v1alpha1"
	"github.com/profilesync/profilesync/internal/lifecycle"
)

// Rule names, as the policy file and the findings name them.
const (
	RuleSupported     = "supported"
	RulePreview       = "preview"
	RuleDeprecation   = "deprecation"
	RuleNotice        = "notice"
	RuleForcedUpdates = "forcedUpdates"
)

// finding is one place where a spec breaks a rule; field is relative to the
// spec.
type finding struct {
	rule     string
	severity Severity
	field    *field.Path
	message  string
}

// checkSpec applies every rule that reads one spec at time at (all but
// notice) and returns the findings in rule order.
func (p *Policy) checkSpec(spec *v1alpha1.CloudProfileSpec, at time.Time) []finding {
	subjects := subjectsOf(spec)
	var findings []finding
	if r := p.Rules.Supported; r != nil {
		findings = append(findings, r.check(subjects, at)...)
	}
	if r := p.Rules.Preview; r != nil {
		findings = append(findings, r.check(subjects[0], at)...)
	}
	if r := p.Rules.Deprecation; r != nil {
		findings = append(findings, r.check(subjects, at)...)
	}
	if r := p.Rules.ForcedUpdates; r != nil {
		findings = append(findings, r.check(spec, subjects, at)...)
	}
	return findings
}

// check applies the supported rule: in the newest released groups of each
// subject (minors for Kubernetes) exactly one version is supported at at. A
// group counts as released once one of its versions is supported or later,
// so a minor still in preview does not take a place among the newest, and an
// expired minor still listed does.
func (r *SupportedRule) check(subjects []subject, at time.Time) []finding {
	var findings []finding
	for _, s := range subjects {
		n, unit, units := r.Minors, "minor", "minors"
		if !s.kubernetes() {
			n, unit, units = r.MachineImageGroups, "group of "+s.image, "groups of "+s.image
		}
		if n == 0 {
			continue
		}
		newest := "the newest " + unit + " needs"
		if n > 1 {
			newest = fmt.Sprintf("each of the newest %d %s needs", n, units)
		}
		var released []group
		for _, g := range groupsOf(s) {
			for _, v := range g.versions {
				if v.releasedAt(at) {
					released = append(released, g)
					break
				}
			}
		}
		for _, g := range released[:min(n, len(released))] {
			var supported []version
			for _, v := range g.versions {
				if v.classificationAt(at) == v1alpha1.ClassificationSupported {
					supported = append(supported, v)
				}
			}
			switch len(supported) {
			case 0:
				findings = append(findings, finding{rule: RuleSupported, severity: r.Severity, field: g.highest().path,
					message: fmt.Sprintf("%s has no supported %s; %s exactly one", g.label, s.memberName(), newest)})
			case 1:
			default:
				latest := supported[len(supported)-1]
				for _, v := range supported[:len(supported)-1] {
					findings = append(findings, finding{rule: RuleSupported, severity: r.Severity, field: v.path,
						message: fmt.Sprintf("%s is supported as well as %s; %s needs exactly one supported %s", s.versionLabel(v.String()), latest, g.label, s.memberName())})
				}
			}
		}
	}
	return findings
}

// memberName is what a version of the subject is called within its group.
func (s subject) memberName() string {
	if s.kubernetes() {
		return "patch"
	}
	return "version"
}

// check applies the preview rule to the Kubernetes versions at at: at most
// MaxMinors minors in preview (a preview version and no version supported or
// later), and none for more than MaxDays days before a version of it becomes
// supported. A minor's preview starts with the earliest preview stage of its
// versions; one that starts since always (no startTime, or the deprecated
// classification field) cannot be measured, so it is only reported when no
// supported stage is scheduled at all.
func (r *PreviewRule) check(kubernetes subject, at time.Time) []finding {
	var findings []finding
	var inPreview []string
	for _, g := range groupsOf(kubernetes) {
		previewNow, releasedNow := false, false
		var first *version
		firstIndex := 0
		var previewStart time.Time
		supportStart, supportScheduled := time.Time{}, false
		for _, v := range g.versions {
			c := v.classificationAt(at)
			previewNow = previewNow || c == v1alpha1.ClassificationPreview
			releasedNow = releasedNow || v.releasedAt(at)
			for i, s := range lifecycle.Stages(*v.v) {
				if s.Classification != v1alpha1.ClassificationPreview {
					continue
				}
				start := time.Time{}
				if s.StartTime != nil {
					start = s.StartTime.Time
				}
				if first == nil || start.Before(previewStart) {
					first, firstIndex, previewStart = &v, i, start
				}
			}
			if start, _, ok := v.reach(v1alpha1.ClassificationSupported); ok && (!supportScheduled || start.Before(supportStart)) {
				supportStart, supportScheduled = start, true
			}
		}
		if previewNow && !releasedNow {
			inPreview = append(inPreview, strings.TrimPrefix(g.label, "minor "))
		}
		if r.MaxDays == nil || first == nil || (supportScheduled && !supportStart.After(at)) {
			continue
		}
		limit := days(*r.MaxDays)
		path := first.stagePath(firstIndex)
		switch {
		case previewStart.IsZero() && !supportScheduled && previewNow:
			findings = append(findings, finding{rule: RulePreview, severity: r.Severity, field: path,
				message: fmt.Sprintf("%s is in preview with no start time and no supported stage scheduled; the policy allows at most %dd in preview", g.label, *r.MaxDays)})
		case previewStart.IsZero():
		case supportScheduled && supportStart.Sub(previewStart) > limit:
			findings = append(findings, finding{rule: RulePreview, severity: r.Severity, field: path,
				message: fmt.Sprintf("%s is in preview for %s, from %s until a version of it becomes supported on %s; the policy allows at most %dd",
					g.label, formatDuration(supportStart.Sub(previewStart)), formatTime(previewStart), formatTime(supportStart), *r.MaxDays)})
		case !supportScheduled && !at.Before(previewStart.Add(limit)):
			findings = append(findings, finding{rule: RulePreview, severity: r.Severity, field: path,
				message: fmt.Sprintf("%s has been in preview since %s, %dd or longer, and no version of it is scheduled to become supported; the policy allows at most %dd",
					g.label, formatTime(previewStart), *r.MaxDays, *r.MaxDays)})
		}
	}
	if r.MaxMinors != nil && len(inPreview) > *r.MaxMinors {
		findings = append(findings, finding{rule: RulePreview, severity: r.Severity, field: kubernetes.path,
			message: fmt.Sprintf("%d minors are in preview (%s); the policy allows at most %d", len(inPreview), strings.Join(inPreview, ", "), *r.MaxMinors)})
	}
	return findings
}

// check applies the deprecation rule at at: with OlderPatches, every version
// below the latest released version of its group (a Kubernetes minor) is
// deprecated or has its deprecation scheduled; with RequireExpiry, every
// version that is ever deprecated expires at some date. Machine images are
// checked only with MachineImages.
func (r *DeprecationRule) check(subjects []subject, at time.Time) []finding {
	var findings []finding
	for _, s := range subjects {
		if !s.kubernetes() && !r.MachineImages {
			continue
		}
		if r.OlderPatches {
			for _, g := range groupsOf(s) {
				latest := -1
				for i, v := range g.versions {
					if v.releasedAt(at) {
						latest = i
					}
				}
				for _, v := range g.versions[:max(latest, 0)] {
					if _, _, ok := v.reach(v1alpha1.ClassificationDeprecated); !ok {
						findings = append(findings, finding{rule: RuleDeprecation, severity: r.Severity, field: v.path,
							message: fmt.Sprintf("%s is older than %s, the latest released %s of %s, and is never deprecated; schedule its deprecation",
								s.versionLabel(v.String()), g.versions[latest], s.memberName(), g.label)})
					}
				}
			}
		}
		if r.RequireExpiry {
			for _, v := range s.versions {
				start, index, deprecated := v.reach(v1alpha1.ClassificationDeprecated)
				if _, _, expires := v.reach(v1alpha1.ClassificationExpired); deprecated && !expires {
					findings = append(findings, finding{rule: RuleDeprecation, severity: r.Severity, field: v.stagePath(index),
						message: fmt.Sprintf("%s is deprecated %s but never expires; give it an expiry", s.versionLabel(v.String()), since(start))})
				}
			}
		}
	}
	return findings
}

// since describes the start of a stage: "from 2026-12-01T00:00:00Z", or
// "since always" without a start.
func since(start time.Time) string {
	if start.IsZero() {
		return "since always"
	}
	return "from " + formatTime(start)
}

// check applies the forced-updates rule at at: for every version whose
// expiry is scheduled after at, the chain of moves a cluster on it that takes
// no automatic updates goes through then (lifecycle.ForcedChain), reported
// when it crosses a minor (for an image, a group of its update strategy):
// once with Severity, more than once as an error. Versions expiring at the
// same time with the same onward chain are one finding, on the highest of
// them. A Kubernetes expiry that leaves such clusters nowhere to go is an
// error; an image with update strategy major has no forced path (its end of
// life), nor has an image whose latest version expires, and neither is
// reported.
func (r *ForcedUpdatesRule) check(spec *v1alpha1.CloudProfileSpec, subjects []subject, at time.Time) []finding {
	var findings []finding
	for _, s := range subjects {
		if !s.kubernetes() && s.strategy == v1alpha1.UpdateStrategyMajor {
			continue
		}
		for _, f := range forcedExpiries(spec, s, at) {
			also := ""
			if len(f.others) > 0 {
				also = fmt.Sprintf(" (so do %s)", strings.Join(f.others, ", "))
			}
			label := s.versionLabel(f.version.String())
			if f.deadEnd != nil {
				findings = append(findings, finding{rule: RuleForcedUpdates, severity: SeverityError, field: f.version.stagePath(f.index),
					message: fmt.Sprintf("on %s %s expires%s and clusters on it have nowhere to go: %v", formatTime(f.expiry), label, also, f.deadEnd)})
				continue
			}
			severity := r.Severity
			if f.crossed > 1 {
				severity = SeverityError
			}
			findings = append(findings, finding{rule: RuleForcedUpdates, severity: severity, field: f.version.stagePath(f.index),
				message: fmt.Sprintf("on %s %s expires%s and forces clusters that take no automatic updates across %d %s: %s",
					formatTime(f.expiry), label, also, f.crossed, s.groupUnit(f.crossed), f.chain)})
		}
	}
	return findings
}

// forcedExpiry is a scheduled expiry that forces clusters across groups, or
// leaves them nowhere to go.
type forcedExpiry struct {
	version version
	// index is the expired stage's index in lifecycle form.
	index  int
	expiry time.Time
	// chain is the version and every move from it, "1.30.5 → 1.31.9".
	chain string
	// crossed counts the forced moves.
	crossed int
	// deadEnd is lifecycle's error when the chain ends nowhere.
	deadEnd error
	// others are lower versions expiring at the same time with the same
	// onward chain.
	others []string
}

// forcedExpiries lists the expiries of s after at that force clusters across
// a group or leave them nowhere to go, in version order, one per expiry time
// and onward chain. Machine images leaving clusters nowhere are left out:
// an image may reach its end of life.
func forcedExpiries(spec *v1alpha1.CloudProfileSpec, s subject, at time.Time) []*forcedExpiry {
	byKey := map[string]*forcedExpiry{}
	var order []*forcedExpiry
	for _, v := range s.versions {
		expiry, index, ok := v.reach(v1alpha1.ClassificationExpired)
		if !ok || !expiry.After(at) {
			continue
		}
		steps, err := lifecycle.ForcedChain(spec, s.updateSubject(v.String()), expiry)
		if err != nil && !s.kubernetes() {
			continue
		}
		crossed := 0
		chain := v.String()
		var onward []string
		for _, step := range steps {
			if step.Forced {
				crossed++
			}
			if crossed > 0 {
				onward = append(onward, step.Version)
			}
			chain += " → " + step.Version
		}
		if crossed == 0 && err == nil {
			continue
		}
		// Lower patches expiring with the highest one first move up to it
		// within the group and from there on the same way.
		key := formatTime(expiry) + " " + strings.Join(onward, " ")
		if err != nil {
			key += " " + err.Error()
		}
		if f, seen := byKey[key]; seen {
			lower := v.String()
			if v.semver.GreaterThan(f.version.semver) {
				lower = f.version.String()
				f.version, f.index, f.chain = v, index, chain
			}
			f.others = append(f.others, lower)
			continue
		}
		f := &forcedExpiry{version: v, index: index, expiry: expiry, chain: chain, crossed: crossed, deadEnd: err}
		byKey[key] = f
		order = append(order, f)
	}
	return order
}
