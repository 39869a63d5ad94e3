package testenv

import (
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
	// ReceiverURL is the base URL of the manager's push receiver.
	ReceiverURL string
}
