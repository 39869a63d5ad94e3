// Package deploy checks the operator's deployment, config/default, against a
// real API server: the kustomize build is applied server-side, the pod
// template holds to the restricted Pod Security Standard, and the
// ServiceAccount has exactly the permissions the operator needs.
package deploy

import (
	"context"
	"fmt"
	"os"
	"sync"
	"testing"

	"go.uber.org/zap/zapcore"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
)

// The suite runs one envtest control plane without any CRDs: the tests
// install ProfileSync's CRDs from the kustomize build, as a user would.
var (
	restConfig *rest.Config
	k8sClient  client.Client
)

func TestMain(m *testing.M) {
	os.Exit(runSuite(m))
}

func runSuite(m *testing.M) int {
	if os.Getenv("KUBEBUILDER_ASSETS") == "" {
		fmt.Fprintln(os.Stderr, "KUBEBUILDER_ASSETS is not set: run the tests with 'make test', which builds kube-apiserver and etcd into bin/")
		return 1
	}
	ctrl.SetLogger(zap.New(zap.WriteTo(os.Stderr), zap.UseDevMode(false), zap.Level(zapcore.ErrorLevel)))

	testEnv := &envtest.Environment{}
	var err error
	restConfig, err = testEnv.Start()
	if err != nil {
		fmt.Fprintf(os.Stderr, "start envtest: %v\n", err)
		return 1
	}
	defer func() {
		if err := testEnv.Stop(); err != nil {
			fmt.Fprintf(os.Stderr, "stop envtest: %v\n", err)
		}
	}()
	k8sClient, err = client.New(restConfig, client.Options{})
	if err != nil {
		fmt.Fprintf(os.Stderr, "create client: %v\n", err)
		return 1
	}
	return m.Run()
}

// warningRecorder collects the warnings the API server returns (for example
// from Pod Security admission at the namespace's warn level).
type warningRecorder struct {
	mu       sync.Mutex
	messages []string
}

func (w *warningRecorder) HandleWarningHeaderWithContext(_ context.Context, _ int, _ string, message string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.messages = append(w.messages, message)
}

// take returns the warnings recorded since the last call and forgets them.
func (w *warningRecorder) take() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	messages := w.messages
	w.messages = nil
	return messages
}

// clientWithWarnings is a client whose API server warnings go to the returned
// recorder instead of the log.
func clientWithWarnings(t *testing.T) (client.Client, *warningRecorder) {
	t.Helper()
	recorder := &warningRecorder{}
	config := rest.CopyConfig(restConfig)
	config.WarningHandler = nil
	config.WarningHandlerWithContext = recorder
	c, err := client.New(config, client.Options{})
	if err != nil {
		t.Fatalf("create client: %v", err)
	}
	return c, recorder
}
