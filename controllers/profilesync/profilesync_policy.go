package profilesync

import (
	"errors"
	"fmt"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"

	v1alpha1 "github.com/profilesync/profilesync/api/v1alpha1"
	"github.com/profilesync/profilesync/internal/gitsource"
	"github.com/profilesync/profilesync/internal/policy"
	"github.com/profilesync/profilesync/internal/render/profile"
	"github.com/profilesync/profilesync/internal/rollout"
)

// checkPolicy checks a valid revision against the versioning policy of its
// overlay (the profilesync-policy.yaml nearest to spec.path in the checkout,
// read as the build reads it) before anything is written, as 'profilesync
// diff' checks a pull request: the profiles at now, the time the set was
// validated at, and for the notice rule the change from what the cluster
// holds, made at the time of the revision's commit. A rule of severity error, or a policy file that
// cannot be read, refuses the revision whole (ValidationFailed,
// PolicyViolation); its warnings are returned, for the sync to report once
// per revision and spec.
//
// The policy is checked again whenever its verdict could change, not only
// for new commits: a revision that time alone makes break an error rule is
// refused from then on, and the profiles stay as applied (their lifecycle
// goes on); 'profilesync timeline --policy' shows such dates in advance.
// until is the first instant at which the findings could change
// (policy.Policy.NextChange), zero for none; the live counterparts it
// compares with are read through reads.
func (r *ProfileSyncReconciler) checkPolicy(obj *v1alpha1.ProfileSync, checkout *gitsource.Result, set *profile.Set, reads *liveReads,
	now time.Time) (warnings []syncWarning, until time.Time, err error) {
	p, file, err := policy.Find(checkout.Dir, obj.Spec.Path, r.Builds.Limits().MaxFileSize)
	if err != nil {
		return nil, time.Time{}, policyViolation(fmt.Errorf("revision %s: %w", checkout.Revision, err))
	}
	if p == nil {
		return nil, time.Time{}, nil
	}
	commit, err := gitsource.CommitTime(checkout.Dir, checkout.Commit, r.Fetcher.ObjectLimits())
	if err != nil {
		// The notice is then measured from now, which only asks for more.
		// A committer time no status can hold (rollout.ErrTimeOutOfRange:
		// Git stores any unix seconds) is said, so that a hostile commit
		// can neither set its own notice nor pass unnoticed. A verdict
		// measured from now holds for now only: until is now.
		commit, until = now, now
		if errors.Is(err, rollout.ErrTimeOutOfRange) {
			warnings = append(warnings, syncWarning{reason: v1alpha1.PolicyWarningReason,
				message: fmt.Sprintf("revision %s: %v; the policy's notice is measured from now", checkout.Revision, err)})
		}
	}
	head := set.Evaluate()
	findings := p.Check(head, liveCounterparts(head, reads), now, commit)
	for _, w := range findings.Warnings.Summarize() {
		warnings = append(warnings, syncWarning{reason: v1alpha1.PolicyWarningReason, message: w.String()})
	}
	if len(findings.Errors) > 0 {
		return warnings, time.Time{}, policyViolation(fmt.Errorf("revision %s breaks the versioning policy %s: %w", checkout.Revision, file, findings.Errors.Summarize()))
	}
	if next, ok := p.NextChange(head, now); ok && until.IsZero() {
		until = next
	}
	return warnings, until, nil
}

// liveCounterparts returns what the cluster holds of the profiles in head:
// a CloudProfile's spec, a NamespacedCloudProfile's merged
// status.cloudProfileSpec (what its namespace sees). Profiles the cluster
// does not have yet are left out. Each is read through reads, which records
// it: the policy's verdict holds while they stay as they are.
func liveCounterparts(head []profile.Object, reads *liveReads) []profile.Object {
	base := make([]profile.Object, 0, len(head))
	for _, o := range head {
		if o.CloudProfile != nil {
			if cp, ok := reads.cloudProfile(o.Name()); ok {
				base = append(base, profile.Object{CloudProfile: cp})
			}
			continue
		}
		if ncp, ok := reads.namespaced(client.ObjectKey{Namespace: o.Namespace(), Name: o.Name()}); ok {
			base = append(base, profile.Object{NamespacedCloudProfile: ncp})
		}
	}
	return base
}
