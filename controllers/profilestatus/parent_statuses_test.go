package profilestatus

import (
	"context"
	"testing"
	"time"

	"github.com/fluxcd/pkg/runtime/conditions"
	. "github.com/onsi/gomega"
	"k8s.io/client-go/tools/record"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	v1alpha1 "github.com/profilesync/profilesync/api/v1alpha1"
	"github.com/profilesync/profilesync/test/builders"
)

// awaitInBackground runs ParentStatuses.await in a goroutine and returns a
// channel that receives whether it waited.
func awaitInBackground(ctx context.Context, p *ParentStatuses, name string, generation int64) <-chan bool {
	waited := make(chan bool, 1)
	go func() { waited <- p.await(ctx, name, generation) }()
	return waited
}

func TestAParentStatusAwaitEndsAtOnceWhenThereIsNothingToWaitFor(t *testing.T) {
	for _, tc := range []struct {
		name    string
		parents *ParentStatuses
		settle  func(*ParentStatuses)
	}{
		{name: "a nil registry waits for nothing", parents: nil},
		{name: "the generation has finished", parents: &ParentStatuses{Wait: time.Minute},
			settle: func(p *ParentStatuses) { p.finished("parent", 3) }},
		{name: "a later generation has finished", parents: &ParentStatuses{Wait: time.Minute},
			settle: func(p *ParentStatuses) { p.finished("parent", 4) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			if tc.settle != nil {
				tc.settle(tc.parents)
			}
			g.Eventually(awaitInBackground(context.Background(), tc.parents, "parent", 3), time.Second).Should(Receive(BeFalse()))
		})
	}
}

func TestAParentStatusAwaitEndsWhenTheParentsReconcileFinishesOrIsGone(t *testing.T) {
	for _, tc := range []struct {
		name string
		end  func(*ParentStatuses)
	}{
		{name: "its generation finishes", end: func(p *ParentStatuses) { p.finished("parent", 3) }},
		{name: "a later generation finishes", end: func(p *ParentStatuses) { p.finished("parent", 5) }},
		{name: "the parent is gone", end: func(p *ParentStatuses) { p.forget("parent") }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			parents := &ParentStatuses{Wait: time.Minute}
			parents.finished("parent", 2)
			waited := awaitInBackground(context.Background(), parents, "parent", 3)
			// Neither an earlier generation nor another parent ends it.
			parents.finished("parent", 2)
			parents.finished("other", 3)
			g.Consistently(waited, 200*time.Millisecond).ShouldNot(Receive())
			tc.end(parents)
			g.Eventually(waited, time.Second).Should(Receive(BeTrue()))
		})
	}
}

func TestAParentStatusAwaitGivesUpAtTheBoundOncePerGeneration(t *testing.T) {
	g := NewWithT(t)
	parents := &ParentStatuses{Wait: 300 * time.Millisecond}
	start := time.Now()
	first, second := awaitInBackground(context.Background(), parents, "parent", 3), awaitInBackground(context.Background(), parents, "parent", 3)
	g.Eventually(first, 5*time.Second).Should(Receive(BeTrue()))
	g.Eventually(second, 5*time.Second).Should(Receive(BeTrue()))
	g.Expect(time.Since(start)).To(BeNumerically(">=", 300*time.Millisecond))

	// The generation given up on is not waited for again; the next one is.
	g.Eventually(awaitInBackground(context.Background(), parents, "parent", 3), time.Second).Should(Receive(BeFalse()))
	next := awaitInBackground(context.Background(), parents, "parent", 4)
	g.Consistently(next, 150*time.Millisecond).ShouldNot(Receive())
	g.Eventually(next, 5*time.Second).Should(Receive(BeTrue()))
}

func TestAParentStatusAwaitWaitsPastTheBoundForAParentsReconcileUnderWay(t *testing.T) {
	for _, tc := range []struct {
		name string
		// running is the generation of the parent's reconcile under way.
		running int64
		end     func(*ParentStatuses)
	}{
		{name: "its generation under way finishes", running: 3, end: func(p *ParentStatuses) { p.finished("parent", 3) }},
		{name: "a later generation under way finishes", running: 4, end: func(p *ParentStatuses) { p.finished("parent", 4) }},
		{name: "the parent under way is gone", running: 3, end: func(p *ParentStatuses) { p.forget("parent") }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			parents := &ParentStatuses{Wait: 100 * time.Millisecond, WriteWait: time.Minute}
			parents.started("parent", tc.running)
			waited := awaitInBackground(context.Background(), parents, "parent", 3)
			g.Consistently(waited, 500*time.Millisecond).ShouldNot(Receive(), "the parent's write is in flight: past Wait, the child still waits")
			tc.end(parents)
			g.Eventually(waited, time.Second).Should(Receive(BeTrue()))
		})
	}
}

func TestAParentStatusAwaitGivesUpAtWaitWhenNoReconcileOfItsGenerationIsUnderWay(t *testing.T) {
	for _, tc := range []struct {
		name  string
		setUp func(*ParentStatuses)
	}{
		{name: "none has started", setUp: func(*ParentStatuses) {}},
		{name: "an earlier generation's is under way", setUp: func(p *ParentStatuses) { p.started("parent", 2) }},
		{name: "an earlier generation's has started and finished", setUp: func(p *ParentStatuses) {
			p.started("parent", 2)
			p.finished("parent", 2)
		}},
		{name: "another parent's is under way", setUp: func(p *ParentStatuses) { p.started("other", 3) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			parents := &ParentStatuses{Wait: 100 * time.Millisecond, WriteWait: time.Minute}
			tc.setUp(parents)
			g.Eventually(awaitInBackground(context.Background(), parents, "parent", 3), 5*time.Second).Should(Receive(BeTrue()))
		})
	}
}

func TestAParentReconcileUnderWayHoldsItsChildrenAtMostWriteWaitOncePerGeneration(t *testing.T) {
	g := NewWithT(t)
	parents := &ParentStatuses{Wait: 100 * time.Millisecond, WriteWait: 500 * time.Millisecond}
	parents.started("parent", 3)
	start := time.Now()
	g.Eventually(awaitInBackground(context.Background(), parents, "parent", 3), 5*time.Second).Should(Receive(BeTrue()))
	g.Expect(time.Since(start)).To(BeNumerically(">=", 500*time.Millisecond))
	// The generation given up on is not waited for again.
	g.Eventually(awaitInBackground(context.Background(), parents, "parent", 3), 50*time.Millisecond).Should(Receive(BeFalse()))
}

func TestAParentStatusAwaitEndsWithItsContext(t *testing.T) {
	g := NewWithT(t)
	ctx, cancel := context.WithCancel(context.Background())
	waited := awaitInBackground(ctx, &ParentStatuses{Wait: time.Minute}, "parent", 1)
	g.Consistently(waited, 100*time.Millisecond).ShouldNot(Receive())
	cancel()
	g.Eventually(waited, time.Second).Should(Receive(BeTrue()))
}

// parentAndChild is a fake cluster holding a CloudProfile whose spec
// changed (generation 2) and whose status is still of generation 1, and a
// NamespacedCloudProfile of it, with both reconcilers sharing parents.
type parentAndChild struct {
	client  client.Client
	parent  *v1alpha1.CloudProfile
	child   *v1alpha1.NamespacedCloudProfile
	parents *CloudProfileReconciler
	childs  *NamespacedCloudProfileReconciler
}

func newParentAndChild(parent *v1alpha1.CloudProfile, statuses *ParentStatuses, intercepted ...interceptor.Funcs) *parentAndChild {
	parent.Generation = 2
	parent.Status.ObservedGeneration = 1
	child := gep32Override(parent.Name)
	child.Generation = 1
	builder := fake.NewClientBuilder().WithScheme(k8sClient.Scheme()).WithObjects(parent, child).
		WithStatusSubresource(parent, child)
	for _, funcs := range intercepted {
		builder = builder.WithInterceptorFuncs(funcs)
	}
	c := builder.Build()
	controller := func() ProfileStatusController {
		return ProfileStatusController{Client: c, EventRecorder: record.NewFakeRecorder(100), Clock: testClock, ParentStatuses: statuses}
	}
	return &parentAndChild{
		client: c, parent: parent, child: child,
		parents: &CloudProfileReconciler{controller()},
		childs:  &NamespacedCloudProfileReconciler{controller()},
	}
}

// reconcileChild reconciles the child in a goroutine; the channel closes
// when it returns.
func (e *parentAndChild) reconcileChild(t *testing.T) <-chan struct{} {
	done := make(chan struct{})
	go func() {
		defer close(done)
		if _, err := e.childs.Reconcile(context.Background(), ctrl.Request{NamespacedName: client.ObjectKeyFromObject(e.child)}); err != nil {
			t.Errorf("reconcile child: %v", err)
		}
	}()
	return done
}

func (e *parentAndChild) observedGenerations(g Gomega) (parent, child int64) {
	var cp v1alpha1.CloudProfile
	g.Expect(e.client.Get(context.Background(), client.ObjectKeyFromObject(e.parent), &cp)).To(Succeed())
	var ncp v1alpha1.NamespacedCloudProfile
	g.Expect(e.client.Get(context.Background(), client.ObjectKeyFromObject(e.child), &ncp)).To(Succeed())
	return cp.Status.ObservedGeneration, ncp.Status.ObservedGeneration
}

func TestAChildsStatusIsWrittenAfterItsChangedParentsStatus(t *testing.T) {
	for _, tc := range []struct {
		name   string
		parent func() *v1alpha1.CloudProfile
		// wantErr is whether the parent's reconcile returns an error.
		wantErr bool
	}{
		{name: "a valid parent's status is written first", parent: gep32Profile},
		{name: "an invalid parent's status reconcile, stalled, ends the wait too", wantErr: true,
			parent: func() *v1alpha1.CloudProfile {
				cp := gep32Profile()
				// The highest Kubernetes version may not expire.
				cp.Spec.Kubernetes.Versions = []v1alpha1.ExpirableVersion{
					{Version: "1.30.0"}, {Version: "1.31.0", ExpirationDate: builders.Date("2025-01-01T00:00:00Z")},
				}
				return cp
			}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			testClock.Set(t, builders.Time("2024-12-03T00:00:00Z"))
			e := newParentAndChild(tc.parent(), &ParentStatuses{Wait: time.Minute})

			childDone := e.reconcileChild(t)
			g.Consistently(childDone, 300*time.Millisecond).ShouldNot(BeClosed(), "the child waits for its parent's status")
			parentGeneration, childGeneration := e.observedGenerations(g)
			g.Expect([]int64{parentGeneration, childGeneration}).To(Equal([]int64{1, 0}), "nothing written yet")

			_, err := e.parents.Reconcile(context.Background(), ctrl.Request{NamespacedName: client.ObjectKeyFromObject(e.parent)})
			g.Expect(err != nil).To(Equal(tc.wantErr), "parent reconcile error: %v", err)
			g.Eventually(childDone, 5*time.Second).Should(BeClosed())
			parentGeneration, childGeneration = e.observedGenerations(g)
			g.Expect([]int64{parentGeneration, childGeneration}).To(Equal([]int64{2, 1}))
		})
	}
}

func TestAChildWaitsPastTheBoundWhileItsParentsStatusWriteIsInFlight(t *testing.T) {
	g := NewWithT(t)
	testClock.Set(t, builders.Time("2024-12-03T00:00:00Z"))
	// The parent's status write is held in flight until release closes, as a
	// loaded API server holds a CloudProfile's write of 600 versions for
	// seconds.
	writing, release := make(chan struct{}), make(chan struct{})
	holdParentsWrite := interceptor.Funcs{SubResourcePatch: func(ctx context.Context, c client.Client, subResource string, obj client.Object, patch client.Patch, opts ...client.SubResourcePatchOption) error {
		if obj.GetObjectKind().GroupVersionKind().Kind == v1alpha1.CloudProfileKind {
			close(writing)
			<-release
		}
		return c.SubResource(subResource).Patch(ctx, obj, patch, opts...)
	}}
	const bound = 200 * time.Millisecond
	e := newParentAndChild(gep32Profile(), &ParentStatuses{Wait: bound, WriteWait: time.Minute}, holdParentsWrite)

	parentDone := make(chan struct{})
	go func() {
		defer close(parentDone)
		if _, err := e.parents.Reconcile(context.Background(), ctrl.Request{NamespacedName: client.ObjectKeyFromObject(e.parent)}); err != nil {
			t.Errorf("reconcile parent: %v", err)
		}
	}()
	g.Eventually(writing, 5*time.Second).Should(BeClosed())
	childDone := e.reconcileChild(t)
	g.Consistently(childDone, 4*bound).ShouldNot(BeClosed(), "past the bound, the child waits for its parent's write in flight")
	parentGeneration, childGeneration := e.observedGenerations(g)
	g.Expect([]int64{parentGeneration, childGeneration}).To(Equal([]int64{1, 0}), "nothing written yet")

	close(release)
	g.Eventually(parentDone, 5*time.Second).Should(BeClosed())
	g.Eventually(childDone, 5*time.Second).Should(BeClosed())
	parentGeneration, childGeneration = e.observedGenerations(g)
	g.Expect([]int64{parentGeneration, childGeneration}).To(Equal([]int64{2, 1}))
}

func TestAChildOfAParentWhoseStatusNeverCatchesUpGetsItsStatusWithinTheBound(t *testing.T) {
	g := NewWithT(t)
	testClock.Set(t, builders.Time("2024-12-03T00:00:00Z"))
	const bound = time.Second
	e := newParentAndChild(gep32Profile(), &ParentStatuses{Wait: bound})

	start := time.Now()
	g.Eventually(e.reconcileChild(t), 10*time.Second).Should(BeClosed())
	g.Expect(time.Since(start)).To(BeNumerically(">=", bound))
	parentGeneration, childGeneration := e.observedGenerations(g)
	g.Expect([]int64{parentGeneration, childGeneration}).To(Equal([]int64{1, 1}), "the child's status is written, the parent's still behind")

	// The next reconcile of the child, at the same parent generation, does
	// not wait again.
	start = time.Now()
	g.Eventually(e.reconcileChild(t), 10*time.Second).Should(BeClosed())
	g.Expect(time.Since(start)).To(BeNumerically("<", bound))
}

func TestAChildDoesNotWaitWhenItsParentsStatusIsCurrentOrItsParentIsMissing(t *testing.T) {
	for _, tc := range []struct {
		name  string
		setUp func(g Gomega, e *parentAndChild)
		// wantReason is the child's Ready reason.
		wantReason string
	}{
		{name: "a parent whose status is of its generation", wantReason: v1alpha1.SucceededReason, setUp: func(g Gomega, e *parentAndChild) {
			var cp v1alpha1.CloudProfile
			g.Expect(e.client.Get(context.Background(), client.ObjectKeyFromObject(e.parent), &cp)).To(Succeed())
			cp.Status.ObservedGeneration = cp.Generation
			g.Expect(e.client.Status().Update(context.Background(), &cp)).To(Succeed())
		}},
		{name: "a parent that does not exist", wantReason: v1alpha1.ParentNotFoundReason, setUp: func(g Gomega, e *parentAndChild) {
			g.Expect(e.client.Delete(context.Background(), e.parent)).To(Succeed())
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			testClock.Set(t, builders.Time("2024-12-03T00:00:00Z"))
			e := newParentAndChild(gep32Profile(), &ParentStatuses{Wait: time.Minute})
			tc.setUp(g, e)
			g.Eventually(e.reconcileChild(t), 10*time.Second).Should(BeClosed())
			var ncp v1alpha1.NamespacedCloudProfile
			g.Expect(e.client.Get(context.Background(), client.ObjectKeyFromObject(e.child), &ncp)).To(Succeed())
			g.Expect(conditions.GetReason(&ncp, v1alpha1.ReadyCondition)).To(Equal(tc.wantReason))
		})
	}
}
