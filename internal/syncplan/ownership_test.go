package syncplan_test

import (
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	v1alpha1 "github.com/profilesync/profilesync/api/v1alpha1"
	"github.com/profilesync/profilesync/internal/render/profile"
	"github.com/profilesync/profilesync/internal/syncplan"
)

// relabelled sets the owner labels of a live object to name owner, as
// anyone who may edit it can.
func relabelled(owner types.NamespacedName) func(metav1.Object) {
	return func(o metav1.Object) { o.SetLabels(syncplan.OwnerLabels(owner)) }
}

// TestPlannedWrites: what a plan writes of an object, why (the fields) and
// in which stage.
func TestPlannedWrites(t *testing.T) {
	aws := cloudProfile("aws")
	tests := []struct {
		name       string
		git        []profile.Object
		live       func(t *testing.T) []metav1.Object
		wantWrites []string // Ref and, for a live object, the drifted fields
		wantStages []syncplan.Stage
	}{
		{name: "a new object is written", git: []profile.Object{aws},
			wantWrites: []string{"CloudProfile/aws"}, wantStages: []syncplan.Stage{syncplan.StageParents}},
		{name: "an object the cluster already has as Git says is not written", git: []profile.Object{aws},
			live: func(t *testing.T) []metav1.Object { return []metav1.Object{applied(t, aws, landscape, 1)} }},
		{name: "a changed spec is written, naming the field that differs", git: []profile.Object{cloudProfile("aws", addVersion)},
			live:       func(t *testing.T) []metav1.Object { return []metav1.Object{applied(t, aws, landscape, 1)} },
			wantWrites: []string{"CloudProfile/aws spec.kubernetes.versions[2] (1.32.0)"}, wantStages: []syncplan.Stage{syncplan.StageParents}},
		{name: "owner labels rewritten to name another ProfileSync are written back", git: []profile.Object{aws},
			live: func(t *testing.T) []metav1.Object {
				return []metav1.Object{applied(t, aws, landscape, 1, relabelled(tenant))}
			},
			wantWrites: []string{"CloudProfile/aws metadata.labels[profilesync.io/name] metadata.labels[profilesync.io/namespace]"},
			wantStages: []syncplan.Stage{syncplan.StageParents}},
		{name: "a version only the cluster has is not Git's: left alone", git: []profile.Object{aws},
			live: func(t *testing.T) []metav1.Object {
				return []metav1.Object{applied(t, aws, landscape, 1, liveEdit(addVersion))}
			}},
		{name: "a version Git dropped is written, so that server-side apply removes it", git: []profile.Object{aws},
			live: func(t *testing.T) []metav1.Object {
				return []metav1.Object{applied(t, cloudProfile("aws", addVersion), landscape, 1)}
			},
			wantWrites: []string{"CloudProfile/aws metadata.annotations[profilesync.io/applied-digest]"}, wantStages: []syncplan.Stage{syncplan.StageParents}},
		{name: "a label Git does not set is left alone", git: []profile.Object{aws},
			live: func(t *testing.T) []metav1.Object {
				return []metav1.Object{applied(t, aws, landscape, 1, func(o metav1.Object) {
					labels := o.GetLabels()
					labels["team"] = "platform"
					o.SetLabels(labels)
				})}
			}},
		{name: "a namespaced profile whose parent is not on the cluster yet waits for it", git: []profile.Object{namespaced("team-a", "p", "gcp")},
			wantWrites: []string{"NamespacedCloudProfile/team-a/p"}, wantStages: []syncplan.Stage{syncplan.StageNeedsNewParent}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			var live []metav1.Object
			if tt.live != nil {
				live = tt.live(t)
			}
			in := input(t, landscape, tt.git, live...)
			for _, o := range tt.git {
				owns(&in, landscape, entry(o))
			}
			p, err := syncplan.Decide(in)
			g.Expect(err).NotTo(HaveOccurred())
			var writes []string
			var stages []syncplan.Stage
			for _, w := range p.Writes {
				writes = append(writes, strings.Join(append([]string{w.Object.Ref()}, w.Fields...), " "))
				stages = append(stages, w.Stage)
			}
			g.Expect(writes).To(Equal(tt.wantWrites))
			g.Expect(stages).To(Equal(tt.wantStages))
		})
	}
}

// TestOwnership: tenancy, the inventories' claims and who outranks whom,
// as a plan decides them; labels decide nothing.
func TestOwnership(t *testing.T) {
	payments := namespaced("team-a", "payments", "aws")
	second := types.NamespacedName{Namespace: "garden", Name: "second"}
	tests := []struct {
		name  string
		input func(t *testing.T) syncplan.Input
		check func(g Gomega, p *syncplan.Plan)
	}{{
		name: "a tenant's ProfileSync is refused an object the landscape's lists, naming both, whatever its labels say",
		input: func(t *testing.T) syncplan.Input {
			in := input(t, tenant, []profile.Object{payments}, applied(t, payments, tenant, 1))
			owns(&in, landscape, entry(payments))
			return in
		},
		check: func(g Gomega, p *syncplan.Plan) {
			g.Expect(p.Refusal.Kind).To(Equal(syncplan.AccessDenied))
			g.Expect(p.Refusal.Error()).To(ContainSubstring(`profiles/payments.yaml: NamespacedCloudProfile/team-a/payments: managed by the landscape's ProfileSync garden/landscape (namespace "garden"), which outranks tenants; ` +
				"ProfileSync team-a/profiles may not manage it and no longer lists it in its inventory"))
		},
	}, {
		name: "labels naming another ProfileSync that does not list the object are no reason to refuse",
		input: func(t *testing.T) syncplan.Input {
			return input(t, landscape, []profile.Object{payments}, applied(t, payments, tenant, 1))
		},
		check: func(g Gomega, p *syncplan.Plan) {
			g.Expect(p.Refusal).NotTo(HaveOccurred())
			g.Expect(written(p)).To(Equal([]string{"NamespacedCloudProfile/team-a/payments"}), "its labels are written back")
		},
	}, {
		name: "between two of the landscape's ProfileSyncs the first come keeps the object",
		input: func(t *testing.T) syncplan.Input {
			in := input(t, landscape, []profile.Object{payments})
			owns(&in, second, entry(payments))
			return in
		},
		check: func(g Gomega, p *syncplan.Plan) {
			g.Expect(p.Refusal.Error()).To(ContainSubstring("already managed by ProfileSync garden/second"))
		},
	}, {
		name: "the landscape's sync wakes each tenant whose claim it takes, once, and no other of the landscape's",
		input: func(t *testing.T) syncplan.Input {
			also := namespaced("team-b", "also", "aws")
			in := input(t, landscape, []profile.Object{payments, also})
			owns(&in, other, entry(also))
			owns(&in, tenant, entry(payments), entry(also))
			owns(&in, second, v1alpha1.InventoryEntry{Kind: v1alpha1.CloudProfileKind, Name: "elsewhere"})
			return in
		},
		check: func(g Gomega, p *syncplan.Plan) {
			g.Expect(p.Outranked).To(Equal([]types.NamespacedName{tenant, other}))
		},
	}, {
		name: "a held object is not written, so no tenant's claim to it is taken",
		input: func(t *testing.T) syncplan.Input {
			in := input(t, landscape, []profile.Object{payments}, applied(t, payments, landscape, 1, hold(now.Add(10*time.Minute))))
			owns(&in, landscape, entry(payments))
			owns(&in, tenant, entry(payments))
			return in
		},
		check: func(g Gomega, p *syncplan.Plan) {
			g.Expect(p.Outranked).To(BeEmpty())
			g.Expect(p.Writes).To(BeEmpty())
		},
	}, {
		name: "a tenant keeps what another tenant lists too: first come among equals is decided at the write",
		input: func(t *testing.T) syncplan.Input {
			in := input(t, tenant, nil)
			owns(&in, tenant, entry(payments))
			owns(&in, types.NamespacedName{Namespace: "team-a", Name: "second"}, entry(payments))
			return in
		},
		check: func(g Gomega, p *syncplan.Plan) {
			g.Expect(p.LostClaims).To(BeEmpty())
			g.Expect(p.RetainedInventory).To(Equal([]v1alpha1.InventoryEntry{entry(payments)}))
			g.Expect(p.Prunes).To(BeEmpty(), "nor pruned: another lists it")
		},
	}, {
		name: "the landscape's ProfileSync loses nothing to a tenant",
		input: func(t *testing.T) syncplan.Input {
			in := input(t, landscape, []profile.Object{payments})
			owns(&in, landscape, entry(payments))
			owns(&in, tenant, entry(payments))
			return in
		},
		check: func(g Gomega, p *syncplan.Plan) {
			g.Expect(p.LostClaims).To(BeEmpty())
			g.Expect(p.Inventory).To(Equal([]v1alpha1.InventoryEntry{entry(payments)}))
		},
	}, {
		name: "an object of the inventory relabelled for another ProfileSync is pruned all the same",
		input: func(t *testing.T) syncplan.Input {
			in := input(t, landscape, nil, applied(t, payments, landscape, 1, relabelled(tenant)))
			owns(&in, landscape, entry(payments))
			return in
		},
		check: func(g Gomega, p *syncplan.Plan) {
			g.Expect(p.Prunes).To(Equal([]v1alpha1.InventoryEntry{entry(payments)}))
		},
	}, {
		name: "a live object whose labels name this ProfileSync is not pruned unless the inventory lists it",
		input: func(t *testing.T) syncplan.Input {
			return input(t, landscape, nil, applied(t, payments, landscape, 1))
		},
		check: func(g Gomega, p *syncplan.Plan) {
			g.Expect(p.Prunes).To(BeEmpty())
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
