package profilesync

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	v1alpha1 "github.com/profilesync/profilesync/api/v1alpha1"
	"github.com/profilesync/profilesync/internal/policy"
	"github.com/profilesync/profilesync/test/builders"
	"github.com/profilesync/profilesync/test/testenv"
)

// TestACheckedVerdictStandsUntilWhatItReadChanges: a verdict holds for the
// attempt it was made for, from its time up to the first instant the
// checks named, while every answer the cluster gave is the same; anything
// else runs the checks again.
func TestACheckedVerdictStandsUntilWhatItReadChanges(t *testing.T) {
	at := builders.Time("2026-03-01T00:00:00Z")
	until := at.Add(time.Hour)
	attempt := refusalAttempt{revision: "main@sha1:1", generation: 2}
	sync := &v1alpha1.ProfileSync{ObjectMeta: metav1.ObjectMeta{Namespace: "garden", Name: "landscape"}, Spec: v1alpha1.ProfileSyncSpec{Prune: true}}
	parent := func(resourceVersion string) *v1alpha1.CloudProfile {
		cp := &v1alpha1.CloudProfile{}
		cp.Name, cp.ResourceVersion = "aws", resourceVersion
		return cp
	}
	child := &v1alpha1.NamespacedCloudProfile{}
	child.Namespace, child.Name, child.ResourceVersion = "team-a", "payments", "7"
	liveWith := func(cps ...*v1alpha1.CloudProfile) *liveProfiles {
		live := &liveProfiles{cloudProfiles: map[string]*v1alpha1.CloudProfile{},
			namespaced: map[client.ObjectKey]*v1alpha1.NamespacedCloudProfile{client.ObjectKeyFromObject(child): child}}
		for _, cp := range cps {
			live.cloudProfiles[cp.Name] = cp
		}
		return live
	}
	// The verdict read the parent aws at resourceVersion 5, the live
	// counterpart of the namespaced profile at 7, and that the
	// CloudProfile gcp was not there yet.
	verdict := func() *checkedRevision {
		reads := &liveReads{obj: sync, live: liveWith(parent("5")), answers: map[liveQuestion]string{}}
		reads.parent("aws")
		reads.namespaced(client.ObjectKeyFromObject(child))
		reads.cloudProfile("gcp")
		return &checkedRevision{attempt: attempt, at: at, until: until, answers: reads.answers}
	}
	owned := sync.DeepCopy()
	owned.Status.Inventory = &v1alpha1.ProfileSyncInventory{Entries: []v1alpha1.InventoryEntry{{Kind: v1alpha1.CloudProfileKind, Name: "aws"}}}
	gcp := parent("1")
	gcp.Name = "gcp"
	for _, tt := range []struct {
		name    string
		attempt refusalAttempt
		obj     *v1alpha1.ProfileSync
		live    *liveProfiles
		now     time.Time
		stands  bool
	}{
		{"the same attempt, cluster and time: it stands", attempt, sync, liveWith(parent("5")), at, true},
		{"an instant before the first named one: it stands", attempt, sync, liveWith(parent("5")), until.Add(-time.Nanosecond), true},
		{"the first named instant: checked again", attempt, sync, liveWith(parent("5")), until, false},
		{"a clock gone back behind the check: checked again", attempt, sync, liveWith(parent("5")), at.Add(-time.Second), false},
		{"another revision: checked again", refusalAttempt{revision: "main@sha1:2", generation: 2}, sync, liveWith(parent("5")), at, false},
		{"another spec: checked again", refusalAttempt{revision: attempt.revision, generation: 3}, sync, liveWith(parent("5")), at, false},
		{"a reconcile request: checked again", refusalAttempt{revision: attempt.revision, generation: 2, requested: "now"}, sync, liveWith(parent("5")), at, false},
		{"a parent that changed: checked again", attempt, sync, liveWith(parent("6")), at, false},
		{"a parent that is gone: checked again", attempt, sync, liveWith(), at, false},
		{"a parent this sync now owns and prunes: checked again", attempt, owned, liveWith(parent("5")), at, false},
		{"a profile the policy compared with that appeared: checked again", attempt, sync, liveWith(parent("5"), gcp), at, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			NewWithT(t).Expect(verdict().standsFor(tt.attempt, tt.obj, tt.live, tt.now)).To(Equal(tt.stands))
		})
	}
	t.Run("a verdict without a named instant stands at any later time", func(t *testing.T) {
		v := verdict()
		v.until = time.Time{}
		NewWithT(t).Expect(v.standsFor(attempt, sync, liveWith(parent("5")), at.Add(100*365*24*time.Hour))).To(BeTrue())
	})
}

// writeCounting is the suite's API server through a client that counts
// every request that is not a read (create, update, patch, delete, status
// writes included).
func writeCounting(t *testing.T) (client.Client, *atomic.Int64) {
	t.Helper()
	base, err := client.NewWithWatch(restConfig, client.Options{Scheme: testScheme})
	if err != nil {
		t.Fatal(err)
	}
	writes := &atomic.Int64{}
	count := func() { writes.Add(1) }
	return interceptor.NewClient(base, interceptor.Funcs{
		Create: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
			count()
			return c.Create(ctx, obj, opts...)
		},
		Update: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.UpdateOption) error {
			count()
			return c.Update(ctx, obj, opts...)
		},
		Patch: func(ctx context.Context, c client.WithWatch, obj client.Object, patch client.Patch, opts ...client.PatchOption) error {
			count()
			return c.Patch(ctx, obj, patch, opts...)
		},
		Apply: func(ctx context.Context, c client.WithWatch, obj runtime.ApplyConfiguration, opts ...client.ApplyOption) error {
			count()
			return c.Apply(ctx, obj, opts...)
		},
		SubResourceApply: func(ctx context.Context, c client.Client, sub string, obj runtime.ApplyConfiguration, opts ...client.SubResourceApplyOption) error {
			count()
			return c.SubResource(sub).Apply(ctx, obj, opts...)
		},
		Delete: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.DeleteOption) error {
			count()
			return c.Delete(ctx, obj, opts...)
		},
		SubResourceUpdate: func(ctx context.Context, c client.Client, sub string, obj client.Object, opts ...client.SubResourceUpdateOption) error {
			count()
			return c.SubResource(sub).Update(ctx, obj, opts...)
		},
		SubResourcePatch: func(ctx context.Context, c client.Client, sub string, obj client.Object, patch client.Patch, opts ...client.SubResourcePatchOption) error {
			count()
			return c.SubResource(sub).Patch(ctx, obj, patch, opts...)
		},
	}), writes
}

// TestAnIdleIntervalChecksNothingAndWritesNothing: a landscape's
// NamespacedCloudProfile whose parent CloudProfile is on the cluster, not in
// Git, and whose parent schedules a stage start. Syncs of the unchanged
// revision run the checks once: the intervals after it check nothing and
// write nothing (no status, no event), up to the instant before that stage
// start. At the stage start, which the checks named, and after a change of
// the parent on the cluster, they run again.
func TestAnIdleIntervalChecksNothingAndWritesNothing(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	start := builders.Time("2026-06-01T00:00:00Z")
	stageStart := start.Add(time.Hour)
	testClock.Set(t, start)
	namespace := testenv.UniqueName("team-idle")
	ensureNamespace(t, namespace)
	ensureNamespace(t, clusterProfilesNamespace)

	parent := &v1alpha1.CloudProfile{
		ObjectMeta: metav1.ObjectMeta{Name: testenv.UniqueName("idle-parent")},
		Spec: builders.WithRequiredLists(v1alpha1.CloudProfileSpec{Type: "local", Kubernetes: v1alpha1.KubernetesSettings{Versions: []v1alpha1.ExpirableVersion{
			{Version: "1.31.0"},
			{Version: "1.32.0", Lifecycle: []v1alpha1.LifecycleStage{
				{Classification: v1alpha1.ClassificationPreview},
				{Classification: v1alpha1.ClassificationSupported, StartTime: &metav1.Time{Time: stageStart}},
			}},
		}}}),
	}
	g.Expect(k8sClient.Create(ctx, parent)).To(Succeed())
	t.Cleanup(func() { _ = k8sClient.Delete(ctx, parent) })
	// The parent's status is written once; every write is a new
	// resourceVersion, which the checks would take for a changed parent.
	g.Eventually(func(g Gomega) {
		got := testenv.GetCloudProfile(g, k8sClient, parent.Name)
		g.Expect(got.Status.ObservedGeneration).To(Equal(got.Generation))
	}).WithTimeout(10 * time.Second).Should(Succeed())

	server := startGitServer(t)
	repo := testenv.UniqueName("idle")
	commit, err := server.CreateRepo(repo, map[string]string{"profiles.yaml": fmt.Sprintf(`apiVersion: core.profilesync.io/v1alpha1
kind: NamespacedCloudProfile
metadata:
  name: payments
  namespace: %s
spec:
  parent:
    kind: CloudProfile
    name: %s
`, namespace, parent.Name)})
	g.Expect(err).NotTo(HaveOccurred())
	sync := createLandscapeSync(t, repo, server.RepoURL(repo), "")
	waitApplied(t, sync, commit)

	r, events := directSyncReconciler(t)
	counting, writes := writeCounting(t)
	r.Client = counting
	req := ctrl.Request{NamespacedName: types.NamespacedName{Namespace: sync.Namespace, Name: sync.Name}}
	reconcile := func() {
		t.Helper()
		_, err := r.Reconcile(ctx, req)
		g.Expect(err).NotTo(HaveOccurred())
	}

	reconcile()
	g.Expect(r.checksRun.Load()).To(Equal(int64(1)), "the first sync of this process checks the revision")
	testenv.DrainEvents(events)
	writes.Store(0)

	for _, now := range []time.Time{start, start.Add(10 * time.Minute), stageStart.Add(-time.Second)} {
		testClock.Set(t, now)
		reconcile()
		g.Expect(r.checksRun.Load()).To(Equal(int64(1)), "an idle interval at %s checks nothing", now)
	}
	g.Expect(writes.Load()).To(BeZero(), "idle intervals write nothing, no status either")
	g.Expect(testenv.DrainEvents(events)).To(BeEmpty(), "and report nothing")

	testClock.Set(t, stageStart)
	reconcile()
	g.Expect(r.checksRun.Load()).To(Equal(int64(2)), "the parent's stage start, which the checks named, checks again")
	reconcile()
	g.Expect(r.checksRun.Load()).To(Equal(int64(2)), "then the verdict stands again")

	patch := []byte(`{"metadata":{"labels":{"team":"platform"}}}`)
	g.Expect(k8sClient.Patch(ctx, parent, client.RawPatch(types.MergePatchType, patch))).To(Succeed())
	reconcile()
	g.Expect(r.checksRun.Load()).To(Equal(int64(3)), "a change of the live parent checks again")
	g.Expect(writes.Load()).To(BeZero(), "checked again, the revision still needs no write")
}

// TestAnIdleIntervalOfAPolicedRevisionChecksNothing: with a versioning
// policy, whose notice rule compares the revision with the profiles on the
// cluster, idle syncs of the applied revision check nothing and report
// nothing once those profiles have settled; a hand edit of the profile
// (which the sync then puts back) checks again.
func TestAnIdleIntervalOfAPolicedRevisionChecksNothing(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ensureNamespace(t, clusterProfilesNamespace)
	server := startGitServer(t)
	name, repo := testenv.UniqueName("policed-idle"), testenv.UniqueName("policed-idle")
	commit, err := server.CreateRepo(repo, map[string]string{
		policy.FileName: policyTestPolicy,
		"profiles.yaml": policyTestProfile(name, "2099-01-01T00:00:00Z", "2099-06-01T00:00:00Z"),
	})
	g.Expect(err).NotTo(HaveOccurred())
	sync := createLandscapeSync(t, repo, server.RepoURL(repo), "", name)
	waitApplied(t, sync, commit)
	g.Eventually(func(g Gomega) {
		got := testenv.GetCloudProfile(g, k8sClient, name)
		g.Expect(got.Status.ObservedGeneration).To(Equal(got.Generation))
	}).WithTimeout(10 * time.Second).Should(Succeed())

	r, events := directSyncReconciler(t)
	req := ctrl.Request{NamespacedName: types.NamespacedName{Namespace: sync.Namespace, Name: sync.Name}}
	reconcile := func() {
		t.Helper()
		_, err := r.Reconcile(ctx, req)
		g.Expect(err).NotTo(HaveOccurred())
	}
	reconcile()
	g.Expect(r.checksRun.Load()).To(Equal(int64(1)))
	testenv.DrainEvents(events)
	reconcile()
	reconcile()
	g.Expect(r.checksRun.Load()).To(Equal(int64(1)), "idle syncs of a policed revision check nothing")
	g.Expect(testenv.DrainEvents(events)).To(BeEmpty(), "and report nothing")

	cp := testenv.GetCloudProfile(g, k8sClient, name)
	patch := []byte(`{"metadata":{"labels":{"edited":"by-hand"}}}`)
	g.Expect(k8sClient.Patch(ctx, cp, client.RawPatch(types.MergePatchType, patch))).To(Succeed())
	reconcile()
	g.Expect(r.checksRun.Load()).To(Equal(int64(2)), "the profile the notice rule compares with changed: checked again")
}
