package profilesync

import (
	"context"
	"testing"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	v1alpha1 "github.com/profilesync/profilesync/api/v1alpha1"
)

// The sync patches its status while it runs (Reconciling, the claim of the
// inventory) and writes the whole status at the end, as an update at the
// resourceVersion it holds: each patch leaves the version it made in the
// ProfileSync, so that update is not refused as stale.
func TestAStatusPatchDuringASyncLeavesTheNewResourceVersionInTheProfileSync(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	scheme := runtime.NewScheme()
	g.Expect(v1alpha1.AddToScheme(scheme)).To(Succeed())
	stored := &v1alpha1.ProfileSync{ObjectMeta: metav1.ObjectMeta{Name: "landscape", Namespace: "landscape"}}
	c := fake.NewClientBuilder().WithScheme(scheme).WithObjects(stored).WithStatusSubresource(stored).Build()
	r := &ProfileSyncReconciler{Client: c}
	obj := &v1alpha1.ProfileSync{}
	g.Expect(c.Get(ctx, client.ObjectKeyFromObject(stored), obj)).To(Succeed())
	read := obj.ResourceVersion

	g.Expect(r.markReconciling(ctx, obj, "syncing revision %s", "main@sha1:1")).To(Succeed())
	g.Expect(c.Get(ctx, client.ObjectKeyFromObject(stored), stored)).To(Succeed())
	g.Expect(stored.ResourceVersion).NotTo(Equal(read))
	g.Expect(obj.ResourceVersion).To(Equal(stored.ResourceVersion), "after Reconciling")

	g.Expect(r.claimWrites(ctx, obj, []v1alpha1.InventoryEntry{{Kind: v1alpha1.CloudProfileKind, Name: "aws"}})).To(Succeed())
	g.Expect(c.Get(ctx, client.ObjectKeyFromObject(stored), stored)).To(Succeed())
	g.Expect(obj.ResourceVersion).To(Equal(stored.ResourceVersion), "after the claim")
}
