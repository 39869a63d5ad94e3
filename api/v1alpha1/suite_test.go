package v1alpha1_test

import (
	"os"
	"testing"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/profilesync/profilesync/test/testenv"
)

// k8sClient talks to the envtest API server that TestMain starts with the
// CRDs of config/crd/bases installed.
var k8sClient client.Client

func TestMain(m *testing.M) {
	os.Exit(testenv.Run(m, func(env *testenv.Env) { k8sClient = env.Client }))
}
