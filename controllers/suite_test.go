package controllers

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"go.uber.org/zap/zapcore"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/retry"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	v1alpha1 "github.com/profilesync/profilesync/api/v1alpha1"
)

// The suite runs one envtest control plane and one manager with every
// reconciler, as in production, on testClock. Tests that need to drive a
// reconcile at an exact instant also call the reconcilers directly, with the
// same clock, so both always agree on "now".
var (
	testEnv    *envtest.Environment
	restConfig *rest.Config
	k8sClient  client.Client // uncached: reads what the API server has now
	testClock  = &switchableClock{}
	testScheme = runtime.NewScheme()
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
	os.Exit(runSuite(m))
}

func runSuite(m *testing.M) int {
	if os.Getenv("KUBEBUILDER_ASSETS") == "" {
		fmt.Fprintln(os.Stderr, "KUBEBUILDER_ASSETS is not set: run the tests with 'make test', which builds kube-apiserver and etcd into bin/")
		return 1
	}
	ctrl.SetLogger(zap.New(zap.WriteTo(os.Stderr), zap.UseDevMode(false), zap.Level(zapcore.ErrorLevel)))
	for _, add := range []func(*runtime.Scheme) error{clientgoscheme.AddToScheme, v1alpha1.AddToScheme} {
		if err := add(testScheme); err != nil {
			fmt.Fprintf(os.Stderr, "build scheme: %v\n", err)
			return 1
		}
	}

	testEnv = &envtest.Environment{
		CRDDirectoryPaths:     []string{filepath.Join("..", "config", "crd", "bases")},
		ErrorIfCRDPathMissing: true,
	}
	var err error
	restConfig, err = testEnv.Start()
	if err != nil {
		fmt.Fprintf(os.Stderr, "start envtest: %v\n", err)
		return 1
	}
	defer func() {
		if err := testEnv.Stop(); err != nil {
			fmt.Fprintf(os.Stderr, "stop envtest: %v\n", err)
		}
	}()
	k8sClient, err = client.New(restConfig, client.Options{Scheme: testScheme})
	if err != nil {
		fmt.Fprintf(os.Stderr, "create client: %v\n", err)
		return 1
	}

	ctx, cancel := context.WithCancel(context.Background())
	mgr, err := ctrl.NewManager(restConfig, ctrl.Options{
		Scheme:  testScheme,
		Metrics: metricsserver.Options{BindAddress: "0"},
	})
	if err != nil {
		fmt.Fprintf(os.Stderr, "create manager: %v\n", err)
		cancel()
		return 1
	}
	cacheDir, err := os.MkdirTemp("", "profilesync-cache-")
	if err != nil {
		fmt.Fprintf(os.Stderr, "create Git cache: %v\n", err)
		cancel()
		return 1
	}
	defer os.RemoveAll(cacheDir)
	if err := setupTestReconcilers(ctx, mgr, cacheDir); err != nil {
		fmt.Fprintf(os.Stderr, "set up reconcilers: %v\n", err)
		cancel()
		return 1
	}
	managerDone := make(chan error, 1)
	go func() { managerDone <- mgr.Start(ctx) }()
	if !mgr.GetCache().WaitForCacheSync(ctx) {
		fmt.Fprintln(os.Stderr, "manager cache did not sync")
		cancel()
		return 1
	}

	code := m.Run()
	cancel()
	if err := <-managerDone; err != nil {
		fmt.Fprintf(os.Stderr, "manager: %v\n", err)
		return 1
	}
	return code
}

// clusterProfilesNamespace is where the tests' landscape ProfileSyncs live.
const clusterProfilesNamespace = "profilesync-system"

// receiverURL is the base URL of the suite manager's push receiver.
var receiverURL string

func setupTestReconcilers(ctx context.Context, mgr ctrl.Manager, cacheDir string) error {
	receiverAddr, err := freeLoopbackAddress()
	if err != nil {
		return err
	}
	receiverURL = "http://" + receiverAddr
	return SetupAll(ctx, mgr, Config{
		Options:                  Options{MaxConcurrentReconciles: 4},
		Clock:                    testClock,
		StoragePath:              cacheDir,
		ClusterProfilesNamespace: clusterProfilesNamespace,
		// The test Git servers are plain http on loopback.
		AllowCredentialsOverHTTP: true,
		ReceiverAddr:             receiverAddr,
		MaxCheckoutSize:          suiteMaxCheckoutSize,
	})
}

// freeLoopbackAddress is a loopback address with a port that was free a
// moment ago.
func freeLoopbackAddress() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", fmt.Errorf("find a free port: %w", err)
	}
	defer l.Close()
	return l.Addr().String(), nil
}

// directCloudProfileReconciler is a reconciler a test calls itself, with an
// uncached client (so it sees its own writes at once) and a fake event recorder
// to read the events it emits.
func directCloudProfileReconciler() (*CloudProfileReconciler, *record.FakeRecorder) {
	recorder := record.NewFakeRecorder(100)
	return &CloudProfileReconciler{Client: k8sClient, EventRecorder: recorder, Clock: testClock}, recorder
}

func directNamespacedReconciler() (*NamespacedCloudProfileReconciler, *record.FakeRecorder) {
	recorder := record.NewFakeRecorder(100)
	return &NamespacedCloudProfileReconciler{Client: k8sClient, EventRecorder: recorder, Clock: testClock}, recorder
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
