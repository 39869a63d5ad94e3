package webhooks

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	v1alpha1 "github.com/profilesync/profilesync/api/v1alpha1"
	"github.com/profilesync/profilesync/internal/render/merge"
)

// +kubebuilder:webhook:path=/validate-core-profilesync-io-v1alpha1-namespacedcloudprofile,mutating=false,failurePolicy=fail,sideEffects=None,groups=core.profilesync.io,resources=namespacedcloudprofiles,verbs=create;update,versions=v1alpha1,name=vnamespacedcloudprofile.core.profilesync.io,admissionReviewVersions=v1

// The custom RBAC verbs of GEP-25 on namespacedcloudprofiles. They are
// lowercase, as Gardener's implementation spells them (GEP-25's text writes
// modify-spec-machineImages); RBAC verbs are case-sensitive, so only these
// exact spellings grant anything.
const (
	// VerbModifySpecKubernetes allows creating or changing spec.kubernetes of
	// a NamespacedCloudProfile.
	VerbModifySpecKubernetes = "modify-spec-kubernetes"
	// VerbModifySpecMachineImages allows creating or changing
	// spec.machineImages of a NamespacedCloudProfile.
	VerbModifySpecMachineImages = "modify-spec-machineimages"
	// VerbModifySpecProviderConfig allows creating or changing
	// spec.providerConfig of a NamespacedCloudProfile: provider-specific
	// configuration (image references, for example) that the provider
	// extension merges, as Gardener guards it.
	VerbModifySpecProviderConfig = "modify-spec-providerconfig"
)

// namespacedCloudProfileResource is the resource the custom verbs apply to.
var namespacedCloudProfileResource = v1alpha1.GroupVersion.WithResource("namespacedcloudprofiles")

// NamespacedCloudProfileValidator admits a NamespacedCloudProfile when the
// requesting user may change what the request changes and the profile can be
// merged with its parent.
type NamespacedCloudProfileValidator struct {
	// Reader reads the parent CloudProfile.
	Reader client.Reader
	// Client creates the SubjectAccessReviews of the custom verbs.
	Client client.Client
	// Clock is the time the merged spec is validated at: versions that are
	// no longer supported do not count towards one supported per minor; and
	// the "now" a hold's expiry is checked against.
	Clock clock.PassiveClock
	// MaxHold is how far in the future a hold may expire
	// (v1alpha1.ParseHold); zero means v1alpha1.DefaultMaxHold.
	MaxHold time.Duration
}

var _ admission.Validator[*v1alpha1.NamespacedCloudProfile] = &NamespacedCloudProfileValidator{}

// ValidateCreate checks a new NamespacedCloudProfile. A non-empty
// spec.kubernetes or spec.machineImages counts as a change of that field, and
// a hold annotation as setting a hold.
func (v *NamespacedCloudProfileValidator) ValidateCreate(ctx context.Context, obj *v1alpha1.NamespacedCloudProfile) (admission.Warnings, error) {
	if err := v.admitHold(ctx, nil, obj); err != nil {
		return nil, err
	}
	return nil, v.validate(ctx, nil, obj)
}

// ValidateUpdate checks a changed NamespacedCloudProfile. An update that
// leaves the spec and the hold annotations as they are (labels, other
// annotations, finalizers) is always admitted, so a profile whose parent has
// moved on can still be relabelled and deleted.
func (v *NamespacedCloudProfileValidator) ValidateUpdate(ctx context.Context, oldObj, newObj *v1alpha1.NamespacedCloudProfile) (admission.Warnings, error) {
	if err := v.admitHold(ctx, oldObj, newObj); err != nil {
		return nil, err
	}
	if equality.Semantic.DeepEqual(oldObj.Spec, newObj.Spec) {
		return nil, nil
	}
	return nil, v.validate(ctx, oldObj, newObj)
}

// ValidateDelete admits every deletion: nothing depends on a namespaced profile.
func (v *NamespacedCloudProfileValidator) ValidateDelete(context.Context, *v1alpha1.NamespacedCloudProfile) (admission.Warnings, error) {
	return nil, nil
}

// admitHold checks a change of the hold annotations (admitHold). old is nil
// on create.
func (v *NamespacedCloudProfileValidator) admitHold(ctx context.Context, old, obj *v1alpha1.NamespacedCloudProfile) error {
	r := holdRequest{resource: namespacedCloudProfileResource, kind: v1alpha1.NamespacedCloudProfileKind, obj: obj}
	if old != nil {
		r.old = old
	}
	return admitHold(ctx, v.Client, v.Clock.Now(), v.MaxHold, r)
}

// validate checks the custom verbs first, so a user who may not make the
// change learns that rather than what else is wrong with it, then the merge
// with the parent. old is nil on create.
func (v *NamespacedCloudProfileValidator) validate(ctx context.Context, old, obj *v1alpha1.NamespacedCloudProfile) error {
	if err := v.authorize(ctx, old, obj); err != nil {
		return err
	}

	var parentSpec *v1alpha1.CloudProfileSpec
	parent := &v1alpha1.CloudProfile{}
	err := v.Reader.Get(ctx, client.ObjectKey{Name: obj.Spec.Parent.Name}, parent)
	switch {
	case err == nil:
		parentSpec = &parent.Spec
	case !apierrors.IsNotFound(err):
		return apierrors.NewInternalError(fmt.Errorf("look up parent CloudProfile %q of NamespacedCloudProfile %s/%s: %w",
			obj.Spec.Parent.Name, obj.Namespace, obj.Name, err))
	}
	// A missing parent is merge.Namespaced's spec.parent.name Not found.
	_, errs := merge.NamespacedAt(parentSpec, &obj.Spec, v.Clock.Now())
	if len(errs) > 0 {
		errs = merge.ExplainMissingParent(errs, "in the cluster")
	}
	// On an update, Gardener's rule that needs the live object too: no
	// override may have its expiry moved into the past (the sync checks the
	// same before it writes, syncplan's checkUpdateRules).
	errs = append(errs, merge.CheckNamespacedChange(old, parentSpec, &obj.Spec, v.Clock.Now())...)
	if len(errs) > 0 {
		return apierrors.NewInvalid(v1alpha1.GroupVersion.WithKind(v1alpha1.NamespacedCloudProfileKind).GroupKind(), obj.Name, errs)
	}
	return nil
}

// guardedField is a field of NamespacedCloudProfileSpec that only holders of
// a custom verb may change.
type guardedField struct {
	path    *field.Path
	verb    string
	changed func(old, obj *v1alpha1.NamespacedCloudProfile) bool
}

var guardedFields = []guardedField{
	{path: field.NewPath("spec", "kubernetes"), verb: VerbModifySpecKubernetes, changed: kubernetesChanged},
	{path: field.NewPath("spec", "machineImages"), verb: VerbModifySpecMachineImages, changed: machineImagesChanged},
	{path: field.NewPath("spec", "providerConfig"), verb: VerbModifySpecProviderConfig, changed: providerConfigChanged},
}

// kubernetesChanged compares spec.kubernetes semantically; a missing field
// and one without versions are the same.
func kubernetesChanged(old, obj *v1alpha1.NamespacedCloudProfile) bool {
	return !equality.Semantic.DeepEqual(kubernetesOf(old), kubernetesOf(obj))
}

func kubernetesOf(ncp *v1alpha1.NamespacedCloudProfile) v1alpha1.KubernetesSettings {
	if ncp == nil || ncp.Spec.Kubernetes == nil {
		return v1alpha1.KubernetesSettings{}
	}
	return *ncp.Spec.Kubernetes
}

// machineImagesChanged compares spec.machineImages semantically (a nil and an
// empty list are equal); order counts, as it decides the order of appended
// images in the merged spec.
func machineImagesChanged(old, obj *v1alpha1.NamespacedCloudProfile) bool {
	var oldImages []v1alpha1.NamespacedMachineImage
	if old != nil {
		oldImages = old.Spec.MachineImages
	}
	return !equality.Semantic.DeepEqual(oldImages, obj.Spec.MachineImages)
}

// providerConfigChanged compares spec.providerConfig as JSON values, so the
// same configuration serialized differently (key order, spacing) is no
// change; a missing providerConfig and JSON null are the same.
func providerConfigChanged(old, obj *v1alpha1.NamespacedCloudProfile) bool {
	var oldConfig *runtime.RawExtension
	if old != nil {
		oldConfig = old.Spec.ProviderConfig
	}
	return !equality.Semantic.DeepEqual(jsonValueOf(oldConfig), jsonValueOf(obj.Spec.ProviderConfig))
}

// jsonValueOf decodes a RawExtension's JSON; nil for none. A value that does
// not decode is compared as its bytes, which still tells it from any other.
func jsonValueOf(raw *runtime.RawExtension) any {
	if raw == nil || len(raw.Raw) == 0 {
		return nil
	}
	var value any
	if err := json.Unmarshal(raw.Raw, &value); err != nil {
		return string(raw.Raw)
	}
	return value
}

// authorize asks the API server, with one SubjectAccessReview per changed
// guarded field, whether the requesting user holds its custom verb on
// namespacedcloudprofiles in the object's namespace. Every missing verb is
// reported, as Forbidden naming the field and the verb.
func (v *NamespacedCloudProfileValidator) authorize(ctx context.Context, old, obj *v1alpha1.NamespacedCloudProfile) error {
	var changed []guardedField
	for _, f := range guardedFields {
		if f.changed(old, obj) {
			changed = append(changed, f)
		}
	}
	if len(changed) == 0 {
		return nil
	}
	req, err := admission.RequestFromContext(ctx)
	if err != nil {
		return apierrors.NewInternalError(fmt.Errorf("authorize change of NamespacedCloudProfile %s/%s: %w", obj.Namespace, obj.Name, err))
	}
	var denied field.ErrorList
	for _, f := range changed {
		review := subjectAccessReview(req.UserInfo, namespacedCloudProfileResource, obj.Namespace, obj.Name, f.verb)
		if err := v.Client.Create(ctx, review); err != nil {
			return apierrors.NewInternalError(fmt.Errorf("check verb %q for user %q on NamespacedCloudProfile %s/%s: %w",
				f.verb, req.UserInfo.Username, obj.Namespace, obj.Name, err))
		}
		if review.Status.Allowed {
			continue
		}
		detail := fmt.Sprintf("user %q may not change %s of NamespacedCloudProfiles in namespace %q: that needs the verb %q on %s",
			req.UserInfo.Username, f.path, obj.Namespace, f.verb, namespacedCloudProfileResource.GroupResource())
		if review.Status.EvaluationError != "" {
			detail += " (" + review.Status.EvaluationError + ")"
		}
		denied = append(denied, field.Forbidden(f.path, detail))
	}
	if len(denied) > 0 {
		return apierrors.NewForbidden(namespacedCloudProfileResource.GroupResource(), obj.Name, denied.ToAggregate())
	}
	return nil
}

// subjectAccessReview asks whether user may use verb on the object
// namespace/name of resource (namespace is empty for a cluster-scoped one).
func subjectAccessReview(user authenticationv1.UserInfo, resource schema.GroupVersionResource, namespace, name, verb string) *authorizationv1.SubjectAccessReview {
	var extra map[string]authorizationv1.ExtraValue
	if len(user.Extra) > 0 {
		extra = make(map[string]authorizationv1.ExtraValue, len(user.Extra))
		for k, v := range user.Extra {
			extra[k] = authorizationv1.ExtraValue(v)
		}
	}
	return &authorizationv1.SubjectAccessReview{
		Spec: authorizationv1.SubjectAccessReviewSpec{
			User:   user.Username,
			Groups: user.Groups,
			UID:    user.UID,
			Extra:  extra,
			ResourceAttributes: &authorizationv1.ResourceAttributes{
				Namespace: namespace,
				Verb:      verb,
				Group:     resource.Group,
				Version:   resource.Version,
				Resource:  resource.Resource,
				Name:      name,
			},
		},
	}
}
