// Package deploy checks the operator's deployment, config/default (and
// config/default-certmanager), against a real API server: the kustomize build
// is applied server-side, the pod template holds to the restricted Pod
// Security Standard, the ServiceAccount has exactly the permissions the
// operator needs, and the operator binary, started with the Deployment's
// arguments, provisions its webhook certificate and serves admission.
package deploy

import (
	"context"
	"os"
	"sync"
	"testing"

	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/profilesync/profilesync/test/testenv"
)

// The suite runs one envtest control plane without any CRDs: the tests
// install ProfileSync's CRDs from the kustomize build, as a user would.
var (
	restConfig *rest.Config
	k8sClient  client.Client
)

func TestMain(m *testing.M) {
	os.Exit(testenv.Run(m, func(env *testenv.Env) {
		restConfig, k8sClient = env.Config, env.Client
	}, testenv.WithErrorLog(), testenv.WithoutCRDs(), testenv.WithScheme(clientgoscheme.Scheme)))
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
