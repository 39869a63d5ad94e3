package controllers

import (
	"context"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/retry"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1alpha1 "github.com/profilesync/profilesync/api/v1alpha1"
	"github.com/profilesync/profilesync/test/testenv"
)

// The suite runs one envtest control plane and one manager with every
// reconciler, as in production, on testClock. Tests that need to drive a
// reconcile at an exact instant also call the reconcilers directly, with the
// same clock, so both always agree on "now".
var (
	restConfig *rest.Config
	k8sClient  client.Client // uncached: reads what the API server has now
	testClock  = &switchableClock{}
	testScheme *runtime.Scheme
	// testMetrics is where the suite manager's controllers register their
	// metrics (metrics.go); the tests read it.
	testMetrics = prometheus.NewRegistry()
	// suiteRegistry registers the suite manager's metrics in testMetrics
	// and remembers what SetupAll registered (observability_test.go).
	suiteRegistry = &recordingRegisterer{Registerer: testMetrics}
	// managerClient is the suite manager's client: it reads the manager's
	// cache and its indexes, as the reconcilers do.
	managerClient client.Client
)

// switchableClock is real time unless a test fixes it to an instant.
type switchableClock struct {
	mu    sync.Mutex
	fixed *time.Time
}

func (c *switchableClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.fixed != nil {
		return *c.fixed
	}
	return time.Now()
}

func (c *switchableClock) Since(t time.Time) time.Duration { return c.Now().Sub(t) }

// Set fixes the clock at t until the test ends, then makes it real again.
func (c *switchableClock) Set(tb testing.TB, t time.Time) {
	c.mu.Lock()
	c.fixed = &t
	c.mu.Unlock()
	tb.Cleanup(func() {
		c.mu.Lock()
		c.fixed = nil
		c.mu.Unlock()
	})
}

func TestMain(m *testing.M) {
	os.Exit(testenv.Run(m, func(env *testenv.Env) {
		restConfig, k8sClient, testScheme = env.Config, env.Client, env.Scheme
	}, testenv.WithErrorLog(), testenv.WithManager(testenv.ManagerOptions{Setup: setupTestReconcilers})))
}

// clusterProfilesNamespace is where the tests' landscape ProfileSyncs live.
const clusterProfilesNamespace = "profilesync-system"

// receiverURL is the base URL of the suite manager's push receiver.
var receiverURL string

func setupTestReconcilers(ctx context.Context, mgr ctrl.Manager, env *testenv.Env) error {
	cacheDir, err := env.TempDir("profilesync-cache-")
	if err != nil {
		return fmt.Errorf("create Git cache: %w", err)
	}
	receiverAddr, err := testenv.FreeLoopbackAddress()
	if err != nil {
		return err
	}
	receiverURL = "http://" + receiverAddr
	managerClient = mgr.GetClient()
	return SetupAll(ctx, mgr, Config{
		Options:                  Options{MaxConcurrentReconciles: 4},
		Clock:                    testClock,
		StoragePath:              cacheDir,
		ClusterProfilesNamespace: clusterProfilesNamespace,
		// The test Git servers are plain http on loopback.
		AllowCredentialsOverHTTP: true,
		ReceiverAddr:             receiverAddr,
		MaxCheckoutSize:          suiteMaxCheckoutSize,
		MetricsRegistry:          suiteRegistry,
	})
}

// directCloudProfileReconciler is a reconciler a test calls itself, with an
// uncached client (so it sees its own writes at once) and a fake event recorder
// to read the events it emits.
func directCloudProfileReconciler() (*CloudProfileReconciler, *record.FakeRecorder) {
	recorder := record.NewFakeRecorder(100)
	return &CloudProfileReconciler{ProfileStatusController{Client: k8sClient, EventRecorder: recorder, Clock: testClock}}, recorder
}

func directNamespacedReconciler() (*NamespacedCloudProfileReconciler, *record.FakeRecorder) {
	recorder := record.NewFakeRecorder(100)
	return &NamespacedCloudProfileReconciler{ProfileStatusController{Client: k8sClient, EventRecorder: recorder, Clock: testClock}}, recorder
}

// requiredListsYAML is one machine image, one machine type and one region as
// spec lines: Gardener requires each in every CloudProfile.
const requiredListsYAML = "  machineImages:\n  - name: ubuntu\n    versions: [{version: 24.4.0}]\n" +
	"  machineTypes:\n  - {name: m5.large, cpu: \"2\", gpu: \"0\", memory: 8Gi}\n" +
	"  regions:\n  - name: eu-1\n"

// withRequiredLists gives spec one machine image, one machine type and one
// region where it has none, for the tests that are about something else. The
// image states the updateStrategy the API server would default, so that the
// spec is the same as the cluster stores it.
func withRequiredLists(spec v1alpha1.CloudProfileSpec) v1alpha1.CloudProfileSpec {
	if len(spec.MachineImages) == 0 {
		major := v1alpha1.UpdateStrategyMajor
		spec.MachineImages = []v1alpha1.MachineImage{{Name: "ubuntu", UpdateStrategy: &major, Versions: []v1alpha1.MachineImageVersion{
			{ExpirableVersion: v1alpha1.ExpirableVersion{Version: "24.4.0"}},
		}}}
	}
	if len(spec.MachineTypes) == 0 {
		spec.MachineTypes = []v1alpha1.MachineType{{
			Name: "m5.large", CPU: resource.MustParse("2"), GPU: resource.MustParse("0"), Memory: resource.MustParse("8Gi"),
		}}
	}
	if len(spec.Regions) == 0 {
		spec.Regions = []v1alpha1.Region{{Name: "eu-1"}}
	}
	return spec
}

var nameCounter atomic.Int64

// uniqueName keeps tests independent on the shared API server.
func uniqueName(prefix string) string {
	return fmt.Sprintf("%s-%d", prefix, nameCounter.Add(1))
}

// updateSpec re-reads obj, applies mutate and updates it, retrying when a
// status write of the controllers got in between.
func updateSpec[T client.Object](t *testing.T, obj T, mutate func(T)) {
	t.Helper()
	ctx := context.Background()
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		if err := k8sClient.Get(ctx, client.ObjectKeyFromObject(obj), obj); err != nil {
			return err
		}
		mutate(obj)
		return k8sClient.Update(ctx, obj)
	})
	if err != nil {
		t.Fatalf("update %s: %v", obj.GetName(), err)
	}
}

// settledResourceVersion waits until obj has not changed for a second and
// returns its resourceVersion: the controllers' reaction to creating it is over.
func settledResourceVersion(g Gomega, obj client.Object) string {
	var last string
	g.Eventually(func(g Gomega) {
		g.Expect(k8sClient.Get(context.Background(), client.ObjectKeyFromObject(obj), obj)).To(Succeed())
		rv := obj.GetResourceVersion()
		changed := rv != last
		last = rv
		g.Expect(changed).To(BeFalse())
	}).WithTimeout(15 * time.Second).WithPolling(time.Second).Should(Succeed())
	return last
}
