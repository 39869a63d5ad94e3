package profile

import (
	"os"
	"path/filepath"
	"testing"

	"sigs.k8s.io/yaml"

	v1alpha1 "github.com/profilesync/profilesync/api/v1alpha1"
	"github.com/profilesync/profilesync/test/builders"
)

// The shared builders of profiles, versions and lifecycles, by the names
// this package's tests use.
var (
	stage                = builders.Stage
	deprecatedAPIVersion = builders.DeprecatedAPIVersion
	staged               = builders.Staged
	withNewest           = builders.WithNewest
	profile              = builders.Profile
	machineType          = builders.MachineType
	namespaced           = builders.Namespaced
)

const supported = v1alpha1.ClassificationSupported

// profilesRepo is the repository of profiles the tests build and decode.
var profilesRepo = filepath.Join("..", "..", "..", "test", "testdata", "profiles-repo")

// mergeExamples are the merge's golden examples (internal/render/merge), inputs a
// set is validated with here.
var mergeExamples = filepath.Join("..", "merge", "testdata", "merge")

const minimalCloudProfile = `apiVersion: core.profilesync.io/v1alpha1
kind: CloudProfile
metadata:
  name: %s
spec:
  type: local
  machineImages: [{name: local, versions: [{version: 1.0.0}]}]
  machineTypes: [{name: local, cpu: "1", gpu: "0", memory: 1Gi}]
  regions: [{name: local}]
  kubernetes:
    versions:
    - version: 1.31.0
`

func readMergeExample(t *testing.T, dir string) (v1alpha1.CloudProfile, v1alpha1.NamespacedCloudProfile) {
	t.Helper()
	var parent v1alpha1.CloudProfile
	var ncp v1alpha1.NamespacedCloudProfile
	readYAML(t, filepath.Join(dir, "parent.yaml"), &parent)
	readYAML(t, filepath.Join(dir, "namespaced.yaml"), &ncp)
	return parent, ncp
}

func readYAML(t *testing.T, path string, into any) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("reading %s: %v", path, err)
	}
	if err := yaml.UnmarshalStrict(data, into); err != nil {
		t.Fatalf("decoding %s: %v", path, err)
	}
}
