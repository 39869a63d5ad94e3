package testenv

import (
	"slices"
	"sync"

	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// OperatorNamespace is where the operator suites' landscape ProfileSyncs
// live: the suite manager's cluster profiles namespace.
const OperatorNamespace = "profilesync-system"

// OperatorMaxCheckoutSize is the suite manager's --max-checkout-size: small,
// so that an oversized repository costs a test little.
const OperatorMaxCheckoutSize = 4 << 20

// Operator is what the tests of an operator suite read: the control plane,
// and the manager that runs every controller as in production (see
// test/operatorsuite, which starts it). It is a type of this package, which
// imports none of the controllers, so that the controllers' in-package tests
// can take it.
type Operator struct {
	*Env
	// ManagerClient is the manager's client: it reads the manager's cache
	// and its indexes, as the reconcilers do.
	ManagerClient client.Client
	// Clock is the clock the controllers run on.
	Clock *SwitchableClock
	// Metrics is where the controllers register their metrics.
	Metrics *prometheus.Registry
	// Registered remembers the collectors the manager's SetupAll registered
	// in Metrics: what the operator exports, which the dashboard and alert
	// tests hold their expressions against.
	Registered *RecordingRegisterer
	// ReceiverURL is the base URL of the manager's push receiver.
	ReceiverURL string
}

// RecordingRegisterer registers collectors with a Registerer and remembers
// them, so a test knows every collector the operator's wiring registered.
type RecordingRegisterer struct {
	prometheus.Registerer
	mu         sync.Mutex
	collectors []prometheus.Collector
}

// Register registers c and remembers it.
func (r *RecordingRegisterer) Register(c prometheus.Collector) error {
	if err := r.Registerer.Register(c); err != nil {
		return err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.collectors = append(r.collectors, c)
	return nil
}

// MustRegister registers and remembers each collector, and panics when one
// cannot be registered, as prometheus.Registerer's does.
func (r *RecordingRegisterer) MustRegister(collectors ...prometheus.Collector) {
	for _, c := range collectors {
		if err := r.Register(c); err != nil {
			panic(err)
		}
	}
}

// Collectors are the collectors registered so far, in their order.
func (r *RecordingRegisterer) Collectors() []prometheus.Collector {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.collectors)
}
