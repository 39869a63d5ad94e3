package profilesync

import (
	"context"
	"errors"
	"reflect"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/types"
	clocktesting "k8s.io/utils/clock/testing"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	v1alpha1 "github.com/profilesync/profilesync/api/v1alpha1"
	"github.com/profilesync/profilesync/internal/gitsource"
	"github.com/profilesync/profilesync/internal/syncplan"
	"github.com/profilesync/profilesync/test/builders"
	"github.com/profilesync/profilesync/test/testenv"
)

// everyFieldSet fails the test for each field of memory, and each field of
// those that are structs (a time is one value), left at its zero value.
func everyFieldSet(t *testing.T, memory syncMemory) {
	t.Helper()
	v := reflect.ValueOf(memory)
	for i := range v.NumField() {
		field, name := v.Field(i), v.Type().Field(i).Name
		if field.Kind() != reflect.Struct {
			if field.IsZero() {
				t.Errorf("syncMemory.%s is not filled by the test: fill it, so that forgetting it is tested", name)
			}
			continue
		}
		for j := range field.NumField() {
			if field.Field(j).IsZero() {
				t.Errorf("syncMemory.%s.%s is not filled by the test: fill it, so that forgetting it is tested", name, field.Type().Field(j).Name)
			}
		}
	}
}

// TestDeletingAProfileSyncForgetsEverythingItRemembers fills everything the
// process remembers of two ProfileSyncs through the reconciler's own calls,
// checks by reflection that no field of their memory is left empty (a field
// added to syncMemory that this test does not fill fails it), then deletes
// one: its one Reconcile forgets all of it in one call, every topic and
// its decoded revision included, and the other keeps its own.
func TestDeletingAProfileSyncForgetsEverythingItRemembers(t *testing.T) {
	g := NewWithT(t)
	now := builders.Time("2026-01-01T00:00:00Z")
	scheme, err := testenv.NewScheme()
	g.Expect(err).NotTo(HaveOccurred())
	fetcher, err := gitsource.New(t.TempDir(), gitsource.FetcherOptions{})
	g.Expect(err).NotTo(HaveOccurred())
	r := &ProfileSyncReconciler{
		Client:  fake.NewClientBuilder().WithScheme(scheme).Build(),
		Fetcher: fetcher,
		Clock:   clocktesting.NewFakePassiveClock(now),
	}
	var refused *syncError
	g.Expect(errors.As(buildFailed(errors.New("kustomization.yaml: no such file")), &refused)).To(BeTrue())
	attempt := refusalAttempt{revision: "main@sha1:1", generation: 1}
	topics := []eventTopic{
		{kind: topicDrift}, {kind: topicHeld}, {kind: topicHoldRefused}, {kind: topicHoldIgnored},
		{kind: topicRolloutHold}, {kind: topicRecordPush}, {kind: topicIgnoredRecords, upstream: "dev"},
	}
	remember := func(key types.NamespacedName) {
		g.Expect(r.memory.firstReport(key, refused.reason, attempt.revision, refused)).To(BeTrue())
		r.memory.rememberRefusal(key, attempt, refused, now)
		for _, topic := range topics {
			g.Expect(r.memory.fresh(key, topic, []string{"CloudProfile/aws"})).To(HaveLen(1))
		}
		r.memory.setWake(key, now.Add(time.Hour))
		g.Expect(r.memory.failedPush(key)).To(Equal(1))
		g.Expect(r.decoded.put(key.String(), decodedRevision{revision: attempt.revision}, 1<<20)).To(BeTrue())
		r.memory.setChecked(key, &checkedRevision{attempt: attempt, at: now})
		r.memory.setUpToDate(key, syncplan.UpToDate{{Kind: v1alpha1.CloudProfileKind, Name: "aws"}: {ResourceVersion: "1", Digest: "sha256:1"}})
	}
	gone := types.NamespacedName{Namespace: "landscape", Name: "gone"}
	kept := types.NamespacedName{Namespace: "landscape", Name: "kept"}
	remember(gone)
	remember(kept)
	r.memory.with(gone, func(m *syncMemory) {
		everyFieldSet(t, *m)
		g.Expect(m.reported.last).To(HaveLen(len(topics)), "each topic is a key of its own")
	})

	_, err = r.Reconcile(context.Background(), ctrl.Request{NamespacedName: gone})
	g.Expect(err).NotTo(HaveOccurred())

	r.memory.mu.Lock()
	_, remembered := r.memory.of[gone]
	_, other := r.memory.of[kept]
	r.memory.mu.Unlock()
	g.Expect(remembered).To(BeFalse(), "the deleted ProfileSync's memory is gone")
	g.Expect(other).To(BeTrue(), "another ProfileSync keeps its memory")
	_, decoded := r.decoded.get(gone.String(), attempt.revision, "")
	g.Expect(decoded).To(BeFalse(), "its decoded revision is gone")
	_, decoded = r.decoded.get(kept.String(), attempt.revision, "")
	g.Expect(decoded).To(BeTrue())

	// Through the reconciler's calls, the deleted ProfileSync is one never seen.
	g.Expect(r.memory.firstReport(gone, refused.reason, attempt.revision, refused)).To(BeTrue(), "its failure is reported again")
	_, ok := r.memory.refused(gone, attempt, now, time.Hour)
	g.Expect(ok).To(BeFalse(), "its refusal is gone")
	for _, topic := range topics {
		g.Expect(r.memory.fresh(gone, topic, []string{"CloudProfile/aws"})).To(HaveLen(1), "topic %v is reported again", topic)
	}
	g.Expect(r.memory.wake(gone)).To(BeZero())
	g.Expect(r.memory.failedPush(gone)).To(Equal(1), "its failed pushes count from one again")
	_, ok = r.memory.checkedStands(gone, func(*checkedRevision) bool { return true })
	g.Expect(ok).To(BeFalse(), "its checked revision is gone: the next sync checks it")
	g.Expect(r.memory.upToDate(gone)).To(BeEmpty(), "what its last plan found up to date is gone: the next plan compares every object")
	_, ok = r.memory.refused(kept, attempt, now, time.Hour)
	g.Expect(ok).To(BeTrue(), "the other's refusal stands")
}

// TestEventTopicsAreKeptApart: the lines of one topic are reported once
// until they change, and the same line under another topic, or under the
// records of another upstream landscape, is news of its own.
func TestEventTopicsAreKeptApart(t *testing.T) {
	g := NewWithT(t)
	var memory syncMemories
	key := types.NamespacedName{Namespace: "landscape", Name: "prod"}
	line := []string{"CloudProfile/aws"}
	g.Expect(memory.fresh(key, eventTopic{kind: topicHoldRefused}, line)).To(Equal(line))
	g.Expect(memory.fresh(key, eventTopic{kind: topicHoldRefused}, line)).To(BeEmpty(), "reported once")
	g.Expect(memory.fresh(key, eventTopic{kind: topicHoldIgnored}, line)).To(Equal(line), "another topic")
	g.Expect(memory.fresh(key, eventTopic{kind: topicIgnoredRecords, upstream: "dev"}, line)).To(Equal(line))
	g.Expect(memory.fresh(key, eventTopic{kind: topicIgnoredRecords, upstream: "staging"}, line)).To(Equal(line), "another upstream")
	g.Expect(memory.fresh(key, eventTopic{kind: topicHoldRefused}, nil)).To(BeEmpty())
	g.Expect(memory.fresh(key, eventTopic{kind: topicHoldRefused}, line)).To(Equal(line), "news again once it had ended")
	g.Expect(memory.fresh(types.NamespacedName{Namespace: "landscape", Name: "dev"}, eventTopic{kind: topicHoldIgnored}, line)).To(Equal(line), "another ProfileSync")
}

// TestSucceededEndsTheFailureAndTheRefusalOnly: a sync that applies ends
// the failure reported and the refusal kept; what it reported about holds,
// drift and records, and its rollout's wake, stay.
func TestSucceededEndsTheFailureAndTheRefusalOnly(t *testing.T) {
	g := NewWithT(t)
	var memory syncMemories
	key := types.NamespacedName{Namespace: "landscape", Name: "prod"}
	now := builders.Time("2026-01-01T00:00:00Z")
	var refused *syncError
	g.Expect(errors.As(buildFailed(errors.New("kustomization.yaml: no such file")), &refused)).To(BeTrue())
	attempt := refusalAttempt{revision: "main@sha1:1"}
	memory.firstReport(key, refused.reason, attempt.revision, refused)
	memory.rememberRefusal(key, attempt, refused, now)
	memory.fresh(key, eventTopic{kind: topicDrift}, []string{"CloudProfile/aws"})
	memory.setWake(key, now.Add(time.Hour))

	memory.succeeded(key)
	g.Expect(memory.firstReport(key, refused.reason, attempt.revision, refused)).To(BeTrue())
	_, ok := memory.refused(key, attempt, now, time.Hour)
	g.Expect(ok).To(BeFalse())
	g.Expect(memory.fresh(key, eventTopic{kind: topicDrift}, []string{"CloudProfile/aws"})).To(BeEmpty())
	g.Expect(memory.wake(key)).To(Equal(now.Add(time.Hour)))
}
