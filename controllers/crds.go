package controllers

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net/http"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/go-logr/logr"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/rest"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"

	"github.com/profilesync/profilesync/config/crd"
)

// CRDReadyzCheck is the name of the readiness check of CRDGate.
const CRDReadyzCheck = "crds"

// crdRemindEvery is how many polls pass between two log lines that say the
// same thing: the first says what is missing, the reminders keep saying it
// for whoever reads the log later.
const crdRemindEvery = 10

// DefaultCRDBackoff paces the gate's polls: 1s, 2s, 4s, … up to 30s, so
// CRDs installed after the operator are picked up within half a minute, and
// an operator left waiting asks the API server twice a minute.
var DefaultCRDBackoff = wait.Backoff{Duration: time.Second, Factor: 2, Jitter: 0.1, Cap: 30 * time.Second, Steps: math.MaxInt32}

// ServerResources is the part of the discovery client the gate uses.
type ServerResources interface {
	ServerResourcesForGroupVersion(groupVersion string) (*metav1.APIResourceList, error)
}

// CRDGate holds the controllers back until the API server serves the kinds
// of the CustomResourceDefinitions they watch (config/crd), then registers
// them with the running manager. Registered before, they fail at once
// (their field index and watches find no kind) and the process exits: the
// Pod would crash-loop until someone installs the CRDs, and then wait out
// the kubelet's back-off. With the
// gate the Pod runs, says in its log which kinds it waits for, reports
// not ready on /readyz (healthy on /healthz, so it is not restarted), and
// starts the controllers within one poll of the CRDs being installed.
//
// It runs on every replica, elected or not (readiness is per Pod); the
// controllers it registers wait for the leader election as usual.
type CRDGate struct {
	// Discovery asks the API server what it serves; it must not cache.
	Discovery ServerResources
	// Setup registers the controllers with the manager; the gate calls it
	// once, when every kind is served, with the manager's context.
	Setup func(ctx context.Context) error
	// Log receives what the gate waits for.
	Log logr.Logger
	// Clock paces the polls; the real clock when nil.
	Clock clock.Clock
	// Backoff paces the polls; DefaultCRDBackoff when zero.
	Backoff wait.Backoff
	// Required are the kinds to wait for, by group and version; the kinds of
	// every CRD of config/crd when nil.
	Required map[schema.GroupVersion][]string

	mu    sync.Mutex
	ready bool
	// reason says why the gate is closed, once it has looked.
	reason error
}

// WaitForCRDs adds a CRDGate to mgr that calls setup once the API server
// serves the CRDs, and its readiness check (CRDReadyzCheck). Call it before
// mgr.Start, in place of registering the controllers directly.
func WaitForCRDs(mgr ctrl.Manager, backoff wait.Backoff, setup func(ctx context.Context) error) (*CRDGate, error) {
	client, err := discovery.NewDiscoveryClientForConfigAndClient(mgr.GetConfig(), mgr.GetHTTPClient())
	if err != nil {
		return nil, fmt.Errorf("create discovery client: %w", err)
	}
	gate := &CRDGate{Discovery: client, Setup: setup, Log: mgr.GetLogger().WithName("crds"), Backoff: backoff}
	if err := mgr.AddReadyzCheck(CRDReadyzCheck, gate.Check); err != nil {
		return nil, fmt.Errorf("add readiness check %s: %w", CRDReadyzCheck, err)
	}
	if err := mgr.Add(gate); err != nil {
		return nil, fmt.Errorf("add CRD gate: %w", err)
	}
	return gate, nil
}

// RequiredKinds are the kinds of every CRD of config/crd, by group and
// served version.
func RequiredKinds() (map[schema.GroupVersion][]string, error) {
	definitions, err := crd.Definitions()
	if err != nil {
		return nil, err
	}
	required := map[schema.GroupVersion][]string{}
	for _, d := range definitions {
		for _, v := range d.Spec.Versions {
			if v.Served {
				gv := schema.GroupVersion{Group: d.Spec.Group, Version: v.Name}
				required[gv] = append(required[gv], d.Spec.Names.Kind)
			}
		}
	}
	return required, nil
}

// NeedLeaderElection is false: every replica waits, and reports its
// readiness, by itself.
func (g *CRDGate) NeedLeaderElection() bool { return false }

// Check is the readiness check: it fails, saying why, until the controllers
// are registered.
func (g *CRDGate) Check(*http.Request) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	switch {
	case g.ready:
		return nil
	case g.reason != nil:
		return g.reason
	default:
		return errors.New("checking whether the API server serves the CustomResourceDefinitions")
	}
}

// closed records why the gate is closed; nil opens it.
func (g *CRDGate) closed(reason error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.ready, g.reason = reason == nil, reason
}

// Start polls until every required kind is served, then calls Setup. It
// returns Setup's error, which stops the manager, and nil when ctx ends
// first.
func (g *CRDGate) Start(ctx context.Context) error {
	required := g.Required
	if required == nil {
		var err error
		if required, err = RequiredKinds(); err != nil {
			return err
		}
	}
	clk := g.Clock
	if clk == nil {
		clk = clock.RealClock{}
	}
	backoff := g.Backoff
	if backoff.Duration <= 0 {
		backoff = DefaultCRDBackoff
	}
	var last string
	for polls := 0; ; polls++ {
		waiting := g.missing(required)
		if waiting == nil {
			break
		}
		g.closed(waiting)
		if message := waiting.Error(); message != last || polls%crdRemindEvery == 0 {
			g.Log.Info("waiting for the CustomResourceDefinitions; the controllers start as soon as the API server serves them",
				"reason", message, "install", "kubectl apply --server-side -k config/crd")
			last = message
		}
		select {
		case <-ctx.Done():
			return nil
		case <-clk.After(backoff.Step()):
		}
	}
	g.Log.Info("the API server serves every CustomResourceDefinition; starting the controllers")
	if err := g.Setup(ctx); err != nil {
		err = fmt.Errorf("set up the controllers: %w", err)
		g.closed(err)
		return err
	}
	g.closed(nil)
	return nil
}

// missing says which required kinds the API server does not serve, or
// that it could not tell; nil when it serves them all.
func (g *CRDGate) missing(required map[schema.GroupVersion][]string) error {
	versions := make([]schema.GroupVersion, 0, len(required))
	for gv := range required {
		versions = append(versions, gv)
	}
	sort.Slice(versions, func(i, j int) bool { return versions[i].String() < versions[j].String() })
	var missing []string
	for _, gv := range versions {
		served := map[string]bool{}
		list, err := g.Discovery.ServerResourcesForGroupVersion(gv.String())
		switch {
		case apierrors.IsNotFound(err): // the group or version is not served at all
		case err != nil:
			return fmt.Errorf("cannot tell whether the API server serves %s: %w", gv, err)
		default:
			for _, r := range list.APIResources {
				if !strings.Contains(r.Name, "/") { // not a subresource
					served[r.Kind] = true
				}
			}
		}
		var kinds []string
		for _, kind := range required[gv] {
			if !served[kind] {
				kinds = append(kinds, kind)
			}
		}
		if len(kinds) > 0 {
			sort.Strings(kinds)
			missing = append(missing, gv.String()+" "+strings.Join(kinds, ", "))
		}
	}
	if len(missing) == 0 {
		return nil
	}
	return fmt.Errorf("the API server does not serve %s: install their CustomResourceDefinitions (config/crd)", strings.Join(missing, "; "))
}

// NewRESTMapper is the manager's RESTMapper (ctrl.Options.MapperProvider):
// controller-runtime's dynamic mapper, which discovers a kind when first
// asked, backed by the CRDs compiled into the binary (config/crd) for the
// kinds the API server does not serve yet. The manager's cache asks whether
// ProfileSync is namespaced when it is built if it watches ProfileSyncs
// with a label selector (--watch-label-selector); without the fallback such
// a manager could not even be created before its CRDs are installed. Until
// the CRDs are served nothing asks the API server for these kinds: the
// CRDGate starts the controllers only then.
func NewRESTMapper(config *rest.Config, httpClient *http.Client) (meta.RESTMapper, error) {
	dynamic, err := apiutil.NewDynamicRESTMapper(config, httpClient)
	if err != nil {
		return nil, err
	}
	compiled, err := compiledRESTMapper()
	if err != nil {
		return nil, err
	}
	return meta.FirstHitRESTMapper{MultiRESTMapper: meta.MultiRESTMapper{dynamic, compiled}}, nil
}

// compiledRESTMapper maps the kinds of config/crd to their resources and
// scopes, as the API server will once the CRDs are installed.
func compiledRESTMapper() (meta.RESTMapper, error) {
	definitions, err := crd.Definitions()
	if err != nil {
		return nil, err
	}
	mapper := meta.NewDefaultRESTMapper(nil)
	for _, d := range definitions {
		scope := meta.RESTScopeRoot
		if d.Spec.Scope == apiextensionsv1.NamespaceScoped {
			scope = meta.RESTScopeNamespace
		}
		for _, v := range d.Spec.Versions {
			if !v.Served {
				continue
			}
			gv := schema.GroupVersion{Group: d.Spec.Group, Version: v.Name}
			mapper.AddSpecific(gv.WithKind(d.Spec.Names.Kind), gv.WithResource(d.Spec.Names.Plural), gv.WithResource(d.Spec.Names.Singular), scope)
		}
	}
	return mapper, nil
}
