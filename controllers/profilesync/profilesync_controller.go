// Package profilesync holds the ProfileSync reconciler: it fetches a
// revision, decides whether the landscape may take it (the rollout gate),
// builds and checks it, honours the holds of break glass, applies it as the
// ProfileSync's identity, prunes what left Git, and reports. The rules it
// applies live in the pure packages under internal/.
package profilesync

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/fluxcd/pkg/apis/meta"
	"github.com/fluxcd/pkg/runtime/conditions"
	"github.com/fluxcd/pkg/runtime/jitter"
	"github.com/fluxcd/pkg/runtime/predicates"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	kerrors "k8s.io/apimachinery/pkg/util/errors"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	v1alpha1 "github.com/profilesync/profilesync/api/v1alpha1"
	"github.com/profilesync/profilesync/controllers/applygate"
	"github.com/profilesync/profilesync/controllers/inventory"
	"github.com/profilesync/profilesync/controllers/metrics"
	"github.com/profilesync/profilesync/controllers/statuspatch"
	"github.com/profilesync/profilesync/controllers/transient"
	"github.com/profilesync/profilesync/internal/gitsource"
	"github.com/profilesync/profilesync/internal/memorybudget"
	"github.com/profilesync/profilesync/internal/render/profile"
	"github.com/profilesync/profilesync/internal/sandbox"
	"github.com/profilesync/profilesync/internal/syncplan"
)

// +kubebuilder:rbac:groups=core.profilesync.io,resources=profilesyncs,verbs=get;list;watch
// +kubebuilder:rbac:groups=core.profilesync.io,resources=profilesyncs/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=core.profilesync.io,resources=cloudprofiles;namespacedcloudprofiles,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups="",resources=secrets,verbs=get
// +kubebuilder:rbac:groups="",resources=events,verbs=create;patch

// SyncFieldManager is the field manager of the sync's server-side applies. It
// owns the profiles' spec and the labels and annotations set in Git.
const SyncFieldManager = "profilesync"

// ProfileSyncReconciler keeps one landscape's profiles in sync with a
// kustomize overlay in Git. It fetches, builds and validates a revision,
// asks internal/syncplan for the plan of the sync (what it writes, in which
// order, holds, releases and prunes), reports the plan, and executes it. A
// revision is applied whole or not at all: every phase before the apply can
// stop it, a plan that refuses stops it too, and then nothing is written
// (not the end of a hold either) and the last good revision stays on the
// cluster. The one exception is break glass: an object held by
// v1alpha1.HoldUntilAnnotation is left as it is while the rest of the
// revision applies (profilesync_hold.go says why, syncplan when a hold
// ends).
type ProfileSyncReconciler struct {
	client.Client
	// SecretReader reads credential Secrets straight from the API server: a
	// cached read would watch every Secret of the cluster, which the
	// operator's RBAC (get only) does not allow and which it does not need.
	SecretReader client.Reader
	// APIReader reads the ProfileSync a sync starts from straight from the
	// API server (the manager's API reader); nil reads it through Client. The
	// sync's status write replaces the whole status (statuspatch.Write), and
	// the manager's cache may not have the previous sync's own status write
	// yet when a spec change queued during that sync starts this one: a sync
	// started from the cache's older status would write it back, its
	// lastAppliedRevision and inventory lost, whenever it then fails
	// (TestASyncStartsFromTheStatusTheAPIServerHolds).
	APIReader     client.Reader
	EventRecorder record.EventRecorder
	// ApplyGate, when set, holds the status writes of the profiles a
	// ProfileSync owns while it applies.
	ApplyGate *applygate.Gate
	Fetcher   *gitsource.Fetcher
	// Clock is the source of "now" for the update rules.
	Clock clock.PassiveClock
	// ApplyConcurrency bounds the parallel writes of one sync.
	ApplyConcurrency int
	// Builds runs the build of each revision in a process of its own, under
	// limits, so that no commit can exhaust the manager or hold up another
	// ProfileSync's build.
	Builds *sandbox.Runner
	// ClusterProfilesNamespace is the only namespace whose ProfileSyncs may
	// write cluster-scoped CloudProfiles; the others may write only
	// NamespacedCloudProfiles in their own namespace.
	ClusterProfilesNamespace string
	// DefaultServiceAccount, when set, is the ServiceAccount that the
	// ProfileSyncs outside ClusterProfilesNamespace without
	// spec.serviceAccountName write as (writeServiceAccount).
	DefaultServiceAccount string
	// ServiceAccounts makes the clients of the ProfileSyncs that write as a
	// ServiceAccount (SetupAll always sets it; a ProfileSync that names one
	// fails without it).
	ServiceAccounts *ServiceAccountClients
	// Metrics, when set, records the syncs (controllers/metrics).
	Metrics *metrics.Metrics
	// DecodedCacheSize bounds the decoded revisions kept between syncs,
	// every ProfileSync's together (the manager's --decoded-cache-size);
	// zero means memorybudget.DefaultCache.
	DecodedCacheSize int64
	// decoded keeps each ProfileSync's last decoded revision, within
	// DecodedCacheSize.
	decoded decodedRevisions
	// memory is what this process remembers of each ProfileSync between
	// its syncs (syncMemory), forgotten in one call when it is deleted.
	memory syncMemories
	// checksRun counts the runs of the checks of a revision (validate),
	// every ProfileSync's together: what an idle interval must not add to
	// (profilesync_checked.go); the tests read it.
	checksRun atomic.Int64
	// RefusalRecheck is how long a refusal that depends on time or on the
	// cluster (validation, policy, tenancy) stands before the kept revision
	// is checked again; zero means DefaultRefusalRecheck. A refused build is
	// never rebuilt for the same revision and spec.
	RefusalRecheck time.Duration

	// MaxHold is how far ahead a hold may expire (the manager's
	// --max-hold); zero means v1alpha1.DefaultMaxHold.
	MaxHold time.Duration

	// Trigger, when set, queues the ProfileSync of every event sent on it at
	// once, bypassing the interval: the push receiver sends pushes here.
	Trigger <-chan event.GenericEvent

	// outranked queues the tenants' ProfileSyncs whose claims a landscape's
	// sync just took over (wakeOutranked), so they drop them and say so at
	// once, not at their next interval. Made by SetupWithManager; nil (no
	// wake) for a reconciler a test calls itself.
	outranked chan event.GenericEvent
}

// outrankedQueue bounds the wakes waiting for the controller; a wake that
// does not fit is dropped, and that ProfileSync learns at its interval.
const outrankedQueue = 64

// SetupWithManager registers the reconciler and the inventory index. Spec
// changes and reconcile requests (the reconcile.fluxcd.io/requestedAt
// annotation) trigger a sync at once, and so do an event on Trigger and a
// change of the hold annotations on a profile of the inventory (inventory.HoldChanged);
// otherwise it runs every spec.interval.
func (r *ProfileSyncReconciler) SetupWithManager(ctx context.Context, mgr ctrl.Manager, opts controller.Options) error {
	if err := inventory.AddIndex(ctx, mgr.GetFieldIndexer()); err != nil {
		return err
	}
	b := ctrl.NewControllerManagedBy(mgr).
		For(&v1alpha1.ProfileSync{}, builder.WithPredicates(
			predicate.Or(predicate.GenerationChangedPredicate{}, predicates.ReconcileRequestedPredicate{}),
		)).
		// A hold is judged, and reported (HoldSet), by a sync: the on-call
		// engineer who sets one should see it taken at once, not at the next
		// interval, and one who removes it, Git back at once.
		Watches(&v1alpha1.CloudProfile{}, handler.EnqueueRequestsFromMapFunc(r.ownersOf), builder.WithPredicates(inventory.HoldChanged)).
		Watches(&v1alpha1.NamespacedCloudProfile{}, handler.EnqueueRequestsFromMapFunc(r.ownersOf), builder.WithPredicates(inventory.HoldChanged)).
		WithOptions(opts)
	if r.Trigger != nil {
		b = b.WatchesRawSource(source.Channel(r.Trigger, &handler.EnqueueRequestForObject{}))
	}
	r.outranked = make(chan event.GenericEvent, outrankedQueue)
	b = b.WatchesRawSource(source.Channel(r.outranked, &handler.EnqueueRequestForObject{}))
	return b.Complete(r)
}

// ownersOf are the ProfileSyncs whose inventory lists the profile obj:
// usually one, none for a profile no ProfileSync owns.
func (r *ProfileSyncReconciler) ownersOf(ctx context.Context, obj client.Object) []reconcile.Request {
	kind := v1alpha1.NamespacedCloudProfileKind
	if _, ok := obj.(*v1alpha1.CloudProfile); ok {
		kind = v1alpha1.CloudProfileKind
	}
	var owners v1alpha1.ProfileSyncList
	if err := r.List(ctx, &owners, client.MatchingFields{inventory.Index: inventory.Key(kind, obj.GetNamespace(), obj.GetName())}); err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "list the ProfileSyncs of a profile whose hold changed", "kind", kind, "namespace", obj.GetNamespace(), "name", obj.GetName())
		return nil
	}
	requests := make([]reconcile.Request, 0, len(owners.Items))
	for i := range owners.Items {
		requests = append(requests, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&owners.Items[i])})
	}
	return requests
}

// syncError is a failed phase: the condition it sets and whether retrying the
// same input can help.
type syncError struct {
	condition string // abnormal-true condition type, e.g. FetchFailed
	reason    string
	err       error
	// stalled: the revision (or the spec) itself is wrong; retrying the same
	// revision cannot succeed, so the sync waits for a new commit or spec.
	stalled bool
	// timeless: see failureKind.
	timeless bool
	// beforeAttempt: the rollout gate failed (beforeAttempt), before the
	// sync attempted a revision: it refuses none, so none is remembered as
	// refused or recorded as refused for the downstream landscapes.
	beforeAttempt bool
}

// beforeAttempt marks err, a failure of the rollout gate, as found before
// the sync attempted a revision. Until the gate passes, the revision the
// status names as attempted is the previous sync's (the one the landscape
// may run): a rollout file refused at the tip is no refusal of it.
func beforeAttempt(err error) error {
	var failed *syncError
	if errors.As(err, &failed) {
		failed.beforeAttempt = true
	}
	return err
}

func (e *syncError) Error() string { return e.err.Error() }
func (e *syncError) Unwrap() error { return e.err }

// failureKind is one way a sync can fail: the condition it sets (besides
// Ready=False), its reason, and whether the revision or the spec itself is
// at fault (stalled: retrying the same input cannot help).
type failureKind struct {
	condition, reason string
	stalled           bool
	// timeless: the same revision and spec fail the same way whatever the
	// time and the cluster (the revision's build and its profiles' own
	// content), so the refusal is remembered without a recheck.
	timeless bool
}

// The kinds of failure, the one table the failure helpers below, the
// metrics' reasons (RefusalReasons) and docs/gitops.md's conditions follow.
var (
	fetchFailure = failureKind{condition: v1alpha1.FetchFailedCondition, reason: v1alpha1.FetchFailedReason}
	// A bad ref, semver range or credential Secret, or a revision over the
	// checkout size limit: the fetch fails the same way until changed.
	fetchRefusal = failureKind{condition: v1alpha1.FetchFailedCondition, reason: v1alpha1.FetchFailedReason, stalled: true}
	buildFailure = failureKind{condition: v1alpha1.BuildFailedCondition, reason: v1alpha1.BuildFailedReason, stalled: true, timeless: true}
	// The profiles themselves are wrong (found by the build's reading or by
	// decoding): the author fixes them as any other validation failure.
	contentFailure    = failureKind{condition: v1alpha1.ValidationFailedCondition, reason: v1alpha1.ValidationFailedReason, stalled: true, timeless: true}
	validationFailure = failureKind{condition: v1alpha1.ValidationFailedCondition, reason: v1alpha1.ValidationFailedReason, stalled: true}
	policyFailure     = failureKind{condition: v1alpha1.ValidationFailedCondition, reason: v1alpha1.PolicyViolationReason, stalled: true}
	accessFailure     = failureKind{condition: v1alpha1.ValidationFailedCondition, reason: v1alpha1.AccessDeniedReason, stalled: true}
	applyFailure      = failureKind{condition: v1alpha1.ApplyFailedCondition, reason: v1alpha1.ApplyFailedReason}
	// An error none of the phases knows (the API server cannot be listed, a
	// conversion fails): Ready=False with a reason of its own, retried with
	// backoff, so an old Ready=True never stays in place.
	unexpectedFailure = failureKind{reason: v1alpha1.SyncFailedReason}

	failureKinds = []failureKind{fetchFailure, fetchRefusal, verificationFailure, verificationUnavailable, buildFailure,
		contentFailure, validationFailure, policyFailure, rolloutFailure, accessFailure, applyFailure, unexpectedFailure}
)

func (k failureKind) of(err error) *syncError {
	return &syncError{condition: k.condition, reason: k.reason, err: err, stalled: k.stalled, timeless: k.timeless}
}

// failureConditions are the conditions of the phases that can fail; at most
// one is set, the one of the failure at hand.
var failureConditions = func() []string {
	var types []string
	for _, kind := range failureKinds {
		if kind.condition != "" && !slices.Contains(types, kind.condition) {
			types = append(types, kind.condition)
		}
	}
	return types
}()

// RefusalReasons are the reasons of a sync that applies nothing, each once,
// in the order of failureKinds.
var RefusalReasons = func() []string {
	var reasons []string
	for _, kind := range failureKinds {
		if !slices.Contains(reasons, kind.reason) {
			reasons = append(reasons, kind.reason)
		}
	}
	return reasons
}()

// fetchFailed: the revision could not be fetched; an unreachable server may
// come back.
func fetchFailed(err error) error {
	if errors.Is(err, gitsource.ErrInvalidRequest) || errors.Is(err, gitsource.ErrCheckoutTooLarge) || errors.Is(err, gitsource.ErrObjectTooLarge) {
		return fetchRefusal.of(err)
	}
	return fetchFailure.of(err)
}

// buildFailed: the revision does not build; only a new commit helps. A
// build that failed on problems of the profiles themselves (profile.Problems)
// is a content failure instead.
func buildFailed(err error) error {
	var problems profile.Problems
	if errors.As(err, &problems) {
		return contentFailed(err)
	}
	return buildFailure.of(err)
}

// contentFailed: the revision's profiles themselves are wrong, found before
// they could be validated as a set (a file's YAML, a profile that does not
// decode); only a new commit helps.
func contentFailed(err error) error { return contentFailure.of(err) }

// validationFailed: the revision breaks a rule, ours or the API server's.
func validationFailed(err error) error { return validationFailure.of(err) }

// policyViolation: the revision breaks its versioning policy (a rule of
// severity error), or its policy file is invalid; only a new commit helps.
func policyViolation(err error) error { return policyFailure.of(err) }

// accessDenied: the revision writes what this ProfileSync may not.
func accessDenied(err error) error { return accessFailure.of(err) }

// applyFailed: a write or delete failed for a reason that may pass.
func applyFailed(err error) error { return applyFailure.of(err) }

// Reconcile runs one sync.
func (r *ProfileSyncReconciler) Reconcile(ctx context.Context, req ctrl.Request) (result ctrl.Result, retErr error) {
	obj := &v1alpha1.ProfileSync{}
	reader := r.APIReader
	if reader == nil {
		reader = r.Client
	}
	if err := reader.Get(ctx, req.NamespacedName, obj); err != nil {
		if apierrors.IsNotFound(err) {
			// Deleted: its checkout is no longer needed. The profiles it
			// applied stay; deleting a ProfileSync never deletes profiles.
			r.forget(req.NamespacedName)
			if err := r.Fetcher.Forget(req.String() + promotedCacheSuffix); err != nil {
				return ctrl.Result{}, err
			}
			return ctrl.Result{}, r.Fetcher.Forget(req.String())
		}
		return ctrl.Result{}, err
	}

	before := obj.DeepCopy()
	timer := r.Metrics.StartSync(obj)
	defer func() {
		timer.Start(metrics.PhaseStatus)
		if err := statuspatch.Write(ctx, r.Client, before, obj, &obj.Status); err != nil {
			retErr = kerrors.NewAggregate([]error{retErr, err})
		}
		timer.Finish()
	}()

	if v, ok := meta.ReconcileAnnotationValue(obj.GetAnnotations()); ok {
		obj.Status.SetLastHandledReconcileRequest(v)
	}
	if obj.Spec.Suspend {
		ctrl.LoggerFrom(ctx).Info("sync suspended", "revision", obj.Status.LastAppliedRevision, "result", v1alpha1.SuspendedReason)
		conditions.MarkFalse(obj, v1alpha1.ReadyCondition, v1alpha1.SuspendedReason, "suspended: profiles stay as applied at %s", obj.Status.LastAppliedRevision)
		conditions.Delete(obj, v1alpha1.ReconcilingCondition)
		obj.Status.ObservedGeneration = obj.Generation
		return ctrl.Result{}, nil
	}

	if obj.Generation != obj.Status.ObservedGeneration {
		if err := r.markReconciling(ctx, obj, "syncing generation %d", obj.Generation); err != nil {
			return ctrl.Result{}, err
		}
	}
	started := r.Clock.Now()
	revision, err := r.sync(ctx, obj, timer)
	obj.Status.ObservedGeneration = obj.Generation
	interval := jitter.JitteredIntervalDuration(obj.Spec.Interval.Duration)
	if errors.Is(err, errAwaitingFirstPromotion) {
		ctrl.LoggerFrom(ctx).Info("sync waiting", "result", v1alpha1.WaitingForUpstreamReason, "duration", r.Clock.Since(started).String())
		conditions.MarkFalse(obj, v1alpha1.ReadyCondition, v1alpha1.WaitingForUpstreamReason, "nothing applied yet: %s", conditions.GetMessage(obj, v1alpha1.WaitingCondition))
		conditions.Delete(obj, v1alpha1.ReconcilingCondition)
		return ctrl.Result{RequeueAfter: r.nextSync(obj, r.Clock.Now(), interval)}, nil
	}
	var failed *syncError
	if err != nil && !errors.As(err, &failed) {
		failed = unexpectedFailure.of(err)
		err = failed
	}
	logOutcome(ctx, obj, revision, failed, r.Clock.Since(started))
	if failed == nil {
		for _, t := range append(failureConditions, v1alpha1.StalledCondition, v1alpha1.ReconcilingCondition) {
			conditions.Delete(obj, t)
		}
		conditions.MarkTrue(obj, v1alpha1.ReadyCondition, v1alpha1.SucceededReason, "Applied revision %s", revision)
		r.memory.succeeded(req.NamespacedName)
		r.Metrics.AppliedRevision(obj)
		r.recordRollout(ctx, obj, timer)
		return ctrl.Result{RequeueAfter: r.nextSync(obj, r.Clock.Now(), interval)}, nil
	}
	for _, t := range failureConditions {
		if t != failed.condition {
			conditions.Delete(obj, t)
		}
	}
	message := conditionMessage(failed.err)
	if failed.condition != "" {
		conditions.MarkTrue(obj, failed.condition, failed.reason, "%s", message)
	}
	conditions.MarkFalse(obj, v1alpha1.ReadyCondition, failed.reason, "%s", message)
	conditions.Delete(obj, v1alpha1.ReconcilingCondition)
	// A failure retried with backoff is one event and one count.
	if r.memory.firstReport(req.NamespacedName, failed.reason, obj.Status.LastAttemptedRevision, failed.err) {
		r.event(obj, corev1.EventTypeWarning, failed.reason, "%s", message)
		r.Metrics.RefusedRevision(obj, failed.reason)
	}
	r.recordRefusal(ctx, obj, failed, timer)
	if failed.stalled && !failed.beforeAttempt {
		r.memory.rememberRefusal(req.NamespacedName, attemptOf(obj, obj.Status.LastAttemptedRevision), failed, r.Clock.Now())
		// A refused revision keeps its refusal, not its objects: a recheck
		// builds it again, once per --refusal-recheck-interval, rather than
		// every refused revision of every ProfileSync staying in memory.
		r.decoded.forget(req.String())
		// No hot loop: the same revision fails the same way. Poll Git at
		// the interval for a fix; a spec change triggers at once.
		conditions.MarkStalled(obj, failed.reason, "%s", message)
		return ctrl.Result{RequeueAfter: syncRequeue(obj, r.Clock.Now(), interval)}, nil
	}
	conditions.Delete(obj, v1alpha1.StalledCondition)
	return ctrl.Result{}, err
}

// forget drops everything the process remembers of the deleted
// ProfileSync key: its memory (syncMemory), its decoded revision and its
// metrics. Its Git checkouts are the Fetcher's, removed by the caller.
func (r *ProfileSyncReconciler) forget(key types.NamespacedName) {
	r.memory.forget(key)
	r.decoded.forget(key.String())
	r.Metrics.ForgetSync(key)
}

// markReconciling sets Reconciling=True, as kustomize-controller does at
// the start of a reconciliation, and writes it at once through the status
// subresource, so that kstatus tools and `kubectl wait` see the sync at work
// on a change while it runs; every end of a sync removes it again. Only a
// sync of a change marks it (a new generation, or a new revision once
// fetched), and only once: an idle interval writes nothing.
func (r *ProfileSyncReconciler) markReconciling(ctx context.Context, obj *v1alpha1.ProfileSync, messageFmt string, args ...any) error {
	if conditions.IsTrue(obj, v1alpha1.ReconcilingCondition) {
		return nil
	}
	conditions.MarkReconciling(obj, meta.ProgressingReason, messageFmt, args...)
	// The conditions alone (a merge patch replaces the list): the rest of
	// the status, lastAppliedRevision among it, is written once, by the
	// sync's final status patch, and never says more than is applied.
	err := r.patchStatusFields(ctx, obj, map[string]any{"conditions": obj.Status.Conditions})
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("mark %s Reconciling: %w", client.ObjectKeyFromObject(obj), err)
	}
	return nil
}

// patchStatusFields writes the given fields of obj's status alone, as a
// JSON merge patch (a list it names is replaced whole), leaving the rest of
// the status on the server as it is. A fresh object receives the answer:
// obj holds the status the sync is building, which the API server has not
// seen yet. obj takes the answer's resourceVersion: the sync's final status
// write updates the status at the version this patch left
// (statuspatch.Write), which the version read would make a Conflict and a
// second request.
func (r *ProfileSyncReconciler) patchStatusFields(ctx context.Context, obj *v1alpha1.ProfileSync, fields map[string]any) error {
	patch, err := json.Marshal(map[string]any{"status": fields})
	if err != nil {
		return fmt.Errorf("encode the status of ProfileSync %s: %w", client.ObjectKeyFromObject(obj), err)
	}
	target := &v1alpha1.ProfileSync{}
	target.SetNamespace(obj.Namespace)
	target.SetName(obj.Name)
	err = transient.Retry(func() error {
		return r.Status().Patch(ctx, target, client.RawPatch(types.MergePatchType, patch), client.FieldOwner(statuspatch.FieldManager))
	})
	if err != nil {
		return err
	}
	obj.ResourceVersion = target.ResourceVersion
	return nil
}

// logOutcome writes the one log line of a sync: the revision it applied or
// attempted, its result (Applied, or the failure's reason) and how long it
// took. The message of a failure is in the condition and the event.
func logOutcome(ctx context.Context, obj *v1alpha1.ProfileSync, applied string, failed *syncError, took time.Duration) {
	log := ctrl.LoggerFrom(ctx)
	if failed == nil {
		log.Info("sync applied", "revision", applied, "result", v1alpha1.AppliedReason, "duration", took.String())
		return
	}
	log.Info("sync failed", "revision", obj.Status.LastAttemptedRevision, "result", failed.reason, "stalled", failed.stalled,
		"duration", took.String(), "error", failed.err.Error())
}

// maxMessageLength bounds the message of a failure in conditions and
// events. The conditions library would cut a message at the API server's
// 32,768 bytes in the middle of a line; boundedMessage cuts it far sooner,
// at a line end, and says how many problems it left out and where to see
// them all, so that a revision with thousands of problems still reads as a
// list.
const maxMessageLength = 8 << 10

// conditionMessage is the message of a failure in conditions and events:
// boundedMessage of err's, which a refusal kept from an earlier sync
// (keptError) holds already.
func conditionMessage(err error) string {
	var kept *keptError
	if errors.As(err, &kept) {
		return kept.message
	}
	return boundedMessage(err.Error())
}

// boundedMessage cuts message, one problem per line, to maxMessageLength at
// a line end and says how much was left out.
func boundedMessage(message string) string {
	if len(message) <= maxMessageLength {
		return message
	}
	kept := message[:maxMessageLength]
	if end := strings.LastIndexByte(kept, '\n'); end > 0 {
		kept = kept[:end]
	} else {
		kept = strings.ToValidUTF8(kept, "")
	}
	omitted := strings.Count(message[len(kept):], "\n") + 1
	return fmt.Sprintf("%s\n... and %d more lines: run 'profilesync build' on the revision to see them all", kept, omitted)
}

// sync runs the phases in order, each named in timer, and returns the
// revision applied.
func (r *ProfileSyncReconciler) sync(ctx context.Context, obj *v1alpha1.ProfileSync, timer *metrics.SyncTimer) (string, error) {
	// spec.timeout bounds everything the commit decides the length of,
	// fetch and build together; what follows (reading and writing the
	// cluster) has the API server's own deadlines.
	untrusted, cancel := context.WithTimeout(ctx, syncTimeout(obj))
	defer cancel()
	timer.Start(metrics.PhaseFetch)
	checkout, err := r.fetch(untrusted, obj)
	if err != nil {
		return "", err
	}
	timer.Start(metrics.PhaseRollout)
	gate, err := r.gateRollout(untrusted, obj, checkout)
	if err != nil {
		return "", beforeAttempt(err)
	}
	checkout = gate.checkout
	// Warnings are reported once per revision and spec, not at every
	// interval: an idle landscape makes no writes, events included.
	newAttempt := checkout.Revision != obj.Status.LastAttemptedRevision || obj.Generation != obj.Status.ObservedGeneration
	obj.Status.LastAttemptedRevision = checkout.Revision
	if newAttempt {
		if err := r.markReconciling(ctx, obj, "syncing revision %s", checkout.Revision); err != nil {
			return "", err
		}
	}
	recheck := r.RefusalRecheck
	if recheck <= 0 {
		recheck = DefaultRefusalRecheck
	}
	if refused, ok := r.memory.refused(client.ObjectKeyFromObject(obj), attemptOf(obj, checkout.Revision), r.Clock.Now(), recheck); ok {
		return "", refused
	}
	// Nothing of a revision that is not signed as spec.verify asks is
	// built, let alone written.
	if err := r.verifySignature(untrusted, obj, checkout); err != nil {
		return "", err
	}

	// A revision other than the one applied holds its profiles' status
	// writes from its build until its apply ends (applygate.Gate): on a
	// push, the statuses still being written for the revision before
	// would take the CPU its build and apply need, and are written again
	// once it is applied. An unchanged revision holds them during its
	// apply only, if it has one (drift put back).
	self := client.ObjectKeyFromObject(obj)
	newRevision := checkout.Revision != obj.Status.LastAppliedRevision
	endHold := func() {}
	defer func() { endHold() }()
	if newRevision {
		endHold = r.ApplyGate.Begin(self)
	}

	key := self.String()
	decoded, built := r.decoded.get(key, checkout.Revision, obj.Spec.Path)
	if !built {
		timer.Start(metrics.PhaseBuild)
		if decoded, err = r.build(untrusted, obj, checkout); err != nil {
			return "", err
		}
		if !r.decoded.put(key, decoded, r.DecodedCacheSize) {
			ctrl.LoggerFrom(ctx).Info("decoded revision larger than --"+memorybudget.CacheFlag+": built again at every sync until it is raised",
				"revision", checkout.Revision, "estimatedBytes", decoded.size)
		}
	}

	timer.Start(metrics.PhaseValidate)
	live, err := r.listLive(ctx)
	if err != nil {
		return "", err
	}
	warnings, err := r.checkRevision(obj, checkout, decoded, live)
	if newAttempt {
		for _, w := range warnings {
			r.event(obj, corev1.EventTypeWarning, w.reason, "%s", w.message)
		}
	}
	if err != nil {
		return "", err
	}
	claims, err := r.listInventoryClaims(ctx)
	if err != nil {
		return "", err
	}
	planLive := syncplan.Live{CloudProfiles: live.cloudProfiles, Namespaced: live.namespaced}
	plan, err := syncplan.Decide(syncplan.Input{
		Sync: self, Revision: checkout.Revision, LastAppliedRevision: obj.Status.LastAppliedRevision,
		Objects: decoded.objects, Digests: decoded.digests,
		Live:      planLive,
		Inventory: inventoryEntries(obj.Status.Inventory), Claims: claims, PreviousHolds: obj.Status.Holds,
		Prune: obj.Spec.Prune, DriftMode: obj.DriftMode(), LandscapeNamespace: r.ClusterProfilesNamespace,
		Now: r.Clock.Now(), MaxHold: r.MaxHold,
		UpToDate: r.memory.upToDate(self),
	})
	if err != nil {
		return "", fmt.Errorf("plan revision %s: %w", checkout.Revision, err)
	}
	r.memory.setUpToDate(self, plan.UpToDate)
	if len(plan.LostClaims) > 0 {
		// Kept whatever follows: the sync's status patch writes it, refused
		// or not.
		obj.Status.Inventory = &v1alpha1.ProfileSyncInventory{Entries: plan.RetainedInventory}
		ctrl.LoggerFrom(ctx).Info("claims taken over by the landscape's ProfileSyncs dropped from the inventory", "objects", len(plan.LostClaims))
	}
	r.reportPlan(obj, plan)
	if plan.Refusal != nil {
		return "", refusalOf(plan.Refusal)
	}
	// The plan refuses nothing: it is executed in its order, writes, hold
	// releases, prunes.
	timer.Start(metrics.PhaseApply)
	if !newRevision {
		endHold = r.ApplyGate.Begin(self)
	}
	err = r.apply(ctx, obj, plan)
	endHold()
	if err != nil {
		return "", err
	}
	r.wakeOutranked(plan.Outranked)
	timer.Start(metrics.PhaseHold)
	if err := r.releaseHolds(ctx, obj, plan, planLive); err != nil {
		return "", err
	}
	timer.Start(metrics.PhasePrune)
	if err := r.prune(ctx, obj, plan.Prunes); err != nil {
		return "", err
	}
	obj.Status.LastAppliedRevision = checkout.Revision
	obj.Status.Inventory = &v1alpha1.ProfileSyncInventory{Entries: plan.Inventory}
	r.appliedRollout(obj, gate)
	return checkout.Revision, nil
}

// syncTimeout is spec.timeout, at most v1alpha1.MaxSyncTimeout: the API
// server refuses longer ones, and an object stored before that rule existed
// must not hold a worker longer either.
func syncTimeout(obj *v1alpha1.ProfileSync) time.Duration {
	if obj.Spec.Timeout == nil || obj.Spec.Timeout.Duration <= 0 {
		return v1alpha1.DefaultSyncTimeout
	}
	return min(obj.Spec.Timeout.Duration, v1alpha1.MaxSyncTimeout)
}

// fetch resolves spec.ref and checks the revision out.
func (r *ProfileSyncReconciler) fetch(ctx context.Context, obj *v1alpha1.ProfileSync) (*gitsource.Result, error) {
	credentials, err := r.credentials(ctx, obj)
	if err != nil {
		return nil, fetchFailed(err)
	}
	request := gitsource.Request{
		URL:          obj.Spec.URL,
		Credentials:  credentials,
		CacheKey:     client.ObjectKeyFromObject(obj).String(),
		LastRevision: obj.Status.LastAttemptedRevision,
		History:      verifiesHistory(obj),
	}
	if ref := obj.Spec.Ref; ref != nil {
		request.Ref = gitsource.Ref{Branch: ref.Branch, Tag: ref.Tag, SemVer: ref.SemVer, Commit: ref.Commit}
	}
	request.Timeout = syncTimeout(obj)
	var result *gitsource.Result
	err = transient.RetryWhile(fetchRetry, func(err error) bool { return errors.Is(err, gitsource.ErrConnectionFailed) }, func() (err error) {
		result, err = r.Fetcher.Fetch(ctx, request)
		return err
	})
	var refused *gitsource.RevisionRefusedError
	if errors.As(err, &refused) && !errors.Is(err, gitsource.ErrCheckoutTooLarge) {
		// The revision itself holds a commit, tree or tag over its bound,
		// refused from its header: refused as a revision that does not
		// build, and remembered as such, never inflated. (A blob over the
		// checkout size is a checkout too large, a stalled fetch failure.)
		obj.Status.LastAttemptedRevision = refused.Revision
		return nil, buildFailed(err)
	}
	if err != nil {
		return nil, fetchFailed(err)
	}
	return result, nil
}

// credentials is the data of the Secret spec.secretRef names; nil without
// one.
func (r *ProfileSyncReconciler) credentials(ctx context.Context, obj *v1alpha1.ProfileSync) (map[string][]byte, error) {
	if obj.Spec.SecretRef == nil {
		return nil, nil
	}
	var secret corev1.Secret
	key := client.ObjectKey{Namespace: obj.Namespace, Name: obj.Spec.SecretRef.Name}
	if err := r.SecretReader.Get(ctx, key, &secret); err != nil {
		return nil, fmt.Errorf("read credentials from Secret %s: %w", key, err)
	}
	return secret.Data, nil
}

// fetchRetry paces the repeats of a fetch whose connection was refused,
// reset or closed (gitsource.ErrConnectionFailed): three more within about
// 1.5 s. A
// Git server that restarts or drops connections now and then costs a
// repeat, not a failed sync and the controller's growing backoff.
var fetchRetry = wait.Backoff{Steps: 4, Duration: 200 * time.Millisecond, Factor: 2, Jitter: 0.1}

// liveProfiles is what the cluster holds, read once per sync (one list per
// kind from the cache, not one get per object).
type liveProfiles struct {
	cloudProfiles map[string]*v1alpha1.CloudProfile
	namespaced    map[client.ObjectKey]*v1alpha1.NamespacedCloudProfile
}

func (r *ProfileSyncReconciler) listLive(ctx context.Context) (*liveProfiles, error) {
	// The sync only reads the live objects (the rules of internal/lifecycle
	// and internal/render/profile never modify their inputs), so it lists them
	// without the cache's deep copy: every sync reads every profile, and
	// each namespaced profile carries a whole merged profile in its status.
	var cps v1alpha1.CloudProfileList
	if err := r.List(ctx, &cps, client.UnsafeDisableDeepCopy); err != nil {
		return nil, fmt.Errorf("list CloudProfiles: %w", err)
	}
	var ncps v1alpha1.NamespacedCloudProfileList
	if err := r.List(ctx, &ncps, client.UnsafeDisableDeepCopy); err != nil {
		return nil, fmt.Errorf("list NamespacedCloudProfiles: %w", err)
	}
	live := &liveProfiles{
		cloudProfiles: make(map[string]*v1alpha1.CloudProfile, len(cps.Items)),
		namespaced:    make(map[client.ObjectKey]*v1alpha1.NamespacedCloudProfile, len(ncps.Items)),
	}
	for i := range cps.Items {
		live.cloudProfiles[cps.Items[i].Name] = &cps.Items[i]
	}
	for i := range ncps.Items {
		live.namespaced[client.ObjectKeyFromObject(&ncps.Items[i])] = &ncps.Items[i]
	}
	return live, nil
}

// build builds the overlay of the checkout in the sandbox and decodes it.
// Its result is kept per revision (decodedRevisions): the commit alone
// decides it.
func (r *ProfileSyncReconciler) build(ctx context.Context, obj *v1alpha1.ProfileSync, checkout *gitsource.Result) (decodedRevision, error) {
	// The revision kept before this one (the ProfileSync's, at the same
	// path): the build does not render again the resource files a push did
	// not change (sandbox.Runner.BuildReusing), and the documents it did not
	// change are not decoded again.
	previous, ok := r.decoded.kept(client.ObjectKeyFromObject(obj).String())
	if ok && previous.path != obj.Spec.Path {
		previous, ok = decodedRevision{}, false
	}
	built, err := r.Builds.BuildReusing(ctx, checkout.Dir, obj.Spec.Path, previous.built)
	if err != nil {
		return decodedRevision{}, buildFailed(fmt.Errorf("build %s at %s: %w", obj.Spec.Path, checkout.Revision, err))
	}
	docs, buildWarnings := built.Documents, built.Warnings
	// Objects that do not decode are reported by validate, with the
	// problems of the objects that do, in one round.
	var known map[[32]byte]profile.Object
	if ok {
		known = previous.known()
	}
	objects, problems, documents := profile.DecodeDocumentsReusing(docs, known)
	profile.ApplyDefaultNamespace(objects, obj.Namespace)
	digests, err := contentDigests(objects)
	if err != nil {
		return decodedRevision{}, buildFailed(fmt.Errorf("revision %s: %w", checkout.Revision, err))
	}
	warnings := make([]syncWarning, 0, len(buildWarnings))
	// Patches that address keyed lists by index still build, but the next
	// version added to a base moves what they change.
	for _, w := range buildWarnings.Summarize() {
		warnings = append(warnings, syncWarning{reason: v1alpha1.BuildWarningReason, message: w.String()})
	}
	decoded := decodedRevision{revision: checkout.Revision, path: obj.Spec.Path, objects: objects, problems: problems, digests: digests, documents: documents, warnings: warnings,
		built: &built}
	decoded.size = decodedSize(decoded)
	return decoded, nil
}

// syncWarning is a warning of a revision, reported as an event once per
// revision and spec.
type syncWarning struct{ reason, message string }

// validate checks a built revision against the cluster at now: the set (a
// parent that is not in the revision is looked up on the cluster, through
// reads), then its versioning policy. Parents on the cluster and the time
// change, so checkRevision runs it again whenever the cluster's answers
// (reads) or the attempt change, and from until, the first instant at which
// a verdict of the validation or of the policy could change (zero for
// none). It returns the revision's warnings, the build's included, even
// when it refuses the revision.
func (r *ProfileSyncReconciler) validate(obj *v1alpha1.ProfileSync, checkout *gitsource.Result, decoded decodedRevision, reads *liveReads,
	now time.Time) (warnings []syncWarning, until time.Time, err error) {
	// A copy: the decoded revision's warnings are shared between syncs, and
	// the verdict keeps what is appended here.
	warnings = slices.Clone(decoded.warnings)
	set, err := profile.ValidateDecoded(decoded.objects, decoded.problems, func(name string) (*v1alpha1.CloudProfileSpec, bool, error) {
		cp, ok := reads.parent(name)
		if !ok {
			return nil, false, nil
		}
		return &cp.Spec, true, nil
	}, now)
	if err != nil {
		return warnings, time.Time{}, fmt.Errorf("validate revision %s: %w", checkout.Revision, err)
	}
	for _, w := range set.Warnings.Summarize() {
		warnings = append(warnings, syncWarning{reason: v1alpha1.ValidationFailedReason, message: w.String()})
	}
	if len(decoded.problems) > 0 {
		// What does not decode is wrong whatever the time and the cluster:
		// the revision stays refused until it changes.
		return warnings, time.Time{}, contentFailed(fmt.Errorf("revision %s: %w", checkout.Revision, set.Problems.Summarize()))
	}
	if len(set.Problems) > 0 {
		return warnings, time.Time{}, validationFailed(fmt.Errorf("revision %s: %w", checkout.Revision, set.Problems.Summarize()))
	}
	if next, ok := set.NextChange(); ok {
		until = next
	}
	policyWarnings, policyUntil, err := r.checkPolicy(obj, checkout, set, reads, now)
	return append(warnings, policyWarnings...), earliest(until, policyUntil), err
}

// refusalOf is the failure of a plan that refuses its revision: tenancy
// and ownership deny access; the update rules refuse the revision as the
// admission webhook would.
func refusalOf(refusal *syncplan.Refusal) error {
	if refusal.Kind == syncplan.AccessDenied {
		return accessDenied(refusal)
	}
	return validationFailed(refusal)
}

// inventoryEntries are the entries of inventory, nil for none.
func inventoryEntries(listed *v1alpha1.ProfileSyncInventory) []v1alpha1.InventoryEntry {
	if listed == nil {
		return nil
	}
	return listed.Entries
}

type decodedRevision struct {
	revision, path string
	objects        []profile.Object
	// problems are the decoding's: documents that are no valid profile.
	// validate reports them with the validation's problems of objects.
	problems profile.Problems
	// digests[i] is profile.ContentDigest of objects[i]: the sync compares it
	// with each live object's at every interval.
	digests []string
	// documents[i] is the profile.DocumentDigest of the document objects[i]
	// was decoded from: the next revision takes the objects of the
	// documents it did not change (profile.DecodeDocumentsReusing).
	documents [][32]byte
	// warnings are the build's, reported with the validation's once per
	// revision.
	warnings []syncWarning
	// built is the build's result, which the build of the next revision
	// reuses (sandbox.Runner.BuildReusing): its documents are spliced in
	// where the resource files did not change.
	built *sandbox.Result
	// size is what the objects take in memory, estimated (decodedSize).
	size int64
}

// contentDigests is profile.ContentDigest of each object.
func contentDigests(objects []profile.Object) ([]string, error) {
	digests := make([]string, len(objects))
	for i, o := range objects {
		var err error
		if digests[i], err = profile.ContentDigest(o); err != nil {
			return nil, err
		}
	}
	return digests, nil
}
