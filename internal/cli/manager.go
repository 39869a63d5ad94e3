package cli

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime/debug"
	"runtime/metrics"
	"strings"
	"time"

	"github.com/fluxcd/pkg/runtime/client"
	runtimecontroller "github.com/fluxcd/pkg/runtime/controller"
	"github.com/fluxcd/pkg/runtime/leaderelection"
	"github.com/fluxcd/pkg/runtime/logger"
	"github.com/fluxcd/pkg/runtime/probes"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	crmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
	"sigs.k8s.io/controller-runtime/pkg/metrics/filters"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/controller-runtime/pkg/webhook"

	v1alpha1 "github.com/profilesync/profilesync/api/v1alpha1"
	"github.com/profilesync/profilesync/controllers"
	"github.com/profilesync/profilesync/controllers/profilesync"
	"github.com/profilesync/profilesync/internal/gitsource"
	"github.com/profilesync/profilesync/internal/memorybudget"
	"github.com/profilesync/profilesync/internal/sandbox"
)

// defaultMaxCheckoutSize is --max-checkout-size's default: ten times the
// checkout of the largest landscape we know of, and far below the
// operator's memory.
const defaultMaxCheckoutSize int64 = 64 << 20

// containerCgroupRoot is the root of the files the container's memory limit
// is read from (memorybudget.ContainerLimit): "/", except in this package's
// tests, which do not depend on the limit of the machine they run on.
var containerCgroupRoot = "/"

// managerFlags are the operator's command-line settings. Every flag has a
// help text; `profilesync manager --help` prints them.
type managerFlags struct {
	metricsAddr       string
	metricsSecure     bool
	metricsCertDir    string
	healthAddr        string
	pprofAddr         string
	concurrent        int
	clientOptions     client.Options
	logOptions        logger.Options
	leaderElection    leaderelection.Options
	rateLimiter       runtimecontroller.RateLimiterOptions
	watchOptions      runtimecontroller.WatchOptions
	storagePath       string
	clusterProfilesNS string
	defaultSA         string
	httpCredentials   bool
	receiverAddr      string
	enableAdmission   bool
	webhookPort       int
	webhookHost       string
	webhookCertDir    string
	maxCheckoutSize   int64
	builds            sandbox.Options
	refusalRecheck    time.Duration
	maxHold           time.Duration
	// memoryBudget is --memory-budget; zero takes the container's limit.
	memoryBudget int64
	// decodedCacheSize bounds the decoded revisions kept between syncs.
	decodedCacheSize int64
	// cgroupRoot is where the container's memory limit is read ("/"; a
	// test's directory in tests).
	cgroupRoot string

	// The admission webhook's serving certificate: who provides it
	// (--webhook-cert-provisioning) and, when the operator does, where it
	// keeps it and whom it is for.
	webhookCertProvisioning string
	webhookCertSecret       string
	webhookService          string
	webhookConfiguration    string
	webhookCertDNSNames     []string
}

func (f *managerFlags) bind(fs *pflag.FlagSet) {
	fs.StringVar(&f.metricsAddr, "metrics-addr", ":8443", "The address the Prometheus metrics endpoint binds to; 0 disables it.")
	fs.BoolVar(&f.metricsSecure, "metrics-secure", true,
		"Serve the metrics over HTTPS to clients the API server authenticates (TokenReview) and authorizes for GET /metrics (SubjectAccessReview); "+
			"false serves them over plain HTTP to anyone who reaches the port (docs/metrics.md).")
	fs.StringVar(&f.metricsCertDir, "metrics-cert-dir", "",
		"The directory holding the metrics server's tls.crt and tls.key (with --metrics-secure); empty (the default) serves a self-signed certificate made at start-up.")
	fs.StringVar(&f.healthAddr, "health-addr", ":9440", "The address the health (/healthz) and readiness (/readyz) probes bind to.")
	fs.StringVar(&f.pprofAddr, "pprof-addr", "",
		"The address Go's profiling endpoints (/debug/pprof/) bind to, without authentication; empty (the default) disables them. For diagnosis only: bind it to 127.0.0.1 and port-forward.")
	fs.IntVar(&f.concurrent, "concurrent", 4, "The number of objects of each kind reconciled at the same time.")
	fs.StringVar(&f.storagePath, "storage-path", defaultStoragePath(), "The directory where Git checkouts are cached, one subdirectory per ProfileSync.")
	fs.StringVar(&f.clusterProfilesNS, "cluster-profiles-namespace", defaultClusterProfilesNamespace(),
		"The namespace of the landscape operators: only its ProfileSyncs may write CloudProfiles, and NamespacedCloudProfiles outside their own namespace. "+
			"Defaults to the namespace the operator runs in (RUNTIME_NAMESPACE), else profilesync-system.")
	fs.Var(serviceAccountName{&f.defaultSA}, "default-service-account",
		"The ServiceAccount that every ProfileSync outside --cluster-profiles-namespace without spec.serviceAccountName writes as: "+
			"its applies and prunes impersonate the ServiceAccount of this name in the ProfileSync's own namespace, so RBAC and the admission "+
			"webhooks judge a tenant's synced change as that ServiceAccount's own, and a namespace without it syncs nothing. "+
			"Empty (the default) lets those ProfileSyncs write with the operator's identity, held only to the namespace rule. "+
			"ProfileSyncs in --cluster-profiles-namespace are not affected (docs/gitops.md#tenancy).")
	fs.BoolVar(&f.httpCredentials, "insecure-allow-http-credentials", false,
		"Allow Git credentials to be sent to plain http:// URLs, in clear text. Only for test servers and trusted networks.")
	fs.StringVar(&f.receiverAddr, "receiver-addr", "",
		"The address of the push receiver, for example :9292: a Git host's push webhook posted to "+
			"/hook/<namespace>/<name> triggers a sync of a ProfileSync with spec.webhook. Empty (the default) disables it.")
	// The receiver's first flag name; "webhook" now names admission only.
	fs.StringVar(&f.receiverAddr, "webhook-addr", "", "Deprecated name of --receiver-addr.")
	_ = fs.MarkDeprecated("webhook-addr", "use --receiver-addr")
	fs.BoolVar(&f.enableAdmission, "enable-admission", false,
		"Run the validating admission webhook for CloudProfiles and NamespacedCloudProfiles (docs/admission.md); needs config/webhook installed and a serving certificate in --webhook-cert-dir.")
	fs.IntVar(&f.webhookPort, "webhook-port", 9443, "The port the admission webhook server listens on (with --enable-admission).")
	fs.StringVar(&f.webhookHost, "webhook-bind-address", "",
		"The address (IP or host name, without port) the admission webhook server listens on (with --enable-admission); empty (the default) listens on every interface, "+
			"as the API server must reach it through its Service. 127.0.0.1 keeps it to the pod's own network, for a proxy in the pod.")
	fs.StringVar(&f.webhookCertDir, "webhook-cert-dir", "/tmp/k8s-webhook-server/serving-certs",
		"The directory holding the admission webhook server's tls.crt and tls.key (with --enable-admission); with --webhook-cert-provisioning=self the operator writes them there.")
	f.webhookCertProvisioning = certProvisioningExternal
	fs.Var(certProvisioning{&f.webhookCertProvisioning}, "webhook-cert-provisioning",
		"Who provides the admission webhook's serving certificate (with --enable-admission): "+
			"'self', the operator: it keeps a CA and the certificate in the Secret --webhook-cert-secret of its namespace, renews them before they expire, "+
			"writes them into --webhook-cert-dir and the CA into the caBundle of --webhook-configuration, and serves admission (and reports ready) only then; "+
			"'external' (the default), someone else, such as cert-manager, puts it into --webhook-cert-dir (docs/admission.md#deploying).")
	fs.StringVar(&f.webhookCertSecret, "webhook-cert-secret", "profilesync-webhook-server-cert",
		"The Secret, in the operator's namespace (RUNTIME_NAMESPACE), that holds the serving certificate and its CA with --webhook-cert-provisioning=self; it must exist (config/default ships it empty).")
	fs.StringVar(&f.webhookService, "webhook-service", "profilesync-webhook-service",
		"The Service, in the operator's namespace, through which the API server calls the admission webhook: "+
			"with --webhook-cert-provisioning=self the certificate is for SERVICE.NAMESPACE.svc and SERVICE.NAMESPACE.svc.cluster.local.")
	fs.StringVar(&f.webhookConfiguration, "webhook-configuration", "profilesync-validating-webhook-configuration",
		"The ValidatingWebhookConfiguration whose caBundle gets the CA with --webhook-cert-provisioning=self.")
	fs.StringSliceVar(&f.webhookCertDNSNames, "webhook-cert-dns-names", nil,
		"More DNS names the certificate of --webhook-cert-provisioning=self is for, comma-separated: the host of a webhook reached by URL instead of the Service.")
	f.maxCheckoutSize = defaultMaxCheckoutSize
	fs.Var(byteSize{&f.maxCheckoutSize}, gitsource.MaxCheckoutSizeFlag,
		"The largest checkout of a revision, Git objects and work tree together; a fetch stops as soon as it writes more (bytes, or a quantity like 64Mi). "+
			"It also bounds the rollout's mirror across fetches, and each Git object before it is inflated: "+
			"a blob to it, a tree to an eighth of it, a commit or a tag to a thirty-second (at least 8Mi and 2Mi).")
	bindBuildLimits(fs, &f.builds)
	fs.DurationVar(&f.refusalRecheck, "refusal-recheck-interval", profilesync.DefaultRefusalRecheck,
		"How long a refused revision stays refused without a look: a revision that does not build is never built again until it, "+
			"the ProfileSync's spec or a reconcile request changes; one refused by validation, policy or tenancy, which depend on time "+
			"and the cluster, is checked again after this long.")
	fs.DurationVar(&f.maxHold, "max-hold", v1alpha1.DefaultMaxHold,
		"How far ahead a break-glass hold (annotation "+v1alpha1.HoldUntilAnnotation+") may expire; a hold that expires later is refused "+
			"at admission (with --enable-admission) and otherwise not honoured: the object is synced as if not held.")
	fs.IntVar(&f.builds.Concurrency, sandbox.ConcurrencyFlag, sandbox.DefaultConcurrency,
		"The most builds that run at once, each in its own process; a sync whose build finds every slot taken waits, within its spec.timeout. "+
			"Their memory counts against --"+memorybudget.BudgetFlag+".")
	fs.Var(byteSize{&f.memoryBudget}, memorybudget.BudgetFlag,
		"The memory the manager and its builds may use together (bytes, or a quantity like 2Gi); empty (the default) takes the container's cgroup memory limit, and no limit checks nothing. "+
			"At start-up the manager refuses flags that do not fit it: 256Mi for itself + --"+memorybudget.CacheFlag+" + --"+sandbox.ConcurrencyFlag+" × --"+sandbox.MemoryFlag+
			" + 10% headroom; what the builds and the headroom leave is its Go soft memory limit (GOMEMLIMIT) (docs/security.md#the-memory-budget).")
	f.decodedCacheSize = memorybudget.DefaultCache
	fs.Var(byteSize{&f.decodedCacheSize}, memorybudget.CacheFlag,
		"The most memory the decoded revisions kept between syncs take, every ProfileSync's together (bytes, or a quantity like 128Mi); "+
			"past it the least recently used are dropped and built again at their next sync. A refused revision keeps only its refusal.")
	f.cgroupRoot = containerCgroupRoot
	f.clientOptions.BindFlags(fs)
	f.logOptions.BindFlags(fs)
	f.leaderElection.BindFlags(fs)
	f.rateLimiter.BindFlags(fs)
	f.watchOptions.BindFlags(fs)
}

func defaultClusterProfilesNamespace() string {
	return operatorNamespace()
}

// serviceAccountName is a flag that takes a ServiceAccount's name (a DNS
// subdomain), so a typo fails at start-up, not at every sync.
type serviceAccountName struct{ name *string }

func (n serviceAccountName) String() string {
	if n.name == nil {
		return ""
	}
	return *n.name
}

func (n serviceAccountName) Set(value string) error {
	if value != "" {
		if problems := validation.IsDNS1123Subdomain(value); len(problems) > 0 {
			return fmt.Errorf("not a ServiceAccount name: %s", strings.Join(problems, "; "))
		}
	}
	*n.name = value
	return nil
}

func (n serviceAccountName) Type() string { return "NAME" }

func defaultStoragePath() string {
	return fmt.Sprintf("%s/profilesync", os.TempDir())
}

func newScheme() *runtime.Scheme {
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		panic(fmt.Sprintf("register client-go types: %v", err))
	}
	if err := v1alpha1.AddToScheme(scheme); err != nil {
		panic(fmt.Sprintf("register profilesync types: %v", err))
	}
	return scheme
}

// managerStarter runs the manager with its parsed flags until the process
// is signalled.
type managerStarter func(flags *managerFlags) error

func newManagerCommand(startManager managerStarter) *cobra.Command {
	var flags managerFlags
	cmd := &cobra.Command{
		Use:   "manager",
		Short: "Run the operator: sync profiles from Git and keep their status current",
		Long: `Runs the operator against the cluster of the kubeconfig (or in-cluster
config): the ProfileSync, CloudProfile and NamespacedCloudProfile controllers,
the push receiver with --receiver-addr and the admission webhook with
--enable-admission. It runs until it is signalled.

Started before its CustomResourceDefinitions are installed, it waits for them:
it logs the kinds it misses, /readyz fails (/healthz does not) and the
controllers start, without a restart, as soon as the API server serves them.

'profilesync' without a command does the same and takes the same flags.`,
		Example: `  profilesync manager --enable-leader-election --storage-path=/data --metrics-addr=:8443
  profilesync manager --metrics-addr=127.0.0.1:8080 --metrics-secure=false
  KUBECONFIG=~/.kube/config profilesync manager --concurrent 8 --log-level debug`,
		Args: func(_ *cobra.Command, args []string) error {
			if len(args) > 0 {
				return usageErrorf("unexpected argument %q: the manager takes only flags", args[0])
			}
			return nil
		},
		RunE: func(*cobra.Command, []string) error { return startWithinBudget(startManager, &flags) },
	}
	flags.bind(cmd.Flags())
	return cmd
}

// startWithinBudget starts the manager if its flags fit its memory budget
// (memoryPlan); flags that do not are a usage error, which says which flag
// to change, and nothing starts.
func startWithinBudget(startManager managerStarter, flags *managerFlags) error {
	if _, err := flags.memoryPlan(); err != nil {
		return usageError{err: err}
	}
	return startManager(flags)
}

// tuneCollector sets the Go runtime's collector for the plan and returns
// what the runtime runs with, for the log. With a budget, the manager's
// share is the soft memory limit, so that the runtime collects harder as
// the heap nears it instead of the kernel killing the container with the
// builds in it; under that bound the collector runs at the plan's GOGC
// (memorybudget.ManagerGCPercent), unless the environment sets GOGC
// (gogcSet): that is the operator's, and the runtime already runs with it.
// Without a budget nothing is changed.
func tuneCollector(plan memorybudget.Plan, gogcSet bool) (memoryLimit, gcPercent int64) {
	if share := plan.ManagerShare(); share > 0 {
		debug.SetMemoryLimit(share)
		if !gogcSet {
			debug.SetGCPercent(plan.GCPercent())
		}
	}
	return collectorSettings()
}

// collectorSettings is the runtime's soft memory limit and GOGC, as it
// reports them (math.MaxInt64 and -1 mean none, off).
func collectorSettings() (memoryLimit, gcPercent int64) {
	samples := []metrics.Sample{{Name: "/gc/gomemlimit:bytes"}, {Name: "/gc/gogc:percent"}}
	metrics.Read(samples)
	return int64(samples[0].Value.Uint64()), int64(samples[1].Value.Uint64())
}

// runManager starts the controllers and blocks until the process is
// signalled. It logs why it fails and returns a reportedError: exit status
// 2 for flags that do not parse further, 1 for anything that fails later.
func runManager(flags *managerFlags) error {
	log := logger.NewLogger(flags.logOptions)
	ctrl.SetLogger(log)
	setupLog := log.WithName("setup")

	plan, err := flags.memoryPlan()
	if err != nil {
		setupLog.Error(err, "invalid memory flags")
		return reportedError{status: exitUsage}
	}
	_, gogcSet := os.LookupEnv("GOGC")
	memoryLimit, gcPercent := tuneCollector(plan, gogcSet)
	if plan.ManagerShare() > 0 {
		setupLog.Info("memory budget", "budget", plan.Limit.Bytes, "source", plan.Limit.Source, "builds", plan.Builds,
			"buildMemory", plan.BuildMemory, "decodedCache", plan.Cache, "goMemoryLimit", memoryLimit, "gcPercent", gcPercent)
	} else {
		setupLog.Info("no memory budget: no container memory limit and no --"+memorybudget.BudgetFlag+"; the flags are not checked",
			"gcPercent", gcPercent)
	}

	watchSelector, err := runtimecontroller.GetWatchSelector(flags.watchOptions)
	if err != nil {
		setupLog.Error(err, "invalid --watch-label-selector")
		return reportedError{status: exitUsage}
	}

	metricsOptions, err := metricsServerOptions(flags)
	if err != nil {
		setupLog.Error(err, "invalid metrics flags")
		return reportedError{status: exitUsage}
	}
	restConfig := client.GetConfigOrDie(flags.clientOptions)
	leaderElectionID := leaderelection.GenerateID("profilesync-leader-election", flags.watchOptions.LabelSelector)
	mgr, err := ctrl.NewManager(restConfig, ctrl.Options{
		Scheme:                        newScheme(),
		Metrics:                       metricsOptions,
		HealthProbeBindAddress:        flags.healthAddr,
		PprofBindAddress:              flags.pprofAddr,
		LeaderElection:                flags.leaderElection.Enable,
		LeaderElectionReleaseOnCancel: flags.leaderElection.ReleaseOnCancel,
		LeaseDuration:                 &flags.leaderElection.LeaseDuration,
		RenewDeadline:                 &flags.leaderElection.RenewDeadline,
		RetryPeriod:                   &flags.leaderElection.RetryPeriod,
		LeaderElectionID:              leaderElectionID,
		// The Lease is in the operator's namespace (the Deployment's
		// RUNTIME_NAMESPACE), also out of the cluster; unset, controller-runtime
		// takes the pod's.
		LeaderElectionNamespace: os.Getenv("RUNTIME_NAMESPACE"),
		// Started only when webhooks are registered (--enable-admission).
		WebhookServer: webhook.NewServer(webhookServerOptions(flags)),
		Cache:         controllers.CacheOptions(watchSelector),
		// Knows the scopes of the CRDs before they are installed, so the
		// manager starts and waits for them even with a watch selector.
		MapperProvider: controllers.NewRESTMapper,
	})
	if err != nil {
		setupLog.Error(err, "create manager")
		return reportedError{status: exitInvalidInput}
	}
	probes.SetupChecks(mgr, setupLog)

	ctx := ctrl.SetupSignalHandler()
	if err := setupControllers(mgr, *flags); err != nil {
		setupLog.Error(err, "set up controllers")
		return reportedError{status: exitInvalidInput}
	}

	setupLog.Info("starting manager")
	if err := mgr.Start(ctx); err != nil {
		setupLog.Error(err, "run manager")
		return reportedError{status: exitInvalidInput}
	}
	return nil
}

// setupControllers registers the admission webhooks (setupAdmission; they
// need no CRDs: the API server calls them only for objects of the CRDs) and the CRD gate,
// which registers every reconciler once the API server serves the CRDs, so
// a manager started before its CRDs waits for them, not ready, instead of
// crash-looping (docs/reliability.md).
func setupControllers(mgr ctrl.Manager, flags managerFlags) error {
	if err := setupAdmission(mgr, flags); err != nil {
		return err
	}
	_, err := controllers.WaitForCRDs(mgr, controllers.DefaultCRDBackoff, func(ctx context.Context) error {
		return controllers.SetupAll(ctx, mgr, controllers.Config{
			Options: controllers.Options{
				MaxConcurrentReconciles: flags.concurrent,
				RateLimiter:             runtimecontroller.GetRateLimiter(flags.rateLimiter),
			},
			Clock:                    clock.RealClock{},
			StoragePath:              flags.storagePath,
			ClusterProfilesNamespace: flags.clusterProfilesNS,
			DefaultServiceAccount:    flags.defaultSA,
			AllowCredentialsOverHTTP: flags.httpCredentials,
			ReceiverAddr:             flags.receiverAddr,
			MaxCheckoutSize:          flags.maxCheckoutSize,
			Builds:                   flags.builds,
			RefusalRecheck:           flags.refusalRecheck,
			DecodedCacheSize:         flags.decodedCacheSize,
			MaxHold:                  flags.maxHold,
			// The registry the manager's metrics server serves.
			MetricsRegistry: crmetrics.Registry,
		})
	})
	return err
}

// webhookServerOptions are the admission webhook server's settings: where it
// listens and its certificate.
func webhookServerOptions(flags *managerFlags) webhook.Options {
	return webhook.Options{Host: flags.webhookHost, Port: flags.webhookPort, CertDir: flags.webhookCertDir}
}

// memoryPlan is what the flags let the manager and its builds use, against
// --memory-budget or else the container's memory limit; an error when they
// do not fit, saying which flag to change.
func (f *managerFlags) memoryPlan() (memorybudget.Plan, error) {
	limit := memorybudget.Limit{Bytes: f.memoryBudget, Source: "--" + memorybudget.BudgetFlag}
	if f.memoryBudget <= 0 {
		var err error
		if limit, err = memorybudget.ContainerLimit(f.cgroupRoot); err != nil {
			return memorybudget.Plan{}, fmt.Errorf("%w (set --%s to give the budget yourself)", err, memorybudget.BudgetFlag)
		}
	}
	builds := f.builds.Concurrency
	if builds <= 0 {
		builds = sandbox.DefaultConcurrency
	}
	buildMemory := f.builds.Memory
	if buildMemory <= 0 {
		buildMemory = sandbox.DefaultMemory
	}
	plan := memorybudget.Plan{Limit: limit, Builds: builds, BuildMemory: buildMemory, Cache: f.decodedCacheSize}
	return plan, plan.Check()
}

// metricsServerOptions are the metrics server's settings. By default
// (--metrics-secure) it serves HTTPS and lets through only requests whose
// bearer token the API server accepts and whose user may GET /metrics
// (config/rbac/metrics_reader_role.yaml); the manager's own identity needs to
// create TokenReviews and SubjectAccessReviews for that
// (config/rbac/metrics_auth_role.yaml).
func metricsServerOptions(flags *managerFlags) (metricsserver.Options, error) {
	opts := metricsserver.Options{BindAddress: flags.metricsAddr}
	if !flags.metricsSecure {
		if flags.metricsCertDir != "" {
			return opts, errors.New("--metrics-cert-dir needs --metrics-secure")
		}
		return opts, nil
	}
	opts.SecureServing = true
	opts.FilterProvider = filters.WithAuthenticationAndAuthorization
	// HTTP/2 stays off: its stream handling has been the way to exhaust
	// servers (CVE-2023-44487, CVE-2023-39325), and a scrape gains nothing
	// from it.
	opts.TLSOpts = []func(*tls.Config){func(c *tls.Config) { c.NextProtos = []string{"http/1.1"} }}
	if flags.metricsCertDir != "" {
		// controller-runtime falls back to a self-signed certificate when
		// the files are missing; a directory given on purpose must hold them.
		for _, name := range []string{"tls.crt", "tls.key"} {
			if _, err := os.Stat(filepath.Join(flags.metricsCertDir, name)); err != nil {
				return opts, fmt.Errorf("--metrics-cert-dir: %w", err)
			}
		}
		opts.CertDir = flags.metricsCertDir
	}
	return opts, nil
}
