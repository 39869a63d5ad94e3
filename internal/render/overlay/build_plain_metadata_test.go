package overlay

import (
	"fmt"
	"sort"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	kusttest_test "sigs.k8s.io/kustomize/api/testutils/kusttest"
	"sigs.k8s.io/kustomize/api/types"
	"sigs.k8s.io/kustomize/kyaml/filesys"
	"sigs.k8s.io/yaml"

	"github.com/profilesync/profilesync/internal/render/profile"
	"github.com/profilesync/profilesync/test/builders"
)

// TestTheLinearPathLabelsWithKustomizesFieldSpecs: the field specs the
// linear path configures kustomize's label and annotation transformers
// with are those of kustomize's default configuration, which kustomize keeps
// internal and writes out only for its tests (kusttest's
// WriteLegacyConfigs): an upgrade of kustomize that changes them fails here.
func TestTheLinearPathLabelsWithKustomizesFieldSpecs(t *testing.T) {
	g := NewWithT(t)
	fs := filesys.MakeFsInMemory()
	kusttest_test.MakeHarnessWithFs(t, fs).WriteLegacyConfigs("/defaults.yaml")
	data, err := fs.ReadFile("/defaults.yaml")
	g.Expect(err).NotTo(HaveOccurred())
	// The whole default configuration: the labels' and annotations' part
	// of it, sorted as kustomize sorts it, and copied as MakeDefaultConfig
	// copies it.
	var read metadataFieldSpecs
	g.Expect(yaml.Unmarshal(data, &read)).To(Succeed())
	for _, list := range []types.FsSlice{read.CommonLabels, read.Labels, read.TemplateLabels, read.VolumeClaimTemplateLabels, read.CommonAnnotations} {
		sort.Sort(list)
	}
	kustomizes := metadataFieldSpecs{CommonLabels: read.CommonLabels.DeepCopy(), Labels: read.Labels.DeepCopy(), TemplateLabels: read.TemplateLabels.DeepCopy(),
		VolumeClaimTemplateLabels: read.VolumeClaimTemplateLabels.DeepCopy(), CommonAnnotations: read.CommonAnnotations.DeepCopy()}
	g.Expect(kustomizes.CommonLabels).NotTo(BeEmpty())
	g.Expect(kustomizes.CommonAnnotations).NotTo(BeEmpty())
	ours, err := defaultMetadataFieldSpecs()
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(ours).To(Equal(kustomizes))
}

// TestLabelsAndAnnotationsTakeTheLinearPathWhereItBuildsWhatKustomizeBuilds:
// labels, commonLabels and commonAnnotations, in an overlay and in its
// base, with patches before and after them, are built on the linear path,
// kustomize never running, to what kustomize builds: the same objects,
// the same fields set by patches (SetBy) and the same warnings. A field
// spec kustomize refuses, a label that fails or renames an object, and a
// configuration of other field specs send the build through kustomize.
func TestLabelsAndAnnotationsTakeTheLinearPathWhereItBuildsWhatKustomizeBuilds(t *testing.T) {
	const header = "apiVersion: core.profilesync.io/v1alpha1\nkind: CloudProfile\nmetadata:\n  name: a\n"
	tests := []struct {
		name string
		// base and overlay are the kustomizations' fields after their
		// resources.
		base, overlay string
		linear        bool
		// refused is kustomize's error, when it refuses the overlay.
		refused string
		// setBy are the fields the patches set in object a, when the
		// case is about them.
		setBy []string
		// warned is a warning the case is about.
		warned string
	}{
		{name: "the bench's label on every object", overlay: "labels:\n- pairs: {landscape: bench}\n", linear: true},
		{name: "labels with selectors", overlay: "labels:\n- pairs: {landscape: bench}\n  includeSelectors: true\n", linear: true},
		{name: "labels with templates", overlay: "labels:\n- pairs: {landscape: bench}\n  includeTemplates: true\n  includeVolumeClaimTemplates: true\n", linear: true},
		{name: "labels written to fields of their own", linear: true,
			overlay: "labels:\n- pairs: {landscape: bench}\n  fields:\n  - {kind: CloudProfile, path: metadata/annotations, create: true}\n  - {kind: NamespacedCloudProfile, path: spec/labels, create: true}\n"},
		{name: "commonLabels", overlay: "commonLabels: {landscape: bench, tier: silver}\n", linear: true},
		{name: "commonAnnotations", overlay: "commonAnnotations: {team: x, note: \"true\"}\n", linear: true},
		{name: "all three, commonLabels after labels on the same key", linear: true,
			overlay: "labels:\n- pairs: {landscape: bench}\n- pairs: {landscape: second, zone: a}\ncommonLabels: {landscape: common}\ncommonAnnotations: {team: x}\n"},
		{name: "an empty pair of labels", overlay: "labels:\n- pairs: {}\n", linear: true},
		{name: "labels in the base and in the overlay", base: "labels:\n- pairs: {landscape: base, level: base}\ncommonAnnotations: {from: base}\n",
			overlay: "labels:\n- pairs: {level: overlay}\ncommonAnnotations: {from: overlay}\n", linear: true},
		{name: "an overlay patch that selects by a label its base adds", base: "labels:\n- pairs: {landscape: base}\n", linear: true,
			overlay: "patches:\n- target: {labelSelector: landscape=base, name: a}\n  patch: |-\n    - {op: replace, path: /spec/type, value: patched}\n",
			setBy:   []string{"spec.type"}},
		{name: "a patch that selects by a label of its own kustomization, which comes after it", linear: true,
			overlay: "labels:\n- pairs: {landscape: overlay}\npatches:\n- target: {labelSelector: landscape=overlay}\n  patch: |-\n    - {op: replace, path: /spec/type, value: patched}\n",
			setBy:   []string{}},
		{name: "a patch that sets labels, one of which its kustomization's labels overwrite", linear: true,
			overlay: "labels:\n- pairs: {landscape: bench}\ncommonAnnotations: {team: x}\npatches:\n" +
				inlinePatch(header+"  labels: {landscape: patched, owner: me}\n  annotations: {team: x, reviewed: \"yes\"}\nspec:\n  type: patched\n"),
			setBy: []string{"metadata.labels.owner", "metadata.annotations.reviewed", "spec.type"}},
		{name: "a base's patch whose label the overlay's labels overwrite", linear: true,
			base:    "patches:\n" + inlinePatch(header+"  labels: {landscape: patched, owner: me}\n"),
			overlay: "labels:\n- pairs: {landscape: bench}\n",
			setBy:   []string{"metadata.labels.owner"}},
		{name: "a JSON patch by index under labels", linear: true,
			overlay: "commonLabels: {landscape: bench}\npatches:\n- target: {kind: CloudProfile, name: a}\n  patch: |-\n    - {op: add, path: /spec/kubernetes/versions/0/expirationDate, value: \"2030-01-01T00:00:00Z\"}\n",
			setBy:   []string{"spec.kubernetes.versions[0].expirationDate"},
			warned:  "/spec/kubernetes/versions/0 is 1.31.0; address it by version"},
		{name: "a field spec that conflicts with kustomize's own", overlay: "labels:\n- pairs: {landscape: bench}\n  fields:\n  - {path: metadata/labels}\n",
			refused: "conflicting fieldspecs"},
		{name: "a label kustomize cannot set", overlay: "labels:\n- pairs: {landscape: bench}\n  fields:\n  - {kind: CloudProfile, path: spec/type, create: true}\n",
			refused: "spec/type"},
		{name: "a label that renames an object", overlay: "labels:\n- pairs: {name: renamed}\n  fields:\n  - {kind: NamespacedCloudProfile, path: metadata, create: true}\n"},
		{name: "a configuration of other field specs", overlay: "commonLabels: {landscape: bench}\nconfigurations: [fields.yaml]\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			root := t.TempDir()
			builders.WriteTree(t, root, map[string]string{
				"base/kustomization.yaml": kustomization("a.yaml", "b.yaml", "team.yaml") + tt.base,
				"base/a.yaml":             strings.Replace(fmt.Sprintf(minimalCloudProfile, "a"), "  name: a\n", "  name: a\n  labels: {tier: gold}\n", 1),
				"base/b.yaml":             fmt.Sprintf(minimalCloudProfile, "b"),
				"base/team.yaml": "apiVersion: core.profilesync.io/v1alpha1\nkind: NamespacedCloudProfile\nmetadata:\n  name: team\n  namespace: t\n" +
					"spec:\n  parent: {kind: CloudProfile, name: a}\n  kubernetes:\n    versions:\n    - {version: 1.31.0}\n",
				"overlay/kustomization.yaml": kustomization("../base") + tt.overlay,
				"overlay/fields.yaml":        "commonLabels:\n- {kind: CloudProfile, path: metadata/annotations, create: true}\n",
			})
			built := buildBothWays(t, root, "overlay", DefaultLimits())
			if built.expectAsKustomizeBuilds(g, tt.refused, tt.linear) {
				return
			}
			if tt.setBy != nil {
				g.Expect(fieldsOf(built.linear[0].SetBy)).To(ConsistOf(tt.setBy), "the fields patches set in a, and no label the labels set again")
			}
			if tt.warned != "" {
				g.Expect(built.linearWarnings.Lines()).To(ContainElement(ContainSubstring(tt.warned)))
			}
		})
	}
}

// fieldsOf are the fields of sources.
func fieldsOf(sources []profile.FieldSource) []string {
	fields := make([]string, 0, len(sources))
	for _, source := range sources {
		fields = append(fields, source.Field)
	}
	return fields
}

// generatedMetadata are the labels, commonLabels and commonAnnotations
// fields of two kustomizations (a base and the overlay that lists it),
// written from a fuzzer's bytes.
type generatedMetadata struct {
	base, overlay string
	// plain says that they only add labels and annotations where
	// kustomize's defaults put them: the linear path must then build
	// what kustomize builds without falling back to it.
	plain bool
}

var (
	generatedKeys   = []string{"landscape", "tier", "owner", "name", "config.kubernetes.io/local-config", "example.com/team"}
	generatedValues = []string{"bench", "gold", "silver", "true", "", "1", "renamed"}
	// generatedFields are custom field specs of a labels entry: a label
	// written as an annotation, into a new map of a spec, into a scalar
	// (which kustomize refuses), into metadata itself (a rename), and one
	// that conflicts with kustomize's own.
	generatedFields = []string{
		"{kind: CloudProfile, path: metadata/annotations, create: true}",
		"{kind: NamespacedCloudProfile, path: spec/labels, create: true}",
		"{path: spec/type, create: true}",
		"{kind: NamespacedCloudProfile, path: metadata, create: true}",
		"{path: metadata/labels}",
	}
)

// generateMetadata writes the metadata fields from spec: two bytes each,
// the first choosing the field, its options and the kustomization, the
// second the key, the value and the custom field spec.
func generateMetadata(spec []byte) generatedMetadata {
	type fields struct {
		labels                          []string
		commonLabels, commonAnnotations []string
	}
	var base, overlay fields
	// A key given twice in one mapping is refused before either build
	// (duplicateKeys): each is given once.
	seen := make(map[string]bool)
	generated := generatedMetadata{plain: true}
	for i := 0; i+1 < len(spec); i += 2 {
		op, arg := spec[i], spec[i+1]
		target := &overlay
		if op&4 != 0 {
			target = &base
		}
		key, value := generatedKeys[int(arg)%len(generatedKeys)], generatedValues[int(arg>>3)%len(generatedValues)]
		if key == "config.kubernetes.io/local-config" {
			generated.plain = false // kustomize drops what it marks
		}
		pair := fmt.Sprintf("%q: %q", key, value)
		switch op % 4 {
		case 0, 3:
			entry := "- pairs: {" + pair + "}\n"
			if op&8 != 0 {
				entry += "  includeSelectors: true\n"
			}
			if op&16 != 0 {
				entry += "  includeTemplates: true\n"
			}
			if op%4 == 3 {
				entry += "  fields:\n  - " + generatedFields[int(arg>>5)%len(generatedFields)] + "\n"
				generated.plain = false
			}
			target.labels = append(target.labels, entry)
		case 1, 2:
			field := fmt.Sprintf("%t %d %s", target == &base, op%4, key)
			if seen[field] {
				continue
			}
			seen[field] = true
			if op%4 == 1 {
				target.commonLabels = append(target.commonLabels, pair)
			} else {
				target.commonAnnotations = append(target.commonAnnotations, pair)
			}
		}
	}
	write := func(f fields) string {
		var b strings.Builder
		if len(f.labels) > 0 {
			b.WriteString("labels:\n" + strings.Join(f.labels, ""))
		}
		if len(f.commonLabels) > 0 {
			b.WriteString("commonLabels: {" + strings.Join(f.commonLabels, ", ") + "}\n")
		}
		if len(f.commonAnnotations) > 0 {
			b.WriteString("commonAnnotations: {" + strings.Join(f.commonAnnotations, ", ") + "}\n")
		}
		return b.String()
	}
	generated.base, generated.overlay = write(base), write(overlay)
	return generated
}
