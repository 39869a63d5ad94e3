// Package testenv starts the test control plane every envtest suite shares:
// kube-apiserver and etcd from KUBEBUILDER_ASSETS, the CRDs of
// config/crd/bases, a scheme with client-go's types and v1alpha1, a client
// and, on request, a manager that the caller fills (with every controller, or
// the webhooks) and that is started with its cache synced.
//
// It is for tests and benchmarks only: depguard keeps it out of operator code.
// It does not import the controllers or webhooks packages, so their in-package
// suites can use it; they hand in their setup as ManagerOptions.Setup.
package testenv

import (
	"context"
	"crypto/tls"
	"errors"
	"flag"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"go.uber.org/zap/zapcore"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/controller-runtime/pkg/webhook"

	v1alpha1 "github.com/profilesync/profilesync/api/v1alpha1"
)

// ErrAssetsNotSet is returned by Start when KUBEBUILDER_ASSETS is not set.
var ErrAssetsNotSet = errors.New("KUBEBUILDER_ASSETS is not set: run the tests with 'make test', which builds kube-apiserver and etcd into bin/")

// webhookServerTimeout is how long Start waits for the manager's webhook
// server to accept connections.
const webhookServerTimeout = 30 * time.Second

// Env is a running control plane. Stop it with Stop.
type Env struct {
	// Environment is controller-runtime's envtest environment (KubeConfig,
	// WebhookInstallOptions, ...).
	Environment *envtest.Environment
	// Config is the admin (system:masters) REST config.
	Config *rest.Config
	// Scheme has client-go's types and v1alpha1, unless WithScheme replaced it.
	Scheme *runtime.Scheme
	// Client is an uncached client of Config: it reads what the API server
	// has now.
	Client client.Client
	// Manager is the started manager, when WithManager asked for one.
	Manager manager.Manager

	managers []*Manager
	tempDirs []string
}

// Manager is a manager started by StartManager, running until Stop.
type Manager struct {
	manager.Manager
	cancel context.CancelFunc
	done   chan error
}

// Stop stops the manager and waits until it has returned, as a process
// that is sent SIGTERM does. Calling it again returns nil.
func (m *Manager) Stop() error {
	if m.cancel == nil {
		return nil
	}
	m.cancel()
	m.cancel = nil
	if err := <-m.done; err != nil {
		return fmt.Errorf("manager: %w", err)
	}
	return nil
}

// ManagerOptions describe the manager WithManager starts.
type ManagerOptions struct {
	// Setup adds the controllers or webhooks to the manager before it starts
	// (for example controllers.SetupAll with the caller's Config and clock).
	// ctx is cancelled on Stop.
	Setup func(ctx context.Context, mgr manager.Manager, env *Env) error
	// RESTConfig, if set, adjusts the manager's copy of the REST config
	// (rate limits, transport wrappers).
	RESTConfig func(*rest.Config)
	// Cache are the manager's cache options.
	Cache cache.Options
	// Options, if set, adjusts the manager's options (leader election,
	// metrics) after the defaults are filled in.
	Options func(*ctrl.Options)
	// Webhooks serves the webhooks installed by WithWebhooks; Start and
	// StartManager wait until they are served. WithManager sets it when
	// WithWebhooks is given.
	Webhooks bool
}

type options struct {
	crds       bool
	webhooks   bool
	errorLog   bool
	scheme     *runtime.Scheme
	restConfig func(*rest.Config)
	manager    *ManagerOptions
	// apiServerFlags are set on kube-apiserver's command line.
	apiServerFlags map[string]string
}

// Option configures Start.
type Option func(*options)

// WithoutCRDs starts the API server without the CRDs of config/crd/bases.
func WithoutCRDs() Option { return func(o *options) { o.crds = false } }

// WithWebhooks installs the ValidatingWebhookConfiguration of
// config/webhook/manifests.yaml, pointed at a local webhook server; a
// manager started with WithManager serves it, and Start waits until it does.
func WithWebhooks() Option { return func(o *options) { o.webhooks = true } }

// WithAPIServerFlag sets a flag of kube-apiserver, such as profiling=true.
func WithAPIServerFlag(name, value string) Option {
	return func(o *options) {
		if o.apiServerFlags == nil {
			o.apiServerFlags = map[string]string{}
		}
		o.apiServerFlags[name] = value
	}
}

// WithErrorLog sets controller-runtime's logger to errors only, on stderr.
func WithErrorLog() Option { return func(o *options) { o.errorLog = true } }

// WithScheme replaces the scheme of the client and the manager.
func WithScheme(scheme *runtime.Scheme) Option { return func(o *options) { o.scheme = scheme } }

// WithRESTConfig adjusts Config before the client is made from it.
func WithRESTConfig(adjust func(*rest.Config)) Option {
	return func(o *options) { o.restConfig = adjust }
}

// WithManager starts a manager on the control plane, with a metrics server
// that binds nowhere, and waits until its cache is synced.
func WithManager(mgr ManagerOptions) Option { return func(o *options) { o.manager = &mgr } }

// Start starts the control plane. On error, whatever started is stopped again.
func Start(opts ...Option) (env *Env, err error) {
	o := options{crds: true}
	for _, opt := range opts {
		opt(&o)
	}
	if os.Getenv("KUBEBUILDER_ASSETS") == "" {
		return nil, ErrAssetsNotSet
	}
	if o.errorLog {
		ctrl.SetLogger(zap.New(zap.WriteTo(os.Stderr), zap.UseDevMode(false), zap.Level(zapcore.ErrorLevel)))
	}
	scheme := o.scheme
	if scheme == nil {
		if scheme, err = NewScheme(); err != nil {
			return nil, err
		}
	}
	root, err := ModuleRoot()
	if err != nil {
		return nil, err
	}
	environment := &envtest.Environment{}
	if o.crds {
		environment.CRDDirectoryPaths = []string{filepath.Join(root, "config", "crd", "bases")}
		environment.ErrorIfCRDPathMissing = true
	}
	if o.webhooks {
		environment.WebhookInstallOptions = envtest.WebhookInstallOptions{
			Paths: []string{filepath.Join(root, "config", "webhook", "manifests.yaml")},
		}
	}
	for name, value := range o.apiServerFlags {
		environment.ControlPlane.GetAPIServer().Configure().Set(name, value)
	}
	cfg, err := environment.Start()
	if err != nil {
		return nil, fmt.Errorf("start envtest: %w", err)
	}
	env = &Env{Environment: environment, Config: cfg, Scheme: scheme}
	defer func() {
		if err != nil {
			err = errors.Join(err, env.Stop())
			env = nil
		}
	}()
	if o.restConfig != nil {
		o.restConfig(cfg)
	}
	if env.Client, err = client.New(cfg, client.Options{Scheme: scheme}); err != nil {
		return env, fmt.Errorf("create client: %w", err)
	}
	if o.manager != nil {
		o.manager.Webhooks = o.manager.Webhooks || o.webhooks
		m, err := env.StartManager(*o.manager)
		if err != nil {
			return env, err
		}
		env.Manager = m.Manager
	}
	return env, nil
}

// StartManager starts another manager on the control plane, with a metrics
// server that binds nowhere, and waits until its cache is synced (and its
// webhooks are served, with o.Webhooks). Env.Stop stops it if the caller has
// not; several may run at once, as the replicas of a Deployment do.
func (env *Env) StartManager(o ManagerOptions) (*Manager, error) {
	m, err := env.startManager(o)
	if err != nil {
		if m != nil {
			err = errors.Join(err, m.Stop())
		}
		return nil, err
	}
	return m, nil
}

func (env *Env) startManager(o ManagerOptions) (*Manager, error) {
	cfg := rest.CopyConfig(env.Config)
	if o.RESTConfig != nil {
		o.RESTConfig(cfg)
	}
	mgrOptions := ctrl.Options{
		Scheme:  env.Scheme,
		Metrics: metricsserver.Options{BindAddress: "0"},
		Cache:   o.Cache,
		// A test runs several managers in one process (restarts, replicas),
		// each registering the same controllers.
		Controller: config.Controller{SkipNameValidation: ptr.To(true)},
	}
	install := &env.Environment.WebhookInstallOptions
	if o.Webhooks {
		mgrOptions.WebhookServer = webhook.NewServer(webhook.Options{
			Host:    install.LocalServingHost,
			Port:    install.LocalServingPort,
			CertDir: install.LocalServingCertDir,
		})
	}
	if o.Options != nil {
		o.Options(&mgrOptions)
	}
	mgr, err := ctrl.NewManager(cfg, mgrOptions)
	if err != nil {
		return nil, fmt.Errorf("create manager: %w", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	if o.Setup != nil {
		if err := o.Setup(ctx, mgr, env); err != nil {
			cancel()
			return nil, fmt.Errorf("set up manager: %w", err)
		}
	}
	m := &Manager{Manager: mgr, cancel: cancel, done: make(chan error, 1)}
	env.managers = append(env.managers, m)
	go func() { m.done <- mgr.Start(ctx) }()
	if !mgr.GetCache().WaitForCacheSync(ctx) {
		return m, errors.New("manager cache did not sync")
	}
	if o.Webhooks {
		if err := waitForWebhookServer(install); err != nil {
			return m, fmt.Errorf("webhook server: %w", err)
		}
	}
	return m, nil
}

// TempDir makes a directory that Stop removes.
func (env *Env) TempDir(pattern string) (string, error) {
	dir, err := os.MkdirTemp("", pattern)
	if err != nil {
		return "", err
	}
	env.tempDirs = append(env.tempDirs, dir)
	return dir, nil
}

// Stop stops every manager, then the control plane, and removes the
// directories of TempDir. It returns every error on the way.
func (env *Env) Stop() error {
	var errs []error
	for _, m := range env.managers {
		if err := m.Stop(); err != nil {
			errs = append(errs, err)
		}
	}
	env.managers = nil
	if env.Environment != nil {
		if err := env.Environment.Stop(); err != nil {
			errs = append(errs, fmt.Errorf("stop envtest: %w", err))
		}
		env.Environment = nil
	}
	for _, dir := range env.tempDirs {
		if err := os.RemoveAll(dir); err != nil {
			errs = append(errs, err)
		}
	}
	env.tempDirs = nil
	return errors.Join(errs...)
}

// Run is a TestMain's body: it starts the control plane, hands it to use
// (to keep in the suite's variables), runs the tests and stops it. Errors go
// to stderr and make the exit code 1.
//
// A test binary that only lists its tests (-test.list, as make fuzz asks for
// the fuzz targets) or serves as a fuzz worker runs no test that needs the
// control plane, so it starts none: listing works without KUBEBUILDER_ASSETS,
// and a fuzz worker does not spend its coordinator's patience starting one.
func Run(m *testing.M, use func(*Env), opts ...Option) int {
	if needsNoControlPlane() {
		return m.Run()
	}
	env, err := Start(opts...)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	if use != nil {
		use(env)
	}
	code := m.Run()
	if err := env.Stop(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return code
}

// needsNoControlPlane says whether this test binary only lists its tests or
// is a fuzz worker.
func needsNoControlPlane() bool {
	if !flag.Parsed() {
		flag.Parse()
	}
	if list := flag.Lookup("test.list"); list != nil && list.Value.String() != "" {
		return true
	}
	worker := flag.Lookup("test.fuzzworker")
	return worker != nil && worker.Value.String() == "true"
}

// StartForTest starts a control plane for one test, stopped when it ends.
func StartForTest(tb testing.TB, opts ...Option) *Env {
	tb.Helper()
	env, err := Start(opts...)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() {
		if err := env.Stop(); err != nil {
			tb.Error(err)
		}
	})
	return env
}

// NewScheme is a scheme with client-go's types and v1alpha1.
func NewScheme() (*runtime.Scheme, error) {
	scheme := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{clientgoscheme.AddToScheme, v1alpha1.AddToScheme} {
		if err := add(scheme); err != nil {
			return nil, fmt.Errorf("build scheme: %w", err)
		}
	}
	return scheme, nil
}

// ModuleRoot is the directory of the go.mod above the working directory, so
// callers in any package find config/.
func ModuleRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("no go.mod above the working directory")
		}
		dir = parent
	}
}

// FreeLoopbackAddress is a loopback address with a port that was free a
// moment ago.
func FreeLoopbackAddress() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", fmt.Errorf("find a free port: %w", err)
	}
	defer l.Close()
	return l.Addr().String(), nil
}

// waitForWebhookServer waits until the webhook server accepts TLS connections.
func waitForWebhookServer(install *envtest.WebhookInstallOptions) error {
	address := net.JoinHostPort(install.LocalServingHost, strconv.Itoa(install.LocalServingPort))
	deadline := time.Now().Add(webhookServerTimeout)
	for {
		conn, err := tls.DialWithDialer(&net.Dialer{Timeout: time.Second}, "tcp", address, &tls.Config{InsecureSkipVerify: true}) //nolint:gosec // only checks that it listens
		if err == nil {
			return conn.Close()
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("not serving on %s: %w", address, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
