package versionupdate

import (
	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/profilesync/profilesync/test/testenv"
)

// The package's tests run on the operator suite (test/operatorsuite, started
// by TestMain in main_test.go): one envtest control plane and one manager
// with every reconciler, as in production, on the real clock.
var (
	k8sClient client.Client // uncached: reads what the API server has now
	// testMetrics is where the suite manager's controllers register their
	// metrics (controllers/metrics); the tests read it.
	testMetrics *prometheus.Registry
)

// UseSuite keeps the operator suite in the package's variables; TestMain
// calls it before the tests run.
func UseSuite(op *testenv.Operator) {
	k8sClient, testMetrics = op.Client, op.Metrics
}
