package profilesync

import (
	"crypto/sha256"
	"errors"
	"strings"
	"sync"
)

// reportedFailures remembers, per ProfileSync, the last failure a Warning
// event was recorded for, so that a failure retried with backoff (an API
// server that is down, a Git server that does not answer) is one event, not
// one per attempt: the status cannot say it either while the API server is
// away, and client-go's event aggregation only sets in after ten. A failure
// is its reason, the revision and its cause (failureCause): while the API
// server is down, the write that notices first differs from attempt to
// attempt, the cause does not. A different failure, or the same one after a
// successful sync, is recorded again. A restarted manager records the
// failure at hand once more.
type reportedFailures struct {
	mu   sync.Mutex
	last map[string]string
}

// firstReport tells whether the failure of the ProfileSync key differs
// from the one reported last, and remembers it.
func (f *reportedFailures) firstReport(key, reason, revision string, err error) bool {
	// A digest, not the cause itself: a refused revision's cause can list
	// thousands of problems, and this is kept per ProfileSync between syncs.
	cause := failureDigest(err)
	sum := sha256.Sum256([]byte(reason + "\x00" + revision + "\x00" + string(cause[:])))
	failure := string(sum[:])
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.last[key] == failure {
		return false
	}
	if f.last == nil {
		f.last = map[string]string{}
	}
	f.last[key] = failure
	return true
}

// forget ends the failure of key: it synced, or it was deleted.
func (f *reportedFailures) forget(key string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.last, key)
}

// failureDigest is the digest of failureCause(err); a refusal kept from an
// earlier sync (keptError) carries the digest of the cause it was made with.
func failureDigest(err error) [sha256.Size]byte {
	var kept *keptError
	if errors.As(err, &kept) {
		return kept.cause
	}
	return sha256.Sum256([]byte(failureCause(err)))
}

// failureCause is the message of the innermost error err wraps: "connect:
// connection refused" rather than the request that met it. An error that
// joins several is its own cause.
func failureCause(err error) string {
	for {
		inner := errors.Unwrap(err)
		if inner == nil {
			return err.Error()
		}
		err = inner
	}
}

// reportedLines remembers, per key, the lines last reported as events, so a
// hold refused or ignored at every interval, a drift left in place under
// warn, an upstream record ignored or a record push that keeps failing is
// one event until it changes: an idle landscape makes no writes, events
// included. A key starts with its ProfileSync's key and "\x00". A restarted
// manager reports what stands once more.
type reportedLines struct {
	mu   sync.Mutex
	last map[string]map[string]bool
}

// fresh returns the lines not reported at the previous call for key and
// remembers lines as the ones reported.
func (r *reportedLines) fresh(key string, lines []string) []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.last == nil {
		r.last = map[string]map[string]bool{}
	}
	before := r.last[key]
	var fresh []string
	now := make(map[string]bool, len(lines))
	for _, l := range lines {
		now[l] = true
		if !before[l] {
			fresh = append(fresh, l)
		}
	}
	if len(now) == 0 {
		delete(r.last, key)
	} else {
		r.last[key] = now
	}
	return fresh
}

// forget drops every key of the ProfileSync prefix.
func (r *reportedLines) forget(prefix string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for key := range r.last {
		if strings.HasPrefix(key, prefix+"\x00") {
			delete(r.last, key)
		}
	}
}
