package controllers_test

import (
	"context"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	v1alpha1 "github.com/profilesync/profilesync/api/v1alpha1"
	"github.com/profilesync/profilesync/controllers"
	"github.com/profilesync/profilesync/controllers/profilestatus"
	"github.com/profilesync/profilesync/test/builders"
	"github.com/profilesync/profilesync/test/testenv"
)

// statusWrites sits in the manager's transport: it records the status
// writes of the profiles of one parent in the order they leave for the API
// server, and holds the parent's own status write (hold).
type statusWrites struct {
	mu sync.Mutex
	// parent is the CloudProfile whose family is recorded; empty records
	// nothing.
	parent string
	// children are the names of its NamespacedCloudProfiles.
	children map[string]bool
	order    []string
	at       []time.Time
	// hold is how long the parent's status write is held; release, when
	// closed, or a child's status write, ends the hold sooner.
	hold         time.Duration
	release      chan struct{}
	childWritten chan struct{}
}

// watch starts recording the status writes of parent and its children.
func (w *statusWrites) watch(parent string, children []string, hold time.Duration) (release func()) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.parent, w.order, w.at, w.hold = parent, nil, nil, hold
	w.children = map[string]bool{}
	for _, c := range children {
		w.children[c] = true
	}
	w.release, w.childWritten = make(chan struct{}), make(chan struct{})
	var once sync.Once
	return func() { once.Do(func() { close(w.release) }) }
}

// writtenAt is when each write of written left.
func (w *statusWrites) writtenAt() []time.Time {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]time.Time(nil), w.at...)
}

func (w *statusWrites) written() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]string(nil), w.order...)
}

// statusWriteOf names the profile whose status the request writes:
// ".../cloudprofiles/NAME/status" or ".../namespacedcloudprofiles/NAME/status".
func statusWriteOf(req *http.Request) (resource, name string) {
	if req.Method == http.MethodGet {
		return "", ""
	}
	parts := strings.Split(strings.TrimSuffix(req.URL.Path, "/"), "/")
	if len(parts) < 3 || parts[len(parts)-1] != "status" {
		return "", ""
	}
	return parts[len(parts)-3], parts[len(parts)-2]
}

func (w *statusWrites) wrap(next http.RoundTripper) http.RoundTripper {
	return roundTripFunc(func(req *http.Request) (*http.Response, error) {
		resource, name := statusWriteOf(req)
		w.mu.Lock()
		parent, isChild := w.parent, resource == "namespacedcloudprofiles" && w.children[name]
		isParent := parent != "" && resource == "cloudprofiles" && name == parent
		hold, release, childWritten := w.hold, w.release, w.childWritten
		w.mu.Unlock()
		switch {
		case isParent:
			timer := time.NewTimer(hold)
			select {
			case <-timer.C:
			case <-release:
			case <-childWritten:
			}
			timer.Stop()
			w.record("parent")
		case isChild:
			w.mu.Lock()
			select {
			case <-childWritten:
			default:
				close(childWritten)
			}
			w.mu.Unlock()
			w.record(name)
		}
		return next.RoundTrip(req)
	})
}

func (w *statusWrites) record(what string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.order = append(w.order, what)
	w.at = append(w.at, time.Now())
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(req *http.Request) (*http.Response, error) { return f(req) }

// parentWithChildren creates a CloudProfile and n NamespacedCloudProfiles
// of it, and waits until all of their statuses are current.
func parentWithChildren(t *testing.T, c client.Client, n int) (*v1alpha1.CloudProfile, []*v1alpha1.NamespacedCloudProfile) {
	t.Helper()
	g := NewWithT(t)
	ctx := context.Background()
	parent := &v1alpha1.CloudProfile{ObjectMeta: metav1.ObjectMeta{Name: testenv.UniqueName("parent")}, Spec: *builders.Profile()}
	g.Expect(c.Create(ctx, parent)).To(Succeed())
	children := make([]*v1alpha1.NamespacedCloudProfile, 0, n)
	for range n {
		child := &v1alpha1.NamespacedCloudProfile{
			ObjectMeta: metav1.ObjectMeta{Name: testenv.UniqueName("child"), Namespace: "default"},
			Spec:       *builders.Namespaced(),
		}
		child.Spec.Parent.Name = parent.Name
		g.Expect(c.Create(ctx, child)).To(Succeed())
		children = append(children, child)
	}
	g.Eventually(func(g Gomega) {
		cp := testenv.GetCloudProfile(g, c, parent.Name)
		g.Expect(cp.Status.ObservedGeneration).To(Equal(cp.Generation))
		for _, child := range children {
			g.Expect(testenv.GetNamespacedCloudProfile(g, c, child).Status.CloudProfileSpec).NotTo(BeNil())
		}
	}).WithTimeout(30 * time.Second).Should(Succeed())
	return parent, children
}

// addVersion adds Kubernetes version to the parent's spec.
func addVersion(t *testing.T, c client.Client, parent *v1alpha1.CloudProfile, version string) {
	testenv.UpdateSpec(t, c, parent.DeepCopy(), func(cp *v1alpha1.CloudProfile) {
		cp.Spec.Kubernetes.Versions = append(cp.Spec.Kubernetes.Versions, v1alpha1.ExpirableVersion{Version: version})
	})
}

func hasVersion(spec *v1alpha1.CloudProfileSpec, version string) bool {
	if spec == nil {
		return false
	}
	for _, v := range spec.Kubernetes.Versions {
		if v.Version == version {
			return true
		}
	}
	return false
}

func names(children []*v1alpha1.NamespacedCloudProfile) []string {
	out := make([]string, 0, len(children))
	for _, c := range children {
		out = append(out, c.Name)
	}
	return out
}

// TestSetupAllWritesAChangedCloudProfilesStatusBeforeItsChildren runs
// every controller as SetupAll wires them, on a control plane of its own
// (the suite's manager would write the same statuses), with a transport
// that records the order of the status writes.
func TestSetupAllWritesAChangedCloudProfilesStatusBeforeItsChildren(t *testing.T) {
	writes := &statusWrites{}
	env := testenv.StartForTest(t, testenv.WithErrorLog(), testenv.WithManager(testenv.ManagerOptions{
		RESTConfig: func(cfg *rest.Config) { cfg.Wrap(writes.wrap) },
		Setup: func(ctx context.Context, mgr manager.Manager, env *testenv.Env) error {
			cacheDir, err := env.TempDir("profilesync-cache-")
			if err != nil {
				return err
			}
			return controllers.SetupAll(ctx, mgr, controllers.Config{
				// Fewer workers than children, as in production (4 for 10).
				Options:     controllers.Options{MaxConcurrentReconciles: 2},
				Clock:       clock.RealClock{},
				StoragePath: cacheDir,
			})
		},
	}))
	c := env.Client

	t.Run("the parent's status write leaves before any child's", func(t *testing.T) {
		g := NewWithT(t)
		parent, children := parentWithChildren(t, c, 4)
		// The parent's write is held until a child's goes, or 400 ms: a
		// child that does not wait for its parent writes first. The hold
		// stays well under the children's bound (2 s), so that children
		// that wait are still waiting when it ends.
		release := writes.watch(parent.Name, names(children), 400*time.Millisecond)
		defer release()
		addVersion(t, c, parent, "1.29.0")

		g.Eventually(func(g Gomega) {
			for _, child := range children {
				g.Expect(hasVersion(testenv.GetNamespacedCloudProfile(g, c, child).Status.CloudProfileSpec, "1.29.0")).To(BeTrue())
			}
		}).WithTimeout(30 * time.Second).Should(Succeed())
		g.Eventually(writes.written).WithTimeout(10*time.Second).Should(HaveLen(1+len(children)), "one status write each")
		g.Expect(writes.written()[0]).To(Equal("parent"), "the order of the status writes: %v", writes.written())
		// The parent's reconcile told the children (one ParentStatuses
		// for both controllers): they went on after its write, long
		// before their bound would have let them.
		at := writes.writtenAt()
		t.Logf("status writes %v; the first child's %v after the parent's", writes.written(), at[1].Sub(at[0]))
		g.Expect(at[1].Sub(at[0])).To(BeNumerically("<", profilestatus.DefaultParentStatusWait*3/5))
	})

	t.Run("a child of a parent whose status write hangs gets its status within the write's bound", func(t *testing.T) {
		g := NewWithT(t)
		parent, children := parentWithChildren(t, c, 2)
		// Held until the subtest ends: the parent's status reconcile does
		// not finish meanwhile.
		release := writes.watch(parent.Name, nil, time.Hour)
		defer release()
		start := time.Now()
		addVersion(t, c, parent, "1.29.0")

		g.Eventually(func(g Gomega) {
			for _, child := range children {
				g.Expect(hasVersion(testenv.GetNamespacedCloudProfile(g, c, child).Status.CloudProfileSpec, "1.29.0")).To(BeTrue())
			}
		}).WithTimeout(profilestatus.DefaultParentStatusWriteWait + 10*time.Second).Should(Succeed())
		// They waited for their parent first: its reconcile was under way,
		// so past DefaultParentStatusWait, as far as the write's bound.
		g.Expect(time.Since(start)).To(BeNumerically(">=", profilestatus.DefaultParentStatusWriteWait*3/4))
		cp := testenv.GetCloudProfile(g, c, parent.Name)
		g.Expect(cp.Status.ObservedGeneration).To(BeNumerically("<", cp.Generation), "the parent's status write is still held")

		release()
		g.Eventually(func(g Gomega) {
			cp := testenv.GetCloudProfile(g, c, parent.Name)
			g.Expect(cp.Status.ObservedGeneration).To(Equal(cp.Generation))
		}).WithTimeout(10 * time.Second).Should(Succeed())
	})
}
