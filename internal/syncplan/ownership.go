package syncplan

import (
	"fmt"
	"sort"
	"strings"

	"k8s.io/apimachinery/pkg/types"

	v1alpha1 "github.com/profilesync/profilesync/api/v1alpha1"
	"github.com/profilesync/profilesync/internal/render/profile"
)

// Ownership: which ProfileSync an object belongs to.
//
// An object is a ProfileSync's when that ProfileSync's status.inventory lists
// it, and only then. Only the sync writes a ProfileSync's status; the owner
// labels (v1alpha1.OwnerNamespaceLabel, v1alpha1.OwnerNameLabel) it puts on
// every object it applies, for `kubectl get -l`, can be rewritten by anyone
// who may edit the object. So labels decide nothing: they are written back
// like any other field Git sets (DriftedFields), and an object no inventory
// lists is unowned whatever its labels say: the first ProfileSync whose
// revision has it (and whose tenancy allows it) adopts it, and none prunes
// it.
//
// Two ProfileSyncs that both want one object are a real conflict, settled
// by rank (decideContest): the landscape's ProfileSyncs, those in the
// cluster-profiles namespace, outrank the tenants'. A landscape's revision
// applies an object a tenant's inventory lists, and the tenant's ProfileSync
// loses its claim (Plan.LostClaims). Between equals first come stays the
// rule: the revision that asks for an object another ProfileSync's
// inventory lists is refused, naming both. A ProfileSync never prunes an
// object another ProfileSync's inventory lists.

// Key names one object of an inventory as the inventory index does:
// kind/namespace/name.
func Key(kind, namespace, name string) string {
	return kind + "/" + namespace + "/" + name
}

// EntryOf is the inventory entry of an object of Git.
func EntryOf(o profile.Object) v1alpha1.InventoryEntry {
	return v1alpha1.InventoryEntry{Kind: o.Kind(), Namespace: o.Namespace(), Name: o.Name()}
}

// ObjectRef names an inventory entry as messages do: Kind/name or
// Kind/namespace/name.
func ObjectRef(e v1alpha1.InventoryEntry) string {
	return profile.ObjectRef(e.Kind, e.Namespace, e.Name)
}

// Claims maps an object to the ProfileSyncs whose inventory lists it.
type Claims map[v1alpha1.InventoryEntry][]types.NamespacedName

// ClaimsOf indexes the inventories of syncs.
func ClaimsOf(syncs []v1alpha1.ProfileSync) Claims {
	claims := Claims{}
	for i := range syncs {
		if syncs[i].Status.Inventory == nil {
			continue
		}
		owner := types.NamespacedName{Namespace: syncs[i].Namespace, Name: syncs[i].Name}
		for _, e := range syncs[i].Status.Inventory.Entries {
			claims[e] = append(claims[e], owner)
		}
	}
	return claims
}

// others are the ProfileSyncs other than self whose inventory lists e. The
// cache may hold an older status of self than the sync at hand, so self is
// always left out: its own inventory is the one it has.
func (c Claims) others(e v1alpha1.InventoryEntry, self types.NamespacedName) []types.NamespacedName {
	var owners []types.NamespacedName
	for _, owner := range c[e] {
		if owner != self {
			owners = append(owners, owner)
		}
	}
	return owners
}

// IsLandscapeSync tells whether the ProfileSync sync is one of the
// landscape's: in landscapeNamespace (--cluster-profiles-namespace). No
// ProfileSync is when that is empty.
func IsLandscapeSync(sync types.NamespacedName, landscapeNamespace string) bool {
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
	// tenant's, so this one's claim to the object is lost.
	outranked bool
}

// decideContest decides who may write an object that self's revision has
// and the ProfileSyncs claimants (other than self) list in their
// inventories. A landscape's ProfileSync outranks a tenant's: against
// tenants it writes; a tenant's against a landscape's is refused and
// outranked. Between ProfileSyncs of one rank the first come, the one whose
// inventory lists the object, keeps it.
func decideContest(self types.NamespacedName, claimants []types.NamespacedName, landscapeNamespace string) contest {
	var c contest
	selfLandscape := IsLandscapeSync(self, landscapeNamespace)
	for _, claimant := range claimants {
		claimantLandscape := IsLandscapeSync(claimant, landscapeNamespace)
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
// ProfileSync lists too: the landscape has taken them over, so the tenant's
// ProfileSync drops them from its inventory, whether or not its revision
// still has them, and never prunes them. A landscape's ProfileSync loses no
// claim.
func claimsLost(in *Input) []v1alpha1.InventoryEntry {
	if IsLandscapeSync(in.Sync, in.LandscapeNamespace) {
		return nil
	}
	var lost []v1alpha1.InventoryEntry
	for _, e := range in.Inventory {
		if decideContest(in.Sync, in.Claims.others(e, in.Sync), in.LandscapeNamespace).outranked {
			lost = append(lost, e)
		}
	}
	return lost
}

// checkAccess is tenancy: a ProfileSync in the cluster-profiles namespace
// belongs to the landscape's operators and may write CloudProfiles and
// NamespacedCloudProfiles anywhere; any other ProfileSync belongs to a
// tenant and may write only NamespacedCloudProfiles in its own namespace.
// Objects another ProfileSync's inventory lists are refused too unless this
// one outranks it (decideContest).
func checkAccess(in *Input, items []item) []string {
	var denied []string
	privileged := IsLandscapeSync(in.Sync, in.LandscapeNamespace)
	for _, it := range items {
		o := it.object
		contest := decideContest(in.Sync, it.otherOwners, in.LandscapeNamespace)
		switch {
		case !privileged && o.CloudProfile != nil:
			denied = append(denied, fmt.Sprintf("%s: %s: only ProfileSyncs in namespace %q may write cluster-scoped CloudProfiles",
				o.File, o.Ref(), in.LandscapeNamespace))
		case !privileged && o.Namespace() != in.Sync.Namespace:
			denied = append(denied, fmt.Sprintf("%s: %s: a ProfileSync outside namespace %q may write NamespacedCloudProfiles only in its own namespace %q",
				o.File, o.Ref(), in.LandscapeNamespace, in.Sync.Namespace))
		case contest.outranked:
			denied = append(denied, fmt.Sprintf("%s: %s: managed by the landscape's ProfileSync %s (namespace %q), which outranks tenants; "+
				"ProfileSync %s may not manage it and no longer lists it in its inventory: remove it from its Git",
				o.File, o.Ref(), joinNames(contest.standing), in.LandscapeNamespace, in.Sync))
		case len(contest.standing) > 0:
			denied = append(denied, fmt.Sprintf("%s: %s: already managed by ProfileSync %s, whose inventory lists it; ProfileSync %s may not manage it too: remove it from the Git of one of them",
				o.File, o.Ref(), joinNames(contest.standing), in.Sync))
		}
	}
	return denied
}

func joinNames(names []types.NamespacedName) string {
	s := make([]string, 0, len(names))
	for _, n := range names {
		s = append(s, n.String())
	}
	return strings.Join(s, ", ")
}

// outranked are the tenants' ProfileSyncs whose claims the landscape's
// ProfileSync takes over with the plan: those that list an object of the
// revision it does not hold, sorted, each once. None when the ProfileSync is
// a tenant's.
func outranked(in *Input, items []item) []types.NamespacedName {
	if !IsLandscapeSync(in.Sync, in.LandscapeNamespace) {
		return nil
	}
	seen := map[types.NamespacedName]bool{}
	var tenants []types.NamespacedName
	for _, it := range items {
		if it.held {
			continue
		}
		for _, owner := range it.otherOwners {
			if !IsLandscapeSync(owner, in.LandscapeNamespace) && !seen[owner] {
				seen[owner] = true
				tenants = append(tenants, owner)
			}
		}
	}
	sort.Slice(tenants, func(i, j int) bool { return tenants[i].String() < tenants[j].String() })
	return tenants
}

// SortInventory sorts entries by kind, namespace and name.
func SortInventory(entries []v1alpha1.InventoryEntry) {
	sort.Slice(entries, func(i, j int) bool {
		return Key(entries[i].Kind, entries[i].Namespace, entries[i].Name) < Key(entries[j].Kind, entries[j].Namespace, entries[j].Name)
	})
}
