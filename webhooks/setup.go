// Package webhooks is ProfileSync's validating admission webhook for
// CloudProfiles and NamespacedCloudProfiles. It enforces on the API server
// what the sync and the command line check before they write, with the very
// same functions of internal/render/merge and internal/lifecycle, so a rule means
// the same thing whoever changes a profile (kubectl, the sync, another tool):
//
//   - NamespacedCloudProfile create and update: changing spec.kubernetes,
//     spec.machineImages or spec.providerConfig needs the custom verbs
//     modify-spec-kubernetes, modify-spec-machineimages and
//     modify-spec-providerconfig on namespacedcloudprofiles (GEP-25), checked
//     with a SubjectAccessReview for the requesting user; the parent must
//     exist and merge.Namespaced must accept the override (docs/semantics.md §3).
//   - CloudProfile update: merge.CheckCloudProfileChange (no version made
//     unavailable again, no maxNodesTotal lowered, nothing a
//     NamespacedCloudProfile overrides removed).
//   - CloudProfile delete: refused while NamespacedCloudProfiles extend it
//     (merge.CheckCloudProfileChange too).
//   - Both kinds, create and update: setting, changing or removing the hold
//     annotations of break glass (v1alpha1.HoldUntilAnnotation,
//     v1alpha1.HoldReasonAnnotation) needs the custom verb hold on the kind,
//     and a hold v1alpha1.ParseHold rejects is refused in its words.
//
// The webhook is registered for the main resources only: status writes of the
// controllers never pass through it. docs/admission.md explains the verbs and
// how to grant them.
package webhooks

import (
	"fmt"
	"time"

	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"

	v1alpha1 "github.com/profilesync/profilesync/api/v1alpha1"
)

// The operator's own service account holds the custom verbs, so the sync may
// apply every field of the NamespacedCloudProfiles in Git, and may ask the API
// server whether a requesting user holds them. It holds the verb hold too
// (marker in controllers/profilesync_hold.go), and needs no exemption: the
// sync never sets or changes the hold annotations (a profile in Git may not
// carry them, they are in v1alpha1.ReservedLabelDomain, and its server-side
// applies leave annotations of other field managers alone), but removes them
// when a hold ends, and the webhook checks that removal like anyone's.
//
// +kubebuilder:rbac:groups=core.profilesync.io,resources=namespacedcloudprofiles,verbs=modify-spec-kubernetes;modify-spec-machineimages;modify-spec-providerconfig
// +kubebuilder:rbac:groups=authorization.k8s.io,resources=subjectaccessreviews,verbs=create

// Options are what the webhooks need beyond the manager.
type Options struct {
	// Clock is the source of "now" for the update rule, for validating
	// merged specs and for a hold's expiry; the real clock in production.
	Clock clock.PassiveClock
	// MaxHold is how far in the future a hold may expire, the manager's
	// --max-hold; zero means v1alpha1.DefaultMaxHold.
	MaxHold time.Duration
}

// SetupWithManager registers both validating webhooks with the manager's
// webhook server (Register) before the manager starts. The manager reports
// ready only once the webhook server serves, so a rollout never routes
// admission requests to a pod that cannot answer them.
func SetupWithManager(mgr ctrl.Manager, opts Options) error {
	if err := Register(mgr, opts); err != nil {
		return err
	}
	if err := mgr.AddReadyzCheck("admission-webhook", mgr.GetWebhookServer().StartedChecker()); err != nil {
		return fmt.Errorf("add admission webhook readiness check: %w", err)
	}
	return nil
}

// Register registers both validating webhooks with the manager's webhook
// server, which starts serving them then (the manager may be running
// already: the operator registers them once it has provisioned their serving
// certificate). Reads go to the API server directly (mgr.GetAPIReader), not
// the cache, so a parent or namespaced profile created a moment ago is seen.
// The caller sees to the readiness check.
func Register(mgr ctrl.Manager, opts Options) error {
	if err := ctrl.NewWebhookManagedBy(mgr, &v1alpha1.NamespacedCloudProfile{}).
		WithValidator(&NamespacedCloudProfileValidator{Reader: mgr.GetAPIReader(), Client: mgr.GetClient(), Clock: opts.Clock, MaxHold: opts.MaxHold}).
		Complete(); err != nil {
		return fmt.Errorf("set up NamespacedCloudProfile webhook: %w", err)
	}
	if err := ctrl.NewWebhookManagedBy(mgr, &v1alpha1.CloudProfile{}).
		WithValidator(&CloudProfileValidator{Reader: mgr.GetAPIReader(), Client: mgr.GetClient(), Clock: opts.Clock, MaxHold: opts.MaxHold}).
		Complete(); err != nil {
		return fmt.Errorf("set up CloudProfile webhook: %w", err)
	}
	return nil
}
