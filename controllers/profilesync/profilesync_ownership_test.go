package profilesync

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/fluxcd/pkg/runtime/conditions"
	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1alpha1 "github.com/profilesync/profilesync/api/v1alpha1"
	"github.com/profilesync/profilesync/controllers/inventory"
	"github.com/profilesync/profilesync/internal/render/profile"
	"github.com/profilesync/profilesync/test/testenv"
)

// listing returns sync with an inventory that lists objects.
func listing(sync *v1alpha1.ProfileSync, objects ...client.Object) *v1alpha1.ProfileSync {
	sync = sync.DeepCopy()
	sync.Status.Inventory = &v1alpha1.ProfileSyncInventory{}
	for _, o := range objects {
		g := gitObject(o)
		sync.Status.Inventory.Entries = append(sync.Status.Inventory.Entries, v1alpha1.InventoryEntry{Kind: g.Kind(), Namespace: g.Namespace(), Name: g.Name()})
	}
	return sync
}

func TestInventoryClaims_others(t *testing.T) {
	self := stepSync("profilesync-system")
	other := stepSync("team-a")
	third := stepSync("team-b")
	aws := stepCloudProfile("aws")
	key := inventory.Key(v1alpha1.CloudProfileKind, "", "aws")
	tests := []struct {
		name  string
		syncs []*v1alpha1.ProfileSync
		want  []types.NamespacedName
	}{
		{name: "an object no inventory lists has no owner", syncs: []*v1alpha1.ProfileSync{self, other}},
		{name: "the sync's own inventory in the cache is not another's", syncs: []*v1alpha1.ProfileSync{listing(self, aws)}},
		{
			name:  "every other ProfileSync that lists the object is named",
			syncs: []*v1alpha1.ProfileSync{listing(self, aws), listing(other, aws), listing(third, aws)},
			want:  []types.NamespacedName{client.ObjectKeyFromObject(other), client.ObjectKeyFromObject(third)},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var syncs []v1alpha1.ProfileSync
			for _, s := range tt.syncs {
				syncs = append(syncs, *s)
			}
			NewWithT(t).Expect(claimsOf(syncs).others(key, client.ObjectKeyFromObject(self))).To(Equal(tt.want))
		})
	}
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
		{
			name: "the landscape's ProfileSync writes an object a tenant claimed first",
			self: landscape, claimants: []types.NamespacedName{tenant}, landscapeNamespace: landscapeNamespace,
		},
		{
			name: "a tenant's ProfileSync is refused an object the landscape's lists, and loses its claim",
			self: tenant, claimants: []types.NamespacedName{landscape}, landscapeNamespace: landscapeNamespace,
			want: contest{standing: []types.NamespacedName{landscape}, outranked: true},
		},
		{
			name: "between two tenants the first come keeps the object",
			self: otherTenant, claimants: []types.NamespacedName{tenant}, landscapeNamespace: landscapeNamespace,
			want: contest{standing: []types.NamespacedName{tenant}},
		},
		{
			name: "between two of the landscape's ProfileSyncs the first come keeps the object",
			self: otherLandscape, claimants: []types.NamespacedName{landscape}, landscapeNamespace: landscapeNamespace,
			want: contest{standing: []types.NamespacedName{landscape}},
		},
		{
			name: "the landscape's ProfileSync is refused by another of the landscape's only, not by a tenant beside it",
			self: otherLandscape, claimants: []types.NamespacedName{tenant, landscape}, landscapeNamespace: landscapeNamespace,
			want: contest{standing: []types.NamespacedName{landscape}},
		},
		{
			name: "a tenant's ProfileSync refused by a tenant and the landscape names both and is outranked",
			self: otherTenant, claimants: []types.NamespacedName{tenant, landscape}, landscapeNamespace: landscapeNamespace,
			want: contest{standing: []types.NamespacedName{tenant, landscape}, outranked: true},
		},
		{
			name: "without a cluster-profiles namespace no ProfileSync outranks another",
			self: landscape, claimants: []types.NamespacedName{tenant},
			want: contest{standing: []types.NamespacedName{tenant}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			NewWithT(t).Expect(decideContest(tt.self, tt.claimants, tt.landscapeNamespace)).To(Equal(tt.want))
		})
	}
}

// TestClaimsLost: a tenant's ProfileSync drops from its inventory what a
// landscape's ProfileSync lists too, whether or not its revision still has
// it; nothing else.
func TestClaimsLost(t *testing.T) {
	const landscapeNamespace = "profilesync-system"
	taken := stepNamespaced("team-a", "taken", "aws")
	kept := stepNamespaced("team-a", "kept", "aws")
	entry := func(o client.Object) v1alpha1.InventoryEntry {
		g := gitObject(o)
		return v1alpha1.InventoryEntry{Kind: g.Kind(), Namespace: g.Namespace(), Name: g.Name()}
	}
	tests := []struct {
		name     string
		self     *v1alpha1.ProfileSync
		listedBy []*v1alpha1.ProfileSync
		wantLost []v1alpha1.InventoryEntry
		wantKept []v1alpha1.InventoryEntry
	}{
		{
			name:     "a tenant loses what the landscape's ProfileSync lists and keeps the rest",
			self:     listing(namedSync("team-a", "claim"), kept, taken),
			listedBy: []*v1alpha1.ProfileSync{listing(namedSync(landscapeNamespace, "prod"), taken)},
			wantLost: []v1alpha1.InventoryEntry{entry(taken)},
			wantKept: []v1alpha1.InventoryEntry{entry(kept)},
		},
		{
			name:     "a tenant keeps what another tenant lists too: first come among equals is decided at the write",
			self:     listing(namedSync("team-a", "claim"), taken),
			listedBy: []*v1alpha1.ProfileSync{listing(namedSync("team-a", "second"), taken)},
			wantKept: []v1alpha1.InventoryEntry{entry(taken)},
		},
		{
			name:     "the landscape's ProfileSync loses nothing to a tenant",
			self:     listing(namedSync(landscapeNamespace, "prod"), taken),
			listedBy: []*v1alpha1.ProfileSync{listing(namedSync("team-a", "claim"), taken)},
			wantKept: []v1alpha1.InventoryEntry{entry(taken)},
		},
		{
			name:     "the landscape's ProfileSync loses nothing to another of the landscape's",
			self:     listing(namedSync(landscapeNamespace, "prod"), taken),
			listedBy: []*v1alpha1.ProfileSync{listing(namedSync(landscapeNamespace, "prod-copy"), taken)},
			wantKept: []v1alpha1.InventoryEntry{entry(taken)},
		},
		{
			name:     "the sync's own, possibly older, inventory in the cache takes nothing from it",
			self:     listing(namedSync("team-a", "claim"), taken),
			listedBy: []*v1alpha1.ProfileSync{listing(namedSync("team-a", "claim"), taken)},
			wantKept: []v1alpha1.InventoryEntry{entry(taken)},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			var syncs []v1alpha1.ProfileSync
			for _, s := range tt.listedBy {
				syncs = append(syncs, *s)
			}
			obj := tt.self.DeepCopy()
			g.Expect(dropClaimsLost(obj, claimsOf(syncs), landscapeNamespace)).To(Equal(tt.wantLost))
			g.Expect(obj.Status.Inventory.Entries).To(ConsistOf(tt.wantKept))
		})
	}
}

func TestApplyPlan_outranked(t *testing.T) {
	const landscapeNamespace = "profilesync-system"
	taken := stepNamespaced("team-a", "taken", "aws")
	alsoTaken := stepNamespaced("team-b", "also-taken", "aws")
	tests := []struct {
		name     string
		self     *v1alpha1.ProfileSync
		held     bool
		listedBy []*v1alpha1.ProfileSync
		want     []types.NamespacedName
	}{
		{
			name: "the landscape's sync wakes each tenant whose claim it takes, once",
			self: namedSync(landscapeNamespace, "prod"),
			listedBy: []*v1alpha1.ProfileSync{
				listing(namedSync("team-b", "claim"), alsoTaken), listing(namedSync("team-a", "claim"), taken, alsoTaken),
				listing(namedSync(landscapeNamespace, "prod-copy"), taken),
			},
			want: []types.NamespacedName{{Namespace: "team-a", Name: "claim"}, {Namespace: "team-b", Name: "claim"}},
		},
		{
			name:     "a tenant's sync wakes no one",
			self:     namedSync("team-a", "second"),
			listedBy: []*v1alpha1.ProfileSync{listing(namedSync("team-a", "claim"), taken)},
		},
		{
			name:     "a held object is not written, so no claim is taken",
			self:     namedSync(landscapeNamespace, "prod"),
			held:     true,
			listedBy: []*v1alpha1.ProfileSync{listing(namedSync("team-a", "claim"), taken)},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var syncs []v1alpha1.ProfileSync
			for _, s := range tt.listedBy {
				syncs = append(syncs, *s)
			}
			objects := []profile.Object{gitObject(taken), gitObject(alsoTaken)}
			plan := newApplyPlan(tt.self, objects, digestsOf(t, objects), liveOf(), claimsOf(syncs))
			for i := range plan.items {
				plan.items[i].held = tt.held
			}
			NewWithT(t).Expect(plan.outranked(client.ObjectKeyFromObject(tt.self), landscapeNamespace)).To(Equal(tt.want))
		})
	}
}

func TestNewApplyPlan_pruned(t *testing.T) {
	const ns = "profilesync-system"
	old := stepCloudProfile("old")
	kept := stepCloudProfile("kept")
	tests := []struct {
		name string
		// inventory is what the sync's own inventory lists.
		inventory []client.Object
		git       []client.Object
		live      []client.Object
		listedBy  []*v1alpha1.ProfileSync
		noPrune   bool
		want      []string
	}{
		{
			name:      "what the inventory lists and the revision no longer has is pruned",
			inventory: []client.Object{old, kept},
			git:       []client.Object{kept},
			live:      []client.Object{owned(stepCloudProfile("old"), ns), owned(stepCloudProfile("kept"), ns)},
			want:      []string{"CloudProfile//old"},
		},
		{
			name:      "an object of the inventory relabelled for another ProfileSync is pruned all the same",
			inventory: []client.Object{old},
			live:      []client.Object{owned(stepCloudProfile("old"), "team-a")},
			want:      []string{"CloudProfile//old"},
		},
		{
			name: "a live object whose labels name this ProfileSync is not pruned unless the inventory lists it",
			live: []client.Object{owned(stepCloudProfile("old"), ns), owned(stepNamespaced("team-a", "p", "aws"), ns)},
		},
		{
			name:      "an object another ProfileSync's inventory lists too is not pruned",
			inventory: []client.Object{old},
			listedBy:  []*v1alpha1.ProfileSync{listing(stepSync("team-a"), old)},
		},
		{
			name:      "without spec.prune nothing is pruned",
			inventory: []client.Object{old},
			noPrune:   true,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			obj := listing(stepSync(ns), tt.inventory...)
			obj.Spec.Prune = !tt.noPrune
			var objects []profile.Object
			for _, o := range tt.git {
				objects = append(objects, gitObject(o))
			}
			var syncs []v1alpha1.ProfileSync
			for _, s := range tt.listedBy {
				syncs = append(syncs, *s)
			}
			plan := newApplyPlan(obj, objects, digestsOf(t, objects), liveOf(tt.live...), claimsOf(syncs))
			var pruned []string
			for _, e := range plan.pruned {
				pruned = append(pruned, inventory.Key(e.Kind, e.Namespace, e.Name))
			}
			g.Expect(pruned).To(Equal(tt.want))
		})
	}
}

func TestInventoryWith(t *testing.T) {
	changesOf := func(objects ...client.Object) []applyChange {
		var changes []applyChange
		for _, o := range objects {
			changes = append(changes, applyChange{item: planItem{object: gitObject(o)}})
		}
		return changes
	}
	keysOf := func(entries []v1alpha1.InventoryEntry) []string {
		var keys []string
		for _, e := range entries {
			keys = append(keys, inventory.Key(e.Kind, e.Namespace, e.Name))
		}
		return keys
	}
	tests := []struct {
		name      string
		inventory *v1alpha1.ProfileSyncInventory
		changes   []applyChange
		want      []string
		wantAdded bool
	}{
		{
			name:      "a first sync records everything it writes",
			changes:   changesOf(stepNamespaced("team-a", "p", "aws"), stepCloudProfile("aws")),
			want:      []string{"CloudProfile//aws", "NamespacedCloudProfile/team-a/p"},
			wantAdded: true,
		},
		{
			name:      "what the inventory lists stays, what it lacks is added, sorted",
			inventory: listing(stepSync("x"), stepCloudProfile("old"), stepCloudProfile("aws")).Status.Inventory,
			changes:   changesOf(stepCloudProfile("aws"), stepCloudProfile("gcp")),
			want:      []string{"CloudProfile//aws", "CloudProfile//gcp", "CloudProfile//old"},
			wantAdded: true,
		},
		{
			name:      "writes of objects the inventory lists add nothing",
			inventory: listing(stepSync("x"), stepCloudProfile("aws")).Status.Inventory,
			changes:   changesOf(stepCloudProfile("aws")),
			want:      []string{"CloudProfile//aws"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			entries, added := inventoryWith(tt.inventory, tt.changes)
			g.Expect(keysOf(entries)).To(Equal(tt.want))
			g.Expect(added).To(Equal(tt.wantAdded))
		})
	}
}

// namespacedProfileYAML is a NamespacedCloudProfile of parent that adds one
// machine type.
func namespacedProfileYAML(namespace, name, parent string) string {
	return `apiVersion: core.profilesync.io/v1alpha1
kind: NamespacedCloudProfile
metadata:
  name: ` + name + `
  namespace: ` + namespace + `
spec:
  parent:
    kind: CloudProfile
    name: ` + parent + `
  machineTypes:
  - name: m5.4xlarge
    cpu: "16"
    gpu: "0"
    memory: 64Gi
`
}

// createPruningSync creates a ProfileSync with spec.prune of the repository
// at url. Its interval is an hour, so only requests and spec changes sync
// it. It is deleted when the test ends.
func createPruningSync(t *testing.T, namespace, name, url string) *v1alpha1.ProfileSync {
	t.Helper()
	sync := &v1alpha1.ProfileSync{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace},
		Spec:       v1alpha1.ProfileSyncSpec{URL: url, Prune: true, Interval: metav1.Duration{Duration: time.Hour}},
	}
	if err := k8sClient.Create(context.Background(), sync); err != nil {
		t.Fatalf("create ProfileSync %s/%s: %v", namespace, name, err)
	}
	t.Cleanup(func() { _ = k8sClient.Delete(context.Background(), sync) })
	return sync
}

// relabel sets the owner labels of o to name the ProfileSync owner, as
// anyone who may edit o can.
func relabel(t *testing.T, o client.Object, owner types.NamespacedName) {
	t.Helper()
	patch := fmt.Sprintf(`{"metadata":{"labels":{%q:%q,%q:%q}}}`,
		v1alpha1.OwnerNamespaceLabel, owner.Namespace, v1alpha1.OwnerNameLabel, owner.Name)
	if err := k8sClient.Patch(context.Background(), o, client.RawPatch(types.MergePatchType, []byte(patch))); err != nil {
		t.Fatalf("relabel %s: %v", o.GetName(), err)
	}
}

// syncNow requests a sync of sync and waits until it has handled the
// request and is Ready.
func syncNow(t *testing.T, sync *v1alpha1.ProfileSync, token string) {
	t.Helper()
	requestSync(t, sync, token)
	NewWithT(t).Eventually(func(g Gomega) {
		got := getProfileSync(g, sync)
		g.Expect(got.Status.LastHandledReconcileAt).To(Equal(token))
		g.Expect(conditions.IsReady(got)).To(BeTrue(), conditions.GetMessage(got, v1alpha1.ReadyCondition))
	}).WithTimeout(15 * time.Second).Should(Succeed())
}

// TestOwnerLabelsATenantWritesDecideNothing: the landscape's ProfileSync
// applies a NamespacedCloudProfile into a team's namespace, where the team
// has a ProfileSync of its own. Whatever the team writes into the owner
// labels of profiles in its namespace, neither ProfileSync refuses its
// revision or prunes anything for it, and the landscape's sync writes its
// labels back.
func TestOwnerLabelsATenantWritesDecideNothing(t *testing.T) {
	ctx := context.Background()
	team := testenv.UniqueName("team-payments")
	ensureNamespace(t, clusterProfilesNamespace)
	ensureNamespace(t, team)
	server := startGitServer(t)
	parent := testenv.UniqueName("owned-parent")
	platformRepo, tenantRepo := testenv.UniqueName("platform"), testenv.UniqueName("tenant")
	platformFiles := singleProfileRepo(parent, "1.31.0")
	platformFiles["profiles.yaml"] += "---\n" + namespacedProfileYAML(team, "shared", parent)
	_, err := server.CreateRepo(platformRepo, platformFiles)
	NewWithT(t).Expect(err).NotTo(HaveOccurred())
	_, err = server.CreateRepo(tenantRepo, map[string]string{"profiles.yaml": namespacedProfileYAML(team, "own", parent)})
	NewWithT(t).Expect(err).NotTo(HaveOccurred())

	platform := createPruningSync(t, clusterProfilesNamespace, testenv.UniqueName("landscape"), server.RepoURL(platformRepo))
	t.Cleanup(func() { _ = k8sClient.Delete(ctx, &v1alpha1.CloudProfile{ObjectMeta: metav1.ObjectMeta{Name: parent}}) })
	syncNow(t, platform, "first")
	tenant := createPruningSync(t, team, "mine", server.RepoURL(tenantRepo))
	syncNow(t, tenant, "first")

	shared := &v1alpha1.NamespacedCloudProfile{ObjectMeta: metav1.ObjectMeta{Name: "shared", Namespace: team}}
	platformLabels := ownerLabels(platform)
	sharedLabels := func(g Gomega) map[string]string {
		got := &v1alpha1.NamespacedCloudProfile{}
		g.Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(shared), got)).To(Succeed())
		return got.Labels
	}

	t.Run("a label naming a ProfileSync that does not exist", func(t *testing.T) {
		g := NewWithT(t)
		relabel(t, shared, types.NamespacedName{Namespace: team, Name: "ghost"})
		syncNow(t, platform, "after-ghost")
		for k, v := range platformLabels {
			g.Expect(sharedLabels(g)).To(HaveKeyWithValue(k, v), "written back")
		}
	})

	t.Run("a label naming the team's ProfileSync", func(t *testing.T) {
		g := NewWithT(t)
		relabel(t, shared, client.ObjectKeyFromObject(tenant))
		syncNow(t, tenant, "after-relabel")
		g.Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(shared), &v1alpha1.NamespacedCloudProfile{})).To(Succeed(),
			"the team's ProfileSync does not prune what its inventory does not list")
		syncNow(t, platform, "after-relabel")
		for k, v := range platformLabels {
			g.Expect(sharedLabels(g)).To(HaveKeyWithValue(k, v), "written back")
		}
		g.Expect(getProfileSync(g, platform).Status.Inventory.Entries).To(ContainElement(
			v1alpha1.InventoryEntry{Kind: v1alpha1.NamespacedCloudProfileKind, Namespace: team, Name: "shared"}))
	})

	t.Run("a label naming the landscape's ProfileSync on a profile no inventory lists", func(t *testing.T) {
		g := NewWithT(t)
		stray := &v1alpha1.NamespacedCloudProfile{
			ObjectMeta: metav1.ObjectMeta{Name: "stray", Namespace: team, Labels: ownerLabels(platform)},
			Spec:       v1alpha1.NamespacedCloudProfileSpec{Parent: v1alpha1.CloudProfileReference{Kind: v1alpha1.CloudProfileKind, Name: parent}},
		}
		g.Expect(k8sClient.Create(ctx, stray)).To(Succeed())
		syncNow(t, platform, "after-stray")
		g.Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(stray), &v1alpha1.NamespacedCloudProfile{})).To(Succeed(),
			"the landscape's ProfileSync does not prune what its inventory does not list")
	})
}

// TestTwoProfileSyncsWantingOneProfileIsRefusedNamingBoth: a second
// ProfileSync whose revision has a profile the first one's inventory lists
// is refused, naming both; the first one goes on syncing.
func TestTwoProfileSyncsWantingOneProfileIsRefusedNamingBoth(t *testing.T) {
	g := NewWithT(t)
	ensureNamespace(t, clusterProfilesNamespace)
	server := startGitServer(t)
	repo, profileName := testenv.UniqueName("contested"), testenv.UniqueName("contested")
	_, err := server.CreateRepo(repo, singleProfileRepo(profileName, "1.31.0"))
	g.Expect(err).NotTo(HaveOccurred())
	first := createLandscapeSync(t, testenv.UniqueName("first"), server.RepoURL(repo), "", profileName)
	syncNow(t, first, "first")
	second := createLandscapeSync(t, testenv.UniqueName("second"), server.RepoURL(repo), "")

	g.Eventually(func(g Gomega) {
		got := getProfileSync(g, second)
		g.Expect(conditions.GetReason(got, v1alpha1.ReadyCondition)).To(Equal(v1alpha1.AccessDeniedReason))
		g.Expect(conditions.IsStalled(got)).To(BeTrue())
		g.Expect(conditions.GetMessage(got, v1alpha1.ReadyCondition)).To(Equal(fmt.Sprintf(
			"profiles.yaml: CloudProfile/%s: already managed by ProfileSync %s, whose inventory lists it; ProfileSync %s may not manage it too: remove it from the Git of one of them",
			profileName, client.ObjectKeyFromObject(first), client.ObjectKeyFromObject(second))))
		g.Expect(got.Status.Inventory).To(BeNil())
	}).WithTimeout(15 * time.Second).Should(Succeed())
	syncNow(t, first, "again")
}

// TestTheLandscapeTakesANameATenantClaimedFirst: a tenant's ProfileSync
// adopts an unowned NamespacedCloudProfile name in its namespace first. The
// landscape's next commit that adds that name applies all the same (the
// landscape outranks its tenants); the tenant's ProfileSync, woken by the
// landscape's sync, is then refused with AccessDenied naming both, drops the
// object from its inventory, and does not prune it when its Git drops it
// too.
func TestTheLandscapeTakesANameATenantClaimedFirst(t *testing.T) {
	ctx := context.Background()
	g := NewWithT(t)
	team := testenv.UniqueName("team-claim")
	ensureNamespace(t, clusterProfilesNamespace)
	ensureNamespace(t, team)
	server := startGitServer(t)
	parent := testenv.UniqueName("claimed-parent")
	platformRepo, tenantRepo := testenv.UniqueName("platform"), testenv.UniqueName("tenant")
	platformFiles := singleProfileRepo(parent, "1.31.0")
	_, err := server.CreateRepo(platformRepo, platformFiles)
	g.Expect(err).NotTo(HaveOccurred())
	_, err = server.CreateRepo(tenantRepo, map[string]string{"profiles.yaml": namespacedProfileYAML(team, "claimed", parent)})
	g.Expect(err).NotTo(HaveOccurred())

	platform := createPruningSync(t, clusterProfilesNamespace, testenv.UniqueName("landscape"), server.RepoURL(platformRepo))
	t.Cleanup(func() { _ = k8sClient.Delete(ctx, &v1alpha1.CloudProfile{ObjectMeta: metav1.ObjectMeta{Name: parent}}) })
	syncNow(t, platform, "first")
	tenant := createPruningSync(t, team, "claim", server.RepoURL(tenantRepo))
	syncNow(t, tenant, "first")
	claimed := v1alpha1.InventoryEntry{Kind: v1alpha1.NamespacedCloudProfileKind, Namespace: team, Name: "claimed"}
	g.Expect(getProfileSync(g, tenant).Status.Inventory.Entries).To(ContainElement(claimed), "the tenant adopted the unowned name")

	// The landscape's commit adds the name, with a machine type of its own.
	landscapeVersion := strings.Replace(namespacedProfileYAML(team, "claimed", parent), "m5.4xlarge", "m6.4xlarge", 1)
	_, err = server.Commit(platformRepo, map[string]string{"profiles.yaml": platformFiles["profiles.yaml"] + "---\n" + landscapeVersion}, "add the claimed name")
	g.Expect(err).NotTo(HaveOccurred())
	syncNow(t, platform, "adds-claimed")
	live := &v1alpha1.NamespacedCloudProfile{}
	g.Expect(k8sClient.Get(ctx, client.ObjectKey{Namespace: team, Name: "claimed"}, live)).To(Succeed())
	g.Expect(live.Spec.MachineTypes).To(ContainElement(HaveField("Name", "m6.4xlarge")), "the landscape's revision applied")
	g.Expect(live.Labels).To(HaveKeyWithValue(v1alpha1.OwnerNameLabel, platform.Name))
	g.Expect(getProfileSync(g, platform).Status.Inventory.Entries).To(ContainElement(claimed))

	// No request: the landscape's sync wakes the tenant's, whose interval is
	// an hour.
	g.Eventually(func(g Gomega) {
		got := getProfileSync(g, tenant)
		g.Expect(conditions.GetReason(got, v1alpha1.ReadyCondition)).To(Equal(v1alpha1.AccessDeniedReason))
		g.Expect(conditions.GetMessage(got, v1alpha1.ReadyCondition)).To(Equal(fmt.Sprintf(
			"profiles.yaml: NamespacedCloudProfile/%s/claimed: managed by the landscape's ProfileSync %s (namespace %q), which outranks tenants; ProfileSync %s may not manage it and no longer lists it in its inventory: remove it from its Git",
			team, client.ObjectKeyFromObject(platform), clusterProfilesNamespace, client.ObjectKeyFromObject(tenant))))
		g.Expect(got.Status.Inventory.Entries).NotTo(ContainElement(claimed), "the tenant lost its claim")
	}).WithTimeout(15 * time.Second).Should(Succeed())
	g.Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(live), live)).To(Succeed())
	g.Expect(live.Spec.MachineTypes).To(ContainElement(HaveField("Name", "m6.4xlarge")), "the tenant wrote nothing")

	// The tenant drops the name from its Git: it syncs again, and prunes
	// nothing of the landscape's.
	_, err = server.Commit(tenantRepo, map[string]string{"profiles.yaml": namespacedProfileYAML(team, "own", parent)}, "drop the claimed name")
	g.Expect(err).NotTo(HaveOccurred())
	syncNow(t, tenant, "dropped")
	g.Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(live), &v1alpha1.NamespacedCloudProfile{})).To(Succeed(), "never pruned by the tenant")
	syncNow(t, platform, "again")
}
