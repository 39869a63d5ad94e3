package profilesync

import (
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"

	v1alpha1 "github.com/profilesync/profilesync/api/v1alpha1"
	"github.com/profilesync/profilesync/internal/gitsource"
)

// An unchanged revision costs nothing: the checks of a built revision
// (validate: the set validated against the cluster at now, then its
// versioning policy) are by far the most expensive step of a sync that
// builds nothing, and at an idle interval they conclude what they concluded
// before. What they conclude depends on four things only:
//
//   - the attempt: the revision (its objects, its policy file and its
//     commit's time), the ProfileSync's spec (its generation: path, prune)
//     and the last reconcile request, which asks for a fresh look;
//   - the answers the cluster gave: the parent CloudProfile each lookup
//     found (or did not), and the live counterpart of each profile the
//     policy's notice rule compared with;
//   - the time, but only across an instant the checks themselves name
//     (profile.Set.NextChange: a lifecycle stage's start or an expiry of any
//     spec they read; policy.Policy.NextChange: a rule's instant);
//   - nothing else: the rules are the process's own.
//
// So a verdict that passed is remembered (checkedRevision) with those
// inputs, and the next sync takes it without running the checks while the
// attempt is the same, every answer of the cluster is the same (the same
// object, at the same resourceVersion, or still none) and the clock has not
// crossed the first named instant nor gone back behind the check. A refusal
// is not kept here: refusalMemory keeps it, with its recheck.

// checkedRevision is the verdict of checks that passed, and what it holds
// for.
type checkedRevision struct {
	attempt refusalAttempt
	// at is when the checks ran; until is the first instant from which they
	// could conclude otherwise, zero for none. The verdict holds in [at,
	// until).
	at, until time.Time
	// answers are the cluster's answers the checks read (liveReads).
	answers map[liveQuestion]string
	// warnings are the checks' warnings, the build's included, reported
	// once per revision and spec as the checks' own are.
	warnings []syncWarning
}

// standsFor tells whether the verdict holds for attempt at now, with the
// cluster as obj and live show it.
func (c *checkedRevision) standsFor(attempt refusalAttempt, obj *v1alpha1.ProfileSync, live *liveProfiles, now time.Time) bool {
	if c == nil || c.attempt != attempt || now.Before(c.at) || (!c.until.IsZero() && !now.Before(c.until)) {
		return false
	}
	for q, answered := range c.answers {
		if answerOf(q, obj, live) != answered {
			return false
		}
	}
	return true
}

// checkRevision runs the checks of a built revision (validate), unless the
// verdict they last gave it still stands (checkedRevision.standsFor). It
// returns the revision's warnings, even when it refuses it.
func (r *ProfileSyncReconciler) checkRevision(obj *v1alpha1.ProfileSync, checkout *gitsource.Result, decoded decodedRevision, live *liveProfiles) ([]syncWarning, error) {
	key := client.ObjectKeyFromObject(obj)
	attempt := attemptOf(obj, checkout.Revision)
	now := r.Clock.Now()
	if warnings, ok := r.memory.checkedStands(key, func(c *checkedRevision) bool { return c.standsFor(attempt, obj, live, now) }); ok {
		return warnings, nil
	}
	r.checksRun.Add(1)
	reads := &liveReads{obj: obj, live: live, answers: map[liveQuestion]string{}}
	warnings, until, err := r.validate(obj, checkout, decoded, reads, now)
	if err != nil {
		r.memory.setChecked(key, nil)
		return warnings, err
	}
	r.memory.setChecked(key, &checkedRevision{attempt: attempt, at: now, until: until, answers: reads.answers, warnings: warnings})
	return warnings, nil
}

// liveQuestion is one thing the checks asked of the cluster.
type liveQuestion struct {
	kind questionKind
	// namespace and name are the object asked about (a parent's name).
	namespace, name string
}

type questionKind int

const (
	// askParent: the parent CloudProfile a NamespacedCloudProfile of the
	// revision names, when the revision does not have it
	// (parentOnCluster).
	askParent questionKind = iota + 1
	// askCloudProfile, askNamespaced: the live counterpart of a profile of
	// the revision, which the policy's notice rule compares with.
	askCloudProfile
	askNamespaced
)

// liveReads answers the checks' questions from the live profiles and
// records each answer: the resourceVersion of the object that answers it,
// "" for none.
type liveReads struct {
	obj     *v1alpha1.ProfileSync
	live    *liveProfiles
	answers map[liveQuestion]string
}

// parent is parentOnCluster, recorded.
func (l *liveReads) parent(name string) (*v1alpha1.CloudProfile, bool) {
	cp, ok := parentOnCluster(l.obj, l.live, name)
	l.answers[liveQuestion{kind: askParent, name: name}] = versionOf(cp, ok)
	return cp, ok
}

// cloudProfile is the live CloudProfile name, recorded.
func (l *liveReads) cloudProfile(name string) (*v1alpha1.CloudProfile, bool) {
	cp, ok := l.live.cloudProfiles[name]
	l.answers[liveQuestion{kind: askCloudProfile, name: name}] = versionOf(cp, ok)
	return cp, ok
}

// namespaced is the live NamespacedCloudProfile key, recorded.
func (l *liveReads) namespaced(key client.ObjectKey) (*v1alpha1.NamespacedCloudProfile, bool) {
	ncp, ok := l.live.namespaced[key]
	l.answers[liveQuestion{kind: askNamespaced, namespace: key.Namespace, name: key.Name}] = versionOf(ncp, ok)
	return ncp, ok
}

// answerOf is the answer the cluster, as obj and live show it, gives to q
// now.
func answerOf(q liveQuestion, obj *v1alpha1.ProfileSync, live *liveProfiles) string {
	switch q.kind {
	case askParent:
		cp, ok := parentOnCluster(obj, live, q.name)
		return versionOf(cp, ok)
	case askCloudProfile:
		cp, ok := live.cloudProfiles[q.name]
		return versionOf(cp, ok)
	default:
		ncp, ok := live.namespaced[client.ObjectKey{Namespace: q.namespace, Name: q.name}]
		return versionOf(ncp, ok)
	}
}

// versionOf is the resourceVersion of a live object found, "" for none: the
// API server changes it with every change of the object, so an object at
// the same resourceVersion answers the same.
func versionOf(obj client.Object, found bool) string {
	if !found {
		return ""
	}
	return obj.GetResourceVersion()
}

// parentOnCluster is the parent CloudProfile name on the cluster, for a
// NamespacedCloudProfile of the revision whose parent the revision does not
// have. A parent this sync applied and prunes is about to go: it does not
// count as present.
func parentOnCluster(obj *v1alpha1.ProfileSync, live *liveProfiles, name string) (*v1alpha1.CloudProfile, bool) {
	cp, ok := live.cloudProfiles[name]
	if !ok || obj.Spec.Prune && isOwnedBy(cp, obj) {
		return nil, false
	}
	return cp, true
}

// earliest is the earlier of two instants, a zero one being none.
func earliest(a, b time.Time) time.Time {
	if a.IsZero() || (!b.IsZero() && b.Before(a)) {
		return b
	}
	return a
}
