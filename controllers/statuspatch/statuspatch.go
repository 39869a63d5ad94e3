// Package statuspatch writes the status of the controllers' objects: as one
// JSON patch of the whole status, through the status subresource, under one
// field manager, retried while the API server fails transiently. The
// ProfileSync reconciler and the status reconcilers write through it.
package statuspatch

import (
	"context"
	"encoding/json"
	"fmt"

	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"

	"github.com/profilesync/profilesync/controllers/transient"
)

// FieldManager is the field manager of every status write of the
// profile controllers. It differs from the sync's "profilesync" so that
// managedFields show who wrote what: the sync owns spec, these controllers own
// status.
const FieldManager = "profilesync-status"

// Write writes status, a pointer to the status of after, through the status
// subresource as FieldManager, when after differs from before (the
// object as read at the start of the reconcile); otherwise it writes nothing.
//
// It is one request on purpose: fluxcd's patch helper writes conditions and
// the rest of status separately, so a reader could see Ready=True with a
// message about classifications that are not written yet, and every change
// would cost two writes. These controllers are the only writers of the
// profiles' status (one worker per object), so the patch needs no optimistic
// lock. A profile deleted while it was reconciled needs no status.
//
// The API server answers with the object's metadata only (the patch is
// sent for a PartialObjectMetadata): no caller reads the answer, and the
// whole object would be the largest part of the write for both sides. A
// NamespacedCloudProfile's status holds its whole merged profile, so the
// API server would encode, and the manager decode, some 470 KB back for
// every status write of a 600-version profile (docs/performance.md, "A
// push"). after is left as the caller built it.
func Write(ctx context.Context, c client.Client, before, after client.Object, status any) error {
	if equality.Semantic.DeepEqual(before, after) {
		return nil
	}
	gvk, err := apiutil.GVKForObject(after, c.Scheme())
	if err != nil {
		return fmt.Errorf("patch status of %s: %w", after.GetName(), err)
	}
	err = transient.Retry(func() error {
		// A fresh target at every try: a failed patch may have filled it.
		target := &metav1.PartialObjectMetadata{}
		target.SetGroupVersionKind(gvk)
		target.SetNamespace(after.GetNamespace())
		target.SetName(after.GetName())
		return c.Status().Patch(ctx, target, replaceStatus{status: status}, client.FieldOwner(FieldManager))
	})
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("patch status of %s: %w", after.GetName(), err)
	}
	return nil
}

// replaceStatus is a JSON patch (RFC 6902) that sets the whole status in one
// "add" operation, which replaces a status that is there. A JSON merge patch
// of the difference costs the API server far more on large profiles: it
// serializes the stored object, merges, and walks the whole result to prune
// nulls, for every write; with a JSON patch it decodes only the top-level
// fields. A NamespacedCloudProfile's status holds its whole merged profile,
// so on a first sync of 10 CloudProfiles and 100 NamespacedCloudProfiles of
// 600 versions the merge patches took a quarter of the API server's CPU
// (docs/performance.md). Sending the whole status costs bytes on loopback or
// in the cluster network, not API-server work.
type replaceStatus struct{ status any }

func (p replaceStatus) Type() types.PatchType { return types.JSONPatchType }

func (p replaceStatus) Data(client.Object) ([]byte, error) {
	return json.Marshal([]map[string]any{{"op": "add", "path": "/status", "value": p.status}})
}
