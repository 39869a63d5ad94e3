package policy

import (
	"fmt"
	"time"

	v1alpha1 "github.com/profilesync/profilesync/api/v1alpha1"
)

// noticeStages are the stage changes the notice rule guards: the ones that
// take something away from clusters.
var noticeStages = []v1alpha1.VersionClassification{v1alpha1.ClassificationDeprecated, v1alpha1.ClassificationExpired}

// check applies the notice rule to a change of one profile from base to
// head made by a commit at commit: for every version on both sides (matched
// by version, machine images by name), the time it becomes deprecated, and
// the time it expires, may not come earlier in head than in base (or be new
// in head) unless it is at least Days days after commit. A stage base
// already had in effect at commit is history, and moving it changes nothing
// for clusters. Versions only head has are new: no cluster runs them yet.
func (r *NoticeRule) check(base, head *v1alpha1.CloudProfileSpec, commit time.Time) []finding {
	baseSubjects := map[string]subject{}
	for _, s := range subjectsOf(base) {
		baseSubjects[s.image] = s
	}
	required := commit.Add(days(r.Days))
	var findings []finding
	for _, s := range subjectsOf(head) {
		before, ok := baseSubjects[s.image]
		if !ok {
			continue
		}
		baseVersions := make(map[string]version, len(before.versions))
		for _, v := range before.versions {
			baseVersions[v.String()] = v
		}
		for _, v := range s.versions {
			old, ok := baseVersions[v.String()]
			if !ok {
				continue
			}
			for _, c := range noticeStages {
				start, index, scheduled := v.reach(c)
				// A version that goes straight to expired is reported once,
				// for its expiry.
				if !scheduled || (c != v1alpha1.ClassificationExpired && v.stage(index).Classification == v1alpha1.ClassificationExpired) {
					continue
				}
				oldStart, _, oldScheduled := old.reach(c)
				if oldScheduled && (!start.Before(oldStart) || !oldStart.After(commit)) {
					continue
				}
				if !start.Before(required) {
					continue
				}
				was := "was not scheduled"
				if oldScheduled {
					was = "was " + formatTime(oldStart)
				}
				when := fmt.Sprintf("on %s, %s after the commit (%s)", formatTime(start), formatDuration(start.Sub(commit)), formatTime(commit))
				if start.IsZero() {
					when = "at once (no start time)"
				} else if !start.After(commit) {
					when = fmt.Sprintf("on %s, before the commit (%s)", formatTime(start), formatTime(commit))
				}
				findings = append(findings, finding{rule: RuleNotice, severity: r.Severity, field: v.stagePath(index),
					message: fmt.Sprintf("%s becomes %s %s (%s); the policy requires %dd notice, so not before %s",
						s.versionLabel(v.String()), c, when, was, r.Days, formatTime(required))})
			}
		}
	}
	return findings
}
