package merge

import (
	"flag"
	"os"
	"path/filepath"
	"testing"

	. "github.com/onsi/gomega"
	"sigs.k8s.io/yaml"

	v1alpha1 "github.com/profilesync/profilesync/api/v1alpha1"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/merge from the current output")

// mergeGoldenDir holds one directory per example: parent.yaml (a
// CloudProfile) and namespaced.yaml (a NamespacedCloudProfile) are inputs;
// merged.yaml is the spec the merge produces and errors.txt the errors
// Namespaced reports, one per line (empty when the merge is accepted).
const mergeGoldenDir = "testdata/merge"

func TestMergeNamespacedGolden(t *testing.T) {
	dirs, err := os.ReadDir(mergeGoldenDir)
	if err != nil {
		t.Fatalf("reading %s: %v", mergeGoldenDir, err)
	}
	for _, dir := range dirs {
		if !dir.IsDir() {
			continue
		}
		t.Run(dir.Name(), func(t *testing.T) {
			g := NewWithT(t)
			example := filepath.Join(mergeGoldenDir, dir.Name())
			parent, ncp := readMergeExample(t, example)

			merged, errs := mergeOverrides(&parent.Spec, &ncp.Spec)
			g.Expect(errs).To(BeEmpty(), "the GEP examples are valid overrides")
			mergedYAML, err := yaml.Marshal(merged)
			g.Expect(err).NotTo(HaveOccurred())

			accepted, validationErrs := Namespaced(&parent.Spec, &ncp.Spec)
			errorsText := errorLines(validationErrs)
			if len(validationErrs) == 0 {
				g.Expect(accepted).To(Equal(merged), "Namespaced returns the merge when it validates")
			}

			assertGolden(t, filepath.Join(example, "merged.yaml"), mergedYAML)
			assertGolden(t, filepath.Join(example, "errors.txt"), []byte(errorsText))
		})
	}
}

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

// assertGolden compares got with the golden file, or rewrites the file when
// the test runs with -update.
func assertGolden(t *testing.T, path string, got []byte) {
	t.Helper()
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatalf("writing golden file %s: %v", path, err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("reading golden file %s (run the test with -update to create it): %v", path, err)
	}
	NewWithT(t).Expect(string(got)).To(Equal(string(want)), "golden file %s differs; run with -update if the change is intended", path)
}
