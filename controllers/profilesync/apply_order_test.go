package profilesync

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

func namedChanges(names ...string) []applyChange {
	changes := make([]applyChange, len(names))
	for i, name := range names {
		changes[i].desired = &unstructured.Unstructured{}
		changes[i].desired.SetName(name)
	}
	return changes
}

// TestForEachChangeReportsTheFirstFailingChangeInOrder: of writes that fail
// together, the error is the first change's in order, not the first to
// answer, so a stage that fails the same way at every retry says the same
// thing (and the status is not rewritten).
func TestForEachChangeReportsTheFirstFailingChangeInOrder(t *testing.T) {
	r := &ProfileSyncReconciler{ApplyConcurrency: 4}
	for range 20 {
		err := r.forEachChange(context.Background(), namedChanges("gcp", "aws", "azure"), func(_ context.Context, c applyChange) error {
			switch c.desired.GetName() {
			case "gcp":
				// The first in order answers last.
				time.Sleep(20 * time.Millisecond)
				return errors.New("gcp refused")
			case "aws":
				return errors.New("aws refused")
			}
			return nil
		})
		if err == nil || err.Error() != "gcp refused" {
			t.Fatalf("forEachChange() = %v, want the error of gcp, the first change", err)
		}
	}
}

// TestForEachChangeStartsNothingAfterAFailure: a failure stops the writes
// not started yet.
func TestForEachChangeStartsNothingAfterAFailure(t *testing.T) {
	r := &ProfileSyncReconciler{ApplyConcurrency: 1}
	var started atomic.Int32
	err := r.forEachChange(context.Background(), namedChanges("a", "b", "c", "d"), func(_ context.Context, c applyChange) error {
		started.Add(1)
		if c.desired.GetName() == "b" {
			return errors.New("b refused")
		}
		return nil
	})
	if err == nil || err.Error() != "b refused" {
		t.Fatalf("forEachChange() = %v, want b's error", err)
	}
	if got := started.Load(); got != 2 {
		t.Fatalf("%d writes started, want 2: none after the failure", got)
	}
	if err := r.forEachChange(context.Background(), namedChanges("a", "b"), func(context.Context, applyChange) error { return nil }); err != nil {
		t.Fatalf("forEachChange() = %v, want nil", err)
	}
}
