package webhooks

import (
	"context"
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	v1alpha1 "github.com/profilesync/profilesync/api/v1alpha1"
	"github.com/profilesync/profilesync/internal/render/merge"
)

// +kubebuilder:webhook:path=/validate-core-profilesync-io-v1alpha1-cloudprofile,mutating=false,failurePolicy=fail,sideEffects=None,groups=core.profilesync.io,resources=cloudprofiles,verbs=create;update;delete,versions=v1alpha1,name=vcloudprofile.core.profilesync.io,admissionReviewVersions=v1

// cloudProfileResource names CloudProfiles in Forbidden errors and
// SubjectAccessReviews.
var cloudProfileResource = v1alpha1.GroupVersion.WithResource("cloudprofiles")

// CloudProfileValidator admits changes of a CloudProfile that keep what
// clusters and namespaced profiles rely on.
type CloudProfileValidator struct {
	// Reader lists the NamespacedCloudProfiles that may extend the profile.
	Reader client.Reader
	// Client creates the SubjectAccessReviews of the hold verb.
	Client client.Client
	// Clock is the source of "now" for merge.CheckCloudProfileChange and
	// for a hold's expiry.
	Clock clock.PassiveClock
	// MaxHold is how far in the future a hold may expire
	// (v1alpha1.ParseHold); zero means v1alpha1.DefaultMaxHold.
	MaxHold time.Duration
}

var _ admission.Validator[*v1alpha1.CloudProfile] = &CloudProfileValidator{}

// ValidateCreate admits every new CloudProfile (nothing can depend on it
// yet) unless it comes with a hold the requesting user may not set or that
// is not valid (admitHold).
func (v *CloudProfileValidator) ValidateCreate(ctx context.Context, obj *v1alpha1.CloudProfile) (admission.Warnings, error) {
	return nil, v.admitHold(ctx, nil, obj)
}

// ValidateUpdate refuses a spec change that makes a version unavailable again
// after it left that stage (at the clock's now), lowers maxNodesTotal, or
// that removes a Kubernetes
// version, machine image, image version or lifecycle stage a
// NamespacedCloudProfile overrides: merge.CheckCloudProfileChange, as the
// sync checks before it applies. All errors are reported together, as Invalid
// at paths of the CloudProfile. Setting, changing or removing a hold
// annotation is checked first (admitHold).
func (v *CloudProfileValidator) ValidateUpdate(ctx context.Context, oldObj, newObj *v1alpha1.CloudProfile) (admission.Warnings, error) {
	if err := v.admitHold(ctx, oldObj, newObj); err != nil {
		return nil, err
	}
	if equality.Semantic.DeepEqual(oldObj.Spec, newObj.Spec) {
		return nil, nil
	}
	children, err := v.namespacedProfiles(ctx, newObj.Name)
	if err != nil {
		return nil, err
	}
	if errs := merge.CheckCloudProfileChange(newObj.Name, &oldObj.Spec, &newObj.Spec, children, v.Clock.Now()); len(errs) > 0 {
		return nil, apierrors.NewInvalid(v1alpha1.GroupVersion.WithKind(v1alpha1.CloudProfileKind).GroupKind(), newObj.Name, errs)
	}
	return nil, nil
}

// ValidateDelete refuses to delete a CloudProfile that NamespacedCloudProfiles
// extend, naming each of them; delete those (or move them to another parent
// by re-creating them) first.
func (v *CloudProfileValidator) ValidateDelete(ctx context.Context, obj *v1alpha1.CloudProfile) (admission.Warnings, error) {
	children, err := v.namespacedProfiles(ctx, obj.Name)
	if err != nil {
		return nil, err
	}
	if errs := merge.CheckCloudProfileChange(obj.Name, &obj.Spec, nil, children, v.Clock.Now()); len(errs) > 0 {
		return nil, apierrors.NewForbidden(cloudProfileResource.GroupResource(), obj.Name, errs.ToAggregate())
	}
	return nil, nil
}

// admitHold checks a change of the hold annotations (admitHold). old is nil
// on create.
func (v *CloudProfileValidator) admitHold(ctx context.Context, old, obj *v1alpha1.CloudProfile) error {
	r := holdRequest{resource: cloudProfileResource, kind: v1alpha1.CloudProfileKind, obj: obj}
	if old != nil {
		r.old = old
	}
	return admitHold(ctx, v.Client, v.Clock.Now(), v.MaxHold, r)
}

// namespacedProfiles lists every NamespacedCloudProfile in the cluster;
// merge.CheckCloudProfileChange itself skips those with another parent. The list
// is read from the API server, not a cache, so a namespaced profile created a
// moment ago already protects its parent.
func (v *CloudProfileValidator) namespacedProfiles(ctx context.Context, parentName string) ([]v1alpha1.NamespacedCloudProfile, error) {
	var list v1alpha1.NamespacedCloudProfileList
	if err := v.Reader.List(ctx, &list); err != nil {
		return nil, apierrors.NewInternalError(fmt.Errorf("list NamespacedCloudProfiles to check CloudProfile %q: %w", parentName, err))
	}
	return list.Items, nil
}
