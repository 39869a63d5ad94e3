// Package bench measures the operator at landscape scale against an envtest
// control plane and a real Git server on loopback. Everything heavy runs only
// in Benchmark functions: `go test` without -bench starts nothing but the
// unit tests of the generator.
package bench

import (
	"context"
	"flag"
	"fmt"
	"net/http"
	"os"
	"sync"
	"sync/atomic"
	"testing"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	crmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/profilesync/profilesync/controllers"
	"github.com/profilesync/profilesync/test/testenv"
)

// clusterProfilesNamespace holds the landscape's ProfileSync.
const clusterProfilesNamespace = "profilesync-system"

// managerQPS and managerBurst are the client-side rate limits of the
// operator's API client by default; the floor (S2) uses the same.
const (
	managerQPS   = 50
	managerBurst = 300
)

// env is the control plane and the manager BenchmarkScale measures, set up
// by useSharedControlPlane.
var env struct {
	scheme     *runtime.Scheme
	restConfig *rest.Config  // the driver's: not counted
	client     client.Client // uncached, for the driver
	// floorClient is a plain client with the manager's rate limits.
	floorClient client.Client
	manager     manager.Manager
	receiverURL string
	// writes counts the manager's API requests that are not GETs (create,
	// update, patch, delete, including events).
	writes atomic.Int64
	// requests counts every request of the manager by verb and resource.
	requests requestCounts
}

// countingTransport counts the manager's write requests.
type countingTransport struct {
	next     http.RoundTripper
	writes   *atomic.Int64
	requests *requestCounts
}

func (t countingTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.Method != http.MethodGet && req.Method != http.MethodHead {
		t.writes.Add(1)
	}
	t.requests.add(req)
	return t.next.RoundTrip(req)
}

func TestMain(m *testing.M) {
	flag.Parse()
	if f := flag.Lookup("test.bench"); f != nil && f.Value.String() != "" && os.Getenv("KUBEBUILDER_ASSETS") == "" {
		fmt.Fprintln(os.Stderr, "KUBEBUILDER_ASSETS is not set: run the benchmarks with 'make bench'")
		os.Exit(1)
	}
	code := m.Run()
	if shared.env != nil {
		if err := shared.env.Stop(); err != nil {
			fmt.Fprintln(os.Stderr, err)
			code = 1
		}
	}
	os.Exit(code)
}

// shared is the control plane with the in-process manager that
// BenchmarkScale measures, started on first use: the side-by-side benchmark
// starts control planes of its own, and an idle one beside them would be
// measured with them.
var shared struct {
	once sync.Once
	env  *testenv.Env
	err  error
}

// useSharedControlPlane starts the shared control plane and manager once and
// fills env.
func useSharedControlPlane(b *testing.B) {
	b.Helper()
	shared.once.Do(func() {
		shared.env, shared.err = testenv.Start(
			testenv.WithErrorLog(),
			// The driver's requests are many and large; do not let client-side
			// throttling of the driver slow down what is measured.
			testenv.WithRESTConfig(func(cfg *rest.Config) { cfg.QPS, cfg.Burst = 1000, 2000 }),
			testenv.WithManager(testenv.ManagerOptions{
				// The operator's defaults (fluxcd/pkg/runtime/client flags
				// --kube-api-qps and --kube-api-burst), with its writes counted.
				RESTConfig: func(cfg *rest.Config) {
					cfg.QPS, cfg.Burst = managerQPS, managerBurst
					cfg.WrapTransport = func(rt http.RoundTripper) http.RoundTripper {
						return countingTransport{next: rt, writes: &env.writes, requests: &env.requests}
					}
				},
				Cache: controllers.CacheOptions(nil),
				Setup: setupControllers,
			}))
		if shared.err == nil {
			e := shared.env
			env.scheme, env.restConfig, env.client, env.manager = e.Scheme, e.Config, e.Client, e.Manager
		}
	})
	if shared.err != nil {
		b.Fatalf("start the control plane: %v", shared.err)
	}
}

// setupControllers adds every controller to the manager under measurement
// and makes the floor's client, which has the manager's rate limits.
func setupControllers(ctx context.Context, mgr manager.Manager, e *testenv.Env) error {
	floorConfig := rest.CopyConfig(e.Config)
	floorConfig.QPS, floorConfig.Burst = managerQPS, managerBurst
	var err error
	if env.floorClient, err = client.New(floorConfig, client.Options{Scheme: e.Scheme}); err != nil {
		return fmt.Errorf("create client: %w", err)
	}
	cacheDir, err := e.TempDir("profilesync-bench-cache-")
	if err != nil {
		return fmt.Errorf("create Git cache: %w", err)
	}
	receiverAddr, err := testenv.FreeLoopbackAddress()
	if err != nil {
		return err
	}
	env.receiverURL = "http://" + receiverAddr
	return controllers.SetupAll(ctx, mgr, controllers.Config{
		Options:                  controllers.Options{MaxConcurrentReconciles: 4},
		Clock:                    clock.RealClock{},
		StoragePath:              cacheDir,
		ClusterProfilesNamespace: clusterProfilesNamespace,
		ReceiverAddr:             receiverAddr,
		// As in the operator: the sync's phases are read by BenchmarkPush.
		MetricsRegistry: crmetrics.Registry,
	})
}
