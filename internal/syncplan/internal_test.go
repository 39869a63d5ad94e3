package syncplan

import (
	"fmt"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/types"

	v1alpha1 "github.com/profilesync/profilesync/api/v1alpha1"
	"github.com/profilesync/profilesync/internal/render/profile"
	"github.com/profilesync/profilesync/test/builders"
)

// TestRecordedFieldsThatDoNotFitAreRecordedWhole: a drift of more fields
// than status.holds[].driftedFields takes is recorded as the wholes it
// belongs to, which wait on no less.
func TestRecordedFieldsThatDoNotFitAreRecordedWhole(t *testing.T) {
	g := NewWithT(t)
	var fields []string
	for i := range maxRecordedFields {
		fields = append(fields, fmt.Sprintf("spec.regions[%d] (r%d).name", i, i))
	}
	g.Expect(recordable(fields)).To(Equal(fields))
	fields = append(fields, "metadata.labels[team]")
	g.Expect(recordable(fields)).To(Equal([]string{"spec", "metadata.labels"}))
	g.Expect(recordable([]string{"metadata.annotations[" + strings.Repeat("x", maxRecordedFieldPath) + "]"})).To(Equal([]string{"metadata.annotations"}))

	git := &v1alpha1.CloudProfile{Spec: *builders.Profile()}
	git.Name, git.Labels = "aws", map[string]string{"team": "a"}
	live := git.DeepCopy()
	live.Labels["team"] = "b"
	o := profile.Object{CloudProfile: git}
	drifted, err := stillDrifted(o, live, []string{"spec", "metadata.labels", "metadata.annotations"})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(drifted).To(Equal([]string{"metadata.labels"}))
	live.Spec.MachineTypes[0].Memory = resource.MustParse("1Gi")
	delete(live.Labels, "team")
	drifted, err = stillDrifted(o, live, []string{"spec", "metadata.labels[team]"})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(drifted).To(Equal([]string{"spec", "metadata.labels[team]"}))
}

// TestDecideContest: who may write an object that another ProfileSync's
// inventory lists. The landscape's ProfileSyncs (in the cluster-profiles
// namespace) outrank the tenants'; among equals the first come keeps it.
func TestDecideContest(t *testing.T) {
	const landscapeNamespace = "profilesync-system"
	landscape := types.NamespacedName{Namespace: landscapeNamespace, Name: "prod"}
	otherLandscape := types.NamespacedName{Namespace: landscapeNamespace, Name: "prod-copy"}
	tenant := types.NamespacedName{Namespace: "team-a", Name: "claim"}
	otherTenant := types.NamespacedName{Namespace: "team-a", Name: "second"}
	tests := []struct {
		name               string
		self               types.NamespacedName
		claimants          []types.NamespacedName
		landscapeNamespace string
		want               contest
	}{
		{name: "an object no other ProfileSync lists may be written", self: tenant, landscapeNamespace: landscapeNamespace},
		{name: "the landscape's ProfileSync writes an object a tenant claimed first",
			self: landscape, claimants: []types.NamespacedName{tenant}, landscapeNamespace: landscapeNamespace},
		{name: "a tenant's ProfileSync is refused an object the landscape's lists, and loses its claim",
			self: tenant, claimants: []types.NamespacedName{landscape}, landscapeNamespace: landscapeNamespace,
			want: contest{standing: []types.NamespacedName{landscape}, outranked: true}},
		{name: "between two tenants the first come keeps the object",
			self: otherTenant, claimants: []types.NamespacedName{tenant}, landscapeNamespace: landscapeNamespace,
			want: contest{standing: []types.NamespacedName{tenant}}},
		{name: "between two of the landscape's ProfileSyncs the first come keeps the object",
			self: otherLandscape, claimants: []types.NamespacedName{landscape}, landscapeNamespace: landscapeNamespace,
			want: contest{standing: []types.NamespacedName{landscape}}},
		{name: "the landscape's ProfileSync is refused by another of the landscape's only, not by a tenant beside it",
			self: otherLandscape, claimants: []types.NamespacedName{tenant, landscape}, landscapeNamespace: landscapeNamespace,
			want: contest{standing: []types.NamespacedName{landscape}}},
		{name: "a tenant's ProfileSync refused by a tenant and the landscape names both and is outranked",
			self: otherTenant, claimants: []types.NamespacedName{tenant, landscape}, landscapeNamespace: landscapeNamespace,
			want: contest{standing: []types.NamespacedName{tenant, landscape}, outranked: true}},
		{name: "without a cluster-profiles namespace no ProfileSync outranks another",
			self: landscape, claimants: []types.NamespacedName{tenant},
			want: contest{standing: []types.NamespacedName{tenant}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			NewWithT(t).Expect(decideContest(tt.self, tt.claimants, tt.landscapeNamespace)).To(Equal(tt.want))
		})
	}
}

// TestClaimsOthers: the other ProfileSyncs whose inventory lists an object;
// the sync's own inventory in the cache is never another's.
func TestClaimsOthers(t *testing.T) {
	self := types.NamespacedName{Namespace: "profilesync-system", Name: "landscape"}
	other := types.NamespacedName{Namespace: "team-a", Name: "landscape"}
	third := types.NamespacedName{Namespace: "team-b", Name: "landscape"}
	aws := v1alpha1.InventoryEntry{Kind: v1alpha1.CloudProfileKind, Name: "aws"}
	sync := func(name types.NamespacedName, entries ...v1alpha1.InventoryEntry) v1alpha1.ProfileSync {
		s := v1alpha1.ProfileSync{}
		s.Namespace, s.Name = name.Namespace, name.Name
		if entries != nil {
			s.Status.Inventory = &v1alpha1.ProfileSyncInventory{Entries: entries}
		}
		return s
	}
	tests := []struct {
		name  string
		syncs []v1alpha1.ProfileSync
		want  []types.NamespacedName
	}{
		{name: "an object no inventory lists has no owner", syncs: []v1alpha1.ProfileSync{sync(self), sync(other)}},
		{name: "the sync's own inventory in the cache is not another's", syncs: []v1alpha1.ProfileSync{sync(self, aws)}},
		{name: "every other ProfileSync that lists the object is named",
			syncs: []v1alpha1.ProfileSync{sync(self, aws), sync(other, aws), sync(third, aws)}, want: []types.NamespacedName{other, third}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			NewWithT(t).Expect(ClaimsOf(tt.syncs).others(aws, self)).To(Equal(tt.want))
		})
	}
}

// TestClaimFor: the inventory recorded before the first write lists
// everything the plan writes.
func TestClaimFor(t *testing.T) {
	cp := func(name string) v1alpha1.InventoryEntry {
		return v1alpha1.InventoryEntry{Kind: v1alpha1.CloudProfileKind, Name: name}
	}
	ncp := v1alpha1.InventoryEntry{Kind: v1alpha1.NamespacedCloudProfileKind, Namespace: "team-a", Name: "p"}
	writesOf := func(entries ...v1alpha1.InventoryEntry) []Write {
		var w []Write
		for _, e := range entries {
			w = append(w, Write{Entry: e})
		}
		return w
	}
	tests := []struct {
		name      string
		inventory []v1alpha1.InventoryEntry
		writes    []Write
		want      []v1alpha1.InventoryEntry
	}{
		{name: "a first sync records everything it writes", writes: writesOf(ncp, cp("aws")), want: []v1alpha1.InventoryEntry{cp("aws"), ncp}},
		{name: "what the inventory lists stays, what it lacks is added, sorted",
			inventory: []v1alpha1.InventoryEntry{cp("old"), cp("aws")}, writes: writesOf(cp("aws"), cp("gcp")),
			want: []v1alpha1.InventoryEntry{cp("aws"), cp("gcp"), cp("old")}},
		{name: "writes of objects the inventory lists claim nothing new", inventory: []v1alpha1.InventoryEntry{cp("aws")}, writes: writesOf(cp("aws"))},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			NewWithT(t).Expect(claimFor(tt.inventory, tt.writes)).To(Equal(tt.want))
		})
	}
}
