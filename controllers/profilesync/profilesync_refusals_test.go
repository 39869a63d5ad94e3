package profilesync

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/types"

	v1alpha1 "github.com/profilesync/profilesync/api/v1alpha1"
	"github.com/profilesync/profilesync/test/builders"
)

func TestARefusalIsRememberedForItsAttempt(t *testing.T) {
	const recheck = 10 * time.Minute
	start := builders.Time("2026-01-01T00:00:00Z")
	attempt := refusalAttempt{revision: "main@sha1:1", generation: 1}
	build := buildFailed(errors.New("p.yaml: not a kustomization"))
	stopped := buildFailed(fmt.Errorf("kustomize build of . abandoned: %w", context.DeadlineExceeded))
	invalid := validationFailed(errors.New("p.yaml: CloudProfile/p: spec: invalid"))
	policy := policyViolation(errors.New("p.yaml: CloudProfile/p: the policy says no"))

	tests := []struct {
		name       string
		remembered error
		asked      refusalAttempt
		after      time.Duration
		want       bool
	}{
		{"a refused build is remembered for good", build, attempt, 1000 * time.Hour, true},
		{"a new revision is built again", build, refusalAttempt{revision: "main@sha1:2", generation: 1}, 0, false},
		{"a new spec is built again", build, refusalAttempt{revision: attempt.revision, generation: 2}, 0, false},
		{"a reconcile request builds again", build, refusalAttempt{revision: attempt.revision, generation: 1, requested: "now"}, 0, false},
		{"a build stopped at its deadline is tried again after the recheck", stopped, attempt, recheck, false},
		{"a build stopped at its deadline stands until the recheck", stopped, attempt, recheck - time.Second, true},
		{"a validation refusal stands until the recheck", invalid, attempt, recheck - time.Second, true},
		{"a validation refusal is checked again at the recheck", invalid, attempt, recheck, false},
		{"a policy refusal is checked again at the recheck", policy, attempt, recheck, false},
		{"a transient apply failure is not remembered", applyFailed(errors.New("apply: timeout")), attempt, 0, false},
		{"a failed fetch is not remembered", fetchFailed(errors.New("no such ref")), attempt, 0, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			var refusals syncMemories
			var remembered *syncError
			g.Expect(errors.As(tt.remembered, &remembered)).To(BeTrue())
			refusals.rememberRefusal(syncKey, attempt, remembered, start)
			got, ok := refusals.refused(syncKey, tt.asked, start.Add(tt.after), recheck)
			g.Expect(ok).To(Equal(tt.want))
			if tt.want {
				g.Expect(got.Error()).To(Equal(remembered.Error()))
				g.Expect(got.reason).To(Equal(remembered.reason))
				g.Expect(got.condition).To(Equal(remembered.condition))
				g.Expect(got.stalled).To(Equal(remembered.stalled))
			}
			_, other := refusals.refused(otherKey, tt.asked, start.Add(tt.after), recheck)
			g.Expect(other).To(BeFalse(), "another ProfileSync's refusal is its own")
		})
	}

	t.Run("a refusal repeated from memory keeps its first time", func(t *testing.T) {
		g := NewWithT(t)
		var refusals syncMemories
		var remembered *syncError
		g.Expect(errors.As(invalid, &remembered)).To(BeTrue())
		refusals.rememberRefusal(syncKey, attempt, remembered, start)
		again, ok := refusals.refused(syncKey, attempt, start.Add(recheck/2), recheck)
		g.Expect(ok).To(BeTrue())
		refusals.rememberRefusal(syncKey, attempt, again, start.Add(recheck/2))
		_, ok = refusals.refused(syncKey, attempt, start.Add(recheck), recheck)
		g.Expect(ok).To(BeFalse(), "checked again a recheck after the check, not after the last repeat")
	})
	t.Run("forget drops it", func(t *testing.T) {
		g := NewWithT(t)
		var refusals syncMemories
		var remembered *syncError
		g.Expect(errors.As(build, &remembered)).To(BeTrue())
		refusals.rememberRefusal(syncKey, attempt, remembered, start)
		refusals.forget(syncKey)
		_, ok := refusals.refused(syncKey, attempt, start, recheck)
		g.Expect(ok).To(BeFalse())
	})
	g := NewWithT(t)
	g.Expect(attemptOf(&v1alpha1.ProfileSync{}, "r")).To(Equal(refusalAttempt{revision: "r"}))
}

// TestARefusalIsKeptAsItsMessageNotItsProblems: a revision refused with a
// megabyte of problems is kept as the 8 KiB its condition shows. Refused
// again from memory, it shows the same message, and it is the failure
// reported already: no second event, no second count.
func TestARefusalIsKeptAsItsMessageNotItsProblems(t *testing.T) {
	g := NewWithT(t)
	var problems []string
	for i := range 10000 {
		problems = append(problems, fmt.Sprintf("profiles-%d.yaml: CloudProfile/p%d: spec.regions: Required value", i, i))
	}
	full := strings.Join(problems, "\n")
	g.Expect(len(full)).To(BeNumerically(">", 512<<10))
	var refused *syncError
	g.Expect(errors.As(contentFailed(fmt.Errorf("revision main@sha1:1: %w", errors.New(full))), &refused)).To(BeTrue())

	start := builders.Time("2026-01-01T00:00:00Z")
	attempt := refusalAttempt{revision: "main@sha1:1", generation: 1}
	var failures syncMemories
	g.Expect(failures.firstReport(syncKey, refused.reason, attempt.revision, refused)).To(BeTrue())
	var refusals syncMemories
	refusals.rememberRefusal(syncKey, attempt, refused, start)

	kept, ok := refusals.refused(syncKey, attempt, start.Add(time.Hour), 10*time.Minute)
	g.Expect(ok).To(BeTrue(), "a content refusal stands without a recheck")
	g.Expect(len(kept.Error())).To(BeNumerically("<=", maxMessageLength+128), "the refusal keeps what its condition shows")
	g.Expect(conditionMessage(kept)).To(Equal(conditionMessage(refused)), "the condition reads the same from memory")
	g.Expect(conditionMessage(kept)).To(MatchRegexp(`\.\.\. and 9\d\d\d more lines: run .profilesync build. on the revision to see them all$`))
	g.Expect(failures.firstReport(syncKey, kept.reason, attempt.revision, kept)).To(BeFalse(), "the same failure: no second event")
	g.Expect(dependsOnTime(kept)).To(BeFalse())
}

// syncKey and otherKey are two ProfileSyncs whose memories are their own.
var (
	syncKey  = types.NamespacedName{Namespace: "ns", Name: "sync"}
	otherKey = types.NamespacedName{Namespace: "ns", Name: "other"}
)
