// Package bench measures the operator at landscape scale against an envtest
// control plane and a real Git server on loopback. Everything heavy runs only
// in Benchmark functions: `go test` without -bench starts nothing but the
// unit tests of the generator.
package bench

import (
	"context"
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"

	"go.uber.org/zap/zapcore"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	v1alpha1 "github.com/profilesync/profilesync/api/v1alpha1"
	"github.com/profilesync/profilesync/controllers"
)

// clusterProfilesNamespace holds the landscape's ProfileSync.
const clusterProfilesNamespace = "profilesync-system"

// managerQPS and managerBurst are the client-side rate limits of the
// operator's API client by default; the floor (S2) uses the same.
const (
	managerQPS   = 50
	managerBurst = 300
)

// env is the control plane and the manager under measurement, set up by
// TestMain only when benchmarks run.
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
}

// countingTransport counts the manager's write requests.
type countingTransport struct {
	next   http.RoundTripper
	writes *atomic.Int64
}

func (t countingTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.Method != http.MethodGet && req.Method != http.MethodHead {
		t.writes.Add(1)
	}
	return t.next.RoundTrip(req)
}

func TestMain(m *testing.M) {
	flag.Parse()
	if f := flag.Lookup("test.bench"); f == nil || f.Value.String() == "" {
		os.Exit(m.Run())
	}
	os.Exit(runWithControlPlane(m))
}

func runWithControlPlane(m *testing.M) int {
	if os.Getenv("KUBEBUILDER_ASSETS") == "" {
		fmt.Fprintln(os.Stderr, "KUBEBUILDER_ASSETS is not set: run the benchmarks with 'make bench'")
		return 1
	}
	ctrl.SetLogger(zap.New(zap.WriteTo(os.Stderr), zap.Level(zapcore.ErrorLevel)))
	env.scheme = runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{clientgoscheme.AddToScheme, v1alpha1.AddToScheme} {
		if err := add(env.scheme); err != nil {
			fmt.Fprintf(os.Stderr, "build scheme: %v\n", err)
			return 1
		}
	}
	testEnv := &envtest.Environment{
		CRDDirectoryPaths:     []string{filepath.Join("..", "..", "config", "crd", "bases")},
		ErrorIfCRDPathMissing: true,
	}
	cfg, err := testEnv.Start()
	if err != nil {
		fmt.Fprintf(os.Stderr, "start envtest: %v\n", err)
		return 1
	}
	defer func() { _ = testEnv.Stop() }()
	// The driver's requests are many and large; do not let client-side
	// throttling of the driver slow down what is measured.
	cfg.QPS, cfg.Burst = 1000, 2000
	env.restConfig = cfg
	if env.client, err = client.New(cfg, client.Options{Scheme: env.scheme}); err != nil {
		fmt.Fprintf(os.Stderr, "create client: %v\n", err)
		return 1
	}

	floorConfig := rest.CopyConfig(cfg)
	floorConfig.QPS, floorConfig.Burst = managerQPS, managerBurst
	if env.floorClient, err = client.New(floorConfig, client.Options{Scheme: env.scheme}); err != nil {
		fmt.Fprintf(os.Stderr, "create client: %v\n", err)
		return 1
	}

	managerConfig := rest.CopyConfig(cfg)
	// The operator's defaults (fluxcd/pkg/runtime/client flags
	// --kube-api-qps and --kube-api-burst).
	managerConfig.QPS, managerConfig.Burst = managerQPS, managerBurst
	managerConfig.WrapTransport = func(rt http.RoundTripper) http.RoundTripper {
		return countingTransport{next: rt, writes: &env.writes}
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	mgr, err := ctrl.NewManager(managerConfig, ctrl.Options{
		Scheme:  env.scheme,
		Metrics: metricsserver.Options{BindAddress: "0"},
		Cache:   controllers.CacheOptions(nil),
	})
	if err != nil {
		fmt.Fprintf(os.Stderr, "create manager: %v\n", err)
		return 1
	}
	cacheDir, err := os.MkdirTemp("", "profilesync-bench-cache-")
	if err != nil {
		fmt.Fprintf(os.Stderr, "create Git cache: %v\n", err)
		return 1
	}
	defer os.RemoveAll(cacheDir)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fmt.Fprintf(os.Stderr, "find a port: %v\n", err)
		return 1
	}
	receiverAddr := l.Addr().String()
	_ = l.Close()
	env.receiverURL = "http://" + receiverAddr
	if err := controllers.SetupAll(ctx, mgr, controllers.Config{
		Options:                  controllers.Options{MaxConcurrentReconciles: 4},
		Clock:                    clock.RealClock{},
		StoragePath:              cacheDir,
		ClusterProfilesNamespace: clusterProfilesNamespace,
		ReceiverAddr:             receiverAddr,
	}); err != nil {
		fmt.Fprintf(os.Stderr, "set up controllers: %v\n", err)
		return 1
	}
	env.manager = mgr
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	if !mgr.GetCache().WaitForCacheSync(ctx) {
		fmt.Fprintln(os.Stderr, "manager cache did not sync")
		return 1
	}
	code := m.Run()
	cancel()
	if err := <-done; err != nil {
		fmt.Fprintf(os.Stderr, "manager: %v\n", err)
		return 1
	}
	return code
}
