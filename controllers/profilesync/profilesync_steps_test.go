package profilesync

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/record"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	v1alpha1 "github.com/profilesync/profilesync/api/v1alpha1"
	"github.com/profilesync/profilesync/internal/render/profile"
	"github.com/profilesync/profilesync/test/builders"
)

// The sync's steps one by one, without an API server, in the style of
// source-controller's reconcileSource tests: each table row is one
// situation and the step's verdict on it.

func stepSync(namespace string) *v1alpha1.ProfileSync {
	return &v1alpha1.ProfileSync{ObjectMeta: metav1.ObjectMeta{Name: "landscape", Namespace: namespace}}
}

// namedSync is a ProfileSync of the given namespace and name.
func namedSync(namespace, name string) *v1alpha1.ProfileSync {
	return &v1alpha1.ProfileSync{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace}}
}

func stepCloudProfile(name string, versions ...string) *v1alpha1.CloudProfile {
	cp := &v1alpha1.CloudProfile{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: builders.WithRequiredLists(v1alpha1.CloudProfileSpec{Type: "local"})}
	for _, v := range versions {
		cp.Spec.Kubernetes.Versions = append(cp.Spec.Kubernetes.Versions, v1alpha1.ExpirableVersion{Version: v})
	}
	return cp
}

func stepNamespaced(namespace, name, parent string, versions ...string) *v1alpha1.NamespacedCloudProfile {
	ncp := &v1alpha1.NamespacedCloudProfile{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace},
		Spec:       v1alpha1.NamespacedCloudProfileSpec{Parent: v1alpha1.CloudProfileReference{Kind: v1alpha1.CloudProfileKind, Name: parent}},
	}
	if len(versions) > 0 {
		ncp.Spec.Kubernetes = &v1alpha1.KubernetesSettings{}
		// An override of a parent version retimes its lifecycle: one that
		// sets nothing is refused, as Gardener refuses it.
		supported := metav1.NewTime(time.Date(2020, 1, 1, 0, 0, 0, 0, time.UTC))
		for _, v := range versions {
			ncp.Spec.Kubernetes.Versions = append(ncp.Spec.Kubernetes.Versions, v1alpha1.ExpirableVersion{Version: v,
				Lifecycle: []v1alpha1.LifecycleStage{{Classification: v1alpha1.ClassificationSupported, StartTime: &supported}}})
		}
	}
	return ncp
}

func gitObject(o client.Object) profile.Object {
	switch typed := o.(type) {
	case *v1alpha1.CloudProfile:
		return profile.Object{File: "profiles.yaml", CloudProfile: typed}
	default:
		return profile.Object{File: "profiles.yaml", NamespacedCloudProfile: typed.(*v1alpha1.NamespacedCloudProfile)}
	}
}

func liveOf(objects ...client.Object) *liveProfiles {
	live := &liveProfiles{
		cloudProfiles: map[string]*v1alpha1.CloudProfile{},
		namespaced:    map[client.ObjectKey]*v1alpha1.NamespacedCloudProfile{},
	}
	for _, o := range objects {
		switch typed := o.(type) {
		case *v1alpha1.CloudProfile:
			live.cloudProfiles[typed.Name] = typed
		case *v1alpha1.NamespacedCloudProfile:
			live.namespaced[client.ObjectKeyFromObject(typed)] = typed
		}
	}
	return live
}

// owned returns o with the owner labels of stepSync(namespace).
func owned[T client.Object](o T, namespace string) T {
	o.SetLabels(ownerLabels(stepSync(namespace)))
	return o
}

// appliedFrom marks o as the sync leaves an object it applied from the Git
// object from: with the digest of what Git said.
func appliedFrom[T client.Object](o T, from client.Object) T {
	digest, err := profile.ContentDigest(gitObject(from))
	if err != nil {
		panic(err)
	}
	annotations := o.GetAnnotations()
	if annotations == nil {
		annotations = map[string]string{}
	}
	annotations[v1alpha1.AppliedDigestAnnotation] = digest
	o.SetAnnotations(annotations)
	return o
}

// digestsOf is what the sync keeps with a decoded revision: the digest of
// each object.
func digestsOf(t *testing.T, objects []profile.Object) []string {
	t.Helper()
	digests, err := contentDigests(objects)
	if err != nil {
		t.Fatal(err)
	}
	return digests
}

func TestApplyPlan_changes(t *testing.T) {
	const ns = "profilesync-system"
	tests := []struct {
		name       string
		git        []client.Object
		live       []client.Object
		wantWrites []string // Ref and, for a live object, the drifted fields
		wantStages []applyStage
	}{
		{
			name:       "a new object is written",
			git:        []client.Object{stepCloudProfile("aws", "1.31.0")},
			wantWrites: []string{"CloudProfile/aws"},
			wantStages: []applyStage{stageParents},
		},
		{
			name: "an object the cluster already has as Git says is not written",
			git:  []client.Object{stepCloudProfile("aws", "1.31.0")},
			live: []client.Object{appliedFrom(owned(stepCloudProfile("aws", "1.31.0"), ns), stepCloudProfile("aws", "1.31.0"))},
		},
		{
			name:       "a changed spec is written, naming the field that differs",
			git:        []client.Object{stepCloudProfile("aws", "1.31.0", "1.32.0")},
			live:       []client.Object{appliedFrom(owned(stepCloudProfile("aws", "1.31.0"), ns), stepCloudProfile("aws", "1.31.0"))},
			wantWrites: []string{"CloudProfile/aws spec.kubernetes.versions[1] (1.32.0)"},
			wantStages: []applyStage{stageParents},
		},
		{
			name:       "a missing owner label is written back",
			git:        []client.Object{stepCloudProfile("aws", "1.31.0")},
			live:       []client.Object{stepCloudProfile("aws", "1.31.0")},
			wantWrites: []string{"CloudProfile/aws metadata.labels[profilesync.io/name] metadata.labels[profilesync.io/namespace]"},
			wantStages: []applyStage{stageParents},
		},
		{
			name: "owner labels rewritten to name another ProfileSync are written back",
			git:  []client.Object{stepCloudProfile("aws", "1.31.0")},
			live: []client.Object{func() client.Object {
				cp := appliedFrom(stepCloudProfile("aws", "1.31.0"), stepCloudProfile("aws", "1.31.0"))
				cp.Labels = map[string]string{v1alpha1.OwnerNamespaceLabel: "team-payments", v1alpha1.OwnerNameLabel: "mine"}
				return cp
			}()},
			wantWrites: []string{"CloudProfile/aws metadata.labels[profilesync.io/name] metadata.labels[profilesync.io/namespace]"},
			wantStages: []applyStage{stageParents},
		},
		{
			name: "a version only the cluster has is not Git's: left alone",
			git:  []client.Object{stepCloudProfile("aws", "1.31.0")},
			live: []client.Object{appliedFrom(owned(stepCloudProfile("aws", "1.31.0", "1.99.0"), ns), stepCloudProfile("aws", "1.31.0"))},
		},
		{
			name:       "a version Git dropped is written, so that server-side apply removes it",
			git:        []client.Object{stepCloudProfile("aws", "1.31.0")},
			live:       []client.Object{appliedFrom(owned(stepCloudProfile("aws", "1.31.0", "1.30.0"), ns), stepCloudProfile("aws", "1.31.0", "1.30.0"))},
			wantWrites: []string{"CloudProfile/aws metadata.annotations[profilesync.io/applied-digest]"},
			wantStages: []applyStage{stageParents},
		},
		{
			name: "a label Git does not set is left alone",
			git:  []client.Object{stepCloudProfile("aws", "1.31.0")},
			live: []client.Object{func() client.Object {
				cp := appliedFrom(owned(stepCloudProfile("aws", "1.31.0"), ns), stepCloudProfile("aws", "1.31.0"))
				cp.Labels["team"] = "platform"
				return cp
			}()},
		},
		{
			name: "namespaced profiles valid against the live parent go first, those needing the new parent last",
			git: []client.Object{
				stepCloudProfile("aws", "1.31.0", "1.32.0"),
				stepNamespaced("team-a", "valid-now", "aws", "1.31.0"),
				stepNamespaced("team-b", "needs-new-parent", "aws", "1.32.0"),
			},
			live:       []client.Object{appliedFrom(owned(stepCloudProfile("aws", "1.31.0"), ns), stepCloudProfile("aws", "1.31.0"))},
			wantWrites: []string{"NamespacedCloudProfile/team-a/valid-now", "CloudProfile/aws spec.kubernetes.versions[1] (1.32.0)", "NamespacedCloudProfile/team-b/needs-new-parent"},
			wantStages: []applyStage{stageValidNow, stageParents, stageNeedsNewParent},
		},
		{
			name:       "a namespaced profile whose parent is not on the cluster yet waits for it",
			git:        []client.Object{stepNamespaced("team-a", "p", "gcp")},
			wantWrites: []string{"NamespacedCloudProfile/team-a/p"},
			wantStages: []applyStage{stageNeedsNewParent},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			var objects []profile.Object
			for _, o := range tt.git {
				objects = append(objects, gitObject(o))
			}
			plan := newApplyPlan(stepSync(ns), objects, digestsOf(t, objects), liveOf(tt.live...), nil)
			changes, _, err := plan.changes(ownerLabels(stepSync(ns)), v1alpha1.DriftDetectionCorrect)
			g.Expect(err).NotTo(HaveOccurred())
			var writes []string
			var stages []applyStage
			for _, c := range changes {
				write := c.item.object.Ref()
				for _, f := range c.fields {
					write += " " + f
				}
				writes = append(writes, write)
				stages = append(stages, c.stage)
			}
			g.Expect(writes).To(Equal(tt.wantWrites))
			g.Expect(stages).To(Equal(tt.wantStages))
		})
	}
}

func TestProfileSyncReconciler_checkAccess(t *testing.T) {
	const privileged = "profilesync-system"
	tests := []struct {
		name   string
		syncIn string
		git    client.Object
		live   client.Object
		// listedBy are other ProfileSyncs whose inventory lists git.
		listedBy   []*v1alpha1.ProfileSync
		wantDenied string // empty: allowed
	}{
		{
			name:   "the landscape's namespace may write CloudProfiles",
			syncIn: privileged,
			git:    stepCloudProfile("aws"),
		},
		{
			name:   "the landscape's namespace may write namespaced profiles anywhere",
			syncIn: privileged,
			git:    stepNamespaced("team-a", "p", "aws"),
		},
		{
			name:       "a tenant may not write CloudProfiles",
			syncIn:     "team-a",
			git:        stepCloudProfile("aws"),
			wantDenied: `profiles.yaml: CloudProfile/aws: only ProfileSyncs in namespace "profilesync-system" may write cluster-scoped CloudProfiles`,
		},
		{
			name:   "a tenant may write namespaced profiles in its own namespace",
			syncIn: "team-a",
			git:    stepNamespaced("team-a", "p", "aws"),
		},
		{
			name:       "a tenant may not write namespaced profiles elsewhere",
			syncIn:     "team-a",
			git:        stepNamespaced("team-b", "p", "aws"),
			wantDenied: `may write NamespacedCloudProfiles only in its own namespace "team-a"`,
		},
		{
			name:       "an object another of the landscape's ProfileSyncs lists is refused, naming both: first come among equals",
			syncIn:     privileged,
			git:        stepCloudProfile("aws"),
			live:       owned(stepCloudProfile("aws"), privileged),
			listedBy:   []*v1alpha1.ProfileSync{listing(namedSync(privileged, "other-landscape"), stepCloudProfile("aws"))},
			wantDenied: "profiles.yaml: CloudProfile/aws: already managed by ProfileSync profilesync-system/other-landscape, whose inventory lists it; ProfileSync profilesync-system/landscape may not manage it too",
		},
		{
			name:     "an object another tenant's ProfileSync lists is refused, naming both: first come among equals",
			syncIn:   "team-a",
			git:      stepNamespaced("team-a", "p", "aws"),
			live:     owned(stepNamespaced("team-a", "p", "aws"), "team-a"),
			listedBy: []*v1alpha1.ProfileSync{listing(namedSync("team-a", "claim"), stepNamespaced("team-a", "p", "aws"))},
			wantDenied: "profiles.yaml: NamespacedCloudProfile/team-a/p: already managed by ProfileSync team-a/claim, whose inventory lists it; " +
				"ProfileSync team-a/landscape may not manage it too",
		},
		{
			name:     "the landscape's ProfileSync writes an object a tenant's ProfileSync claimed first",
			syncIn:   privileged,
			git:      stepNamespaced("team-a", "p", "aws"),
			live:     owned(stepNamespaced("team-a", "p", "aws"), "team-a"),
			listedBy: []*v1alpha1.ProfileSync{listing(namedSync("team-a", "claim"), stepNamespaced("team-a", "p", "aws"))},
		},
		{
			name:     "a tenant's ProfileSync is refused an object the landscape's lists, naming both, whatever its labels say",
			syncIn:   "team-a",
			git:      stepNamespaced("team-a", "p", "aws"),
			live:     owned(stepNamespaced("team-a", "p", "aws"), "team-a"),
			listedBy: []*v1alpha1.ProfileSync{listing(stepSync(privileged), stepNamespaced("team-a", "p", "aws"))},
			wantDenied: `profiles.yaml: NamespacedCloudProfile/team-a/p: managed by the landscape's ProfileSync profilesync-system/landscape (namespace "profilesync-system"), which outranks tenants; ` +
				"ProfileSync team-a/landscape may not manage it and no longer lists it in its inventory",
		},
		{
			name:     "an object its own inventory lists is its own",
			syncIn:   privileged,
			git:      stepCloudProfile("aws"),
			live:     owned(stepCloudProfile("aws"), privileged),
			listedBy: []*v1alpha1.ProfileSync{listing(stepSync(privileged), stepCloudProfile("aws"))},
		},
		{
			name:   "labels naming another ProfileSync that does not list the object are no reason to refuse",
			syncIn: privileged,
			git:    stepNamespaced("team-a", "p", "aws"),
			live:   owned(stepNamespaced("team-a", "p", "aws"), "team-a"),
		},
		{
			name:   "labels naming a ProfileSync that does not exist are no reason to refuse",
			syncIn: privileged,
			git:    stepCloudProfile("aws"),
			live:   owned(stepCloudProfile("aws"), "nowhere"),
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			r := &ProfileSyncReconciler{ClusterProfilesNamespace: privileged}
			var live []client.Object
			if tt.live != nil {
				live = append(live, tt.live)
			}
			obj := stepSync(tt.syncIn)
			var syncs []v1alpha1.ProfileSync
			for _, s := range tt.listedBy {
				syncs = append(syncs, *s)
			}
			err := r.checkAccess(obj, newApplyPlan(obj, []profile.Object{gitObject(tt.git)}, digestsOf(t, []profile.Object{gitObject(tt.git)}), liveOf(live...), claimsOf(syncs)))
			if tt.wantDenied == "" {
				g.Expect(err).NotTo(HaveOccurred())
				return
			}
			g.Expect(err).To(MatchError(ContainSubstring(tt.wantDenied)))
			var failed *syncError
			g.Expect(err).To(BeAssignableToTypeOf(failed))
			g.Expect(err.(*syncError).reason).To(Equal(v1alpha1.AccessDeniedReason))
			g.Expect(err.(*syncError).stalled).To(BeTrue())
		})
	}
}

func TestProfileSyncReconciler_prune(t *testing.T) {
	const ns = "profilesync-system"
	scheme := runtime.NewScheme()
	if err := v1alpha1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name      string
		inventory []v1alpha1.InventoryEntry
		git       []client.Object
		cluster   []client.Object
		// listedBy are other ProfileSyncs and what their inventories list.
		listedBy   []*v1alpha1.ProfileSync
		wantGone   []string
		wantKept   []string
		wantEvents int
	}{
		{
			name:       "what the revision no longer has is deleted",
			inventory:  []v1alpha1.InventoryEntry{{Kind: v1alpha1.CloudProfileKind, Name: "old"}, {Kind: v1alpha1.CloudProfileKind, Name: "aws"}},
			git:        []client.Object{stepCloudProfile("aws")},
			cluster:    []client.Object{owned(stepCloudProfile("old"), ns), owned(stepCloudProfile("aws"), ns)},
			wantGone:   []string{"old"},
			wantKept:   []string{"aws"},
			wantEvents: 1,
		},
		{
			name:      "an object another ProfileSync's inventory lists too is left alone",
			inventory: []v1alpha1.InventoryEntry{{Kind: v1alpha1.CloudProfileKind, Name: "old"}},
			cluster:   []client.Object{owned(stepCloudProfile("old"), ns)},
			listedBy:  []*v1alpha1.ProfileSync{listing(stepSync("other"), stepCloudProfile("old"))},
			wantKept:  []string{"old"},
		},
		{
			name:       "an object of the inventory relabelled for another ProfileSync is still pruned",
			inventory:  []v1alpha1.InventoryEntry{{Kind: v1alpha1.CloudProfileKind, Name: "old"}},
			cluster:    []client.Object{owned(stepCloudProfile("old"), "other")},
			wantGone:   []string{"old"},
			wantEvents: 1,
		},
		{
			name:     "an object whose labels name this ProfileSync is not pruned unless the inventory lists it",
			cluster:  []client.Object{owned(stepCloudProfile("old"), ns)},
			wantKept: []string{"old"},
		},
		{
			name:      "an object already gone is no error",
			inventory: []v1alpha1.InventoryEntry{{Kind: v1alpha1.CloudProfileKind, Name: "old"}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			c := fake.NewClientBuilder().WithScheme(scheme).WithObjects(tt.cluster...).Build()
			recorder := record.NewFakeRecorder(10)
			r := &ProfileSyncReconciler{Client: c, EventRecorder: recorder}
			obj := stepSync(ns)
			obj.Spec.Prune = true
			obj.Status.Inventory = &v1alpha1.ProfileSyncInventory{Entries: tt.inventory}
			var objects []profile.Object
			for _, o := range tt.git {
				objects = append(objects, gitObject(o))
			}
			var syncs []v1alpha1.ProfileSync
			for _, s := range tt.listedBy {
				syncs = append(syncs, *s)
			}
			g.Expect(r.prune(context.Background(), obj, newApplyPlan(obj, objects, digestsOf(t, objects), liveOf(), claimsOf(syncs)))).To(Succeed())
			for _, name := range tt.wantGone {
				g.Expect(c.Get(context.Background(), client.ObjectKey{Name: name}, &v1alpha1.CloudProfile{})).NotTo(Succeed(), name)
			}
			for _, name := range tt.wantKept {
				g.Expect(c.Get(context.Background(), client.ObjectKey{Name: name}, &v1alpha1.CloudProfile{})).To(Succeed(), name)
			}
			g.Expect(recorder.Events).To(HaveLen(tt.wantEvents))
		})
	}
}
