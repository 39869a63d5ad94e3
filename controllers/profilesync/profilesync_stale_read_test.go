package profilesync

import (
	"context"
	"testing"

	"github.com/fluxcd/pkg/runtime/conditions"
	. "github.com/onsi/gomega"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1alpha1 "github.com/profilesync/profilesync/api/v1alpha1"
	"github.com/profilesync/profilesync/test/testenv"
)

// cacheBehind is the manager's cache when it has not seen a ProfileSync's
// last status write yet: it answers a Get of that ProfileSync with the copy
// it holds, and everything else as the API server does.
type cacheBehind struct {
	client.Client
	stale *v1alpha1.ProfileSync
}

func (c cacheBehind) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	if sync, ok := obj.(*v1alpha1.ProfileSync); ok && key == client.ObjectKeyFromObject(c.stale) {
		c.stale.DeepCopyInto(sync)
		return nil
	}
	return c.Client.Get(ctx, key, obj, opts...)
}

// TestASyncStartsFromTheStatusTheAPIServerHolds: a sync that starts while
// the manager's cache still holds the ProfileSync as it was before the last
// sync's status write (a spec change queued it while that sync ran, and the
// informer had not caught up) and then refuses its revision keeps the
// revision and the inventory the last sync applied: it reads the
// ProfileSync from the API server, since its status write replaces the
// whole status. Read from the cache, the refusal wrote the status of
// before the last sync back, lastAppliedRevision empty and no inventory,
// as TestRolloutFileCountsOnlyFromASignedCommit saw under load.
func TestASyncStartsFromTheStatusTheAPIServerHolds(t *testing.T) {
	g := NewWithT(t)
	ensureNamespace(t, clusterProfilesNamespace)
	server := startGitServer(t)
	l := applyGoodRevision(t, server, "stale-read")
	testenv.SettledResourceVersion(g, k8sClient, l.sync.DeepCopy())
	stale := getProfileSync(g, l.sync)
	stale.Status = v1alpha1.ProfileSyncStatus{}
	broken, err := server.Commit(l.repo, map[string]string{"profiles.yaml": "kind: CloudProfile\nspec: [\n"}, "a revision that does not build")
	g.Expect(err).NotTo(HaveOccurred())

	r, _ := directSyncReconciler(t)
	r.Client, r.APIReader = cacheBehind{Client: k8sClient, stale: stale}, k8sClient
	_, err = r.Reconcile(context.Background(), ctrl.Request{NamespacedName: client.ObjectKeyFromObject(l.sync)})
	g.Expect(err).NotTo(HaveOccurred(), "a revision that does not build stalls the sync")

	got := getProfileSync(g, l.sync)
	g.Expect(got.Status.LastAttemptedRevision).To(Equal("main@sha1:"+broken), "the sync ran and refused the new revision")
	g.Expect(conditions.GetReason(got, v1alpha1.ReadyCondition)).To(Equal(v1alpha1.BuildFailedReason), conditions.GetMessage(got, v1alpha1.ReadyCondition))
	g.Expect(got.Status.LastAppliedRevision).To(Equal("main@sha1:"+l.good), "what the last sync applied still stands")
	g.Expect(got.Status.Inventory).NotTo(BeNil())
	g.Expect(got.Status.Inventory.Entries).To(ConsistOf(v1alpha1.InventoryEntry{Kind: v1alpha1.CloudProfileKind, Name: l.profile}))
}
