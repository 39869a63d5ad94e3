package profilesync

import (
	"crypto/sha256"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"

	"github.com/profilesync/profilesync/internal/syncplan"
)

// syncMemory is everything this process remembers of one ProfileSync
// between its syncs, besides its decoded revision (decodedRevisions: one
// cache of every ProfileSync's revisions, bounded in bytes together). It is
// memory of one process: a restarted manager starts with none, builds what
// it refused once more and reports what stands once more. A deleted
// ProfileSync's memory goes in one call (syncMemories.forget), so a field
// added here is forgotten with the rest.
type syncMemory struct {
	// failure is the last failure reported as a Warning event.
	failure reportedFailure
	// refusal is the last revision refused for what it is, so that it is
	// not built again.
	refusal refusalMemory
	// reported are the lines last reported as events, per topic.
	reported reportedLines
	// rollout is when the rollout next wants a sync, and how many record
	// pushes failed in a row.
	rollout rolloutWake
	// checked is the verdict of the last checks that passed, and what it
	// holds for (profilesync_checked.go); nil after checks that refused.
	checked *checkedRevision
	// upToDate are the objects the last plan found up to date, at the live
	// resourceVersion and digest it compared (syncplan.UpToDate): the next
	// plan compares only the others. About 200 bytes an object.
	upToDate syncplan.UpToDate
}

// syncMemories holds the syncMemory of every ProfileSync this process
// syncs. The zero value is ready to use; it is safe for concurrent use.
type syncMemories struct {
	mu sync.Mutex
	of map[types.NamespacedName]*syncMemory
}

// with runs use on the memory of the ProfileSync key, made when missing,
// under the lock.
func (m *syncMemories) with(key types.NamespacedName, use func(*syncMemory)) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.of == nil {
		m.of = map[types.NamespacedName]*syncMemory{}
	}
	memory, ok := m.of[key]
	if !ok {
		memory = &syncMemory{}
		m.of[key] = memory
	}
	use(memory)
}

// forget drops everything remembered of the ProfileSync key: it was
// deleted.
func (m *syncMemories) forget(key types.NamespacedName) {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.of, key)
}

// succeeded ends the failure and the refusal of key: its sync applied a
// revision. What it reported (holds, drift, records) stays until it
// changes.
func (m *syncMemories) succeeded(key types.NamespacedName) {
	m.with(key, func(s *syncMemory) {
		s.failure = reportedFailure{}
		s.refusal = refusalMemory{}
	})
}

// firstReport tells whether the failure of key differs from the one
// reported last, and remembers it (reportedFailure).
func (m *syncMemories) firstReport(key types.NamespacedName, reason, revision string, err error) (first bool) {
	m.with(key, func(s *syncMemory) { first = s.failure.firstReport(reason, revision, err) })
	return first
}

// refused is the refusal of key remembered for attempt (refusalMemory.get).
func (m *syncMemories) refused(key types.NamespacedName, attempt refusalAttempt, now time.Time, recheck time.Duration) (refusal *syncError, ok bool) {
	m.with(key, func(s *syncMemory) { refusal, ok = s.refusal.get(attempt, now, recheck) })
	return refusal, ok
}

// rememberRefusal keeps err as key's refusal of attempt
// (refusalMemory.remember).
func (m *syncMemories) rememberRefusal(key types.NamespacedName, attempt refusalAttempt, err *syncError, now time.Time) {
	m.with(key, func(s *syncMemory) { s.refusal.remember(attempt, err, now) })
}

// fresh returns the lines of topic not reported for key at the previous
// call, and remembers lines as the ones reported (reportedLines).
func (m *syncMemories) fresh(key types.NamespacedName, topic eventTopic, lines []string) (fresh []string) {
	m.with(key, func(s *syncMemory) { fresh = s.reported.fresh(topic, lines) })
	return fresh
}

// checkedStands returns the warnings of key's checked revision when stands
// says it holds.
func (m *syncMemories) checkedStands(key types.NamespacedName, stands func(*checkedRevision) bool) (warnings []syncWarning, ok bool) {
	m.with(key, func(s *syncMemory) {
		if s.checked != nil && stands(s.checked) {
			warnings, ok = s.checked.warnings, true
		}
	})
	return warnings, ok
}

// setChecked keeps checked as key's checked revision; nil forgets it.
func (m *syncMemories) setChecked(key types.NamespacedName, checked *checkedRevision) {
	m.with(key, func(s *syncMemory) { s.checked = checked })
}

// upToDate is what key's last plan found up to date (syncplan.UpToDate).
func (m *syncMemories) upToDate(key types.NamespacedName) (u syncplan.UpToDate) {
	m.with(key, func(s *syncMemory) { u = s.upToDate })
	return u
}

// setUpToDate keeps u as what key's last plan found up to date.
func (m *syncMemories) setUpToDate(key types.NamespacedName, u syncplan.UpToDate) {
	m.with(key, func(s *syncMemory) { s.upToDate = u })
}

// wake is when key's rollout next wants a sync; zero for none.
func (m *syncMemories) wake(key types.NamespacedName) (at time.Time) {
	m.with(key, func(s *syncMemory) { at = s.rollout.at })
	return at
}

// setWake sets when key's rollout next wants a sync; zero for none.
func (m *syncMemories) setWake(key types.NamespacedName, at time.Time) {
	m.with(key, func(s *syncMemory) { s.rollout.at = at })
}

// wakeEarlier sets key's wake to at when that is sooner than the one set.
func (m *syncMemories) wakeEarlier(key types.NamespacedName, at time.Time) {
	m.with(key, func(s *syncMemory) {
		if s.rollout.at.IsZero() || at.Before(s.rollout.at) {
			s.rollout.at = at
		}
	})
}

// failedPush counts a failed record push of key and returns how many
// failed in a row.
func (m *syncMemories) failedPush(key types.NamespacedName) (inARow int) {
	m.with(key, func(s *syncMemory) {
		s.rollout.failedPushes++
		inARow = s.rollout.failedPushes
	})
	return inARow
}

// pushed ends key's run of failed record pushes.
func (m *syncMemories) pushed(key types.NamespacedName) {
	m.with(key, func(s *syncMemory) { s.rollout.failedPushes = 0 })
}

// rolloutWake is when a ProfileSync's rollout next wants a sync (a
// candidate's soak ends, a record waits for Ready or for a retry), and the
// record pushes failed in a row, for the retry's backoff.
type rolloutWake struct {
	at           time.Time
	failedPushes int
}

// eventTopic is what the lines a ProfileSync reports as events are about:
// each topic's lines are reported once until they change (reportedLines).
type eventTopic struct {
	kind topicKind
	// upstream is the upstream landscape whose records the lines of
	// topicIgnoredRecords skip; empty for the other kinds.
	upstream string
}

type topicKind int

const (
	// topicDrift: drift left in place under driftDetection mode warn.
	topicDrift topicKind = iota + 1
	// topicHeld: the holds of break glass honoured.
	topicHeld
	// topicHoldRefused: holds refused (too far ahead, malformed).
	topicHoldRefused
	// topicHoldIgnored: holds on objects of another ProfileSync.
	topicHoldIgnored
	// topicRolloutHold: the newest commit spec.rollout.hold holds back.
	topicRolloutHold
	// topicRecordPush: a record push that keeps failing.
	topicRecordPush
	// topicIgnoredRecords: records of an upstream landscape skipped.
	topicIgnoredRecords
)

// reportedFailure is the last failure of a ProfileSync a Warning event was
// recorded for, so that a failure retried with backoff (an API server that
// is down, a Git server that does not answer) is one event, not one per
// attempt: the status cannot say it either while the API server is away,
// and client-go's event aggregation only sets in after ten. A failure is
// its reason, the revision and its cause (failureCause): while the API
// server is down, the write that notices first differs from attempt to
// attempt, the cause does not. A different failure, or the same one after
// a successful sync, is recorded again.
type reportedFailure struct {
	// last is a digest, not the cause itself: a refused revision's cause
	// can list thousands of problems, and this is kept between syncs.
	last string
}

// firstReport tells whether the failure differs from the one reported
// last, and remembers it.
func (f *reportedFailure) firstReport(reason, revision string, err error) bool {
	cause := failureDigest(err)
	sum := sha256.Sum256([]byte(reason + "\x00" + revision + "\x00" + string(cause[:])))
	failure := string(sum[:])
	if f.last == failure {
		return false
	}
	f.last = failure
	return true
}

// reportedLines are, per topic, the lines last reported as events, so a
// hold refused or ignored at every interval, a drift left in place under
// warn, an upstream record ignored or a record push that keeps failing is
// one event until it changes: an idle landscape makes no writes, events
// included.
type reportedLines struct {
	last map[eventTopic]map[string]bool
}

// fresh returns the lines of topic not reported at the previous call and
// remembers lines as the ones reported.
func (r *reportedLines) fresh(topic eventTopic, lines []string) []string {
	if r.last == nil {
		r.last = map[eventTopic]map[string]bool{}
	}
	before := r.last[topic]
	var fresh []string
	now := make(map[string]bool, len(lines))
	for _, l := range lines {
		now[l] = true
		if !before[l] {
			fresh = append(fresh, l)
		}
	}
	if len(now) == 0 {
		delete(r.last, topic)
	} else {
		r.last[topic] = now
	}
	return fresh
}
