package profilesync

import (
	"context"
	"crypto/sha256"
	"errors"
	"time"

	v1alpha1 "github.com/profilesync/profilesync/api/v1alpha1"
)

// DefaultRefusalRecheck is the default of ProfileSyncReconciler.RefusalRecheck.
const DefaultRefusalRecheck = 10 * time.Minute

// refusalAttempt is what a refusal of a revision depends on besides the
// operator itself: the revision, the ProfileSync's spec (its generation), and
// the last reconcile request someone made (`flux reconcile`-style, the
// reconcile.fluxcd.io/requestedAt annotation), which asks for a fresh look.
// An operator of another version starts with nothing remembered.
type refusalAttempt struct {
	revision   string
	generation int64
	requested  string
}

func attemptOf(obj *v1alpha1.ProfileSync, revision string) refusalAttempt {
	return refusalAttempt{revision: revision, generation: obj.Generation, requested: obj.Status.LastHandledReconcileAt}
}

// refusalMemory keeps a ProfileSync's last revision refused for
// what it is (a stalled failure after the fetch: it does not build, or
// breaks a rule, a policy or the tenancy), so that the same attempt is
// refused again without being built again. A commit can make a build cost
// tens of seconds of CPU and hundreds of MB; built at every interval, a
// refused revision would cost that forever.
//
// A build, and the profiles' own content, do not depend on time or on the
// cluster, so such a refusal is remembered until the attempt changes, unless
// the build was stopped at its deadline. The checks after them do: the policy
// compares dates with now, and validation and tenancy read parents and
// other ProfileSyncs on the cluster. Those refusals are checked again after
// the recheck interval, by a sync that builds the revision again: a refused
// revision keeps its refusal, never its decoded objects (decodedRevisions),
// so what the refusals hold between syncs is a message per ProfileSync.
type refusalMemory struct {
	last *rememberedRefusal
}

type rememberedRefusal struct {
	attempt refusalAttempt
	// err is the refusal as kept (keptRefusal), bounded in size.
	err *syncError
	at  time.Time
	// recheck: the refusal depends on time or the cluster (dependsOnTime
	// of the refusal as it was made).
	recheck bool
}

// keptError is a refusal's error as the refusals keep it between syncs: the
// message its condition and event show (boundedMessage, at most 8 KiB), and
// a digest of its cause, by which reportedFailure knows it for the failure
// it reported already (reportedFailure). A revision with thousands of problems then costs the
// manager a few KiB per ProfileSync, not the whole list.
type keptError struct {
	message string
	cause   [sha256.Size]byte
}

func (e *keptError) Error() string { return e.message }

// keptRefusal is err as the refusals keep it.
func keptRefusal(err *syncError) *syncError {
	kept := *err
	kept.err = &keptError{message: boundedMessage(err.err.Error()), cause: failureDigest(err.err)}
	return &kept
}

// get returns the refusal remembered for the attempt, unless it is one of
// the checks that depend on time or the cluster and recheck has passed
// since it was made.
func (m *refusalMemory) get(attempt refusalAttempt, now time.Time, recheck time.Duration) (*syncError, bool) {
	entry := m.last
	if entry == nil || entry.attempt != attempt {
		return nil, false
	}
	if entry.recheck && !now.Before(entry.at.Add(recheck)) {
		return nil, false
	}
	return entry.err, true
}

// remember records err as the refusal of the attempt when it refuses the
// revision itself: a stalled failure of any phase after the fetch. What
// may pass (a transient apply failure) and what precedes the revision (a
// fetch) are not remembered.
func (m *refusalMemory) remember(attempt refusalAttempt, err *syncError, now time.Time) {
	if !err.stalled || err.condition == v1alpha1.FetchFailedCondition {
		return
	}
	if entry := m.last; entry != nil && entry.attempt == attempt && entry.err == err {
		return // refused again from memory: the recheck still counts from the check
	}
	m.last = &rememberedRefusal{attempt: attempt, err: keptRefusal(err), at: now, recheck: dependsOnTime(err)}
}

// dependsOnTime tells a refusal that another look may undo: every check
// that reads the time or the cluster, and a build stopped at its deadline
// (it may finish on a machine less busy).
func dependsOnTime(err *syncError) bool {
	return !err.timeless || errors.Is(err, context.DeadlineExceeded)
}
