// Package inventory is how the controllers find the ProfileSyncs that own a
// profile: the key of an object an inventory lists, the index of
// ProfileSyncs by those keys, and the predicate that passes a change of a
// profile's hold annotations. The ProfileSync reconciler judges a hold when
// they change, and the status reconcilers show the hold its owner honours;
// both look the owner up through the index.
package inventory

import (
	"context"
	"fmt"
	"maps"

	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	v1alpha1 "github.com/profilesync/profilesync/api/v1alpha1"
)

// Key is the key of the object of kind namespace/name in an inventory.
func Key(kind, namespace, name string) string {
	return kind + "/" + namespace + "/" + name
}

// Index indexes ProfileSyncs by the Key of every entry of their
// status.inventory, so that the ProfileSyncs owning a profile are found
// without listing every ProfileSync.
const Index = ".status.inventory.entries"

// AddIndex registers Index with the manager's indexer.
func AddIndex(ctx context.Context, indexer client.FieldIndexer) error {
	if err := indexer.IndexField(ctx, &v1alpha1.ProfileSync{}, Index, func(obj client.Object) []string {
		inventory := obj.(*v1alpha1.ProfileSync).Status.Inventory
		if inventory == nil {
			return nil
		}
		keys := make([]string, 0, len(inventory.Entries))
		for _, e := range inventory.Entries {
			keys = append(keys, Key(e.Kind, e.Namespace, e.Name))
		}
		return keys
	}); err != nil {
		return fmt.Errorf("index ProfileSyncs by %s: %w", Index, err)
	}
	return nil
}

// HoldChanged passes the events of a profile whose hold annotations
// changed: an update that sets, changes or removes one, and the creation (or,
// at the manager's start, the first sight) of a profile that carries one.
// Every other change of a profile is the sync's own write, a status write or
// drift, which waits for the interval as before. Removing a hold that ended
// is the sync's own write too, and costs one more sync that finds nothing to
// do.
var HoldChanged = predicate.Funcs{
	CreateFunc: func(e event.CreateEvent) bool { return len(holdAnnotationsOf(e.Object)) > 0 },
	UpdateFunc: func(e event.UpdateEvent) bool {
		return !maps.Equal(holdAnnotationsOf(e.ObjectOld), holdAnnotationsOf(e.ObjectNew))
	},
	DeleteFunc:  func(event.DeleteEvent) bool { return false },
	GenericFunc: func(event.GenericEvent) bool { return false },
}

// holdAnnotationsOf are the hold annotations obj carries.
func holdAnnotationsOf(obj client.Object) map[string]string {
	held := map[string]string{}
	for _, key := range []string{v1alpha1.HoldUntilAnnotation, v1alpha1.HoldReasonAnnotation} {
		if value, ok := obj.GetAnnotations()[key]; ok {
			held[key] = value
		}
	}
	return held
}
