// Package operatorsuite starts the envtest suite of the controllers'
// packages: one control plane and one manager with every controller, set up
// by controllers.SetupAll as in production, on a clock the tests move. Each
// package's TestMain (in its external test package, since this package
// imports the controllers) runs it and hands the result to the package's
// in-package tests. Only tests import it.
package operatorsuite

import (
	"context"
	"fmt"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/profilesync/profilesync/controllers"
	"github.com/profilesync/profilesync/test/testenv"
)

// Run starts the control plane and the manager, hands them to use, runs the
// tests and stops both; it returns the exit code.
func Run(m *testing.M, use func(*testenv.Operator)) int {
	op := &testenv.Operator{Clock: &testenv.SwitchableClock{}, Metrics: prometheus.NewRegistry()}
	op.Registered = &testenv.RecordingRegisterer{Registerer: op.Metrics}
	return testenv.Run(m, func(env *testenv.Env) {
		op.Env = env
		use(op)
	}, testenv.WithErrorLog(), testenv.WithManager(testenv.ManagerOptions{Setup: func(ctx context.Context, mgr ctrl.Manager, env *testenv.Env) error {
		return setup(ctx, mgr, env, op)
	}}))
}

func setup(ctx context.Context, mgr ctrl.Manager, env *testenv.Env, op *testenv.Operator) error {
	cacheDir, err := env.TempDir("profilesync-cache-")
	if err != nil {
		return fmt.Errorf("create Git cache: %w", err)
	}
	receiverAddr, err := testenv.FreeLoopbackAddress()
	if err != nil {
		return err
	}
	op.ReceiverURL = "http://" + receiverAddr
	op.ManagerClient = mgr.GetClient()
	return controllers.SetupAll(ctx, mgr, controllers.Config{
		Options:                  controllers.Options{MaxConcurrentReconciles: 4},
		Clock:                    op.Clock,
		StoragePath:              cacheDir,
		ClusterProfilesNamespace: testenv.OperatorNamespace,
		// The test Git servers are plain http on loopback.
		AllowCredentialsOverHTTP: true,
		ReceiverAddr:             receiverAddr,
		MaxCheckoutSize:          testenv.OperatorMaxCheckoutSize,
		MetricsRegistry:          op.Registered,
	})
}
