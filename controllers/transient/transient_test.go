package transient

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"syscall"
	"testing"
	"time"

	. "github.com/onsi/gomega"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apimachinery/pkg/util/wait"
)

type timeoutErr struct{}

func (timeoutErr) Error() string   { return "i/o timeout" }
func (timeoutErr) Timeout() bool   { return true }
func (timeoutErr) Temporary() bool { return true }

func TestIsTransient(t *testing.T) {
	resource := schema.GroupResource{Group: "core.profilesync.io", Resource: "cloudprofiles"}
	refused := &net.OpError{Op: "dial", Net: "tcp", Err: os.NewSyscallError("connect", syscall.ECONNREFUSED)}
	for _, tc := range []struct {
		name string
		err  error
		want bool
	}{
		{"nil", nil, false},
		{"429", apierrors.NewTooManyRequests("slow down", 1), true},
		{"500", apierrors.NewInternalError(errors.New("etcd")), true},
		{"503", apierrors.NewServiceUnavailable("starting"), true},
		{"504", apierrors.NewTimeoutError("slow", 1), true},
		{"server timeout", apierrors.NewServerTimeout(resource, "patch", 1), true},
		{"409", apierrors.NewConflict(resource, "aws", errors.New("changed")), true},
		{"connection refused", fmt.Errorf("patch: %w", refused), true},
		{"connection reset", fmt.Errorf("patch: %w", os.NewSyscallError("read", syscall.ECONNRESET)), true},
		{"EOF", &url.Error{Op: "Patch", URL: "https://127.0.0.1:6443/apis", Err: io.EOF}, true},
		{"EOF under context", fmt.Errorf("list refs of http://git/repo: %w", &url.Error{Op: "Get", URL: "http://git/repo", Err: io.EOF}), true},
		{"net timeout", fmt.Errorf("patch: %w", timeoutErr{}), true},
		{"invalid", apierrors.NewInvalid(schema.GroupKind{Group: resource.Group, Kind: "CloudProfile"}, "aws", field.ErrorList{field.Required(field.NewPath("spec"), "")}), false},
		{"forbidden", apierrors.NewForbidden(resource, "aws", errors.New("no")), false},
		{"not found", apierrors.NewNotFound(resource, "aws"), false},
		{"cancelled", fmt.Errorf("patch: %w", context.Canceled), false},
		{"deadline", fmt.Errorf("patch: %w", context.DeadlineExceeded), false},
	} {
		if got := Is(tc.err); got != tc.want {
			t.Errorf("%s: Is(%v) = %v, want %v", tc.name, tc.err, got, tc.want)
		}
	}
}

func TestRetryTransientRepeatsOnlyTransientFailures(t *testing.T) {
	calls := 0
	err := Retry(func() error {
		calls++
		if calls < 3 {
			return apierrors.NewTooManyRequests("slow down", 0)
		}
		return nil
	})
	if err != nil || calls != 3 {
		t.Fatalf("transient failures: err %v after %d calls, want success after 3", err, calls)
	}
	calls = 0
	invalid := apierrors.NewBadRequest("no")
	if err := Retry(func() error { calls++; return invalid }); !errors.Is(err, invalid) || calls != 1 {
		t.Fatalf("a refusal: err %v after %d calls, want it at once", err, calls)
	}
}

func TestRetryWhileReturnsAnAttemptCutOffByItsDeadline(t *testing.T) {
	deadline := fmt.Errorf("apply CloudProfile/aws: %w", context.DeadlineExceeded)
	calls := 0
	err := RetryWhile(wait.Backoff{Steps: 3, Duration: time.Millisecond}, func(error) bool { return calls < 2 }, func() error {
		calls++
		if calls == 1 {
			return apierrors.NewTooManyRequests("slow down", 0)
		}
		return deadline
	})
	if !errors.Is(err, context.DeadlineExceeded) || calls != 2 {
		t.Fatalf("got %v after %d calls, want the deadline error after 2: a write cut off is no success", err, calls)
	}
	calls = 0
	err = RetryWhile(wait.Backoff{Steps: 3, Duration: time.Millisecond}, func(error) bool { return true }, func() error {
		calls++
		return deadline
	})
	if !errors.Is(err, context.DeadlineExceeded) || calls != 3 {
		t.Fatalf("got %v after %d calls, want the last error after 3", err, calls)
	}
}

// TestTooLargeToStoreIsReadFromTheStatusNotAnyMessage: only the API server's
// plain 500 for a storage size limit is one; the same words in another
// error (a webhook's denial quoting them, an internal error of another
// reason) are not.
func TestTooLargeToStoreIsReadFromTheStatusNotAnyMessage(t *testing.T) {
	g := NewWithT(t)
	unknown := func(message string) error {
		return &apierrors.StatusError{ErrStatus: metav1.Status{Status: metav1.StatusFailure, Code: 500, Message: message}}
	}
	g.Expect(TooLargeToStore(unknown("etcdserver: request is too large"))).To(BeTrue())
	g.Expect(TooLargeToStore(fmt.Errorf("apply: %w", unknown("rpc error: code = ResourceExhausted desc = trying to send message larger than max (2098606 vs. 2097152)")))).To(BeTrue())
	g.Expect(TooLargeToStore(unknown("etcdserver: request timed out"))).To(BeFalse())
	g.Expect(TooLargeToStore(apierrors.NewInternalError(errors.New("etcdserver: request is too large")))).To(BeFalse(), "another reason")
	g.Expect(TooLargeToStore(errors.New("etcdserver: request is too large"))).To(BeFalse(), "not an API status")
}
