package syncplan_test

import (
	"slices"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	v1alpha1 "github.com/profilesync/profilesync/api/v1alpha1"
	"github.com/profilesync/profilesync/internal/render/profile"
	"github.com/profilesync/profilesync/internal/syncplan"
)

// choices reads a fuzz input as a stream of small decisions; an input that
// runs out decides 0 from then on.
type choices struct{ data []byte }

func (c *choices) next(n int) int {
	if len(c.data) == 0 {
		return 0
	}
	b := c.data[0]
	c.data = c.data[1:]
	return int(b) % n
}

func (c *choices) yes() bool { return c.next(2) == 1 }

// fuzzSyncs are the ProfileSyncs of the fuzzed cluster: two of the
// landscape's, two tenants'.
var fuzzSyncs = []types.NamespacedName{landscape, {Namespace: "garden", Name: "second"}, tenant, other}

// fuzzWorld is a random sync: which objects Git has, how the cluster holds
// them (edited, held, applied from an older revision), which inventories
// list them, and the holds the last sync honoured.
func fuzzWorld(t *testing.T, c *choices) syncplan.Input {
	self := fuzzSyncs[c.next(len(fuzzSyncs))]
	limits := []*int32{nil, ptr.To[int32](10), ptr.To[int32](100)}
	cloud := func(name string, memoryValue string, maxNodes *int32) profile.Object {
		return cloudProfile(name, func(s *v1alpha1.CloudProfileSpec) {
			s.MachineTypes[0].Memory = resource.MustParse(memoryValue)
			if maxNodes != nil {
				s.Limits = &v1alpha1.Limits{MaxNodesTotal: maxNodes}
			}
		})
	}
	memories := []string{"8Gi", "999Gi"}
	type candidate struct {
		git, applied profile.Object
	}
	var candidates []candidate
	for _, name := range []string{"aws", "gcp"} {
		candidates = append(candidates, candidate{
			git:     cloud(name, memories[c.next(2)], limits[c.next(3)]),
			applied: cloud(name, memories[c.next(2)], limits[c.next(3)]),
		})
	}
	for _, n := range []struct{ namespace, name, parent string }{{"team-a", "payments", "aws"}, {"team-a", "search", "gcp"}, {"team-b", "x", "aws"}} {
		o := namespaced(n.namespace, n.name, n.parent)
		candidates = append(candidates, candidate{git: o, applied: o})
	}
	in := input(t, self, nil)
	in.Prune = c.yes()
	if c.yes() {
		in.DriftMode = v1alpha1.DriftDetectionWarn
	}
	in.MaxHold = 24 * time.Hour
	if c.yes() {
		in.LastAppliedRevision = "rev1"
	}
	holds := []func(metav1.Object){
		nil,
		hold(now.Add(time.Hour)),
		hold(now.Add(48 * time.Hour)),
		hold(now.Add(-time.Minute)),
		annotate(v1alpha1.HoldReasonAnnotation, "incident"),
		annotate(v1alpha1.HoldUntilAnnotation, "tomorrow"),
	}
	for _, cand := range candidates {
		if c.yes() {
			in.Objects = append(in.Objects, cand.git)
			in.Digests = append(in.Digests, digestOf(t, cand.git))
		}
		e := entry(cand.git)
		for _, s := range fuzzSyncs {
			if c.yes() {
				owns(&in, s, e)
			}
		}
		if !c.yes() {
			continue
		}
		var edits []func(metav1.Object)
		if cand.git.CloudProfile != nil && c.yes() {
			edits = append(edits, memory("999Gi"))
		}
		if h := holds[c.next(len(holds))]; h != nil {
			edits = append(edits, h)
		}
		live := applied(t, cand.applied, fuzzSyncs[c.next(len(fuzzSyncs))], int64(1+c.next(3)), edits...)
		if until, ok := live.GetAnnotations()[v1alpha1.HoldUntilAnnotation]; ok && c.yes() {
			previous := v1alpha1.ObjectHold{InventoryEntry: e, ObservedGeneration: int64(1 + c.next(3))}
			if t, err := time.Parse(time.RFC3339, until); err == nil {
				previous.Until = metav1.NewTime(t)
			}
			if c.yes() {
				previous.DriftedFields = []string{"spec.machineTypes[0] (m5.large).memory"}
			}
			in.PreviousHolds = append(in.PreviousHolds, previous)
		}
		switch l := live.(type) {
		case *v1alpha1.CloudProfile:
			in.Live.CloudProfiles[l.Name] = l
		case *v1alpha1.NamespacedCloudProfile:
			in.Live.Namespaced[types.NamespacedName{Namespace: l.Namespace, Name: l.Name}] = l
		}
	}
	return in
}

// FuzzPlanInvariants checks the promises of a plan on random syncs: it
// writes nothing when it refuses; it never writes an object another
// ProfileSync of equal or higher rank lists; it never prunes a CloudProfile
// that a NamespacedCloudProfile staying on the cluster uses; it never writes
// or prunes an object it holds, nor, when it releases a hold because Git
// caught up, a field the hold recorded; every hold it could honour is held
// or released; and everything it writes is in its inventory before the
// write.
func FuzzPlanInvariants(f *testing.F) {
	f.Add([]byte{})
	f.Add([]byte{0, 1, 0, 1, 1, 1, 0, 0, 1, 1, 1, 1, 1, 1, 1, 0, 1})
	f.Add([]byte{2, 1, 1, 0, 0, 1, 2, 1, 0, 1, 0, 1, 1, 0, 1, 1, 1, 2, 1, 1, 1})
	f.Add([]byte{0, 1, 0, 0, 1, 0, 1, 0, 1, 1, 0, 1, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1})
	f.Fuzz(func(t *testing.T, data []byte) {
		in := fuzzWorld(t, &choices{data: data})
		p, err := syncplan.Decide(in)
		if err != nil {
			t.Fatalf("Decide: %v", err)
		}
		checkInvariants(t, in, p)
	})
}

func checkInvariants(t *testing.T, in syncplan.Input, p *syncplan.Plan) {
	t.Helper()
	if p.Refusal != nil {
		if len(p.Writes) > 0 || len(p.Releases) > 0 || len(p.Prunes) > 0 || p.Claim != nil {
			t.Fatalf("refused (%v) but plans %d writes, %d releases, %d prunes, claim %v", p.Refusal, len(p.Writes), len(p.Releases), len(p.Prunes), p.Claim)
		}
		return
	}
	held := map[v1alpha1.InventoryEntry]bool{}
	for _, h := range p.Holds {
		held[h.InventoryEntry] = true
	}
	checkWrites(t, in, p, held)
	checkPrunes(t, in, p, held)
	checkReleases(t, in, p)
	checkHoldsTaken(t, in, p, held)
	for _, o := range in.Objects {
		if !slices.Contains(p.Inventory, syncplan.EntryOf(o)) {
			t.Fatalf("the inventory %v lacks %s of the revision", p.Inventory, o.Ref())
		}
	}
}

// outranks tells whether self's claim goes before owner's.
func outranks(in syncplan.Input, owner types.NamespacedName) bool {
	return syncplan.IsLandscapeSync(in.Sync, in.LandscapeNamespace) && !syncplan.IsLandscapeSync(owner, in.LandscapeNamespace)
}

// checkWrites: no write of an object another ProfileSync of equal or
// higher rank lists, nor of a held one, nor of one not claimed first.
func checkWrites(t *testing.T, in syncplan.Input, p *syncplan.Plan, held map[v1alpha1.InventoryEntry]bool) {
	t.Helper()
	claimed := p.Claim
	if claimed == nil {
		claimed = p.RetainedInventory
	}
	for _, w := range p.Writes {
		for _, owner := range in.Claims[w.Entry] {
			if owner != in.Sync && !outranks(in, owner) {
				t.Fatalf("writes %s, which %s lists", syncplan.ObjectRef(w.Entry), owner)
			}
		}
		if held[w.Entry] {
			t.Fatalf("writes %s, which it holds", syncplan.ObjectRef(w.Entry))
		}
		if !slices.Contains(claimed, w.Entry) {
			t.Fatalf("writes %s without claiming it first (claim %v)", syncplan.ObjectRef(w.Entry), claimed)
		}
	}
}

// checkPrunes: no prune of a held object, of one another ProfileSync
// lists, or of a parent a namespaced profile staying on the cluster uses.
func checkPrunes(t *testing.T, in syncplan.Input, p *syncplan.Plan, held map[v1alpha1.InventoryEntry]bool) {
	t.Helper()
	pruned := map[v1alpha1.InventoryEntry]bool{}
	for _, e := range p.Prunes {
		pruned[e] = true
		if held[e] {
			t.Fatalf("prunes %s, which it holds", syncplan.ObjectRef(e))
		}
		for _, owner := range in.Claims[e] {
			if owner != in.Sync {
				t.Fatalf("prunes %s, which %s lists", syncplan.ObjectRef(e), owner)
			}
		}
	}
	inRevision := map[v1alpha1.InventoryEntry]bool{}
	for _, o := range in.Objects {
		inRevision[syncplan.EntryOf(o)] = true
	}
	for key, ncp := range in.Live.Namespaced {
		e := v1alpha1.InventoryEntry{Kind: v1alpha1.NamespacedCloudProfileKind, Namespace: key.Namespace, Name: key.Name}
		parent := v1alpha1.InventoryEntry{Kind: v1alpha1.CloudProfileKind, Name: ncp.Spec.Parent.Name}
		// A parent not on the cluster has nothing to delete; its prune is
		// a no-op.
		if _, parentLive := in.Live.CloudProfiles[parent.Name]; parentLive && !inRevision[e] && !pruned[e] && pruned[parent] {
			t.Fatalf("prunes %s, the parent of %s, which stays on the cluster", syncplan.ObjectRef(parent), syncplan.ObjectRef(e))
		}
	}
}

// checkReleases: a hold released because Git caught up is written without
// changing a field it recorded.
func checkReleases(t *testing.T, in syncplan.Input, p *syncplan.Plan) {
	t.Helper()
	released := map[v1alpha1.InventoryEntry]syncplan.Release{}
	for _, r := range p.Releases {
		released[r.Entry] = r
	}
	previous := map[v1alpha1.InventoryEntry]v1alpha1.ObjectHold{}
	for _, h := range in.PreviousHolds {
		previous[h.InventoryEntry] = h
	}
	for _, w := range p.Writes {
		r, ok := released[w.Entry]
		if !ok || r.Reason != v1alpha1.HoldReleasedReason || w.Create {
			continue
		}
		drifted, err := syncplan.DriftedFields(w.Object, liveObject(in, w.Entry), nil)
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range previous[w.Entry].DriftedFields {
			if slices.Contains(drifted, f) {
				t.Fatalf("releases the hold of %s as caught up with, and writes its held field %s", syncplan.ObjectRef(w.Entry), f)
			}
		}
	}
}

// checkHoldsTaken: every hold of an owned object that the plan may honour
// is held or released, never dropped.
func checkHoldsTaken(t *testing.T, in syncplan.Input, p *syncplan.Plan, held map[v1alpha1.InventoryEntry]bool) {
	t.Helper()
	released := map[v1alpha1.InventoryEntry]bool{}
	for _, r := range p.Releases {
		released[r.Entry] = true
	}
	for _, o := range in.Objects {
		e := syncplan.EntryOf(o)
		live := liveObject(in, e)
		if live == nil || !slices.Contains(p.RetainedInventory, e) {
			continue
		}
		if h, err := v1alpha1.ParseHold(live.GetAnnotations(), in.Now, in.MaxHold); err == nil && h != nil && !held[e] && !released[e] {
			t.Fatalf("%s carries a hold it may honour, and neither holds nor releases it", syncplan.ObjectRef(e))
		}
	}
}

func liveObject(in syncplan.Input, e v1alpha1.InventoryEntry) metav1.Object {
	if e.Kind == v1alpha1.CloudProfileKind {
		if cp, ok := in.Live.CloudProfiles[e.Name]; ok {
			return cp
		}
		return nil
	}
	if ncp, ok := in.Live.Namespaced[types.NamespacedName{Namespace: e.Namespace, Name: e.Name}]; ok {
		return ncp
	}
	return nil
}
