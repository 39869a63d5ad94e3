package profilesync

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1alpha1 "github.com/profilesync/profilesync/api/v1alpha1"
	"github.com/profilesync/profilesync/internal/gitsource"
)

// verificationFailure: the revision is not signed by a key spec.verify
// trusts, or the trusted keys cannot be read. Stalled: the same revision
// fails the same way until a new commit or spec. Not timeless: a key
// expires with time and the Secret of keys may change, so the refusal is
// checked again at the recheck, as a validation refusal is.
var verificationFailure = failureKind{condition: v1alpha1.ValidationFailedCondition, reason: v1alpha1.VerificationFailedReason, stalled: true}

// verificationUnavailable: the Secret of trusted keys cannot be read (not
// there yet, the API server away): nothing is applied unverified, and the
// sync tries again with backoff rather than waiting for a recheck.
var verificationUnavailable = failureKind{condition: v1alpha1.ValidationFailedCondition, reason: v1alpha1.VerificationFailedReason}

func verificationFailed(err error) error { return verificationFailure.of(err) }

// verifiesHistory says whether the fetch must keep the branch's history:
// spec.verify.pathRules verify every commit since the last applied
// revision, which a shallow clone lacks.
func verifiesHistory(obj *v1alpha1.ProfileSync) bool {
	return obj.Spec.Verify != nil && len(obj.Spec.Verify.PathRules) > 0
}

// pathRulesOf are spec.verify's path rules as gitsource reads them.
func pathRulesOf(verify *v1alpha1.SignatureVerification) []gitsource.PathRule {
	rules := make([]gitsource.PathRule, 0, len(verify.PathRules))
	for _, rule := range verify.PathRules {
		rules = append(rules, gitsource.PathRule{Paths: rule.Paths, Principals: rule.Principals})
	}
	return rules
}

// revisionTag is the tag a revision was taken from: spec.ref.tag, or the
// tag spec.ref.semver chose (the revision's name); empty for a branch or
// commit.
func revisionTag(obj *v1alpha1.ProfileSync, revision string) string {
	if ref := obj.Spec.Ref; ref != nil && (ref.Tag != "" || ref.SemVer != "") {
		return gitsource.RefOfRevision(revision)
	}
	return ""
}

// verifySignature refuses the checkout, before anything is built from it,
// unless spec.verify is unset or the revision is signed as spec.verify
// says (gitsource.VerifyRevision): its commit, its annotated tag or both,
// by keys of the Secret spec.verify.secretRef names, at the clock's now;
// with path rules, every commit since the last applied revision, each by
// a key allowed to change what it changes.
func (r *ProfileSyncReconciler) verifySignature(ctx context.Context, obj *v1alpha1.ProfileSync, checkout *gitsource.Result) error {
	verify := obj.Spec.Verify
	if verify == nil {
		return nil
	}
	rules := pathRulesOf(verify)
	if err := gitsource.ValidatePathRules("spec.verify.pathRules", rules); err != nil {
		return verificationFailed(fmt.Errorf("revision %s: %w", checkout.Revision, err))
	}
	// The Secret is read as spec.secretRef's credentials are (credentials):
	// from the API server, in the ProfileSync's own namespace only.
	var secret corev1.Secret
	key := client.ObjectKey{Namespace: obj.Namespace, Name: verify.SecretRef.Name}
	if err := r.SecretReader.Get(ctx, key, &secret); err != nil {
		return verificationUnavailable.of(fmt.Errorf("revision %s: read the trusted keys of spec.verify.secretRef from Secret %s: %w", checkout.Revision, key, err))
	}
	keys, err := gitsource.ParseTrustedKeys(fmt.Sprintf("spec.verify.secretRef: Secret %s", key), secret.Data)
	if err != nil {
		return verificationFailed(fmt.Errorf("revision %s: %w", checkout.Revision, err))
	}
	check := gitsource.RevisionCheck{
		Mode:        gitsource.VerifyMode(verify.Mode),
		Tag:         revisionTag(obj, checkout.Revision),
		LastApplied: gitsource.CommitOfRevision(obj.Status.LastAppliedRevision),
		Range:       gitsource.RangeOptions{Rules: rules, MaxCommits: int(verify.MaxCommits), LimitName: "spec.verify.maxCommits"},
	}
	commit := gitsource.CommitOfRevision(checkout.Revision)
	verdicts, err := gitsource.VerifyRevision(checkout.Dir, commit, check, keys, r.Clock.Now(), r.Fetcher.ObjectLimits())
	if err != nil {
		// The revision cannot be read from the checkout, or lies too far
		// from the last applied one: as a commit over its bound, it is
		// refused and not built.
		return verificationFailed(fmt.Errorf("revision %s: verify its signature: %w", checkout.Revision, err))
	}
	if refusal := gitsource.FirstRefusal(verdicts); refusal != nil {
		return verificationFailed(fmt.Errorf("revision %s: %w", checkout.Revision, refusal))
	}
	signers := make([]string, 0, len(verdicts))
	for _, verdict := range verdicts {
		signers = append(signers, verdict.Signer.String())
	}
	ctrl.LoggerFrom(ctx).V(1).Info("revision signature verified", "revision", checkout.Revision, "mode", check.Mode, "commits", len(verdicts), "signers", signers)
	return nil
}
