package webhooks

import (
	"context"
	"fmt"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	v1alpha1 "github.com/profilesync/profilesync/api/v1alpha1"
)

// holdAnnotations are the annotations of break glass; setting, changing or
// removing any of them needs v1alpha1.HoldVerb.
var holdAnnotations = []string{v1alpha1.HoldUntilAnnotation, v1alpha1.HoldReasonAnnotation}

var annotationsPath = field.NewPath("metadata", "annotations")

// holdRequest is one create or update of a CloudProfile or
// NamespacedCloudProfile, as admitHold sees it. old is nil on create.
type holdRequest struct {
	resource schema.GroupVersionResource
	kind     string
	old, obj client.Object
}

// changedHoldAnnotations lists the hold annotations the request sets, changes
// or removes, in holdAnnotations' order.
func (r holdRequest) changedHoldAnnotations() []string {
	var oldAnnotations map[string]string
	if r.old != nil {
		oldAnnotations = r.old.GetAnnotations()
	}
	newAnnotations := r.obj.GetAnnotations()
	var changed []string
	for _, key := range holdAnnotations {
		oldValue, wasSet := oldAnnotations[key]
		newValue, isSet := newAnnotations[key]
		if wasSet != isSet || oldValue != newValue {
			changed = append(changed, key)
		}
	}
	return changed
}

// admitHold refuses a request that sets, changes or removes a hold
// annotation unless the requesting user holds v1alpha1.HoldVerb on the kind
// (asked with a SubjectAccessReview, as for GEP-25's verbs), and refuses a
// hold that v1alpha1.ParseHold rejects at now with maxHold, in its words. The
// verb is checked first, so a user who may not hold learns that rather than
// what is wrong with the value. A request that leaves both annotations as
// they are passes untouched: an expired hold does not block later edits, nor
// the sync's correction once it has expired.
func admitHold(ctx context.Context, c client.Client, now time.Time, maxHold time.Duration, r holdRequest) error {
	changed := r.changedHoldAnnotations()
	if len(changed) == 0 {
		return nil
	}
	ref := r.obj.GetName()
	scope := fmt.Sprintf("%ss", r.kind)
	if namespace := r.obj.GetNamespace(); namespace != "" {
		ref = namespace + "/" + ref
		scope = fmt.Sprintf("%ss in namespace %q", r.kind, namespace)
	}
	req, err := admission.RequestFromContext(ctx)
	if err != nil {
		return apierrors.NewInternalError(fmt.Errorf("authorize hold of %s %s: %w", r.kind, ref, err))
	}
	review := subjectAccessReview(req.UserInfo, r.resource, r.obj.GetNamespace(), r.obj.GetName(), v1alpha1.HoldVerb)
	if err := c.Create(ctx, review); err != nil {
		return apierrors.NewInternalError(fmt.Errorf("check verb %q for user %q on %s %s: %w",
			v1alpha1.HoldVerb, req.UserInfo.Username, r.kind, ref, err))
	}
	if !review.Status.Allowed {
		var denied field.ErrorList
		for _, key := range changed {
			detail := fmt.Sprintf("user %q may not set, change or remove the hold annotation %s of %s: breaking glass needs the verb %q on %s",
				req.UserInfo.Username, key, scope, v1alpha1.HoldVerb, r.resource.GroupResource())
			if review.Status.EvaluationError != "" {
				detail += " (" + review.Status.EvaluationError + ")"
			}
			denied = append(denied, field.Forbidden(annotationsPath.Key(key), detail))
		}
		return apierrors.NewForbidden(r.resource.GroupResource(), r.obj.GetName(), denied.ToAggregate())
	}
	if _, err := v1alpha1.ParseHold(r.obj.GetAnnotations(), now, maxHold); err != nil {
		return apierrors.NewInvalid(v1alpha1.GroupVersion.WithKind(r.kind).GroupKind(), r.obj.GetName(),
			field.ErrorList{field.Invalid(annotationsPath, field.OmitValueType{}, err.Error())})
	}
	return nil
}
