// Package transient tells a failed request that may succeed when it is
// repeated at once from one that will fail again (Is), and repeats the
// first kind a few times (Retry). The ProfileSync reconciler and the status
// reconcilers write through it.
package transient

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilnet "k8s.io/apimachinery/pkg/util/net"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/util/retry"
)

// Retry runs a single write and repeats it, a few times within
// about a second and a half, while it fails with an error that says nothing
// about the write itself (Is). An API server that sheds load or
// drops a connection now and then then costs a retry of one request, not a
// failed sync that starts over after the controller's backoff: a revision of
// many objects would otherwise rarely get all its writes through in one go.
// A longer outage still fails the sync, which the workqueue backs off.
func Retry(write func() error) error {
	return RetryWhile(retry.DefaultBackoff, Is, write)
}

// RetryWhile runs attempt until it succeeds, fails with an error retriable
// does not accept, or backoff.Steps attempts are made, pausing as backoff
// says in between; it returns the last error. (client-go's retry.OnError
// returns nil when an attempt fails with a context's error, since it takes
// that for its own timeout: a write cut off by its deadline would pass for
// a success.)
func RetryWhile(backoff wait.Backoff, retriable func(error) bool, attempt func() error) error {
	attempts := backoff.Steps // Step counts Steps down
	for n := 1; ; n++ {
		err := attempt()
		if err == nil || !retriable(err) || n >= attempts {
			return err
		}
		time.Sleep(backoff.Step())
	}
}

// Is tells whether a failed request may succeed when it is repeated
// unchanged at once: the API server was overloaded (429), failed internally
// (500, 503, 504), lost a race (409), or the connection was refused, reset
// or timed out. The caller's own cancellation is not transient.
func Is(err error) bool {
	if err == nil || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) || TooLargeToStore(err) {
		return false
	}
	if apierrors.IsTooManyRequests(err) || apierrors.IsInternalError(err) || apierrors.IsServiceUnavailable(err) ||
		apierrors.IsServerTimeout(err) || apierrors.IsTimeout(err) || apierrors.IsConflict(err) {
		return true
	}
	var netErr net.Error
	if errors.As(err, &netErr) && netErr.Timeout() {
		return true
	}
	// A connection closed before the answer: client-go and go-git report it
	// as io.EOF inside the request's *url.Error, under their own context.
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		return true
	}
	return utilnet.IsConnectionRefused(err) || utilnet.IsConnectionReset(err) || utilnet.IsProbableEOF(err)
}

// The API server's etcd client refuses to send, and etcd refuses to take, a
// request larger than their limits (2 MiB, and --max-request-bytes: 1.5 MiB by
// default). The API server passes either on as a plain 500 with no reason or
// cause, only the message of the etcd or gRPC error; these are the texts
// k8s.io/apiserver itself recognises them by (isTooLargeError in
// endpoints/handlers), when it retries a create or update without
// managedFields (never a server-side apply).
const (
	etcdRequestTooLarge = "etcdserver: request is too large"
	grpcMessageTooLarge = "code = ResourceExhausted desc = trying to send message larger than max"
)

// TooLargeToStore tells whether err is the API server failing to store the
// object for its size. The same object fails the same way on every retry.
func TooLargeToStore(err error) bool {
	var status apierrors.APIStatus
	if !errors.As(err, &status) {
		return false
	}
	s := status.Status()
	if s.Code != http.StatusInternalServerError || s.Reason != metav1.StatusReasonUnknown {
		return false
	}
	return strings.Contains(s.Message, etcdRequestTooLarge) || strings.Contains(s.Message, grpcMessageTooLarge)
}
