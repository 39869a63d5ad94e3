package profilesync

import (
	"context"
	"fmt"
	"sort"
	"strings"

	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"

	v1alpha1 "github.com/profilesync/profilesync/api/v1alpha1"
	"github.com/profilesync/profilesync/controllers/inventory"
)

// Ownership: which ProfileSync an object belongs to.
//
// An object is a ProfileSync's when that ProfileSync's status.inventory lists
// it, and only then. Only the sync writes a ProfileSync's status; the owner
// labels (v1alpha1.OwnerNamespaceLabel, v1alpha1.OwnerNameLabel) it puts on
// every object it applies, for `kubectl get -l`, can be rewritten by anyone
// who may edit the object: a project admin can relabel a
// NamespacedCloudProfile in their own namespace. So labels decide nothing.
// They are written back like any other field Git sets (driftedFields), a
// label naming a ProfileSync that does not list the object makes no
// ProfileSync refuse a revision or prune it, and an object no inventory lists
// is unowned whatever its labels say: the first ProfileSync whose revision
// has it (and whose tenancy allows it) adopts it, and none prunes it.
//
// The inventory is recorded before the writes it covers: before the first
// write of an apply, the sync adds every object it is about to write that
// its inventory lacks (claimWrites), and after the apply and prune it sets
// the inventory to exactly the revision's objects. A sync stopped between
// the two (a killed manager, an API server gone) leaves an inventory that
// still lists what it may have written, so a later revision that no longer
// has such an object prunes it.
//
// Two ProfileSyncs that both want one object are a real conflict, settled
// by rank (decideContest): the landscape's ProfileSyncs, those in the
// cluster-profiles namespace, outrank the tenants'. A landscape's revision
// applies an object a tenant's inventory lists, and the tenant's ProfileSync
// loses its claim (claimsLost): a project admin who adopts an unowned name
// first cannot stall the landscape. Between equals (two tenants, or two of
// the landscape's) first come stays the rule: the revision that asks for an
// object another ProfileSync's inventory lists is refused, naming both. A
// ProfileSync never prunes an object another ProfileSync's inventory lists.

// inventoryClaims maps an object's inventory.Key to the ProfileSyncs whose
// inventory lists it.
type inventoryClaims map[string][]types.NamespacedName

// listInventoryClaims reads every ProfileSync's inventory from the cache,
// once per sync.
func (r *ProfileSyncReconciler) listInventoryClaims(ctx context.Context) (inventoryClaims, error) {
	var syncs v1alpha1.ProfileSyncList
	if err := r.List(ctx, &syncs, client.UnsafeDisableDeepCopy); err != nil {
		return nil, fmt.Errorf("list ProfileSyncs: %w", err)
	}
	return claimsOf(syncs.Items), nil
}

// claimsOf indexes the inventories of syncs.
func claimsOf(syncs []v1alpha1.ProfileSync) inventoryClaims {
	claims := inventoryClaims{}
	for i := range syncs {
		if syncs[i].Status.Inventory == nil {
			continue
		}
		owner := client.ObjectKeyFromObject(&syncs[i])
		for _, e := range syncs[i].Status.Inventory.Entries {
			key := inventory.Key(e.Kind, e.Namespace, e.Name)
			claims[key] = append(claims[key], owner)
		}
	}
	return claims
}

// others are the ProfileSyncs other than self whose inventory lists the
// object of key. The cache may hold an older status of self than the sync
// at hand, so self is always left out: its own inventory is the one it has.
func (c inventoryClaims) others(key string, self types.NamespacedName) []types.NamespacedName {
	var owners []types.NamespacedName
	for _, owner := range c[key] {
		if owner != self {
			owners = append(owners, owner)
		}
	}
	return owners
}

// isOwnedBy tells whether the ProfileSync's inventory lists o.
func isOwnedBy(o client.Object, sync *v1alpha1.ProfileSync) bool {
	kind := v1alpha1.NamespacedCloudProfileKind
	if _, ok := o.(*v1alpha1.CloudProfile); ok {
		kind = v1alpha1.CloudProfileKind
	}
	return inventoryKeys(sync.Status.Inventory)[inventory.Key(kind, o.GetNamespace(), o.GetName())]
}

// inventoryKeys is the set of the inventory's keys.
func inventoryKeys(listed *v1alpha1.ProfileSyncInventory) map[string]bool {
	if listed == nil {
		return map[string]bool{}
	}
	keys := make(map[string]bool, len(listed.Entries))
	for _, e := range listed.Entries {
		keys[inventory.Key(e.Kind, e.Namespace, e.Name)] = true
	}
	return keys
}

// prunable are the objects of the ProfileSync's inventory that the revision
// (keys) no longer has and no other ProfileSync's inventory lists.
func prunable(obj *v1alpha1.ProfileSync, keys map[string]bool, claims inventoryClaims) []v1alpha1.InventoryEntry {
	if obj.Status.Inventory == nil {
		return nil
	}
	self := client.ObjectKeyFromObject(obj)
	var entries []v1alpha1.InventoryEntry
	for _, e := range obj.Status.Inventory.Entries {
		key := inventory.Key(e.Kind, e.Namespace, e.Name)
		if !keys[key] && len(claims.others(key, self)) == 0 {
			entries = append(entries, e)
		}
	}
	sortInventory(entries)
	return entries
}

// isLandscapeSync tells whether the ProfileSync sync is one of the
// landscape's: in landscapeNamespace (--cluster-profiles-namespace). No
// ProfileSync is when that is empty.
func isLandscapeSync(sync types.NamespacedName, landscapeNamespace string) bool {
	return landscapeNamespace != "" && sync.Namespace == landscapeNamespace
}

// contest is the decision over one object of a ProfileSync's revision that
// other ProfileSyncs' inventories list.
type contest struct {
	// standing are the other ProfileSyncs whose claim stands against this
	// one's: the revision is refused, naming them. None: the revision may
	// write the object.
	standing []types.NamespacedName
	// outranked: a landscape's ProfileSync is among them and this one is a
	// tenant's, so this one's claim to the object is lost (claimsLost).
	outranked bool
}

// decideContest decides who may write an object that self's revision has
// and the ProfileSyncs claimants (other than self) list in their
// inventories. A landscape's ProfileSync (isLandscapeSync) outranks a
// tenant's: against tenants it writes; a tenant's against a landscape's is
// refused and outranked. Between ProfileSyncs of one rank the first come,
// the one whose inventory lists the object, keeps it.
func decideContest(self types.NamespacedName, claimants []types.NamespacedName, landscapeNamespace string) contest {
	var c contest
	selfLandscape := isLandscapeSync(self, landscapeNamespace)
	for _, claimant := range claimants {
		claimantLandscape := isLandscapeSync(claimant, landscapeNamespace)
		if selfLandscape && !claimantLandscape {
			continue
		}
		c.standing = append(c.standing, claimant)
		if claimantLandscape && !selfLandscape {
			c.outranked = true
		}
	}
	return c
}

// claimsLost are the entries of a tenant's inventory that a landscape's
// ProfileSync lists too: the landscape has taken them over (decideContest),
// so the tenant's ProfileSync drops them from its inventory, whether or not
// its revision still has them, and never prunes them. A landscape's
// ProfileSync loses no claim.
func claimsLost(obj *v1alpha1.ProfileSync, claims inventoryClaims, landscapeNamespace string) []v1alpha1.InventoryEntry {
	self := client.ObjectKeyFromObject(obj)
	if obj.Status.Inventory == nil || isLandscapeSync(self, landscapeNamespace) {
		return nil
	}
	var lost []v1alpha1.InventoryEntry
	for _, e := range obj.Status.Inventory.Entries {
		if decideContest(self, claims.others(inventory.Key(e.Kind, e.Namespace, e.Name), self), landscapeNamespace).outranked {
			lost = append(lost, e)
		}
	}
	return lost
}

// dropClaimsLost takes the claims the landscape outranks out of obj's
// inventory (kept in memory: the sync's status patch writes it, refused or
// not) and returns them.
func dropClaimsLost(obj *v1alpha1.ProfileSync, claims inventoryClaims, landscapeNamespace string) []v1alpha1.InventoryEntry {
	lost := claimsLost(obj, claims, landscapeNamespace)
	if len(lost) == 0 {
		return nil
	}
	gone := make(map[v1alpha1.InventoryEntry]bool, len(lost))
	for _, e := range lost {
		gone[e] = true
	}
	kept := make([]v1alpha1.InventoryEntry, 0, len(obj.Status.Inventory.Entries)-len(lost))
	for _, e := range obj.Status.Inventory.Entries {
		if !gone[e] {
			kept = append(kept, e)
		}
	}
	obj.Status.Inventory = &v1alpha1.ProfileSyncInventory{Entries: kept}
	return lost
}

// outranked are the tenants' ProfileSyncs whose claims self, a landscape's
// ProfileSync, takes over with the plan: those that list an object of the
// revision it writes (not held), sorted, each once. None when self is a
// tenant's.
func (p *applyPlan) outranked(self types.NamespacedName, landscapeNamespace string) []types.NamespacedName {
	if !isLandscapeSync(self, landscapeNamespace) {
		return nil
	}
	seen := map[types.NamespacedName]bool{}
	var tenants []types.NamespacedName
	for _, item := range p.items {
		if item.held {
			continue
		}
		for _, owner := range item.otherOwners {
			if !isLandscapeSync(owner, landscapeNamespace) && !seen[owner] {
				seen[owner] = true
				tenants = append(tenants, owner)
			}
		}
	}
	sort.Slice(tenants, func(i, j int) bool { return tenants[i].String() < tenants[j].String() })
	return tenants
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

// outrankedConflict is the refusal of an object of a tenant's revision that
// a landscape's ProfileSync has taken over, naming both.
func outrankedConflict(obj *v1alpha1.ProfileSync, item planItem, standing []types.NamespacedName, landscapeNamespace string) string {
	names := make([]string, 0, len(standing))
	for _, owner := range standing {
		names = append(names, owner.String())
	}
	return fmt.Sprintf("%s: %s: managed by the landscape's ProfileSync %s (namespace %q), which outranks tenants; "+
		"ProfileSync %s may not manage it and no longer lists it in its inventory: remove it from its Git",
		item.object.File, item.object.Ref(), strings.Join(names, ", "), landscapeNamespace, client.ObjectKeyFromObject(obj))
}

// ownershipConflict is the refusal of an object of the revision that other
// ProfileSyncs of its rank list (standing, of decideContest), naming them all and
// obj: two ProfileSyncs that want one object is a conflict only people can
// settle.
func ownershipConflict(obj *v1alpha1.ProfileSync, item planItem, standing []types.NamespacedName) string {
	names := make([]string, 0, len(standing))
	for _, owner := range standing {
		names = append(names, owner.String())
	}
	return fmt.Sprintf("%s: %s: already managed by ProfileSync %s, whose inventory lists it; ProfileSync %s may not manage it too: remove it from the Git of one of them",
		item.object.File, item.object.Ref(), strings.Join(names, ", "), client.ObjectKeyFromObject(obj))
}

// inventoryWith is the inventory plus every object of changes it lacks,
// sorted, and whether anything was added.
func inventoryWith(listed *v1alpha1.ProfileSyncInventory, changes []applyChange) ([]v1alpha1.InventoryEntry, bool) {
	keys := inventoryKeys(listed)
	var entries []v1alpha1.InventoryEntry
	if listed != nil {
		entries = append(entries, listed.Entries...)
	}
	added := false
	for _, c := range changes {
		o := c.item.object
		key := inventory.Key(o.Kind(), o.Namespace(), o.Name())
		if keys[key] {
			continue
		}
		keys[key] = true
		entries = append(entries, v1alpha1.InventoryEntry{Kind: o.Kind(), Namespace: o.Namespace(), Name: o.Name()})
		added = true
	}
	sortInventory(entries)
	return entries, added
}

// claimWrites records, before the first write of an apply, every object the
// apply is about to write that the inventory does not list yet: from then on
// it is this ProfileSync's even if the sync never gets to its final status
// patch. It patches status.inventory alone (a JSON merge patch, which
// replaces the atomic list) and keeps the in-memory status the same, so the
// sync's final status patch writes it too when the apply fails.
func (r *ProfileSyncReconciler) claimWrites(ctx context.Context, obj *v1alpha1.ProfileSync, changes []applyChange) error {
	entries, added := inventoryWith(obj.Status.Inventory, changes)
	if !added {
		return nil
	}
	listed := &v1alpha1.ProfileSyncInventory{Entries: entries}
	if err := r.patchStatusFields(ctx, obj, map[string]any{"inventory": listed}); err != nil {
		return applyFailed(fmt.Errorf("record the objects about to be written in the inventory of ProfileSync %s: %w", client.ObjectKeyFromObject(obj), err))
	}
	obj.Status.Inventory = listed
	return nil
}
