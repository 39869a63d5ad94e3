package profilesync

import (
	"errors"
	"fmt"
	"testing"

	"k8s.io/apimachinery/pkg/types"
)

func TestAFailureIsReportedOnceUntilItChanges(t *testing.T) {
	refused := errors.New("connect: connection refused")
	timeout := errors.New("etcd: request timed out")
	var f syncMemories
	nsA, nsB := types.NamespacedName{Namespace: "ns", Name: "a"}, types.NamespacedName{Namespace: "ns", Name: "b"}
	steps := []struct {
		key              types.NamespacedName
		reason, revision string
		err              error
		forget           bool
		want             bool
	}{
		{key: nsA, reason: "ApplyFailed", revision: "r1", err: fmt.Errorf("apply CloudProfile/aws: %w", refused), want: true},
		{key: nsA, reason: "ApplyFailed", revision: "r1", err: fmt.Errorf("apply CloudProfile/gcp: %w", refused), want: false},
		{key: nsB, reason: "ApplyFailed", revision: "r1", err: fmt.Errorf("apply CloudProfile/aws: %w", refused), want: true},
		{key: nsA, reason: "ApplyFailed", revision: "r1", err: fmt.Errorf("apply CloudProfile/aws: %w", timeout), want: true},
		{key: nsA, reason: "ApplyFailed", revision: "r2", err: fmt.Errorf("apply CloudProfile/aws: %w", timeout), want: true},
		{key: nsA, reason: "FetchFailed", revision: "r2", err: fmt.Errorf("apply CloudProfile/aws: %w", timeout), want: true},
		{key: nsA, forget: true},
		{key: nsA, reason: "FetchFailed", revision: "r2", err: fmt.Errorf("apply CloudProfile/aws: %w", timeout), want: true},
	}
	for i, s := range steps {
		if s.forget {
			f.forget(s.key)
			continue
		}
		if got := f.firstReport(s.key, s.reason, s.revision, s.err); got != s.want {
			t.Errorf("step %d: firstReport(%s, %s, %s, %v) = %v, want %v", i, s.key, s.reason, s.revision, s.err, got, s.want)
		}
	}
}

func TestFailureCauseIsTheInnermostError(t *testing.T) {
	refused := errors.New("connection refused")
	if got := failureCause(fmt.Errorf("apply x: %w", fmt.Errorf("patch: %w", refused))); got != "connection refused" {
		t.Errorf("wrapped twice: %q", got)
	}
	joined := errors.Join(errors.New("a"), errors.New("b"))
	if got := failureCause(fmt.Errorf("sync: %w", joined)); got != "a\nb" {
		t.Errorf("joined: %q", got)
	}
}
