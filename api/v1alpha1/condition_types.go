package v1alpha1

import "github.com/fluxcd/pkg/apis/meta"

// Condition types. Ready, Reconciling and Stalled follow kstatus, so
// `kubectl wait --for=condition=Ready` and kstatus-based tools work. The
// others are abnormal-true: present only while something is wrong.
const (
	// ReadyCondition is True when the object is fully reconciled.
	ReadyCondition = meta.ReadyCondition

	// ReconcilingCondition is True while the controller works on a change.
	ReconcilingCondition = meta.ReconcilingCondition

	// StalledCondition is True when the controller cannot make progress until
	// someone changes the object or its source (a bad revision in Git, a
	// missing permission).
	StalledCondition = meta.StalledCondition

	// FetchFailedCondition is True when the Git repository could not be fetched.
	FetchFailedCondition = "FetchFailed"

	// BuildFailedCondition is True when the kustomize overlay could not be built
	// or decoded.
	BuildFailedCondition = "BuildFailed"

	// ValidationFailedCondition is True when profiles break a rule of the
	// lifecycle, the namespaced merge or an update rule.
	ValidationFailedCondition = "ValidationFailed"

	// ApplyFailedCondition is True when profiles could not be applied or pruned.
	ApplyFailedCondition = "ApplyFailed"

	// HeldCondition is True while objects of the ProfileSync are held by
	// break glass (HoldUntilAnnotation), its message naming each with its
	// expiry and reason; False with reason HoldRefused while only refused
	// holds are to report. Absent when there is neither.
	HeldCondition = "Held"

	// DriftedCondition is True while, under driftDetection mode warn,
	// objects differ from Git on fields Git sets; its message names them
	// and their fields.
	DriftedCondition = "Drifted"

	// WaitingCondition is True while the landscape runs an older commit
	// than its branch's newest because its upstream landscapes do not hold
	// the newer ones long enough yet (reason WaitingForUpstream) or because
	// spec.rollout.hold holds it (reason RolloutHeld); its message names the
	// candidate and when it becomes eligible. Absent otherwise.
	WaitingCondition = "Waiting"

	// RecordedCondition says whether the record of the landscape's last
	// applied or refused revision is pushed (spec.rollout.record): True with
	// reason Recorded; False with reason RecordFailed while a push fails
	// (retried with backoff; the apply stands) or while the ProfileSync is
	// in no landscape to record for; False with reason AwaitingReady while a
	// profile of the revision is not Ready yet.
	RecordedCondition = "Recorded"
)

// Condition and event reasons. A reason used in a condition is also the reason
// of the event reporting the same thing.
const (
	// SucceededReason: the object is reconciled.
	SucceededReason = meta.SucceededReason

	// SuspendedReason: spec.suspend is true.
	SuspendedReason = meta.SuspendedReason

	// FetchFailedReason: the repository could not be reached, authenticated
	// against, or the ref could not be resolved.
	FetchFailedReason = "FetchFailed"

	// BuildFailedReason: the kustomize build failed, or it produced objects that
	// are not profiles or cannot be decoded.
	BuildFailedReason = "BuildFailed"

	// ValidationFailedReason: a profile breaks a lifecycle, merge or update rule.
	// The message names the file or object and the field.
	ValidationFailedReason = "ValidationFailed"

	// PolicyViolationReason: the revision breaks a rule of severity error of
	// its landscape's versioning policy (profilesync-policy.yaml, see
	// docs/policy.md), or that policy file is invalid. Set on the
	// ValidationFailed condition; nothing of the revision is written.
	PolicyViolationReason = "PolicyViolation"

	// PolicyWarningReason: the revision breaks a rule of severity warning of
	// its versioning policy; it is applied (a Warning event per finding, once
	// per revision).
	PolicyWarningReason = "PolicyWarning"

	// VerificationFailedReason: the revision's commit is not signed by a key
	// spec.verify trusts (unsigned, an unknown key, a bad signature or an
	// expired key), or the Secret of trusted keys cannot be read as keys.
	// Set on the ValidationFailed condition; the revision is refused before
	// it is built, and nothing of it is written.
	VerificationFailedReason = "VerificationFailed"

	// SyncFailedReason: the sync failed in a way none of its phases knows (the
	// cluster could not be listed, an object could not be converted); it is
	// retried with backoff.
	SyncFailedReason = "SyncFailed"

	// ApplyFailedReason: the API server refused an apply or a prune.
	ApplyFailedReason = "ApplyFailed"

	// AccessDeniedReason: the ProfileSync may not write an object its revision
	// contains: the tenancy rule refuses it (a cluster-scoped CloudProfile
	// from a tenant namespace, or a NamespacedCloudProfile in another
	// namespace), or the API server refused the write of the ServiceAccount
	// the sync impersonates (spec.serviceAccountName).
	AccessDeniedReason = "AccessDenied"

	// ParentNotFoundReason: a NamespacedCloudProfile's parent does not exist.
	ParentNotFoundReason = "ParentNotFound"

	// ClassificationChangedReason: a version moved to its next lifecycle stage.
	// Used for events.
	ClassificationChangedReason = "ClassificationChanged"

	// BuildWarningReason: the revision builds, but a kustomization does
	// something fragile, like a JSON patch that addresses a keyed list by
	// index (a Warning event, once per revision).
	BuildWarningReason = "BuildWarning"

	// AppliedReason: a sync created or configured profiles (an event).
	AppliedReason = "Applied"

	// PrunedReason: a sync deleted a profile removed from Git (an event).
	PrunedReason = "Pruned"

	// DriftCorrectedReason: a hand edit of a Git-owned field was put back.
	// Used for events.
	DriftCorrectedReason = "DriftCorrected"

	// DriftDetectedReason: under driftDetection mode warn, a Git-owned field
	// was changed on the cluster and left as it is. The reason of the
	// Drifted condition and of an event per drifted object, naming the
	// fields.
	DriftDetectedReason = "DriftDetected"

	// HeldReason: objects are held; the reason of the Held condition.
	HeldReason = "Held"

	// HoldSetReason: the sync began to honour a hold (or its expiry
	// changed). Used for events.
	HoldSetReason = "HoldSet"

	// HoldReleasedReason: Git caught up with a held object, so the hold
	// ended and its annotations were removed. Used for events.
	HoldReleasedReason = "HoldReleased"

	// HoldExpiredReason: a hold reached its expiry; its annotations were
	// removed and the object is synced again. Used for events.
	HoldExpiredReason = "HoldExpired"

	// HoldRefusedReason: a hold annotation of an object the ProfileSync owns
	// cannot be honoured (not RFC 3339, not in the future, or beyond the
	// operator's --max-hold); the object is synced as if not held. The
	// reason of a Warning event and of the Held condition when no hold is
	// honoured.
	HoldRefusedReason = "HoldRefused"

	// HoldIgnoredReason: an object of the revision carries a hold but is not
	// in the ProfileSync's inventory, so the hold is not its to honour. A
	// Warning event.
	HoldIgnoredReason = "HoldIgnored"

	// WaitingForUpstreamReason: a newer commit waits for the upstream
	// landscapes to hold it, Ready, for the soak.
	WaitingForUpstreamReason = "WaitingForUpstream"

	// RolloutHeldReason: spec.rollout.hold keeps the landscape at the
	// revision it runs; the event says which candidate it holds back.
	RolloutHeldReason = "RolloutHeld"

	// PromotedReason: the landscape took a commit its upstream landscapes
	// held for the soak (an event).
	PromotedReason = "Promoted"

	// HotfixReason: the landscape took spec.rollout.hotfix at once (an
	// event).
	HotfixReason = "Hotfix"

	// RecordedReason: the record of the revision is pushed.
	RecordedReason = "Recorded"

	// RecordFailedReason: pushing the record failed; it is retried with
	// backoff and never undoes the apply.
	RecordFailedReason = "RecordFailed"

	// AwaitingReadyReason: a profile of the applied revision is not Ready
	// yet, so it is not recorded yet.
	AwaitingReadyReason = "AwaitingReady"

	// RolloutInvalidReason: the rollout file, or the ProfileSync's place in
	// it (spec.landscape, spec.rollout.hotfix), is wrong; the revision
	// applied stays.
	RolloutInvalidReason = "RolloutInvalid"
)
