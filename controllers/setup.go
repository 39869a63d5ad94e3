// Package controllers is the manager's wiring: SetupAll builds the
// reconcilers of controllers/profilesync, controllers/profilestatus and
// controllers/versionupdate with
// what they share, and registers them; the CRD gate (crds.go) starts them
// once the API server serves their kinds.
package controllers

import (
	"context"
	"fmt"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	v1alpha1 "github.com/profilesync/profilesync/api/v1alpha1"
	"github.com/profilesync/profilesync/controllers/applygate"
	"github.com/profilesync/profilesync/controllers/metrics"
	"github.com/profilesync/profilesync/controllers/profilestatus"
	"github.com/profilesync/profilesync/controllers/profilesync"
	"github.com/profilesync/profilesync/controllers/statuspatch"
	"github.com/profilesync/profilesync/controllers/versionupdate"
	"github.com/profilesync/profilesync/internal/gitsource"
	"github.com/profilesync/profilesync/internal/propose/sources"
	"github.com/profilesync/profilesync/internal/receiver"
	"github.com/profilesync/profilesync/internal/render/profile"
	"github.com/profilesync/profilesync/internal/repofile"
	"github.com/profilesync/profilesync/internal/sandbox"
)

// EventSource is the component name on every event the controllers record.
const EventSource = "profilesync"

// Config is what the operator's controllers need beyond the manager. The
// operator's main and the local demo both build their controllers from it, so
// they run the same code.
type Config struct {
	Options
	// Clock is the source of "now"; the real clock in production.
	Clock clock.PassiveClock
	// StoragePath is the root of the Git checkout cache.
	StoragePath string
	// ClusterProfilesNamespace is the landscape operators' namespace (see
	// ProfileSyncReconciler).
	ClusterProfilesNamespace string
	// DefaultServiceAccount, when set, is the ServiceAccount, in their own
	// namespace, that ProfileSyncs outside ClusterProfilesNamespace write as
	// when they name none in spec.serviceAccountName; empty lets them write
	// with the operator's identity.
	DefaultServiceAccount string
	// AllowCredentialsOverHTTP lets Git credentials go to plain http:// URLs.
	AllowCredentialsOverHTTP bool
	// ReceiverAddr, when set, is the address of the push receiver (see
	// receiver.Receiver), where Git hosts post their push webhooks; empty
	// disables it.
	ReceiverAddr string
	// MaxCheckoutSize bounds a checkout in bytes (gitsource); zero means no
	// limit.
	MaxCheckoutSize int64
	// Builds bound the build of a revision and its process (each build runs
	// in a child process, see internal/sandbox); a zero field takes its
	// default.
	Builds sandbox.Options
	// RefusalRecheck is how long a refusal of a revision that depends on
	// time or the cluster stands (profilesync.ProfileSyncReconciler.RefusalRecheck).
	RefusalRecheck time.Duration
	// DecodedCacheSize bounds the decoded revisions kept between syncs
	// (profilesync.ProfileSyncReconciler.DecodedCacheSize).
	DecodedCacheSize int64
	// MaxHold is how far ahead a break-glass hold may expire
	// (profilesync.ProfileSyncReconciler.MaxHold).
	MaxHold time.Duration
	// MetricsRegistry, when set, is where the controllers' own metrics
	// (metrics.New) are registered: controller-runtime's metrics.Registry,
	// which the manager serves, in the operator; a registry of their own in
	// tests. Nil records none, as a process running several managers must
	// (each would register the same names).
	MetricsRegistry prometheus.Registerer
}

// Options are the settings shared by every reconciler's controller.
type Options struct {
	// MaxConcurrentReconciles bounds the workers of each controller.
	MaxConcurrentReconciles int
	// RateLimiter paces retries after errors.
	RateLimiter workqueue.TypedRateLimiter[reconcile.Request]
	// StatusRecheck is how often the profile status controllers look, in
	// their cache, for a status whose next transition the wall clock has
	// passed; zero or less means profilestatus.DefaultStatusRecheck. They
	// wake up at each transition itself and reconcile nothing in between;
	// that wait runs on the monotonic clock (controller-runtime's
	// RequeueAfter), which a step of the wall clock (an NTP correction, a
	// resumed virtual machine) does not move, so this bounds how late a
	// status notices a step forward (controllers/profilestatus/overdue.go).
	StatusRecheck time.Duration
}

// controllerOptions are the controller-runtime options every reconciler's
// controller runs with.
func (o Options) controllerOptions() controller.Options {
	return controller.Options{MaxConcurrentReconciles: o.MaxConcurrentReconciles, RateLimiter: o.RateLimiter}
}

// SetupAll registers every reconciler with the manager.
func SetupAll(ctx context.Context, mgr ctrl.Manager, cfg Config) error {
	// The events.k8s.io recorder takes different arguments at every call
	// site; moving to it is its own change.
	recorder := mgr.GetEventRecorderFor(EventSource) //nolint:staticcheck // SA1019, see above
	var operatorMetrics *metrics.Metrics
	if cfg.MetricsRegistry != nil {
		operatorMetrics = metrics.New(cfg.Clock, profilesync.RefusalReasons)
		if err := cfg.MetricsRegistry.Register(operatorMetrics); err != nil {
			return fmt.Errorf("register metrics: %w", err)
		}
	}
	// The sync and the status controllers share one gate (applygate.Gate).
	gate := &applygate.Gate{}
	// The status controllers share one order of a parent's status write
	// before its children's (profilestatus.ParentStatuses).
	parentStatuses := &profilestatus.ParentStatuses{}
	// Every reconciler's client: the manager's, whose status writes
	// (statuspatch.Write) are updates of the status subresource.
	operatorClient, err := statuspatch.NewClient(mgr.GetClient(), mgr.GetConfig(), mgr.GetHTTPClient())
	if err != nil {
		return err
	}
	// Both status controllers take the same settings, but each its own
	// value: a ProfileStatusController keeps the times of its profiles.
	statusController := func() profilestatus.ProfileStatusController {
		return profilestatus.ProfileStatusController{
			ApplyGate:      gate,
			ParentStatuses: parentStatuses,
			Client:         operatorClient,
			EventRecorder:  recorder,
			Clock:          cfg.Clock,
			Metrics:        operatorMetrics,
			StatusRecheck:  cfg.StatusRecheck,
		}
	}
	if err := (&profilestatus.CloudProfileReconciler{ProfileStatusController: statusController()}).SetupWithManager(mgr, cfg.controllerOptions()); err != nil {
		return fmt.Errorf("set up CloudProfile controller: %w", err)
	}
	if err := (&profilestatus.NamespacedCloudProfileReconciler{ProfileStatusController: statusController()}).SetupWithManager(ctx, mgr, cfg.controllerOptions()); err != nil {
		return fmt.Errorf("set up NamespacedCloudProfile controller: %w", err)
	}
	fetcher, err := gitsource.New(cfg.StoragePath, gitsource.FetcherOptions{
		AllowCredentialsOverHTTP: cfg.AllowCredentialsOverHTTP,
		MaxCheckoutSize:          cfg.MaxCheckoutSize,
	})
	if err != nil {
		return fmt.Errorf("open Git cache at %s: %w", cfg.StoragePath, err)
	}
	builds, err := sandbox.New(cfg.Builds)
	if err != nil {
		return err
	}
	var trigger chan event.GenericEvent
	if cfg.ReceiverAddr != "" {
		trigger = make(chan event.GenericEvent, 64)
		// The receiver keeps its own, real clock (the default): its token
		// TTL and trigger spacing bound costs in real time, even where
		// cfg.Clock is fixed.
		pushReceiver := &receiver.Receiver{
			Addr:         cfg.ReceiverAddr,
			Client:       mgr.GetClient(),
			SecretReader: mgr.GetAPIReader(),
			Trigger:      trigger,
			Elected:      mgr.Elected(),
		}
		if cfg.MetricsRegistry != nil {
			pushReceiver.Metrics = receiver.NewMetrics()
			if err := cfg.MetricsRegistry.Register(pushReceiver.Metrics); err != nil {
				return fmt.Errorf("register push receiver metrics: %w", err)
			}
		}
		// Bind now, so a taken port fails the start-up, not the manager later.
		if err := pushReceiver.Listen(); err != nil {
			return err
		}
		if err := mgr.Add(pushReceiver); err != nil {
			return fmt.Errorf("add push receiver: %w", err)
		}
	}
	syncs := &profilesync.ProfileSyncReconciler{
		ApplyGate:                gate,
		Client:                   operatorClient,
		SecretReader:             mgr.GetAPIReader(),
		APIReader:                mgr.GetAPIReader(),
		ApplyConcurrency:         cfg.MaxConcurrentReconciles,
		Builds:                   builds,
		RefusalRecheck:           cfg.RefusalRecheck,
		DecodedCacheSize:         cfg.DecodedCacheSize,
		MaxHold:                  cfg.MaxHold,
		EventRecorder:            recorder,
		Fetcher:                  fetcher,
		Clock:                    cfg.Clock,
		ClusterProfilesNamespace: cfg.ClusterProfilesNamespace,
		DefaultServiceAccount:    cfg.DefaultServiceAccount,
		ServiceAccounts:          profilesync.NewServiceAccountClients(mgr.GetConfig(), mgr.GetScheme(), mgr.GetRESTMapper(), mgr.GetAPIReader()),
		Trigger:                  trigger,
		Metrics:                  operatorMetrics,
	}
	if err := syncs.SetupWithManager(ctx, mgr, cfg.controllerOptions()); err != nil {
		return fmt.Errorf("set up ProfileSync controller: %w", err)
	}
	if cfg.MetricsRegistry != nil {
		if err := cfg.MetricsRegistry.Register(syncs.DecodedRevisionsCollector()); err != nil {
			return fmt.Errorf("register decoded revisions metrics: %w", err)
		}
	}
	return setupVersionUpdates(mgr, cfg, operatorClient, recorder, fetcher, builds)
}

// setupVersionUpdates registers the VersionUpdate reconciler, which reaches
// the profiles repositories through the ProfileSyncs' Git cache.
func setupVersionUpdates(mgr ctrl.Manager, cfg Config, operatorClient client.Client, recorder record.EventRecorder, fetcher *gitsource.Fetcher, builds *sandbox.Runner) error {
	limits := builds.Limits()
	var proposals *metrics.Proposals
	if cfg.MetricsRegistry != nil {
		proposals = metrics.NewProposals()
		if err := cfg.MetricsRegistry.Register(proposals); err != nil {
			return fmt.Errorf("register version update metrics: %w", err)
		}
	}
	updates := &versionupdate.Reconciler{
		Client:        operatorClient,
		SecretReader:  mgr.GetAPIReader(),
		EventRecorder: recorder,
		Fetcher:       fetcher,
		Clock:         cfg.Clock,
		Metrics:       proposals,
		ReadLimits:    repofile.Limits{MaxFileSize: limits.MaxFileSize, MaxTotalSize: limits.MaxRenderedSize},
		MaxTreeSize:   cfg.MaxCheckoutSize,
		SourceLimits:  sources.DefaultLimits(),
		GitTimeout:    v1alpha1.DefaultSyncTimeout,
		Build: func(ctx context.Context, root, path string) ([]profile.Document, error) {
			docs, _, err := builds.Build(ctx, root, path)
			return docs, err
		},
	}
	if err := updates.SetupWithManager(mgr, cfg.controllerOptions()); err != nil {
		return fmt.Errorf("set up VersionUpdate controller: %w", err)
	}
	return nil
}

// CacheOptions are the manager's cache settings for these controllers:
// managedFields are dropped from cached objects (the controllers never read
// them, and for large profiles they are a good part of the memory), and only
// ProfileSyncs matching watchSelector are watched (sharding), when it is set.
func CacheOptions(watchSelector labels.Selector) cache.Options {
	opts := cache.Options{DefaultTransform: cache.TransformStripManagedFields()}
	if watchSelector != nil && !watchSelector.Empty() {
		opts.ByObject = map[client.Object]cache.ByObject{
			&v1alpha1.ProfileSync{}: {Label: watchSelector},
		}
	}
	return opts
}
