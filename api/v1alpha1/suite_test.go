package v1alpha1_test

import (
	"flag"
	"os"
	"testing"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/profilesync/profilesync/test/testenv"
)

// k8sClient talks to the envtest API server that TestMain starts with the
// CRDs of config/crd/bases installed.
var k8sClient client.Client

func TestMain(m *testing.M) {
	// A fuzz worker process runs only its fuzz target (FuzzParseHold), which
	// needs no API server. Started in every worker, the control plane
	// outlasts the fuzzing coordinator's patience: make fuzz hung on it.
	flag.Parse()
	if worker := flag.Lookup("test.fuzzworker"); worker != nil && worker.Value.String() == "true" {
		os.Exit(m.Run())
	}
	os.Exit(testenv.Run(m, func(env *testenv.Env) { k8sClient = env.Client }))
}
