package profilesync

import (
	"context"
	"errors"
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

// verifySignature refuses the checkout, before anything is built from it,
// unless spec.verify is unset or its commit is signed by a key of the
// Secret spec.verify.secretRef names, at the clock's now
// (gitsource.VerifyCommit).
func (r *ProfileSyncReconciler) verifySignature(ctx context.Context, obj *v1alpha1.ProfileSync, checkout *gitsource.Result) error {
	if obj.Spec.Verify == nil {
		return nil
	}
	// The Secret is read as spec.secretRef's credentials are (credentials):
	// from the API server, in the ProfileSync's own namespace only.
	var secret corev1.Secret
	key := client.ObjectKey{Namespace: obj.Namespace, Name: obj.Spec.Verify.SecretRef.Name}
	if err := r.SecretReader.Get(ctx, key, &secret); err != nil {
		return verificationUnavailable.of(fmt.Errorf("revision %s: read the trusted keys of spec.verify.secretRef from Secret %s: %w", checkout.Revision, key, err))
	}
	keys, err := gitsource.ParseTrustedKeys(fmt.Sprintf("spec.verify.secretRef: Secret %s", key), secret.Data)
	if err != nil {
		return verificationFailed(fmt.Errorf("revision %s: %w", checkout.Revision, err))
	}
	commit := gitsource.CommitOfRevision(checkout.Revision)
	signer, err := gitsource.VerifyCommit(checkout.Dir, commit, keys, r.Clock.Now(), r.Fetcher.ObjectLimits())
	var refused *gitsource.VerificationError
	if errors.As(err, &refused) {
		return verificationFailed(fmt.Errorf("revision %s: %w", checkout.Revision, err))
	}
	if err != nil {
		// The commit cannot be read from the checkout at all: as a commit
		// over its bound, the revision is refused and not built.
		return verificationFailed(fmt.Errorf("revision %s: verify its signature: %w", checkout.Revision, err))
	}
	ctrl.LoggerFrom(ctx).V(1).Info("revision signature verified", "revision", checkout.Revision, "signer", signer)
	return nil
}
