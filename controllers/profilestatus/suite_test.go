package profilestatus

import (
	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/record"
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
)

// UseSuite keeps the operator suite in the package's variables; TestMain
// calls it before the tests run.
func UseSuite(op *testenv.Operator) {
	restConfig, k8sClient, testScheme = op.Config, op.Client, op.Scheme
	testClock, testMetrics = op.Clock, op.Metrics
}

// directCloudProfileReconciler is a reconciler a test calls itself, with an
// uncached client (so it sees its own writes at once) and a fake event recorder
// to read the events it emits.
func directCloudProfileReconciler() (*CloudProfileReconciler, *record.FakeRecorder) {
	recorder := record.NewFakeRecorder(100)
	return &CloudProfileReconciler{ProfileStatusController{Client: k8sClient, EventRecorder: recorder, Clock: testClock}}, recorder
}

func directNamespacedReconciler() (*NamespacedCloudProfileReconciler, *record.FakeRecorder) {
	recorder := record.NewFakeRecorder(100)
	return &NamespacedCloudProfileReconciler{ProfileStatusController{Client: k8sClient, EventRecorder: recorder, Clock: testClock}}, recorder
}
