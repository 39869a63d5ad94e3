package merge

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"

	v1alpha1 "github.com/profilesync/profilesync/api/v1alpha1"
	"github.com/profilesync/profilesync/internal/lifecycle"
)

// FuzzMergeNamespaced merges a parent spec and a namespaced spec, both given
// as JSON, and checks:
//
//   - the merge never panics, never modifies its inputs and is deterministic;
//   - a merge with errors returns no spec, one without errors returns a spec
//     whose type, regions and providerConfig are the parent's;
//   - when the parent validates and the override merges without errors of
//     its own, the merged spec validates too. The merge guarantees this for
//     everything it rewrites; by design (docs/semantics.md §3) two things are left to
//     the validation of the merged spec and are therefore allowed to fail it:
//     machine images and image versions the override adds, and an
//     expirationDate the override puts on the parent's highest Kubernetes
//     version.
//
// The seeds are the GEP examples under testdata/merge and the fixtures of the
// table tests.
func FuzzMergeNamespaced(f *testing.F) {
	for _, seed := range mergeFuzzSeeds(f) {
		f.Add(seed[0], seed[1])
	}
	f.Fuzz(func(t *testing.T, parentJSON, ncpJSON []byte) {
		var parent v1alpha1.CloudProfileSpec
		var ncp v1alpha1.NamespacedCloudProfileSpec
		if json.Unmarshal(parentJSON, &parent) != nil || json.Unmarshal(ncpJSON, &ncp) != nil {
			return
		}
		parentBefore, ncpBefore := parent.DeepCopy(), ncp.DeepCopy()

		merged, errs := Namespaced(&parent, &ncp)

		if !equality.Semantic.DeepEqual(&parent, parentBefore) || !equality.Semantic.DeepEqual(&ncp, ncpBefore) {
			t.Fatalf("the merge modified its inputs")
		}
		again, errsAgain := Namespaced(&parent, &ncp)
		if !equality.Semantic.DeepEqual(merged, again) || errorLines(errs) != errorLines(errsAgain) {
			t.Fatalf("two merges of the same inputs differ")
		}
		if len(errs) > 0 {
			if merged != nil {
				t.Fatalf("a merge with errors returned a spec: %v", errs)
			}
		} else {
			if merged == nil {
				t.Fatalf("a merge without errors returned no spec")
			}
			if merged.Type != parent.Type || !equality.Semantic.DeepEqual(merged.Regions, parent.Regions) ||
				!equality.Semantic.DeepEqual(merged.ProviderConfig, parent.ProviderConfig) {
				t.Fatalf("type, regions and providerConfig must come from the parent")
			}
		}

		if parentErrs, _ := lifecycle.ValidateCloudProfileSpec(&parent, field.NewPath("spec")); len(parentErrs) > 0 {
			return
		}
		if _, overrideErrs := mergeOverrides(&parent, &ncp); len(overrideErrs) > 0 {
			return
		}
		for _, e := range errs {
			if !leftToMergedValidation(e, &parent, &ncp) {
				t.Fatalf("a valid parent and an accepted override merged into an invalid spec: %v", e)
			}
		}
	})
}

// leftToMergedValidation reports whether an error of the merged spec is one
// the merge leaves to validation by design (see FuzzMergeNamespaced).
func leftToMergedValidation(e *field.Error, parent *v1alpha1.CloudProfileSpec, ncp *v1alpha1.NamespacedCloudProfileSpec) bool {
	// What an added image or version lacks that Gardener requires
	// (addedVersionFields) is checked with the merged spec, as in Gardener.
	if e.Type == field.ErrorTypeRequired && strings.HasPrefix(e.Field, "spec.machineImages[") &&
		(strings.HasSuffix(e.Field, ".cri") || strings.HasSuffix(e.Field, ".architectures") || strings.HasSuffix(e.Field, ".updateStrategy")) {
		return true
	}
	for i := len(parent.MachineImages); i < len(parent.MachineImages)+len(ncp.MachineImages); i++ {
		if strings.HasPrefix(e.Field, fmt.Sprintf("status.cloudProfileSpec.machineImages[%d]", i)) {
			return true
		}
	}
	// Paths name each entry as lifecycle.EntryPath does: versions[3] (1.33.7).
	merged := field.NewPath("status", "cloudProfileSpec")
	for i, image := range parent.MachineImages {
		prefix := lifecycle.EntryPath(merged, "machineImages", i, image.Name).String() + ".versions["
		if strings.HasPrefix(e.Field, prefix) && addsImageVersion(image, ncp.MachineImages) {
			return true
		}
	}
	if ncp.Kubernetes != nil {
		for i, v := range parent.Kubernetes.Versions {
			expiration := lifecycle.EntryPath(merged.Child("kubernetes"), "versions", i, v.Version).Child("expirationDate").String()
			if e.Field == expiration && setsExpirationDate(v.Version, ncp.Kubernetes.Versions) {
				return true
			}
		}
	}
	return false
}

func addsImageVersion(image v1alpha1.MachineImage, overrides []v1alpha1.NamespacedMachineImage) bool {
	for _, o := range overrides {
		if o.Name != image.Name {
			continue
		}
		for _, v := range o.Versions {
			if imageVersionIndex(image.Versions, v.Version) < 0 {
				return true
			}
		}
	}
	return false
}

func setsExpirationDate(version string, overrides []v1alpha1.ExpirableVersion) bool {
	for _, o := range overrides {
		if o.Version == version && o.ExpirationDate != nil {
			return true
		}
	}
	return false
}

// mergeFuzzSeeds returns (parent, namespaced) JSON pairs from the golden
// examples and from the table tests' fixtures.
func mergeFuzzSeeds(f *testing.F) [][2][]byte {
	var seeds [][2][]byte
	add := func(parent *v1alpha1.CloudProfileSpec, ncp *v1alpha1.NamespacedCloudProfileSpec) {
		parentJSON, err := json.Marshal(parent)
		if err != nil {
			f.Fatalf("encoding seed parent: %v", err)
		}
		ncpJSON, err := json.Marshal(ncp)
		if err != nil {
			f.Fatalf("encoding seed override: %v", err)
		}
		seeds = append(seeds, [2][]byte{parentJSON, ncpJSON})
	}

	dirs, err := os.ReadDir(mergeGoldenDir)
	if err != nil {
		f.Fatalf("reading %s: %v", mergeGoldenDir, err)
	}
	for _, dir := range dirs {
		if !dir.IsDir() {
			continue
		}
		var parent v1alpha1.CloudProfile
		var ncp v1alpha1.NamespacedCloudProfile
		for file, into := range map[string]any{"parent.yaml": &parent, "namespaced.yaml": &ncp} {
			data, err := os.ReadFile(filepath.Join(mergeGoldenDir, dir.Name(), file))
			if err != nil {
				f.Fatalf("reading seed: %v", err)
			}
			if err := yaml.Unmarshal(data, into); err != nil {
				f.Fatalf("decoding seed %s/%s: %v", dir.Name(), file, err)
			}
		}
		add(&parent.Spec, &ncp.Spec)
	}

	parent := guardedParent()
	ncp := namespaced()
	ncp.Kubernetes = &v1alpha1.KubernetesSettings{Versions: []v1alpha1.ExpirableVersion{
		staged("1.30.0", stage(supported, "2024-01-01T00:00:00Z"), stage(deprecated, "2026-06-01T00:00:00Z")),
		deprecatedAPIVersion("1.31.0", "", "2027-01-01T00:00:00Z"),
	}}
	ncp.MachineImages = []v1alpha1.NamespacedMachineImage{
		{Name: "gardenlinux", UpdateStrategy: strategy(v1alpha1.UpdateStrategyPatch), Versions: []v1alpha1.MachineImageVersion{
			imageVersion(deprecatedAPIVersion("1592.1.0", "", "2030-01-01T00:00:00Z")),
			imageVersion(staged("1443.2.0", stage(deprecated, "2024-01-01T00:00:00Z"))),
			imageVersion(plainVersion("1312.3.0")),
		}},
		{Name: "ubuntu", Versions: []v1alpha1.MachineImageVersion{imageVersion(plainVersion("24.4"))}},
	}
	ncp.MachineTypes = []v1alpha1.MachineType{machineType("m5.large", "8"), machineType("m5.xlarge", "16")}
	ncp.VolumeTypes = []v1alpha1.VolumeType{{Name: "io2", Class: "premium"}}
	ncp.CABundle = ptr.To(testCertificate(f, "override"))
	add(parent, ncp)
	return seeds
}
