package syncplan_test

import (
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	v1alpha1 "github.com/profilesync/profilesync/api/v1alpha1"
	"github.com/profilesync/profilesync/internal/render/profile"
	"github.com/profilesync/profilesync/internal/syncplan"
	"github.com/profilesync/profilesync/test/builders"
)

var (
	now       = builders.Time("2026-11-22T12:00:00Z")
	landscape = types.NamespacedName{Namespace: "garden", Name: "landscape"}
	tenant    = types.NamespacedName{Namespace: "team-a", Name: "profiles"}
	other     = types.NamespacedName{Namespace: "team-b", Name: "profiles"}
)

// cloudProfile is an object of Git: Profile() as CloudProfile name.
func cloudProfile(name string, edit ...func(*v1alpha1.CloudProfileSpec)) profile.Object {
	spec := builders.Profile()
	for _, e := range edit {
		e(spec)
	}
	cp := &v1alpha1.CloudProfile{Spec: *spec}
	cp.Name = name
	return profile.Object{File: "profiles/" + name + ".yaml", CloudProfile: cp}
}

// namespaced is a NamespacedCloudProfile of Git extending parent.
func namespaced(namespace, name, parent string) profile.Object {
	ncp := &v1alpha1.NamespacedCloudProfile{Spec: *builders.Namespaced()}
	ncp.Spec.Parent.Name = parent
	ncp.Namespace, ncp.Name = namespace, name
	return profile.Object{File: "profiles/" + name + ".yaml", NamespacedCloudProfile: ncp}
}

// digestOf is the content digest of o.
func digestOf(t *testing.T, o profile.Object) string {
	t.Helper()
	d, err := profile.ContentDigest(o)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// applied is the live object of o as the sync of owner applied it: its
// spec with the server's defaults, the owner labels, and o's digest;
// edits change it after.
func applied(t *testing.T, o profile.Object, owner types.NamespacedName, generation int64, edits ...func(metav1.Object)) metav1.Object {
	t.Helper()
	annotations := map[string]string{v1alpha1.AppliedDigestAnnotation: digestOf(t, o)}
	var live metav1.Object
	if o.CloudProfile != nil {
		cp := syncplan.AsStored(o).CloudProfile.DeepCopy()
		live = cp
	} else {
		live = o.NamespacedCloudProfile.DeepCopy()
	}
	live.SetLabels(syncplan.OwnerLabels(owner))
	live.SetAnnotations(annotations)
	live.SetGeneration(generation)
	for _, e := range edits {
		e(live)
	}
	return live
}

func memory(value string) func(metav1.Object) {
	return func(o metav1.Object) {
		o.(*v1alpha1.CloudProfile).Spec.MachineTypes[0].Memory = resource.MustParse(value)
	}
}

func annotate(key, value string) func(metav1.Object) {
	return func(o metav1.Object) {
		a := o.GetAnnotations()
		a[key] = value
		o.SetAnnotations(a)
	}
}

func hold(until time.Time) func(metav1.Object) {
	return annotate(v1alpha1.HoldUntilAnnotation, until.UTC().Format(time.RFC3339))
}

func entry(o profile.Object) v1alpha1.InventoryEntry { return syncplan.EntryOf(o) }

// input is a plan's input for sync with the objects of Git and the live
// objects given.
func input(t *testing.T, sync types.NamespacedName, objects []profile.Object, live ...metav1.Object) syncplan.Input {
	t.Helper()
	in := syncplan.Input{
		Sync: sync, Revision: "rev2", LastAppliedRevision: "rev2", Objects: objects,
		Live: syncplan.Live{
			CloudProfiles: map[string]*v1alpha1.CloudProfile{},
			Namespaced:    map[types.NamespacedName]*v1alpha1.NamespacedCloudProfile{},
		},
		Claims: syncplan.Claims{}, Prune: true, DriftMode: v1alpha1.DriftDetectionCorrect,
		LandscapeNamespace: landscape.Namespace, Now: now,
	}
	for _, o := range objects {
		in.Digests = append(in.Digests, digestOf(t, o))
	}
	for _, l := range live {
		switch l := l.(type) {
		case *v1alpha1.CloudProfile:
			in.Live.CloudProfiles[l.Name] = l
		case *v1alpha1.NamespacedCloudProfile:
			in.Live.Namespaced[types.NamespacedName{Namespace: l.Namespace, Name: l.Name}] = l
		}
	}
	return in
}

// owns lists entries in sync's inventory, and in the claims.
func owns(in *syncplan.Input, sync types.NamespacedName, entries ...v1alpha1.InventoryEntry) {
	for _, e := range entries {
		if sync == in.Sync {
			in.Inventory = append(in.Inventory, e)
		}
		in.Claims[e] = append(in.Claims[e], sync)
	}
}

func written(p *syncplan.Plan) []string {
	var refs []string
	for _, w := range p.Writes {
		refs = append(refs, w.Object.Ref())
	}
	return refs
}

func reasons(events []syncplan.Event) []string {
	var r []string
	for _, e := range events {
		r = append(r, e.Reason)
	}
	return r
}

func TestPlan(t *testing.T) {
	aws := cloudProfile("aws")
	payments := namespaced("team-a", "payments", "aws")
	tests := []struct {
		name  string
		input func(t *testing.T) syncplan.Input
		check func(g Gomega, p *syncplan.Plan)
	}{{
		name: "a new object is written, and claimed in the inventory before the write",
		input: func(t *testing.T) syncplan.Input {
			return input(t, landscape, []profile.Object{aws})
		},
		check: func(g Gomega, p *syncplan.Plan) {
			g.Expect(p.Refusal).NotTo(HaveOccurred())
			g.Expect(written(p)).To(Equal([]string{"CloudProfile/aws"}))
			g.Expect(p.Writes[0].Create).To(BeTrue())
			g.Expect(p.Writes[0].Desired.GetAnnotations()).To(HaveKeyWithValue(v1alpha1.AppliedDigestAnnotation, digestOf(t, aws)))
			g.Expect(p.Writes[0].Desired.GetLabels()).To(HaveKeyWithValue(v1alpha1.OwnerNameLabel, "landscape"))
			g.Expect(p.Claim).To(Equal([]v1alpha1.InventoryEntry{entry(aws)}))
			g.Expect(p.Inventory).To(Equal([]v1alpha1.InventoryEntry{entry(aws)}))
			g.Expect(reasons(p.Applied)).To(Equal([]string{v1alpha1.AppliedReason}))
		},
	}, {
		name: "an object the cluster has as Git applied it is not written, though Git leaves out the server's defaults",
		input: func(t *testing.T) syncplan.Input {
			withoutDefault := cloudProfile("aws", func(s *v1alpha1.CloudProfileSpec) { s.MachineImages[0].UpdateStrategy = nil })
			in := input(t, landscape, []profile.Object{withoutDefault}, applied(t, withoutDefault, landscape, 1))
			owns(&in, landscape, entry(aws))
			return in
		},
		check: func(g Gomega, p *syncplan.Plan) {
			g.Expect(p.Writes).To(BeEmpty())
			g.Expect(p.Claim).To(BeNil())
			g.Expect(p.Applied).To(BeEmpty())
			g.Expect(p.DriftedCondition()).To(BeNil())
		},
	}, {
		name: "a hand edit of an applied object is put back, naming the field",
		input: func(t *testing.T) syncplan.Input {
			in := input(t, landscape, []profile.Object{aws}, applied(t, aws, landscape, 2, memory("999Gi")))
			owns(&in, landscape, entry(aws))
			return in
		},
		check: func(g Gomega, p *syncplan.Plan) {
			g.Expect(written(p)).To(Equal([]string{"CloudProfile/aws"}))
			g.Expect(p.Writes[0].Fields).To(Equal([]string{"spec.machineTypes[0] (m5.large).memory"}))
			g.Expect(reasons(p.Applied)).To(Equal([]string{v1alpha1.DriftCorrectedReason, v1alpha1.AppliedReason}))
		},
	}, {
		name: "under drift mode warn a hand edit is left as it is and reported",
		input: func(t *testing.T) syncplan.Input {
			in := input(t, landscape, []profile.Object{aws}, applied(t, aws, landscape, 2, memory("999Gi")))
			in.DriftMode = v1alpha1.DriftDetectionWarn
			owns(&in, landscape, entry(aws))
			return in
		},
		check: func(g Gomega, p *syncplan.Plan) {
			g.Expect(p.Writes).To(BeEmpty())
			g.Expect(p.Drifts).To(Equal([]syncplan.Drift{{Ref: "CloudProfile/aws", Fields: []string{"spec.machineTypes[0] (m5.large).memory"}}}))
			g.Expect(p.DriftedCondition().Reason).To(Equal(v1alpha1.DriftDetectedReason))
			g.Expect(reasons(p.Events)).To(Equal([]string{v1alpha1.DriftDetectedReason}))
			g.Expect(p.Topics[syncplan.TopicDrift]).To(HaveLen(1))
		},
	}, {
		name: "an object another tenant's ProfileSync lists refuses a tenant's revision, which writes nothing",
		input: func(t *testing.T) syncplan.Input {
			other := namespaced("team-a", "payments", "aws")
			in := input(t, tenant, []profile.Object{other, namespaced("team-a", "new", "aws")}, applied(t, aws, landscape, 1))
			owns(&in, types.NamespacedName{Namespace: "team-a", Name: "second"}, entry(other))
			return in
		},
		check: func(g Gomega, p *syncplan.Plan) {
			g.Expect(p.Refusal).To(HaveOccurred())
			g.Expect(p.Refusal.Kind).To(Equal(syncplan.AccessDenied))
			g.Expect(p.Refusal.Error()).To(ContainSubstring("NamespacedCloudProfile/team-a/payments: already managed by ProfileSync team-a/second"))
			g.Expect(p.Writes).To(BeEmpty())
			g.Expect(p.Claim).To(BeNil())
			g.Expect(p.HoldsJudged).To(BeFalse())
		},
	}, {
		name: "a tenant may not write a CloudProfile nor a namespaced profile outside its namespace",
		input: func(t *testing.T) syncplan.Input {
			return input(t, tenant, []profile.Object{aws, namespaced("team-b", "x", "aws")})
		},
		check: func(g Gomega, p *syncplan.Plan) {
			g.Expect(p.Refusal.Problems).To(HaveLen(2))
			g.Expect(p.Refusal.Problems[0]).To(ContainSubstring(`only ProfileSyncs in namespace "garden" may write cluster-scoped CloudProfiles`))
			g.Expect(p.Refusal.Problems[1]).To(ContainSubstring(`only in its own namespace "team-a"`))
		},
	}, {
		name: "the landscape's ProfileSync writes an object a tenant lists, and names the tenant it outranks",
		input: func(t *testing.T) syncplan.Input {
			in := input(t, landscape, []profile.Object{aws, payments}, applied(t, aws, landscape, 1))
			owns(&in, landscape, entry(aws))
			owns(&in, tenant, entry(payments))
			return in
		},
		check: func(g Gomega, p *syncplan.Plan) {
			g.Expect(p.Refusal).NotTo(HaveOccurred())
			g.Expect(written(p)).To(Equal([]string{"NamespacedCloudProfile/team-a/payments"}))
			g.Expect(p.Outranked).To(Equal([]types.NamespacedName{tenant}))
		},
	}, {
		name: "a tenant loses the claim the landscape took over: it is dropped from its inventory and never pruned",
		input: func(t *testing.T) syncplan.Input {
			in := input(t, tenant, nil, applied(t, payments, landscape, 1))
			owns(&in, tenant, entry(payments))
			owns(&in, landscape, entry(payments))
			return in
		},
		check: func(g Gomega, p *syncplan.Plan) {
			g.Expect(p.LostClaims).To(Equal([]v1alpha1.InventoryEntry{entry(payments)}))
			g.Expect(p.RetainedInventory).To(BeEmpty())
			g.Expect(p.Prunes).To(BeEmpty())
			g.Expect(p.Inventory).To(BeEmpty())
		},
	}, {
		name: "the objects Git dropped are pruned, namespaced profiles before their parents",
		input: func(t *testing.T) syncplan.Input {
			in := input(t, landscape, nil, applied(t, aws, landscape, 1), applied(t, payments, landscape, 1))
			owns(&in, landscape, entry(aws), entry(payments))
			return in
		},
		check: func(g Gomega, p *syncplan.Plan) {
			g.Expect(p.Refusal).NotTo(HaveOccurred())
			g.Expect(p.Prunes).To(Equal([]v1alpha1.InventoryEntry{entry(payments), entry(aws)}))
			g.Expect(p.Inventory).To(BeEmpty())
		},
	}, {
		name: "an object Git dropped is not pruned without spec.prune, and leaves the inventory",
		input: func(t *testing.T) syncplan.Input {
			in := input(t, landscape, nil, applied(t, aws, landscape, 1))
			in.Prune = false
			owns(&in, landscape, entry(aws))
			return in
		},
		check: func(g Gomega, p *syncplan.Plan) {
			g.Expect(p.Prunes).To(BeEmpty())
			g.Expect(p.Inventory).To(BeEmpty())
		},
	}, {
		name: "an object another ProfileSync lists is never pruned",
		input: func(t *testing.T) syncplan.Input {
			in := input(t, landscape, nil, applied(t, aws, landscape, 1))
			owns(&in, landscape, entry(aws))
			owns(&in, types.NamespacedName{Namespace: "garden", Name: "second"}, entry(aws))
			return in
		},
		check: func(g Gomega, p *syncplan.Plan) {
			g.Expect(p.Prunes).To(BeEmpty())
		},
	}, {
		name: "pruning a parent that a namespaced profile staying on the cluster uses is refused, and nothing is written",
		input: func(t *testing.T) syncplan.Input {
			gcp := cloudProfile("gcp")
			in := input(t, landscape, []profile.Object{gcp}, applied(t, aws, landscape, 1), applied(t, payments, tenant, 1))
			owns(&in, landscape, entry(aws))
			owns(&in, tenant, entry(payments))
			return in
		},
		check: func(g Gomega, p *syncplan.Plan) {
			g.Expect(p.Refusal.Kind).To(Equal(syncplan.UpdateRulesBroken))
			g.Expect(p.Refusal.Error()).To(ContainSubstring("(removed from Git): CloudProfile/aws"))
			g.Expect(p.Writes).To(BeEmpty())
			g.Expect(p.Prunes).To(BeEmpty())
		},
	}, {
		name: "moving the expiry a namespaced profile already overrides into the past is refused, in Gardener's words",
		input: func(t *testing.T) syncplan.Input {
			expiringAt := func(at time.Time) profile.Object {
				o := namespaced("team-a", "payments", "aws")
				o.NamespacedCloudProfile.Spec.Kubernetes = &v1alpha1.KubernetesSettings{Versions: []v1alpha1.ExpirableVersion{
					{Version: "1.30.0", ExpirationDate: &metav1.Time{Time: at}},
				}}
				return o
			}
			inAYear := now.AddDate(1, 0, 0)
			live := applied(t, expiringAt(inAYear), tenant, 1, func(o metav1.Object) {
				o.(*v1alpha1.NamespacedCloudProfile).Status.CloudProfileSpec = &v1alpha1.CloudProfileSpec{Kubernetes: v1alpha1.KubernetesSettings{
					Versions: []v1alpha1.ExpirableVersion{{Version: "1.30.0", ExpirationDate: &metav1.Time{Time: inAYear}}},
				}}
			})
			in := input(t, tenant, []profile.Object{expiringAt(now.AddDate(0, -1, 0))}, applied(t, aws, landscape, 1), live)
			owns(&in, landscape, entry(aws))
			owns(&in, tenant, entry(payments))
			return in
		},
		check: func(g Gomega, p *syncplan.Plan) {
			g.Expect(p.Refusal.Kind).To(Equal(syncplan.UpdateRulesBroken))
			g.Expect(p.Refusal.Error()).To(ContainSubstring(`NamespacedCloudProfile/team-a/payments: spec.kubernetes.versions[0] (1.30.0).expirationDate: Invalid value: "2026-10-22T12:00:00Z": expiration date for version "1.30.0" is in the past`))
			g.Expect(p.Writes).To(BeEmpty())
		},
	}, {
		name: "lowering maxNodesTotal is refused whole: the new object of the revision is not written either",
		input: func(t *testing.T) syncplan.Input {
			lowered := cloudProfile("aws", func(s *v1alpha1.CloudProfileSpec) { s.Limits = &v1alpha1.Limits{MaxNodesTotal: ptr.To[int32](10)} })
			in := input(t, landscape, []profile.Object{lowered, cloudProfile("gcp")}, applied(t, cloudProfile("aws", func(s *v1alpha1.CloudProfileSpec) {
				s.Limits = &v1alpha1.Limits{MaxNodesTotal: ptr.To[int32](100)}
			}), landscape, 1))
			owns(&in, landscape, entry(aws))
			return in
		},
		check: func(g Gomega, p *syncplan.Plan) {
			g.Expect(p.Refusal.Kind).To(Equal(syncplan.UpdateRulesBroken))
			g.Expect(p.Refusal.Error()).To(ContainSubstring("maxNodesTotal"))
			g.Expect(p.Writes).To(BeEmpty())
			g.Expect(p.Claim).To(BeNil())
		},
	}, {
		name: "a namespaced profile valid against its live parent is written before the parents, one that needs the new parent after",
		input: func(t *testing.T) syncplan.Input {
			newParent := namespaced("team-a", "later", "gcp")
			return input(t, landscape, []profile.Object{newParent, cloudProfile("gcp"), payments}, applied(t, aws, landscape, 1))
		},
		check: func(g Gomega, p *syncplan.Plan) {
			g.Expect(written(p)).To(Equal([]string{"NamespacedCloudProfile/team-a/payments", "CloudProfile/gcp", "NamespacedCloudProfile/team-a/later"}))
			g.Expect([]syncplan.Stage{p.Writes[0].Stage, p.Writes[1].Stage, p.Writes[2].Stage}).To(Equal(
				[]syncplan.Stage{syncplan.StageValidNow, syncplan.StageParents, syncplan.StageNeedsNewParent}))
		},
	}, {
		name: "a held object is not written, and its hold records the edit it waits on",
		input: func(t *testing.T) syncplan.Input {
			in := input(t, landscape, []profile.Object{aws}, applied(t, aws, landscape, 2, memory("999Gi"), hold(now.Add(2*time.Hour))))
			owns(&in, landscape, entry(aws))
			return in
		},
		check: func(g Gomega, p *syncplan.Plan) {
			g.Expect(p.Writes).To(BeEmpty())
			g.Expect(p.Holds).To(HaveLen(1))
			g.Expect(p.Holds[0].DriftedFields).To(Equal([]string{"spec.machineTypes[0] (m5.large).memory"}))
			g.Expect(p.Holds[0].ObservedGeneration).To(Equal(int64(2)))
			g.Expect(p.HeldCondition().Status).To(Equal(metav1.ConditionTrue))
			g.Expect(p.HeldCondition().Message).To(ContainSubstring("differs from Git on spec.machineTypes[0] (m5.large).memory"))
			g.Expect(reasons(p.Events)).To(Equal([]string{v1alpha1.HoldSetReason}))
			g.Expect(p.Releases).To(BeEmpty())
		},
	}, {
		name: "a hold set before the edit holds with nothing drifted yet, and is not taken for Git having caught up",
		input: func(t *testing.T) syncplan.Input {
			in := input(t, landscape, []profile.Object{aws}, applied(t, aws, landscape, 1, hold(now.Add(2*time.Hour))))
			owns(&in, landscape, entry(aws))
			return in
		},
		check: func(g Gomega, p *syncplan.Plan) {
			g.Expect(p.Releases).To(BeEmpty())
			g.Expect(p.Holds).To(HaveLen(1))
			g.Expect(p.Holds[0].DriftedFields).To(BeEmpty())
			g.Expect(p.HeldCondition().Message).To(ContainSubstring("nothing drifted yet"))
		},
	}, {
		name: "the edit made under a hold set before it is recorded by its new generation, and held",
		input: func(t *testing.T) syncplan.Input {
			until := now.Add(2 * time.Hour)
			in := input(t, landscape, []profile.Object{aws}, applied(t, aws, landscape, 2, memory("999Gi"), hold(until)))
			in.PreviousHolds = []v1alpha1.ObjectHold{{InventoryEntry: entry(aws), Until: metav1.NewTime(until), ObservedGeneration: 1}}
			owns(&in, landscape, entry(aws))
			return in
		},
		check: func(g Gomega, p *syncplan.Plan) {
			g.Expect(p.Writes).To(BeEmpty())
			g.Expect(p.Holds[0].DriftedFields).To(Equal([]string{"spec.machineTypes[0] (m5.large).memory"}))
			g.Expect(p.Events).To(BeEmpty(), "a hold listed with this expiry is not set again")
		},
	}, {
		name: "a hold Git caught up with is released after the writes, and the object written again",
		input: func(t *testing.T) syncplan.Input {
			until := now.Add(2 * time.Hour)
			gitHasTheEdit := cloudProfile("aws", func(s *v1alpha1.CloudProfileSpec) { s.MachineTypes[0].Memory = resource.MustParse("999Gi") })
			in := input(t, landscape, []profile.Object{gitHasTheEdit}, applied(t, aws, landscape, 2, memory("999Gi"), hold(until)))
			in.PreviousHolds = []v1alpha1.ObjectHold{{InventoryEntry: entry(aws), Until: metav1.NewTime(until), ObservedGeneration: 2,
				DriftedFields: []string{"spec.machineTypes[0] (m5.large).memory"}}}
			owns(&in, landscape, entry(aws))
			return in
		},
		check: func(g Gomega, p *syncplan.Plan) {
			g.Expect(p.Releases).To(HaveLen(1))
			g.Expect(p.Releases[0].Reason).To(Equal(v1alpha1.HoldReleasedReason))
			g.Expect(p.Holds).To(BeEmpty())
			g.Expect(written(p)).To(Equal([]string{"CloudProfile/aws"}), "its new digest is applied")
			g.Expect(p.StandingHolds()).To(HaveLen(1), "until the release is written the hold stands")
		},
	}, {
		name: "a hold that reached the expiry the sync honoured is released",
		input: func(t *testing.T) syncplan.Input {
			until := now.Add(-time.Minute)
			in := input(t, landscape, []profile.Object{aws}, applied(t, aws, landscape, 2, memory("999Gi"), hold(until)))
			in.PreviousHolds = []v1alpha1.ObjectHold{{InventoryEntry: entry(aws), Until: metav1.NewTime(until), ObservedGeneration: 2}}
			owns(&in, landscape, entry(aws))
			return in
		},
		check: func(g Gomega, p *syncplan.Plan) {
			g.Expect(p.Releases).To(HaveLen(1))
			g.Expect(p.Releases[0].Reason).To(Equal(v1alpha1.HoldExpiredReason))
			g.Expect(written(p)).To(Equal([]string{"CloudProfile/aws"}))
		},
	}, {
		name: "a hold beyond --max-hold is refused, not shown as held, and the edit put back",
		input: func(t *testing.T) syncplan.Input {
			in := input(t, landscape, []profile.Object{aws}, applied(t, aws, landscape, 2, memory("999Gi"), hold(now.Add(30*24*time.Hour))))
			owns(&in, landscape, entry(aws))
			return in
		},
		check: func(g Gomega, p *syncplan.Plan) {
			g.Expect(p.Holds).To(BeEmpty())
			g.Expect(p.RefusedHolds).To(HaveLen(1))
			g.Expect(p.HeldCondition().Status).To(Equal(metav1.ConditionFalse))
			g.Expect(p.HeldCondition().Reason).To(Equal(v1alpha1.HoldRefusedReason))
			g.Expect(written(p)).To(Equal([]string{"CloudProfile/aws"}))
			g.Expect(reasons(p.Events)).To(Equal([]string{v1alpha1.HoldRefusedReason}))
		},
	}, {
		name: "a hold on an object not in the inventory is ignored",
		input: func(t *testing.T) syncplan.Input {
			return input(t, landscape, []profile.Object{aws}, applied(t, aws, landscape, 2, memory("999Gi"), hold(now.Add(time.Hour))))
		},
		check: func(g Gomega, p *syncplan.Plan) {
			g.Expect(p.IgnoredHolds).To(Equal([]string{"CloudProfile/aws"}))
			g.Expect(p.Holds).To(BeEmpty())
			g.Expect(written(p)).To(Equal([]string{"CloudProfile/aws"}))
		},
	}, {
		name: "a held object Git dropped is neither pruned nor dropped from the inventory",
		input: func(t *testing.T) syncplan.Input {
			in := input(t, landscape, nil, applied(t, aws, landscape, 1, hold(now.Add(time.Hour))))
			owns(&in, landscape, entry(aws))
			return in
		},
		check: func(g Gomega, p *syncplan.Plan) {
			g.Expect(p.Prunes).To(BeEmpty())
			g.Expect(p.Inventory).To(Equal([]v1alpha1.InventoryEntry{entry(aws)}))
			g.Expect(p.HeldCondition().Message).To(ContainSubstring("removed from Git; pruned when the hold ends"))
		},
	}, {
		name: "a revision the update rules refuse ends no hold: the hold Git caught up with stands, and shows so",
		input: func(t *testing.T) syncplan.Input {
			until := now.Add(2 * time.Hour)
			gitHasTheEdit := cloudProfile("aws", func(s *v1alpha1.CloudProfileSpec) {
				s.MachineTypes[0].Memory = resource.MustParse("999Gi")
				s.Limits = &v1alpha1.Limits{MaxNodesTotal: ptr.To[int32](10)}
			})
			in := input(t, landscape, []profile.Object{gitHasTheEdit, cloudProfile("gcp", func(s *v1alpha1.CloudProfileSpec) {
				s.Limits = &v1alpha1.Limits{MaxNodesTotal: ptr.To[int32](10)}
			})}, applied(t, aws, landscape, 2, memory("999Gi"), hold(until)), applied(t, cloudProfile("gcp", func(s *v1alpha1.CloudProfileSpec) {
				s.Limits = &v1alpha1.Limits{MaxNodesTotal: ptr.To[int32](100)}
			}), landscape, 1))
			in.PreviousHolds = []v1alpha1.ObjectHold{{InventoryEntry: entry(aws), Until: metav1.NewTime(until), ObservedGeneration: 2,
				DriftedFields: []string{"spec.machineTypes[0] (m5.large).memory"}}}
			owns(&in, landscape, entry(aws), v1alpha1.InventoryEntry{Kind: v1alpha1.CloudProfileKind, Name: "gcp"})
			return in
		},
		check: func(g Gomega, p *syncplan.Plan) {
			g.Expect(p.Refusal.Kind).To(Equal(syncplan.UpdateRulesBroken))
			g.Expect(p.Releases).To(BeEmpty())
			g.Expect(p.Writes).To(BeEmpty())
			g.Expect(p.Holds).To(HaveLen(1))
			g.Expect(p.HeldCondition().Message).To(ContainSubstring("Git has caught up: the hold is released when a revision is applied"))
		},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			p, err := syncplan.Decide(tt.input(t))
			g.Expect(err).NotTo(HaveOccurred())
			tt.check(g, p)
		})
	}
}

func TestAsStoredAddsTheServersDefaultsOnly(t *testing.T) {
	g := NewWithT(t)
	o := cloudProfile("aws", func(s *v1alpha1.CloudProfileSpec) { s.MachineImages[0].UpdateStrategy = nil })
	stored := syncplan.AsStored(o)
	g.Expect(stored.CloudProfile.Spec.MachineImages[0].UpdateStrategy).NotTo(BeNil())
	g.Expect(o.CloudProfile.Spec.MachineImages[0].UpdateStrategy).To(BeNil(), "the object given is not changed")
	ns := namespaced("team-a", "payments", "aws")
	g.Expect(syncplan.AsStored(ns)).To(Equal(ns))
}
