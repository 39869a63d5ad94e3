package profilesync

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"runtime/debug"
	"strings"
	"time"

	"github.com/fluxcd/pkg/runtime/conditions"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1alpha1 "github.com/profilesync/profilesync/api/v1alpha1"
	"github.com/profilesync/profilesync/controllers/metrics"
	"github.com/profilesync/profilesync/internal/gitsource"
	"github.com/profilesync/profilesync/internal/rollout"
)

// The rollout in the sync (docs/rollout.md): a landscape of the
// repository's rollout file with upstream landscapes takes the newest commit
// of its branch that every upstream landscape's records show held, Ready,
// for the soak (rollout.Decide), instead of the branch's tip; it wakes
// exactly when the next candidate becomes eligible. spec.rollout.hold keeps
// the commit it runs, spec.rollout.hotfix takes a named commit at once, and
// spec.rollout.record pushes a record of each applied and refused revision
// for the landscapes downstream (on by default for a landscape of the file).

// recordReadyRecheck is how soon a sync whose revision is applied but not
// yet Ready looks again, to record it.
const recordReadyRecheck = 5 * time.Second

// recordRetry paces the pushes of a record that failed for a reason that
// may pass: the first again after recordRetryBase, each next one twice as
// late, at most the ProfileSync's interval.
const recordRetryBase = 5 * time.Second

// promotedCacheSuffix names the checkout of the commit a landscape takes
// when it is not the branch's tip, kept apart from the tip's checkout so
// that neither is fetched again at every interval while a candidate waits.
const promotedCacheSuffix = "/promoted"

// rolloutFailure: the rollout file, or the ProfileSync's place in it, is
// wrong; only a new commit or spec helps, and the applied revision stays.
var rolloutFailure = failureKind{condition: v1alpha1.ValidationFailedCondition, reason: v1alpha1.RolloutInvalidReason, stalled: true}

func rolloutInvalid(err error) error { return rolloutFailure.of(err) }

// errAwaitingFirstPromotion stops the sync of a landscape that has applied
// nothing yet while no commit of its branch qualifies: there is nothing to
// keep and nothing to take.
var errAwaitingFirstPromotion = errors.New("no commit of the branch qualifies yet")

// operatorVersion names this build in records: the module's version, or
// "dev" for a build without one.
var operatorVersion = func() string {
	if info, ok := debug.ReadBuildInfo(); ok && versionPattern.MatchString(info.Main.Version) {
		return info.Main.Version
	}
	return "dev"
}()

var versionPattern = regexp.MustCompile(`^v[0-9A-Za-z._+-]{1,63}$`)

// rolloutGate is what the gate decided for one sync: the sync applies
// checkout, and once it has, applied reports the promotion.
type rolloutGate struct {
	checkout *gitsource.Result
	// promoted is why the checkout is taken when it is a new commit:
	// PromotedReason, HotfixReason, or empty (no rollout gate, or the
	// commit the landscape runs).
	promoted string
}

// nextSync is when the sync of obj runs again after a success: the
// interval, or sooner for a hold's expiry, a candidate's soak or a record.
func (r *ProfileSyncReconciler) nextSync(obj *v1alpha1.ProfileSync, now time.Time, interval time.Duration) time.Duration {
	next := syncRequeue(obj, now, interval)
	if wake := r.memory.wake(client.ObjectKeyFromObject(obj)); !wake.IsZero() {
		// A wake that has passed still waits a moment, never zero: zero
		// would mean no requeue at all.
		if until := max(wake.Sub(now), time.Millisecond); until < next {
			return until
		}
	}
	return next
}

// followsBranch says whether obj follows a branch (or the remote's HEAD),
// the only refs a rollout moves along.
func followsBranch(obj *v1alpha1.ProfileSync) bool {
	ref := obj.Spec.Ref
	return ref == nil || ref.Tag == "" && ref.SemVer == "" && ref.Commit == ""
}

// recordsRollout says whether obj pushes records of its landscape:
// spec.rollout.record when set, else whether the rollout file lists its
// landscape (placeInRollout sets status.rollout.landscape). On by default,
// because a landscape that records nothing stops every landscape after it:
// the records are the only channel between them (docs/rollout.md).
func recordsRollout(obj *v1alpha1.ProfileSync) bool {
	if record := rolloutSpec(obj).Record; record != nil {
		return *record
	}
	return obj.Status.Rollout != nil && obj.Status.Rollout.Landscape != ""
}

func rolloutSpec(obj *v1alpha1.ProfileSync) v1alpha1.ProfileSyncRollout {
	if obj.Spec.Rollout == nil {
		return v1alpha1.ProfileSyncRollout{}
	}
	return *obj.Spec.Rollout
}

// gateRollout decides which commit of the branch the sync applies: the tip
// it fetched, unless the ProfileSync's landscape waits for its upstream
// landscapes or holds, or a hotfix names another. It writes
// status.rollout and the Waiting condition, and returns the checkout to
// apply: checkout itself or one of the chosen commit.
func (r *ProfileSyncReconciler) gateRollout(ctx context.Context, obj *v1alpha1.ProfileSync, checkout *gitsource.Result) (*rolloutGate, error) {
	gate, err := r.decideRollout(ctx, obj, checkout)
	if err == nil || errors.Is(err, errAwaitingFirstPromotion) {
		waiting := ""
		if obj.Status.Rollout != nil && obj.Status.Rollout.Waiting != nil {
			waiting = obj.Status.Rollout.Waiting.Revision
		}
		r.Metrics.ObserveWaiting(obj, waiting)
	}
	return gate, err
}

// decideRollout is gateRollout without the waiting metric.
func (r *ProfileSyncReconciler) decideRollout(ctx context.Context, obj *v1alpha1.ProfileSync, checkout *gitsource.Result) (*rolloutGate, error) {
	key := client.ObjectKeyFromObject(obj).String()
	r.memory.setWake(client.ObjectKeyFromObject(obj), time.Time{})
	landscape, gates, err := r.placeInRollout(obj, checkout)
	r.Metrics.ObserveSoak(obj, upstreamSoak(obj, landscape))
	if err != nil || gates {
		// The rollout file decides which commit the landscape takes, or
		// why it takes none: with spec.verify, it counts only from a
		// signed commit, so an unsigned push cannot change the order, the
		// soaks or the upstreams.
		if unverified := r.verifyRolloutSource(ctx, obj, checkout); unverified != nil {
			return nil, unverified
		}
	}
	if err != nil || !gates {
		return &rolloutGate{checkout: checkout}, err
	}
	credentials, err := r.credentials(ctx, obj)
	if err != nil {
		return nil, fetchFailed(err)
	}
	// Every landscape follows the same branch (docs/rollout.md): the
	// mirror holds that one and the records.
	branch := gitsource.RefOfRevision(checkout.Revision)
	landscapes, err := r.Fetcher.FetchLandscapes(ctx, gitsource.LandscapeRequest{
		URL: obj.Spec.URL, Credentials: credentials, Timeout: syncTimeout(obj), CacheKey: key, Branch: branch,
	})
	if err != nil {
		return nil, fetchFailed(err)
	}
	defer func() { _ = landscapes.Close() }()
	running := gitsource.CommitOfRevision(obj.Status.LastAppliedRevision)
	requireSigned, err := r.checkUpstreamSignatures(ctx, obj, landscapes, landscape)
	if err != nil {
		return nil, fetchFailed(err)
	}
	answer, err := r.decideCandidates(obj, landscapes, landscape, branch, running, requireSigned)
	if err != nil {
		return nil, err
	}
	target, promoted := r.follow(obj, answer, running, branch)
	switch target {
	case "":
		return nil, errAwaitingFirstPromotion
	case checkout.Commit:
		return &rolloutGate{checkout: checkout, promoted: promoted}, nil
	}
	targetCheckout, err := r.Fetcher.Fetch(ctx, gitsource.Request{
		URL:          obj.Spec.URL,
		Ref:          gitsource.Ref{Branch: branch, Commit: target},
		Credentials:  credentials,
		Timeout:      syncTimeout(obj),
		CacheKey:     key + promotedCacheSuffix,
		LastRevision: obj.Status.LastAttemptedRevision,
	})
	if err != nil {
		return nil, fetchFailed(err)
	}
	return &rolloutGate{checkout: targetCheckout, promoted: promoted}, nil
}

// verifyRolloutSource refuses, with spec.verify, a rollout file read from
// a commit that is not signed by a key of spec.verify.secretRef: the
// fetched tip, whose file decides which older commit the landscape takes.
// The commit the landscape then applies is verified as every revision is
// (verifySignature); this is the check of the commit the decision was read
// from. Without spec.verify nothing is checked.
func (r *ProfileSyncReconciler) verifyRolloutSource(ctx context.Context, obj *v1alpha1.ProfileSync, checkout *gitsource.Result) error {
	if obj.Spec.Verify == nil {
		return nil
	}
	var secret corev1.Secret
	key := client.ObjectKey{Namespace: obj.Namespace, Name: obj.Spec.Verify.SecretRef.Name}
	if err := r.SecretReader.Get(ctx, key, &secret); err != nil {
		return verificationUnavailable.of(fmt.Errorf("revision %s: %s: read the trusted keys of spec.verify.secretRef from Secret %s: %w",
			checkout.Revision, rollout.FileName, key, err))
	}
	keys, err := gitsource.ParseTrustedKeys(fmt.Sprintf("spec.verify.secretRef: Secret %s", key), secret.Data)
	if err != nil {
		return verificationFailed(fmt.Errorf("revision %s: %w", checkout.Revision, err))
	}
	if _, err := gitsource.VerifyCommit(checkout.Dir, gitsource.CommitOfRevision(checkout.Revision), keys, r.Clock.Now(), r.Fetcher.ObjectLimits()); err != nil {
		return verificationFailed(fmt.Errorf("revision %s: %s is read from it, and it does not verify (spec.verify): %w", checkout.Revision, rollout.FileName, err))
	}
	return nil
}

// upstreamSoak is the least a candidate of obj's landscape waits: the
// landscape's soak, when it has upstream landscapes and obj follows a
// branch; nil when nothing gates it. The stuck rollout alert compares the
// wait with it.
func upstreamSoak(obj *v1alpha1.ProfileSync, landscape *rollout.Landscape) *time.Duration {
	if landscape == nil || len(landscape.After) == 0 || !followsBranch(obj) {
		return nil
	}
	soak := landscape.Soak
	return &soak
}

// placeInRollout reads the checkout's rollout file, finds obj's landscape
// and starts status.rollout; gates says whether a decision is needed: the
// landscape has upstream landscapes, or a hold or hotfix is set, on a
// ProfileSync that follows a branch.
func (r *ProfileSyncReconciler) placeInRollout(obj *v1alpha1.ProfileSync, checkout *gitsource.Result) (*rollout.Landscape, bool, error) {
	spec := rolloutSpec(obj)
	file, err := rollout.ReadAt(checkout.Dir, r.Builds.Limits().MaxFileSize)
	if err != nil {
		return nil, false, rolloutInvalid(fmt.Errorf("revision %s: %w", checkout.Revision, err))
	}
	landscape, err := file.LandscapeFor(obj.Spec.Path, obj.Spec.Landscape)
	if err != nil {
		return nil, false, rolloutInvalid(fmt.Errorf("revision %s: spec.landscape: %w", checkout.Revision, err))
	}
	if file == nil && !spec.Hold && spec.Hotfix == "" {
		obj.Status.Rollout = nil
		conditions.Delete(obj, v1alpha1.WaitingCondition)
		return nil, false, nil
	}
	status := obj.Status.Rollout
	if status == nil {
		status = &v1alpha1.RolloutStatus{}
		obj.Status.Rollout = status
	}
	status.Landscape, status.Waiting = "", nil
	if landscape != nil {
		status.Landscape = landscape.Name
	}
	gated := landscape != nil && len(landscape.After) > 0
	switch {
	case !followsBranch(obj):
		status.Message = "follows " + describeRef(obj) + ", not a branch: the rollout does not gate it"
	case gated || spec.Hold || spec.Hotfix != "":
		return landscape, true, nil
	case landscape == nil:
		status.Message = fmt.Sprintf("spec.path %q is in no landscape of %s: takes each commit of its branch at once", obj.Spec.Path, rollout.FileName)
	default:
		status.Message = fmt.Sprintf("landscape %s has no upstream landscapes: takes each commit of its branch at once", landscape.Name)
	}
	conditions.Delete(obj, v1alpha1.WaitingCondition)
	return landscape, false, nil
}

// checkUpstreamSignatures makes landscapes check every record's signature
// against the keys of spec.rollout.upstreamKeys, and returns the upstream
// landscapes whose records must then verify: all of them. Without
// upstreamKeys nothing is checked.
func (r *ProfileSyncReconciler) checkUpstreamSignatures(ctx context.Context, obj *v1alpha1.ProfileSync, landscapes *gitsource.Landscapes,
	landscape *rollout.Landscape) ([]string, error) {
	upstreamKeys := rolloutSpec(obj).UpstreamKeys
	if upstreamKeys == nil || landscape == nil {
		return nil, nil
	}
	var secret corev1.Secret
	key := client.ObjectKey{Namespace: obj.Namespace, Name: upstreamKeys.SecretRef.Name}
	if err := r.SecretReader.Get(ctx, key, &secret); err != nil {
		return nil, fmt.Errorf("read the upstream landscapes' record keys of spec.rollout.upstreamKeys from Secret %s: %w", key, err)
	}
	source := fmt.Sprintf("spec.rollout.upstreamKeys: Secret %s: entry %s", key, v1alpha1.UpstreamKeysEntry)
	keys, err := gitsource.ParseRecordKeys(source, secret.Data[v1alpha1.UpstreamKeysEntry])
	if err != nil {
		return nil, err
	}
	landscapes.CheckRecordSignatures(keys, r.Clock.Now())
	return landscape.After, nil
}

// recordSigner reads the key of spec.rollout.signingKey; nil without one.
func (r *ProfileSyncReconciler) recordSigner(ctx context.Context, obj *v1alpha1.ProfileSync) (*gitsource.RecordSigner, error) {
	signingKey := rolloutSpec(obj).SigningKey
	if signingKey == nil {
		return nil, nil
	}
	var secret corev1.Secret
	key := client.ObjectKey{Namespace: obj.Namespace, Name: signingKey.SecretRef.Name}
	if err := r.SecretReader.Get(ctx, key, &secret); err != nil {
		return nil, fmt.Errorf("read the record signing key of spec.rollout.signingKey from Secret %s: %w", key, err)
	}
	return gitsource.ParseRecordSigningKey(fmt.Sprintf("spec.rollout.signingKey: Secret %s: entry %s", key, v1alpha1.RecordSigningKeyEntry),
		secret.Data[v1alpha1.RecordSigningKeyEntry])
}

// decideCandidates decides which commit of the branch the landscape takes
// by the one rule `rollout status` shows too (rollout.DecideLandscape), and
// reports the upstream records it left out.
func (r *ProfileSyncReconciler) decideCandidates(obj *v1alpha1.ProfileSync, landscapes *gitsource.Landscapes, landscape *rollout.Landscape,
	branch, running string, requireSigned []string) (rollout.Answer, error) {
	spec := rolloutSpec(obj)
	question := rollout.Question{Branch: branch, Running: running, Hold: spec.Hold, Hotfix: spec.Hotfix, Now: r.Clock.Now(), RequireSigned: requireSigned}
	if landscape != nil {
		question.Landscape = *landscape
	}
	answer, err := rollout.DecideLandscape(landscapes, question)
	switch {
	case errors.Is(err, rollout.ErrHotfixNotOnBranch):
		return rollout.Answer{}, rolloutInvalid(err)
	case err != nil:
		return rollout.Answer{}, fetchFailed(err)
	}
	for _, upstream := range answer.Upstreams {
		r.reportRecordWarnings(obj, upstream.Landscape, upstream.Warnings)
	}
	return answer, nil
}

// follow turns a decision into the commit to apply (empty when there is
// none, not even one running) and why it is new (PromotedReason,
// HotfixReason, or empty), and reports what waits: status.rollout, the
// Waiting condition, the hold's event and when to wake. A held landscape's
// decision promotes nothing and waits for the candidate it holds back
// (rollout.DecideLandscape), as `rollout status` shows it from its records.
func (r *ProfileSyncReconciler) follow(obj *v1alpha1.ProfileSync, answer rollout.Answer, running, branch string) (string, string) {
	key := client.ObjectKeyFromObject(obj)
	status := obj.Status.Rollout
	decision, candidates := answer.Decision, answer.Candidates
	target, promoted, message := decision.Promote, "", ""
	switch {
	case decision.Hotfix:
		promoted = v1alpha1.HotfixReason
	case target != "":
		promoted = v1alpha1.PromotedReason
		if len(decision.PromotedHolds) == 0 {
			// No upstream landscapes: the tip, taken as without a rollout.
			promoted = ""
		}
	default:
		target = running
	}
	reason := v1alpha1.WaitingForUpstreamReason
	switch {
	case answer.Held && !decision.Hotfix && len(candidates) > 0:
		reason = v1alpha1.RolloutHeldReason
		if decision.Waiting != nil {
			status.Waiting = candidateStatus(decision.Waiting)
		}
		message = fmt.Sprintf("spec.rollout.hold keeps %s at %s; %d newer commits of branch %q wait, the newest %s",
			landscapeName(status), shortCommit(running), len(candidates), branch, shortCommit(candidates[0]))
		for _, line := range r.memory.fresh(key, eventTopic{kind: topicRolloutHold}, []string{candidates[0]}) {
			r.event(obj, corev1.EventTypeNormal, v1alpha1.RolloutHeldReason,
				"spec.rollout.hold keeps %s at %s; %s waits", landscapeName(status), shortCommit(running), line)
		}
	case decision.Waiting != nil:
		status.Waiting = candidateStatus(decision.Waiting)
		message = describeWaiting(status)
	}
	r.memory.setWake(key, decision.RequeueAt)
	ignored := describeUnverified(answer.Upstreams)
	if message == "" {
		conditions.Delete(obj, v1alpha1.WaitingCondition)
		status.Message = fmt.Sprintf("runs the newest commit of branch %q it may take", branch) + ignored
		return target, promoted
	}
	message = boundedMessage(message + ignored)
	conditions.MarkTrue(obj, v1alpha1.WaitingCondition, reason, "%s", message)
	status.Message = message
	return target, promoted
}

// describeUnverified says, for the Waiting condition and status.rollout,
// which upstream records spec.rollout.upstreamKeys made the decision
// ignore: per upstream, how many and the newest, with the record commit and
// why. Empty when none was.
func describeUnverified(upstreams []rollout.UpstreamReading) string {
	var notes []string
	for _, upstream := range upstreams {
		if len(upstream.Unverified) == 0 {
			continue
		}
		newest := upstream.Unverified[0]
		notes = append(notes, fmt.Sprintf("ignored %d records of landscape %s whose signature does not verify (spec.rollout.upstreamKeys), the newest %s (%s %s): %s",
			len(upstream.Unverified), upstream.Landscape, newest.Commit, newest.Kind, shortCommit(newest.Revision), newest.Signature.Describe()))
	}
	if len(notes) == 0 {
		return ""
	}
	return "; " + strings.Join(notes, "; ")
}

// appliedRollout reports the revision the sync applied: since when it runs
// and, for a new commit the gate chose, the event and the metric.
func (r *ProfileSyncReconciler) appliedRollout(obj *v1alpha1.ProfileSync, gate *rolloutGate) {
	status := obj.Status.Rollout
	if gate == nil || status == nil {
		return
	}
	commit := gate.checkout.Commit
	if status.AppliedRevision == commit {
		return
	}
	now := metav1.NewTime(r.Clock.Now())
	status.AppliedRevision, status.AppliedAt = commit, &now
	switch gate.promoted {
	case v1alpha1.HotfixReason:
		r.event(obj, corev1.EventTypeNormal, v1alpha1.HotfixReason,
			"took hotfix %s (spec.rollout.hotfix) at once, ahead of the upstream landscapes", commit)
		r.Metrics.Promoted(obj, v1alpha1.HotfixReason)
	case v1alpha1.PromotedReason:
		r.event(obj, corev1.EventTypeNormal, v1alpha1.PromotedReason,
			"promoted %s to %s: every upstream landscape held it for the soak", commit, landscapeName(status))
		r.Metrics.Promoted(obj, v1alpha1.PromotedReason)
	}
}

// recordRollout pushes the record of the revision obj applied, once every
// profile of it is Ready (spec.rollout.record). A failed push is retried
// with backoff and shown by the Recorded condition; it never fails the
// sync.
func (r *ProfileSyncReconciler) recordRollout(ctx context.Context, obj *v1alpha1.ProfileSync, timer *metrics.SyncTimer) {
	status := obj.Status.Rollout
	if record := rolloutSpec(obj).Record; record != nil && *record && status != nil && status.Landscape == "" {
		conditions.MarkFalse(obj, v1alpha1.RecordedCondition, v1alpha1.RecordFailedReason,
			"spec.rollout.record is set, but the ProfileSync is in no landscape of %s: there is no landscape to record for", rollout.FileName)
		return
	}
	if !recordsRollout(obj) || status == nil || status.AppliedRevision == "" {
		conditions.Delete(obj, v1alpha1.RecordedCondition)
		return
	}
	// One record per applied revision: a revision recorded as applied or
	// as a hotfix is not recorded again when spec.rollout.hotfix is set or
	// cleared later, since what the landscape holds has not changed. Only a
	// revision recorded as refused, and then applied, is recorded anew.
	// Once it is recorded, so is the hold.
	if status.RecordedRevision == status.AppliedRevision && status.RecordedKind != string(rollout.RecordRefused) {
		r.recordHold(ctx, obj, timer)
		return
	}
	kind := rollout.RecordApplied
	if rolloutSpec(obj).Hotfix == status.AppliedRevision {
		kind = rollout.RecordHotfix
	}
	now := r.Clock.Now()
	notReady, err := r.notReady(ctx, obj)
	if err != nil || notReady != "" {
		if err != nil {
			notReady = err.Error()
		}
		conditions.MarkFalse(obj, v1alpha1.RecordedCondition, v1alpha1.AwaitingReadyReason,
			"%s is not recorded yet: %s", shortCommit(status.AppliedRevision), notReady)
		r.memory.wakeEarlier(client.ObjectKeyFromObject(obj), now.Add(recordReadyRecheck))
		return
	}
	readyAt := now
	if status.AppliedAt != nil && status.AppliedAt.After(now) {
		readyAt = status.AppliedAt.Time
	}
	appliedAt := readyAt
	if status.AppliedAt != nil {
		appliedAt = status.AppliedAt.Time
	}
	r.pushRecord(ctx, obj, rollout.Record{
		Landscape: status.Landscape, Kind: kind, Revision: status.AppliedRevision,
		AppliedAt: appliedAt, ReadyAt: readyAt, OperatorVersion: operatorVersion,
	}, timer)
}

// recordHold pushes a held record when spec.rollout.hold is set and a
// released one when it is cleared, each once, so that whoever reads the
// records (`rollout status`) sees the hold as the operator keeps it. It
// runs only once the applied revision is recorded, so a held record always
// follows the applied record of the revision it holds: the hold in force is
// the newest held or released record newer than the newest applied one
// (rollout.DecideLandscape). The last record pushed says which was
// recorded last.
func (r *ProfileSyncReconciler) recordHold(ctx context.Context, obj *v1alpha1.ProfileSync, timer *metrics.SyncTimer) {
	status := obj.Status.Rollout
	hold := rolloutSpec(obj).Hold
	if hold == (status.RecordedKind == string(rollout.RecordHeld)) {
		return
	}
	kind := rollout.RecordReleased
	if hold {
		kind = rollout.RecordHeld
	}
	r.pushRecord(ctx, obj, rollout.Record{
		Landscape: status.Landscape, Kind: kind, Revision: status.AppliedRevision,
		AppliedAt: r.Clock.Now(), OperatorVersion: operatorVersion,
	}, timer)
}

// recordRefusal pushes the record of a revision the sync refused, so that
// no downstream landscape promotes it (spec.rollout.record). Only the
// revision's own faults are recorded: a fetch that failed is no refusal,
// and neither is a failure of the rollout gate (beforeAttempt: a rollout the
// sync could not follow, RolloutInvalid, which may be the spec's fault, or a
// rollout file from a commit spec.verify refuses), found before the revision
// is attempted.
func (r *ProfileSyncReconciler) recordRefusal(ctx context.Context, obj *v1alpha1.ProfileSync, failed *syncError, timer *metrics.SyncTimer) {
	status := obj.Status.Rollout
	commit := gitsource.CommitOfRevision(obj.Status.LastAttemptedRevision)
	if !recordsRollout(obj) || status == nil || status.Landscape == "" || commit == "" ||
		!failed.stalled || failed.beforeAttempt || failed.condition == v1alpha1.FetchFailedCondition || failed.reason == v1alpha1.RolloutInvalidReason {
		return
	}
	if status.RecordedRevision == commit && status.RecordedKind == string(rollout.RecordRefused) {
		return
	}
	r.pushRecord(ctx, obj, rollout.Record{
		Landscape: status.Landscape, Kind: rollout.RecordRefused, Revision: commit,
		AppliedAt: r.Clock.Now(), OperatorVersion: operatorVersion, Reason: failed.reason,
	}, timer)
}

// pushRecord pushes record with the ProfileSync's credentials and shows the
// outcome in the Recorded condition; a push that may succeed later is
// retried with backoff. The push is a phase of the sync's own (record).
func (r *ProfileSyncReconciler) pushRecord(ctx context.Context, obj *v1alpha1.ProfileSync, record rollout.Record, timer *metrics.SyncTimer) {
	timer.Start(metrics.PhaseRecord)
	key := client.ObjectKeyFromObject(obj).String()
	status := obj.Status.Rollout
	credentials, err := r.credentials(ctx, obj)
	var signer *gitsource.RecordSigner
	if err == nil {
		signer, err = r.recordSigner(ctx, obj)
	}
	if err == nil {
		_, err = r.Fetcher.PushRecord(ctx, gitsource.LandscapeRequest{
			URL: obj.Spec.URL, Credentials: credentials, Timeout: syncTimeout(obj), CacheKey: key, Signer: signer,
		}, record)
	}
	if err != nil {
		message := boundedMessage(fmt.Sprintf("the %s record of %s for landscape %s was not pushed: %v", record.Kind, record.Revision, record.Landscape, err))
		conditions.MarkFalse(obj, v1alpha1.RecordedCondition, v1alpha1.RecordFailedReason, "%s", message)
		for range r.memory.fresh(client.ObjectKeyFromObject(obj), eventTopic{kind: topicRecordPush}, []string{message}) {
			r.event(obj, corev1.EventTypeWarning, v1alpha1.RecordFailedReason, "%s", message)
		}
		attempts := r.memory.failedPush(client.ObjectKeyFromObject(obj))
		r.Metrics.ObserveRecordPush(obj, attempts)
		r.memory.wakeEarlier(client.ObjectKeyFromObject(obj), r.Clock.Now().Add(recordRetryAfter(attempts, gitsource.IsTransient(err), obj.Spec.Interval.Duration)))
		return
	}
	r.memory.pushed(client.ObjectKeyFromObject(obj))
	r.Metrics.ObserveRecordPush(obj, 0)
	r.memory.fresh(client.ObjectKeyFromObject(obj), eventTopic{kind: topicRecordPush}, nil)
	status.RecordedRevision, status.RecordedKind = record.Revision, string(record.Kind)
	conditions.MarkTrue(obj, v1alpha1.RecordedCondition, v1alpha1.RecordedReason,
		"recorded %s %s under %s%s", record.Kind, record.Revision, rollout.LandscapeRefPrefix, record.Landscape)
}

// recordRetryAfter is how long after its attempts-th failed push in a row
// a record is pushed again: a failure that may pass after recordRetryBase,
// doubling with each failure, at most interval; one that cannot at
// interval.
func recordRetryAfter(attempts int, transient bool, interval time.Duration) time.Duration {
	if !transient {
		return interval
	}
	return min(recordRetryBase<<min(max(attempts-1, 0), 16), interval)
}

// notReady names a profile of the inventory that is not Ready at its
// current generation; empty when every one is.
func (r *ProfileSyncReconciler) notReady(ctx context.Context, obj *v1alpha1.ProfileSync) (string, error) {
	if obj.Status.Inventory == nil {
		return "", nil
	}
	for _, entry := range obj.Status.Inventory.Entries {
		var profile interface {
			client.Object
			conditions.Getter
		}
		var observed func() int64
		switch entry.Kind {
		case v1alpha1.CloudProfileKind:
			cp := &v1alpha1.CloudProfile{}
			profile, observed = cp, func() int64 { return cp.Status.ObservedGeneration }
		case v1alpha1.NamespacedCloudProfileKind:
			ncp := &v1alpha1.NamespacedCloudProfile{}
			profile, observed = ncp, func() int64 { return ncp.Status.ObservedGeneration }
		default:
			continue
		}
		ref := entry.Kind + "/" + entry.Name
		if entry.Namespace != "" {
			ref = entry.Kind + "/" + entry.Namespace + "/" + entry.Name
		}
		if err := r.Get(ctx, client.ObjectKey{Namespace: entry.Namespace, Name: entry.Name}, profile); err != nil {
			return "", fmt.Errorf("read %s: %w", ref, err)
		}
		if observed() != profile.GetGeneration() || !conditions.IsReady(profile) {
			return ref + " is not Ready", nil
		}
	}
	return "", nil
}

// reportRecordWarnings reports each record of an upstream landscape that
// was skipped (garbled, or naming an unknown commit) once, as a warning.
func (r *ProfileSyncReconciler) reportRecordWarnings(obj *v1alpha1.ProfileSync, upstream string, warnings []error) {
	lines := make([]string, len(warnings))
	for i, w := range warnings {
		lines[i] = w.Error()
	}
	for _, line := range r.memory.fresh(client.ObjectKeyFromObject(obj), eventTopic{kind: topicIgnoredRecords, upstream: upstream}, lines) {
		r.event(obj, corev1.EventTypeWarning, v1alpha1.RolloutInvalidReason,
			"record of landscape %s ignored: %s", upstream, boundedMessage(line))
	}
}

func candidateStatus(w *rollout.Waiting) *v1alpha1.RolloutCandidate {
	out := &v1alpha1.RolloutCandidate{Revision: w.Candidate}
	if !w.EligibleAt.IsZero() {
		out.EligibleAt = &metav1.Time{Time: w.EligibleAt}
	}
	for _, h := range w.Holds {
		hold := v1alpha1.UpstreamHold{Landscape: h.Landscape, Running: h.Running, Refused: h.Refused}
		if h.Holds && !h.Since.IsZero() {
			hold.Since = &metav1.Time{Time: h.Since}
		}
		out.Upstreams = append(out.Upstreams, hold)
	}
	return out
}

// describeWaiting is the Waiting condition's message: the candidate, each
// upstream landscape's hold, and when it becomes eligible.
func describeWaiting(status *v1alpha1.RolloutStatus) string {
	w := status.Waiting
	var upstreams []string
	for _, h := range w.Upstreams {
		switch {
		case h.Refused:
			upstreams = append(upstreams, h.Landscape+" refused it")
		case h.Since != nil:
			upstreams = append(upstreams, fmt.Sprintf("%s holds it since %s", h.Landscape, h.Since.UTC().Format(time.RFC3339)))
		case h.Running == "":
			upstreams = append(upstreams, rollout.NoRecordsNote(h.Landscape))
		default:
			upstreams = append(upstreams, fmt.Sprintf("%s runs %s, which does not contain it", h.Landscape, shortCommit(h.Running)))
		}
	}
	eligible := "it has no eligibility time until every upstream landscape holds it"
	if w.EligibleAt != nil {
		eligible = "eligible at " + w.EligibleAt.UTC().Format(time.RFC3339)
	}
	return fmt.Sprintf("%s waits for %s: %s; %s", landscapeName(status), w.Revision, strings.Join(upstreams, ", "), eligible)
}

func landscapeName(status *v1alpha1.RolloutStatus) string {
	if status.Landscape == "" {
		return "the landscape"
	}
	return "landscape " + status.Landscape
}

func shortCommit(commit string) string {
	if commit == "" {
		return "nothing"
	}
	if len(commit) > 12 {
		return commit[:12]
	}
	return commit
}

func describeRef(obj *v1alpha1.ProfileSync) string {
	switch ref := obj.Spec.Ref; {
	case ref.Tag != "":
		return fmt.Sprintf("tag %q", ref.Tag)
	case ref.SemVer != "":
		return fmt.Sprintf("semver range %q", ref.SemVer)
	default:
		return "commit " + ref.Commit
	}
}
