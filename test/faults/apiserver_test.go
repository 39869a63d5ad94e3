package faults

import (
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1alpha1 "github.com/profilesync/profilesync/api/v1alpha1"
)

// refused is what a client sees while the API server is down.
func refused(req *http.Request) error {
	return &net.OpError{Op: "dial", Net: "tcp", Addr: &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 6443}, Err: os.NewSyscallError("connect", syscall.ECONNREFUSED)}
}

// statusResponse is an API server's error answer with code.
func statusResponse(req *http.Request, code int, reason metav1.StatusReason) *http.Response {
	body, _ := json.Marshal(metav1.Status{
		TypeMeta: metav1.TypeMeta{Kind: "Status", APIVersion: "v1"},
		Status:   metav1.StatusFailure, Code: int32(code), Reason: reason,
		Message: fmt.Sprintf("injected %d for %s %s", code, req.Method, req.URL.Path),
	})
	header := http.Header{"Content-Type": []string{"application/json"}}
	if code == http.StatusTooManyRequests {
		header.Set("Retry-After", "1")
	}
	return &http.Response{
		StatusCode: code, Status: http.StatusText(code), Header: header, Request: req,
		Body: io.NopCloser(strings.NewReader(string(body))), ContentLength: int64(len(body)),
	}
}

// timeoutError is a request that timed out on the way.
type timeoutError struct{}

func (timeoutError) Error() string   { return "injected: i/o timeout" }
func (timeoutError) Timeout() bool   { return true }
func (timeoutError) Temporary() bool { return true }

// objectWritesBeforeStatus checks that the first status write that records
// revision as applied comes after the last write of a profile: a revision
// is never reported applied while it is not wholly on the cluster. (Other
// status writes may name it before: Reconciling says which revision the
// sync works on.)
func objectWritesBeforeStatus(g Gomega, writes []write, revision string) {
	lastObject, firstStatus := -1, -1
	for i, w := range writes {
		switch {
		case (w.Resource == "cloudprofiles" || w.Resource == "namespacedcloudprofiles") && w.Subresource == "" && !w.DryRun:
			lastObject = i
		case w.Resource == "profilesyncs" && w.Subresource == "status" && strings.Contains(appliedRevisionIn(w), revision) && firstStatus < 0:
			firstStatus = i
		}
	}
	g.Expect(firstStatus).To(BeNumerically(">", lastObject), "the revision is reported only after its last object is written")
}

// TestAPIServerOutageInTheMiddleOfASync: the API server goes away for 30 s
// right after the first object of a revision is written. The sync backs
// off instead of retrying in a loop, reports nothing it has not done, and
// applies the whole revision once the API server is back.
func TestAPIServerOutageInTheMiddleOfASync(t *testing.T) {
	const outage = 30 * time.Second
	g := NewWithT(t)
	l := newLandscape(t)
	first := l.commit(profilesRepo([]string{"1.33.0"}, []string{"aws"}, nil))
	l.createSync(time.Hour)
	faults := l.startCounted("main@sha1:"+first, 30*time.Second)

	var mu sync.Mutex
	var downSince time.Time
	var failed int
	faults.inject(func(req *http.Request) (*http.Response, error) {
		mu.Lock()
		defer mu.Unlock()
		if downSince.IsZero() {
			w := parseWrite(req)
			if isWrite(req) && w.Resource == "cloudprofiles" && w.Subresource == "" && !w.DryRun {
				downSince = time.Now() // this write goes through, then the outage starts
			}
			return nil, nil
		}
		if time.Since(downSince) < outage {
			failed++
			return nil, refused(req)
		}
		return nil, nil
	})
	second := l.commit(profilesRepo([]string{"1.33.0", "1.34.1"}, []string{"aws", "azure", "gcp"}, []string{"gcp-a", "gcp-b"}))
	l.requestSync("second")

	start := time.Now()
	applied := l.waitApplied(second, outage+60*time.Second)
	mu.Lock()
	recovered := time.Since(downSince) - outage
	attempts := failed
	mu.Unlock()
	t.Logf("converged %s after the outage ended (%s after the request); %d requests refused during the outage", recovered.Round(100*time.Millisecond), time.Since(start).Round(100*time.Millisecond), attempts)

	want := []string{"CloudProfile//aws", "CloudProfile//azure", "CloudProfile//gcp", "NamespacedCloudProfile/team-a/gcp-a", "NamespacedCloudProfile/team-a/gcp-b"}
	g.Expect(inventory(applied)).To(Equal(want))
	g.Expect(l.onCluster(g)).To(Equal(want))
	objectWritesBeforeStatus(g, faults.recorded(nil), second)
	// Backoff from 750 ms doubling: about six sync attempts in 30 s, each
	// a handful of requests (writes tried four times in 1.5 s, the status,
	// events), plus the status controllers'. Measured: about 100. A hot
	// loop makes thousands.
	g.Expect(attempts).To(BeNumerically("<", 300), "requests during the outage")
	// Each distinct failure is one event, however often it was retried.
	events := l.warningEvents(g)
	g.Expect(events[v1alpha1.ApplyFailedReason]).To(HaveLen(1), "ApplyFailed events")
	g.Expect(recovered).To(BeNumerically("<", 45*time.Second), "recovery after the outage ends")
}

// TestAPIServerErrorsOnAFractionOfWrites: one write in three fails (429
// with Retry-After, 500, 409, a timeout, in turn). The sync retries, never
// reports a partial revision, and converges.
func TestAPIServerErrorsOnAFractionOfWrites(t *testing.T) {
	g := NewWithT(t)
	l := newLandscape(t)
	first := l.commit(profilesRepo([]string{"1.33.0"}, []string{"aws"}, nil))
	l.createSync(time.Hour)
	faults := l.startCounted("main@sha1:"+first, 30*time.Second)

	var mu sync.Mutex
	var writes, injected int
	faults.inject(func(req *http.Request) (*http.Response, error) {
		if !isWrite(req) {
			return nil, nil
		}
		mu.Lock()
		defer mu.Unlock()
		writes++
		if writes%3 != 0 {
			return nil, nil
		}
		injected++
		switch injected % 4 {
		case 0:
			return statusResponse(req, http.StatusTooManyRequests, metav1.StatusReasonTooManyRequests), nil
		case 1:
			return statusResponse(req, http.StatusInternalServerError, metav1.StatusReasonInternalError), nil
		case 2:
			return statusResponse(req, http.StatusConflict, metav1.StatusReasonConflict), nil
		default:
			return nil, timeoutError{}
		}
	})
	second := l.commit(profilesRepo([]string{"1.33.0", "1.34.1"}, []string{"aws", "azure", "gcp"}, []string{"gcp-a", "gcp-b"}))
	l.requestSync("second")
	start := time.Now()
	applied := l.waitApplied(second, 90*time.Second)
	mu.Lock()
	t.Logf("converged in %s; %d of %d writes failed", time.Since(start).Round(100*time.Millisecond), injected, writes)
	mu.Unlock()
	want := []string{"CloudProfile//aws", "CloudProfile//azure", "CloudProfile//gcp", "NamespacedCloudProfile/team-a/gcp-a", "NamespacedCloudProfile/team-a/gcp-b"}
	g.Expect(inventory(applied)).To(Equal(want))
	g.Expect(l.onCluster(g)).To(Equal(want))
	objectWritesBeforeStatus(g, faults.recorded(nil), second)
}

// appliedRevisionIn is the status.lastAppliedRevision a status write sends,
// or "" when it sends none (a JSON patch that replaces the status, or a
// merge patch).
func appliedRevisionIn(w write) string {
	var status struct {
		LastAppliedRevision string `json:"lastAppliedRevision"`
	}
	var replaced []struct {
		Path  string          `json:"path"`
		Value json.RawMessage `json:"value"`
	}
	if json.Unmarshal([]byte(w.Body), &replaced) == nil {
		for _, op := range replaced {
			if op.Path == "/status" && json.Unmarshal(op.Value, &status) == nil {
				return status.LastAppliedRevision
			}
		}
		return ""
	}
	var merged struct {
		Status json.RawMessage `json:"status"`
	}
	if json.Unmarshal([]byte(w.Body), &merged) == nil && len(merged.Status) > 0 && json.Unmarshal(merged.Status, &status) == nil {
		return status.LastAppliedRevision
	}
	return ""
}
