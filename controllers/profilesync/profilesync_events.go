package profilesync

import (
	v1alpha1 "github.com/profilesync/profilesync/api/v1alpha1"
)

// RevisionEventAnnotation is the annotation of every event of a
// ProfileSync that names the revision the sync attempted, as
// kustomize-controller's events carry kustomize.toolkit.fluxcd.io/revision:
// notification-controller and anyone reading `kubectl get events -o yaml`
// tell which commit an event is about without parsing its message.
const RevisionEventAnnotation = "core.profilesync.io/revision"

// event records an event of the ProfileSync obj, stamped with the revision
// its sync attempted (status.lastAttemptedRevision, or the applied one
// before any attempt); without either, it carries no revision. Every event
// of a ProfileSync goes through here.
func (r *ProfileSyncReconciler) event(obj *v1alpha1.ProfileSync, eventType, reason, messageFmt string, args ...any) {
	var annotations map[string]string
	revision := obj.Status.LastAttemptedRevision
	if revision == "" {
		revision = obj.Status.LastAppliedRevision
	}
	if revision != "" {
		annotations = map[string]string{RevisionEventAnnotation: revision}
	}
	r.EventRecorder.AnnotatedEventf(obj, annotations, eventType, reason, messageFmt, args...)
}
