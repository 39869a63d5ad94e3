package profilesync

import (
	"context"
	"fmt"
	"slices"

	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"

	v1alpha1 "github.com/profilesync/profilesync/api/v1alpha1"
	"github.com/profilesync/profilesync/internal/syncplan"
)

// Ownership: which ProfileSync an object belongs to, and who wins when two
// want one object, is decided by the plan (internal/syncplan,
// ownership.go): an object is a ProfileSync's when its status.inventory
// lists it, and labels decide nothing.
//
// The inventory is recorded before the writes it covers: before the first
// write of an apply, the sync records the plan's claim, every object it is
// about to write that its inventory lacks (claimWrites), and after the apply
// and prune it sets the inventory to the plan's. A sync stopped between the
// two (a killed manager, an API server gone) leaves an inventory that still
// lists what it may have written, so a later revision that no longer has
// such an object prunes it.

// listInventoryClaims reads every ProfileSync's inventory from the cache,
// once per sync.
func (r *ProfileSyncReconciler) listInventoryClaims(ctx context.Context) (syncplan.Claims, error) {
	var syncs v1alpha1.ProfileSyncList
	if err := r.List(ctx, &syncs, client.UnsafeDisableDeepCopy); err != nil {
		return nil, fmt.Errorf("list ProfileSyncs: %w", err)
	}
	return syncplan.ClaimsOf(syncs.Items), nil
}

// isOwnedBy tells whether the ProfileSync's inventory lists o.
func isOwnedBy(o client.Object, sync *v1alpha1.ProfileSync) bool {
	kind := v1alpha1.NamespacedCloudProfileKind
	if _, ok := o.(*v1alpha1.CloudProfile); ok {
		kind = v1alpha1.CloudProfileKind
	}
	return sync.Status.Inventory != nil &&
		slices.Contains(sync.Status.Inventory.Entries, v1alpha1.InventoryEntry{Kind: kind, Namespace: o.GetNamespace(), Name: o.GetName()})
}

// wakeOutranked queues a sync of every ProfileSync of tenants, without
// waiting: the landscape's claim is on the API server already (claimWrites
// wrote it before the first write), so their next sync drops their claims and
// is refused for what their Git still has.
func (r *ProfileSyncReconciler) wakeOutranked(tenants []types.NamespacedName) {
	for _, tenant := range tenants {
		obj := &v1alpha1.ProfileSync{}
		obj.SetNamespace(tenant.Namespace)
		obj.SetName(tenant.Name)
		select {
		case r.outranked <- event.GenericEvent{Object: obj}:
		default:
		}
	}
}

// claimWrites records the plan's claim, before the first write of an apply:
// the inventory with every object the apply is about to write that it did
// not list yet; from then on they are this ProfileSync's even if the sync
// never gets to its final status patch. It patches status.inventory alone
// (a JSON merge patch, which replaces the atomic list) and keeps the
// in-memory status the same, so the sync's final status patch writes it too
// when the apply fails. A nil claim adds nothing.
func (r *ProfileSyncReconciler) claimWrites(ctx context.Context, obj *v1alpha1.ProfileSync, claim []v1alpha1.InventoryEntry) error {
	if claim == nil {
		return nil
	}
	inventory := &v1alpha1.ProfileSyncInventory{Entries: claim}
	if err := r.patchStatusFields(ctx, obj, map[string]any{"inventory": inventory}); err != nil {
		return applyFailed(fmt.Errorf("record the objects about to be written in the inventory of ProfileSync %s: %w", client.ObjectKeyFromObject(obj), err))
	}
	obj.Status.Inventory = inventory
	return nil
}
