// Package profilestatus holds the status reconcilers of CloudProfiles and
// NamespacedCloudProfiles: each keeps a profile's status true for "now" (the
// classification of every version at the clock's time, the next transition,
// Ready; for a NamespacedCloudProfile its parent merged with its overrides)
// by calling the pure rules of internal/lifecycle and internal/render, and
// shows the hold of break glass that the profile's ProfileSync honours. It
// writes status only, never spec.
package profilestatus

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	kerrors "k8s.io/apimachinery/pkg/util/errors"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1alpha1 "github.com/profilesync/profilesync/api/v1alpha1"
	"github.com/profilesync/profilesync/controllers/applygate"
	"github.com/profilesync/profilesync/controllers/metrics"
	"github.com/profilesync/profilesync/controllers/statuspatch"
)

// DefaultStatusRecheck is Options.StatusRecheck's default: a wall-clock
// step forward shows in status within five minutes, at the cost of one
// read of the cache per kind every five minutes (overdue.go); no profile is
// reconciled for it unless its status is overdue.
const DefaultStatusRecheck = 5 * time.Minute

// statusRecheck is recheck, or its default when unset.
func statusRecheck(recheck time.Duration) time.Duration {
	if recheck <= 0 {
		return DefaultStatusRecheck
	}
	return recheck
}

// ProfileStatusController is what the CloudProfile and
// NamespacedCloudProfile controllers share: their configuration, and
// (reconcileStatus) reading a profile, forgetting one that is gone, and
// writing the status their own rules computed.
type ProfileStatusController struct {
	client.Client
	EventRecorder record.EventRecorder
	// Clock is the source of "now"; tests move it.
	Clock clock.PassiveClock
	// Metrics, when set, records the status written (controllers/metrics).
	Metrics *metrics.Metrics
	// StatusRecheck is how often the overdue sweep looks for a status
	// whose next transition the wall clock has passed (overdue.go, see
	// Options.StatusRecheck); zero means DefaultStatusRecheck.
	StatusRecheck time.Duration
	// ApplyGate, when set, holds the status write of a profile while its
	// ProfileSync applies a revision.
	ApplyGate *applygate.Gate
	// ParentStatuses, when set, orders a changed CloudProfile's status
	// write before its children's: the CloudProfile reconciler announces
	// each status reconcile it finishes, the NamespacedCloudProfile
	// reconciler waits for its parent's. Both reconcilers of one manager
	// share it.
	ParentStatuses *ParentStatuses
	// times keeps each profile's status from moving back in time.
	times statusTimes
}

// profileStatus points into the status of the profile a status controller
// reconciles.
type profileStatus struct {
	// whole points to the status, patched as one.
	whole any
	// versions is its classification part, recorded in the metrics.
	versions           *v1alpha1.ProfileVersionsStatus
	observedGeneration *int64
	// heldUntil is its heldUntil: the hold the sync honours
	// (honouredHoldUntil).
	heldUntil **metav1.Time
	// announce, when set, is told when the status reconcile of the
	// profile, a CloudProfile, has started and finished at a generation,
	// and when the profile is gone (ParentStatuses).
	announce *ParentStatuses
}

// reconcileStatus reads the profile of kind that req names into obj (held
// while its ProfileSync applies a revision), lets compute set its status at
// now (the time to compute at; wallNow is the clock's, see statusTimes), then
// patches the status when it changed and records it in the metrics. A
// profile that is gone is forgotten. With status.announce, the start of the
// reconcile (once the profile is read past the gate) and its end, after the
// write, are announced (ParentStatuses).
func reconcileStatus(ctx context.Context, c *ProfileStatusController, req ctrl.Request, kind string, obj conditionsObject, status profileStatus,
	compute func(now, wallNow time.Time) (ctrl.Result, error)) (result ctrl.Result, retErr error) {
	if err := c.ApplyGate.Get(ctx, c.Client, req.NamespacedName, obj); err != nil {
		if apierrors.IsNotFound(err) {
			c.Metrics.ForgetProfile(kind, req.NamespacedName)
			c.times.forget(req.NamespacedName)
			status.announce.forget(req.Name)
		}
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	// From here the reconcile ends in the deferred write below, which
	// announces its end: children wait for it while it is under way.
	status.announce.started(req.Name, obj.GetGeneration())

	before := obj.DeepCopyObject().(client.Object)
	var wallNow time.Time
	defer func() {
		*status.observedGeneration = obj.GetGeneration()
		err := statuspatch.Write(ctx, c.Client, before, obj, status.whole)
		// Written or not, this generation's reconcile is over: children
		// waiting for it go on (a failed write is retried on its own).
		status.announce.finished(req.Name, obj.GetGeneration())
		if err != nil {
			retErr = kerrors.NewAggregate([]error{retErr, err})
			return
		}
		c.Metrics.ObserveProfile(kind, obj, status.versions)
		result.RequeueAfter = exactWake(result.RequeueAfter, c.Clock.Since(wallNow))
	}()

	held, err := honouredHoldUntil(ctx, c.Client, kind, obj)
	if err != nil {
		return ctrl.Result{}, err
	}
	*status.heldUntil = held
	wallNow = c.Clock.Now()
	return compute(c.times.at(req.NamespacedName, wallNow), wallNow)
}

// classificationSummary is the Ready message of a valid profile, for example
// "12 versions: 3 supported, 1 preview, 1 deprecated, 7 expired; next: 1.31.2
// → deprecated at 2025-03-01T00:00:00Z". Image versions are named with their
// image ("gardenlinux 1592.1.0").
func classificationSummary(status *v1alpha1.ProfileVersionsStatus) string {
	counts := map[v1alpha1.VersionClassification]int{}
	total := 0
	var next string
	eachVersion(status, func(label string, v v1alpha1.VersionStatus) {
		counts[v.Classification]++
		total++
		if next == "" && v.NextTransitionTime != nil && status.NextTransitionTime != nil &&
			v.NextTransitionTime.Equal(status.NextTransitionTime) {
			next = fmt.Sprintf("%s → %s at %s", label, *v.NextClassification, v.NextTransitionTime.UTC().Format(time.RFC3339))
		}
	})

	parts := make([]string, 0, 5)
	for _, c := range []v1alpha1.VersionClassification{
		v1alpha1.ClassificationSupported,
		v1alpha1.ClassificationPreview,
		v1alpha1.ClassificationDeprecated,
		v1alpha1.ClassificationExpired,
		v1alpha1.ClassificationUnavailable,
	} {
		if counts[c] > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", counts[c], c))
		}
	}
	msg := fmt.Sprintf("%d versions: %s", total, strings.Join(parts, ", "))
	if next != "" {
		msg += "; next: " + next
	} else {
		msg += "; no transition scheduled"
	}
	return msg
}

// requeueAfter is the time from wallNow, the clock's time, to the profile's
// next transition, or zero when none is scheduled: the controllers wake up
// at exactly the transition and never poll in between. A profile without
// transitions has nothing a clock step could change. After the clock has
// gone back, wallNow is earlier than the time the status was computed at
// (see statusTimes), and the wait is the wall clock's way to the
// transition, not the shorter one from the status's time. A step forward
// past the transition is the overdue sweep's (overdue.go).
func requeueAfter(status *v1alpha1.ProfileVersionsStatus, wallNow time.Time) time.Duration {
	if status.NextTransitionTime == nil {
		return 0
	}
	return status.NextTransitionTime.Sub(wallNow)
}

// exactWake is a wait measured from the clock's time of a reconcile, taken
// when the reconcile ends, spent time later: the wake-up comes at the
// transition itself, not the status write's time after it. A wait that the
// reconcile used up is a wake-up at once (one nanosecond: zero would be
// none); no wait stays none.
func exactWake(wait, spent time.Duration) time.Duration {
	if wait <= 0 {
		return wait
	}
	return max(wait-spent, time.Nanosecond)
}

// statusTimes keeps, per profile, the latest time its status was computed
// at, so a status never moves back in time: when the wall clock steps back
// (an NTP correction, a node with a wrong clock taking over the work), a
// version that has become deprecated or expired stays so, with no event and
// no write, until the clock has caught up, instead of flapping back and
// forth across the transition. A change of spec still takes effect at
// once, computed at that same latest time. It is memory of one process: a
// restarted manager computes at its clock's time again. The zero value is
// ready to use; it is safe for concurrent use.
type statusTimes struct {
	mu     sync.Mutex
	latest map[types.NamespacedName]time.Time
}

// at is the time to compute key's status at: wallNow, or the latest time
// used for key when wallNow is behind it.
func (s *statusTimes) at(key types.NamespacedName, wallNow time.Time) time.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	if latest, ok := s.latest[key]; ok && latest.After(wallNow) {
		return latest
	}
	if s.latest == nil {
		s.latest = map[types.NamespacedName]time.Time{}
	}
	s.latest[key] = wallNow
	return wallNow
}

// forget drops a deleted profile.
func (s *statusTimes) forget(key types.NamespacedName) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.latest, key)
}

// recordClassificationChanges emits a ClassificationChanged event for every
// version whose classification differs between the previous and the new
// status. A version that had no previous status (a new profile or version) is
// not a change.
func recordClassificationChanges(recorder record.EventRecorder, obj client.Object, previous, current *v1alpha1.ProfileVersionsStatus) {
	before := map[string]v1alpha1.VersionClassification{}
	eachVersion(previous, func(label string, v v1alpha1.VersionStatus) {
		before[label] = v.Classification
	})
	eachVersion(current, func(label string, v v1alpha1.VersionStatus) {
		if old, ok := before[label]; ok && old != v.Classification {
			recorder.Eventf(obj, corev1.EventTypeNormal, v1alpha1.ClassificationChangedReason,
				"%s: %s → %s", label, old, v.Classification)
		}
	})
}

// eachVersion calls fn for every version of a status, Kubernetes versions
// first, in status order, with the label people read: the version for
// Kubernetes, "IMAGE VERSION" for machine images.
func eachVersion(status *v1alpha1.ProfileVersionsStatus, fn func(label string, v v1alpha1.VersionStatus)) {
	if status.Kubernetes != nil {
		for _, v := range status.Kubernetes.Versions {
			fn(v.Version, v)
		}
	}
	for _, image := range status.MachineImages {
		for _, v := range image.Versions {
			fn(image.Name+" "+v.Version, v)
		}
	}
}

// fieldErrorsMessage joins validation errors into one condition message that
// names every field.
func fieldErrorsMessage(errs field.ErrorList) string {
	msgs := make([]string, 0, len(errs))
	for _, err := range errs {
		msgs = append(msgs, err.Error())
	}
	return strings.Join(msgs, "; ")
}
