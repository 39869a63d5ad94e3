// Command runlocal is `make run-local`: ProfileSync's main job on a machine
// with nothing but Go. It serves examples/profiles-repo as a Git repository on
// loopback, starts one local control plane (kube-apiserver + etcd, as envtest
// does) per landscape, installs the CRDs, runs the operator's controllers
// in-process against each, with the admission webhooks of config/webhook and
// the secure metrics endpoint as the Deployment runs them, creates one
// ProfileSync per landscape, waits until every object is Ready (saying what
// a landscape waits for, and until when), prints what `kubectl get` shows,
// how to scrape the metrics and a tenant's write the webhook refuses, shows a
// commit rolling out (dev at once, prod once dev has held it for the soak of
// the repository's rollout file) and how to make a change, and keeps running
// until Ctrl-C, SIGTERM or SIGHUP, then cleans up: control planes, their
// temporary directories and the work directory.
//
// Each landscape gets its own control plane because that is what a landscape
// is: a cluster of its own, where the same profile names mean that
// landscape's version of them.
//
// It lives under test/ and not in the operator's binary: it runs the git
// command line (through gitserver) and envtest's control plane, neither of
// which the operator itself may depend on.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/fluxcd/pkg/runtime/conditions"
	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/utils/clock"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	crmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
	"sigs.k8s.io/controller-runtime/pkg/metrics/filters"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/controller-runtime/pkg/webhook"

	v1alpha1 "github.com/profilesync/profilesync/api/v1alpha1"
	"github.com/profilesync/profilesync/controllers"
	"github.com/profilesync/profilesync/internal/render/overlay"
	"github.com/profilesync/profilesync/internal/render/profile"
	"github.com/profilesync/profilesync/test/gitserver"
	"github.com/profilesync/profilesync/webhooks"
)

// operatorNamespace is where the landscape ProfileSyncs live, as in config/default.
const operatorNamespace = "profilesync-system"

type options struct {
	// repoDir is the directory served as the Git repository "profiles".
	repoDir string
	// projectDir holds config/crd/bases.
	projectDir string
	// workDir receives kubeconfigs, the Git cache and the server's repositories.
	workDir    string
	landscapes []string
	// interval is the ProfileSyncs' spec.interval.
	interval time.Duration
	// now is the controllers' time at start (for tests and demos of a given
	// day; it passes from there as real time does); zero means the real
	// clock.
	now time.Time
	// soak replaces every soak of the served rollout file, so the tour
	// shows prod taking a commit within minutes.
	soak         time.Duration
	readyTimeout time.Duration
	// exitWhenReady stops after printing the view instead of waiting for a signal.
	exitWhenReady bool
}

func main() {
	opts, err := parseFlags(os.Args[1:])
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	// A closed terminal or a dropped SSH session (SIGHUP) and a service
	// manager (SIGTERM) stop it as Ctrl-C does: without handling them Go
	// exits at once and leaves every control plane running, with its
	// temporary directories.
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM, syscall.SIGHUP)
	err = run(ctx, opts, os.Stdout)
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "run-local:", err)
		os.Exit(1)
	}
}

func parseFlags(args []string) (options, error) {
	fs := flag.NewFlagSet("run-local", flag.ContinueOnError)
	opts := options{}
	var landscapes, now string
	fs.StringVar(&opts.repoDir, "repo", "examples/profiles-repo", "The directory to serve as the Git repository of profiles.")
	fs.StringVar(&opts.projectDir, "project", ".", "The ProfileSync checkout (for config/crd/bases).")
	fs.StringVar(&opts.workDir, "work-dir", filepath.Join(os.TempDir(), "profilesync-local"), "Where kubeconfigs, tokens, the Git cache and the served repository go; emptied at start, removed at stop.")
	fs.StringVar(&landscapes, "landscapes", "dev,prod", "The overlays to run, one local cluster each (overlays/NAME).")
	fs.DurationVar(&opts.interval, "interval", 10*time.Second, "The ProfileSyncs' sync interval.")
	fs.StringVar(&now, "now", "", "Pretend it is this RFC 3339 time at start (time passes from there); default: the real time.")
	fs.DurationVar(&opts.soak, "soak", time.Minute, "How long dev holds a commit before prod takes it: every soak of the served profilesync-rollout.yaml.")
	fs.DurationVar(&opts.readyTimeout, "ready-timeout", 2*time.Minute, "How long to wait for every object to become Ready.")
	fs.BoolVar(&opts.exitWhenReady, "exit-when-ready", false, "Stop and clean up after printing the view (for tests).")
	if err := fs.Parse(args); err != nil {
		return opts, err
	}
	opts.landscapes = strings.Split(landscapes, ",")
	if now != "" {
		t, err := time.Parse(time.RFC3339, now)
		if err != nil {
			return opts, fmt.Errorf("--now: %w", err)
		}
		opts.now = t
	}
	return opts, nil
}

// landscape is one local cluster with the operator running against it.
type landscape struct {
	name       string
	env        *envtest.Environment
	config     *rest.Config
	client     client.Client
	kubeconfig string
	stopMgr    context.CancelFunc
	mgrDone    chan error
	// metricsURL is the manager's metrics endpoint.
	metricsURL string
	// out receives what the landscape waits for (reportWaiting).
	out io.Writer
	// lastWaiting is the wait last reported, so each is reported once.
	lastWaiting string
}

// freeLoopbackAddress is a loopback address with a port free now, for a
// server that does not say which port it bound.
func freeLoopbackAddress() (string, error) {
	listener, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer listener.Close()
	return listener.Addr().String(), nil
}

// run runs the local landscapes until ctx ends. A stop asked for while it
// still starts up is a clean stop too: it returns nil once everything it
// started is stopped and its work directory removed.
func run(ctx context.Context, opts options, out io.Writer) (retErr error) {
	defer func() {
		if stoppedCleanly(ctx, retErr) {
			retErr = nil
		}
	}()
	if os.Getenv("KUBEBUILDER_ASSETS") == "" {
		return errors.New("KUBEBUILDER_ASSETS is not set: run 'make run-local', which builds kube-apiserver and etcd into bin/")
	}
	ctrl.SetLogger(zap.New(zap.WriteTo(io.Discard)))
	if err := os.RemoveAll(opts.workDir); err != nil {
		return fmt.Errorf("empty %s: %w", opts.workDir, err)
	}
	if err := os.MkdirAll(opts.workDir, 0o755); err != nil {
		return err
	}
	// Removed last, after the Git server and the control planes: it holds
	// their repositories, caches and kubeconfigs, of no use once they stop.
	defer func() {
		if err := os.RemoveAll(opts.workDir); err != nil {
			retErr = errors.Join(retErr, fmt.Errorf("remove %s: %w", opts.workDir, err))
		} else if stoppedCleanly(ctx, retErr) {
			fmt.Fprintf(out, "Removed %s.\n", opts.workDir)
		}
	}()

	server, err := gitserver.New(filepath.Join(opts.workDir, "git"), gitserver.Options{AllowPush: true})
	if err != nil {
		return fmt.Errorf("start the Git server: %w", err)
	}
	defer server.Close()
	files, err := gitserver.ReadTree(opts.repoDir)
	if err != nil {
		return err
	}
	withSoak(files, opts.soak)
	if _, err := server.CreateRepo("profiles", files); err != nil {
		return fmt.Errorf("seed the Git repository: %w", err)
	}
	fmt.Fprintf(out, "Serving %s as %s\n", opts.repoDir, server.RepoURL("profiles"))

	var clk clock.PassiveClock = clock.RealClock{}
	if !opts.now.IsZero() {
		clk = startingAt(opts.now)
	}

	var running []*landscape
	defer func() {
		for _, l := range running {
			if err := l.stop(); err != nil {
				retErr = errors.Join(retErr, err)
			}
		}
		if stoppedCleanly(ctx, retErr) {
			fmt.Fprintln(out, "Stopped every control plane and the Git server.")
		}
	}()
	for _, name := range opts.landscapes {
		l, err := startLandscape(ctx, opts, name, clk)
		if l != nil {
			l.out = out
			running = append(running, l)
		}
		if err != nil {
			return fmt.Errorf("landscape %s: %w", name, err)
		}
		if err := l.createProfileSync(ctx, opts, server.RepoURL("profiles")); err != nil {
			return fmt.Errorf("landscape %s: %w", name, err)
		}
		fmt.Fprintf(out, "Landscape %s: API server %s, kubeconfig %s\n", name, l.config.Host, l.kubeconfig)
	}

	for _, l := range running {
		if err := l.waitReady(ctx, opts.readyTimeout); err != nil {
			return fmt.Errorf("landscape %s: %w", l.name, err)
		}
	}
	fmt.Fprintln(out, "\nAll profiles Ready.")
	for _, l := range running {
		if err := l.printView(ctx, out, clk.Now()); err != nil {
			return fmt.Errorf("landscape %s: %w", l.name, err)
		}
	}
	fmt.Fprintln(out, "\n=== As in production: admission webhooks and the secure metrics endpoint ===")
	for _, l := range running {
		if err := l.showMetrics(ctx, out, opts.workDir); err != nil {
			return fmt.Errorf("landscape %s: %w", l.name, err)
		}
	}
	if err := running[0].showAdmission(ctx, out); err != nil {
		return fmt.Errorf("landscape %s: %w", running[0].name, err)
	}
	if err := showRollout(ctx, out, opts, server, running, clk); err != nil {
		return err
	}
	printHowToChange(out, opts, server.RepoURL("profiles"), running[0])

	if opts.exitWhenReady {
		return nil
	}
	fmt.Fprintln(out, "\nRunning until Ctrl-C.")
	<-ctx.Done()
	return nil
}

// stoppedCleanly says err is no failure: nil, or the cancellation of a stop
// asked for by a signal.
func stoppedCleanly(ctx context.Context, err error) bool {
	return err == nil || (ctx.Err() != nil && errors.Is(err, context.Canceled))
}

func startLandscape(ctx context.Context, opts options, name string, clk clock.PassiveClock) (*landscape, error) {
	l := &landscape{name: name, env: &envtest.Environment{
		CRDDirectoryPaths:     []string{filepath.Join(opts.projectDir, "config", "crd", "bases")},
		ErrorIfCRDPathMissing: true,
		// The admission webhooks, as config/webhook installs them: envtest
		// points them at a local port with a serving certificate of its own.
		WebhookInstallOptions: envtest.WebhookInstallOptions{
			Paths: []string{filepath.Join(opts.projectDir, "config", "webhook", "manifests.yaml")},
		},
	}}
	cfg, err := l.env.Start()
	if err != nil {
		return nil, fmt.Errorf("start the control plane: %w", err)
	}
	l.config = cfg

	admin, err := l.env.AddUser(envtest.User{Name: "admin", Groups: []string{"system:masters"}}, nil)
	if err != nil {
		return l, fmt.Errorf("create an admin user: %w", err)
	}
	kubeconfig, err := admin.KubeConfig()
	if err != nil {
		return l, fmt.Errorf("write a kubeconfig: %w", err)
	}
	l.kubeconfig = filepath.Join(opts.workDir, name+".kubeconfig")
	if err := os.WriteFile(l.kubeconfig, kubeconfig, 0o600); err != nil {
		return l, err
	}

	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		return l, err
	}
	if err := v1alpha1.AddToScheme(scheme); err != nil {
		return l, err
	}
	l.client, err = client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		return l, err
	}
	if err := l.createNamespaces(ctx, opts, name, clk.Now()); err != nil {
		return l, err
	}

	metricsAddr, err := freeLoopbackAddress()
	if err != nil {
		return l, fmt.Errorf("pick the metrics port: %w", err)
	}
	webhookServer := l.env.WebhookInstallOptions
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Scheme: scheme,
		// As the Deployment serves them (--metrics-secure): HTTPS, to
		// clients the API server authenticates and authorizes.
		Metrics: metricsserver.Options{
			BindAddress:    metricsAddr,
			SecureServing:  true,
			FilterProvider: filters.WithAuthenticationAndAuthorization,
		},
		WebhookServer: webhook.NewServer(webhook.Options{
			Host:    webhookServer.LocalServingHost,
			Port:    webhookServer.LocalServingPort,
			CertDir: webhookServer.LocalServingCertDir,
		}),
		Cache: controllers.CacheOptions(nil),
		// One manager per landscape runs in this process, each with the same
		// controllers; their names are unique per manager, which is enough.
		Controller: config.Controller{SkipNameValidation: ptr.To(true)},
	})
	if err != nil {
		return l, fmt.Errorf("create the manager: %w", err)
	}
	l.metricsURL = "https://" + metricsAddr + "/metrics"
	if err := webhooks.SetupWithManager(mgr, webhooks.Options{Clock: clk}); err != nil {
		return l, fmt.Errorf("set up the admission webhooks: %w", err)
	}
	mgrCtx, cancel := context.WithCancel(ctx)
	if err := controllers.SetupAll(mgrCtx, mgr, controllers.Config{
		Options:                  controllers.Options{MaxConcurrentReconciles: 4},
		Clock:                    clk,
		StoragePath:              filepath.Join(opts.workDir, "cache-"+name),
		ClusterProfilesNamespace: operatorNamespace,
		// As config/manager ships it: the landscapes' ProfileSyncs, in the
		// operator's namespace, still write as the operator.
		DefaultServiceAccount: "default",
		// One process serves the metrics of every landscape (controller-
		// runtime's registry is global), each with its landscape's label.
		MetricsRegistry: prometheus.WrapRegistererWith(prometheus.Labels{"landscape": name}, crmetrics.Registry),
	}); err != nil {
		cancel()
		return l, err
	}
	l.stopMgr = cancel
	l.mgrDone = make(chan error, 1)
	go func() { l.mgrDone <- mgr.Start(mgrCtx) }()
	return l, nil
}

// createNamespaces creates the operator's namespace and every namespace the
// landscape's overlay puts a NamespacedCloudProfile in, as a platform team
// would have them already. The overlay is loaded as the CLI loads it, at
// now, the controllers' time: a repository the sync would refuse stops the
// tour here, with every problem.
func (l *landscape) createNamespaces(ctx context.Context, opts options, name string, now time.Time) error {
	namespaces := map[string]bool{operatorNamespace: true}
	docs, err := overlay.Build(ctx, opts.repoDir, filepath.Join("overlays", name), overlay.DefaultLimits())
	if err != nil {
		return fmt.Errorf("build overlays/%s: %w", name, err)
	}
	set, err := profile.Load(docs, nil, now)
	if err != nil {
		return fmt.Errorf("load overlays/%s: %w", name, err)
	}
	if len(set.Problems) > 0 {
		return fmt.Errorf("overlays/%s: %w", name, set.Problems)
	}
	for _, o := range set.Objects {
		if o.Namespace() != "" {
			namespaces[o.Namespace()] = true
		}
	}
	for ns := range namespaces {
		err := l.client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})
		if err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("create namespace %s: %w", ns, err)
		}
	}
	return nil
}

func (l *landscape) createProfileSync(ctx context.Context, opts options, url string) error {
	return l.client.Create(ctx, &v1alpha1.ProfileSync{
		ObjectMeta: metav1.ObjectMeta{Name: l.name, Namespace: operatorNamespace},
		Spec: v1alpha1.ProfileSyncSpec{
			URL:      url,
			Ref:      &v1alpha1.GitReference{Branch: gitserver.DefaultBranch},
			Path:     "overlays/" + l.name,
			Interval: metav1.Duration{Duration: opts.interval},
			Prune:    true,
			// Each landscape records what it applied, so that the next one
			// in the rollout file can take it once it has held it.
			Rollout: &v1alpha1.ProfileSyncRollout{Record: ptr.To(true)},
		},
	})
}

// waitReady waits until the ProfileSync and every profile it applied are Ready.
func (l *landscape) waitReady(ctx context.Context, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var last string
	for {
		ready, why, err := l.allReady(ctx)
		if err != nil {
			return err
		}
		if ready {
			return nil
		}
		last = why
		select {
		case <-ctx.Done():
			// Wrapped, so that a stop asked for meanwhile (Canceled) is
			// told from the timeout (DeadlineExceeded).
			return fmt.Errorf("not Ready after %s: %s: %w", timeout, last, ctx.Err())
		case <-time.After(200 * time.Millisecond):
		}
	}
}

func (l *landscape) allReady(ctx context.Context) (bool, string, error) {
	var sync v1alpha1.ProfileSync
	if err := l.client.Get(ctx, client.ObjectKey{Namespace: operatorNamespace, Name: l.name}, &sync); err != nil {
		return false, "", err
	}
	l.reportWaiting(&sync)
	if !conditions.IsReady(&sync) {
		return false, fmt.Sprintf("ProfileSync %s: %s", l.name, conditions.GetMessage(&sync, v1alpha1.ReadyCondition)), nil
	}
	var cps v1alpha1.CloudProfileList
	if err := l.client.List(ctx, &cps); err != nil {
		return false, "", err
	}
	for i := range cps.Items {
		if !conditions.IsReady(&cps.Items[i]) {
			return false, "CloudProfile " + cps.Items[i].Name + " not Ready", nil
		}
	}
	var ncps v1alpha1.NamespacedCloudProfileList
	if err := l.client.List(ctx, &ncps); err != nil {
		return false, "", err
	}
	for i := range ncps.Items {
		if !conditions.IsReady(&ncps.Items[i]) {
			return false, "NamespacedCloudProfile " + ncps.Items[i].Namespace + "/" + ncps.Items[i].Name + " not Ready", nil
		}
	}
	return len(cps.Items) > 0, "no CloudProfile yet", nil
}

func (l *landscape) stop() error {
	var errs []error
	if l.stopMgr != nil {
		l.stopMgr()
		if err := <-l.mgrDone; err != nil {
			errs = append(errs, fmt.Errorf("manager of %s: %w", l.name, err))
		}
	}
	if err := l.env.Stop(); err != nil {
		errs = append(errs, fmt.Errorf("control plane of %s: %w", l.name, err))
	}
	return errors.Join(errs...)
}
