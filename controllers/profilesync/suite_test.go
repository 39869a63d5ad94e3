package profilesync

import (
	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/profilesync/profilesync/test/testenv"
)

// The package's tests run on the operator suite (test/operatorsuite, started
// by TestMain in main_test.go): one envtest control plane and one manager
// with every reconciler, as in production, on testClock. Tests that need to
// drive a reconcile at an exact instant also call the reconcilers directly,
// with the same clock, so both always agree on "now".
var (
	restConfig *rest.Config
	k8sClient  client.Client // uncached: reads what the API server has now
	testClock  *testenv.SwitchableClock
	testScheme *runtime.Scheme
	// testMetrics is where the suite manager's controllers register their
	// metrics (controllers/metrics); the tests read it.
	testMetrics *prometheus.Registry
	// managerClient is the suite manager's client: it reads the manager's
	// cache and its indexes, as the reconcilers do.
	managerClient client.Client
	// receiverURL is the base URL of the suite manager's push receiver.
	receiverURL string
	// suiteRegistered are the collectors SetupAll registered in testMetrics
	// (observability_test.go).
	suiteRegistered *testenv.RecordingRegisterer
)

// clusterProfilesNamespace is where the tests' landscape ProfileSyncs live.
const clusterProfilesNamespace = testenv.OperatorNamespace

// UseSuite keeps the operator suite in the package's variables; TestMain
// calls it before the tests run.
func UseSuite(op *testenv.Operator) {
	restConfig, k8sClient, testScheme = op.Config, op.Client, op.Scheme
	testClock, testMetrics, managerClient, receiverURL = op.Clock, op.Metrics, op.ManagerClient, op.ReceiverURL
	suiteRegistered = op.Registered
}
