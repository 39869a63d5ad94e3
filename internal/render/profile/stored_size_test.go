package profile

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	v1alpha1 "github.com/profilesync/profilesync/api/v1alpha1"
	"github.com/profilesync/profilesync/internal/render/merge"
)

// cloudProfileObject is a CloudProfile named name with spec, from file.
func cloudProfileObject(file, name string, spec *v1alpha1.CloudProfileSpec) Object {
	return Object{File: file, CloudProfile: &v1alpha1.CloudProfile{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: *spec}}
}

// namespacedObject is a NamespacedCloudProfile team/name of parent with spec
// (namespaced() when nil), from file.
func namespacedObject(file, name, parent string, spec *v1alpha1.NamespacedCloudProfileSpec) Object {
	if spec == nil {
		spec = namespaced()
	}
	spec.Parent.Name = parent
	return Object{File: file, NamespacedCloudProfile: &v1alpha1.NamespacedCloudProfile{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "team"}, Spec: *spec}}
}

// withProviderConfigOf is profile() with a providerConfig that carries a
// string of size bytes: a profile whose size is nearly all content, with
// few fields for managedFields.
func withProviderConfigOf(size int) *v1alpha1.CloudProfileSpec {
	spec := profile()
	spec.ProviderConfig = &runtime.RawExtension{Raw: []byte(`{"blob":"` + strings.Repeat("x", size) + `"}`)}
	return spec
}

// withStagedImageVersions is profile() with images of versions each, every
// version with a two-stage lifecycle: many small keyed entries, the shape
// whose managedFields and status are larger than its spec.
func withStagedImageVersions(images, versions int) *v1alpha1.CloudProfileSpec {
	spec := profile()
	spec.MachineImages = nil
	for i := range images {
		image := v1alpha1.MachineImage{Name: fmt.Sprintf("image-%d", i)}
		for j := range versions {
			image.Versions = append(image.Versions, v1alpha1.MachineImageVersion{
				ExpirableVersion: staged(fmt.Sprintf("%d.%d.0", i, j),
					stage(v1alpha1.ClassificationSupported, "2030-01-01T00:00:00Z"),
					stage(v1alpha1.ClassificationDeprecated, "2031-01-01T00:00:00Z")),
				Architectures: []string{"amd64"},
			})
		}
		spec.MachineImages = append(spec.MachineImages, image)
	}
	return spec
}

// withMachineTypes is namespaced() adding n machine types of long names.
func withMachineTypes(n int) *v1alpha1.NamespacedCloudProfileSpec {
	spec := namespaced()
	for i := range n {
		spec.MachineTypes = append(spec.MachineTypes, machineType(fmt.Sprintf("team-machine-type-with-a-long-descriptive-name-%04d", i), "2"))
	}
	return spec
}

func jsonSize(t *testing.T, v any) int {
	t.Helper()
	data, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return len(data)
}

// sizeProblemLine matches the size problem of the object ref of file.
func sizeProblemLine(file, ref string) string {
	return `^` + file + `: ` + ref + `: Too long: \d+ bytes as the API server would store it \(JSON with metadata, managedFields and status\), more than the 1441792 it can store \(etcd's default request limit of 1.5 MiB less 128 KiB for server metadata\)`
}

func TestValidateRefusesWhatTheAPIServerCannotStore(t *testing.T) {
	// The parent of the namespaced rows: it fits, with 30 KiB to spare.
	const parentBlob = MaxStoredSize - 30<<10
	inCluster := func(name string) (*v1alpha1.CloudProfileSpec, bool, error) {
		return withProviderConfigOf(parentBlob), name == "in-cluster", nil
	}
	tests := []struct {
		name    string
		objects []Object
		lookup  ParentLookup
		// want matches the problems, in order.
		want []string
	}{{
		name:    "a profile of ordinary size",
		objects: []Object{cloudProfileObject("p.yaml", "local", profile()), namespacedObject("n.yaml", "team", "local", nil)},
	}, {
		name:    "a profile of 1.3 MiB of content",
		objects: []Object{cloudProfileObject("p.yaml", "local", withProviderConfigOf(1300<<10))},
	}, {
		name:    "a profile of 1.5 MiB of content",
		objects: []Object{cloudProfileObject("p.yaml", "big", withProviderConfigOf(1536<<10))},
		want:    []string{sizeProblemLine("p.yaml", "CloudProfile/big") + `: split the profile or shorten it$`},
	}, {
		name: "a profile of under 600 KiB whose managedFields and status take it over",
		// 26 images of 100 staged versions: the managedFields of every
		// keyed entry and the status of every version triple the JSON.
		objects: []Object{cloudProfileObject("p.yaml", "dense", withStagedImageVersions(26, 100))},
		want:    []string{sizeProblemLine("p.yaml", "CloudProfile/dense") + `: split the profile or shorten it$`},
	}, {
		name: "a small namespaced profile over a parent of the set that fits: its status holds both",
		objects: []Object{
			cloudProfileObject("p.yaml", "local", withProviderConfigOf(parentBlob)),
			namespacedObject("n.yaml", "small", "local", withMachineTypes(200)),
			namespacedObject("n.yaml", "plain", "local", nil),
		},
		want: []string{sizeProblemLine("n.yaml", "NamespacedCloudProfile/team/small") +
			`; \d+ bytes of it are status.cloudProfileSpec, the profile merged with its parent CloudProfile "local", which its status holds: shorten the parent or this profile$`},
	}, {
		name:    "a small namespaced profile over a parent in the cluster",
		objects: []Object{namespacedObject("n.yaml", "small", "in-cluster", withMachineTypes(200))},
		lookup:  inCluster,
		want:    []string{sizeProblemLine("n.yaml", "NamespacedCloudProfile/team/small") + `; .* its parent CloudProfile "in-cluster"`},
	}, {
		name: "a namespaced profile over a parent too large itself: both are named",
		objects: []Object{
			cloudProfileObject("p.yaml", "big", withProviderConfigOf(1536<<10)),
			namespacedObject("n.yaml", "child", "big", nil),
		},
		want: []string{
			sizeProblemLine("p.yaml", "CloudProfile/big"),
			sizeProblemLine("n.yaml", "NamespacedCloudProfile/team/child") + `; .* its parent CloudProfile "big"`,
		},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			report, err := Validate(tt.objects, tt.lookup, time.Time{})
			g.Expect(err).NotTo(HaveOccurred())
			matchers := make([]any, 0, len(tt.want))
			for _, want := range tt.want {
				matchers = append(matchers, MatchRegexp(want))
			}
			g.Expect(report.Problems.Lines()).To(HaveExactElements(matchers...))
		})
	}
}

// TestStoredSizeCountsManagedFieldsAndStatus pins what the estimate adds to
// the JSON Git holds, on the shapes of the table above: little for a profile
// of few fields, several times the JSON for one of many keyed entries, and
// for a namespaced profile the merged profile its status holds.
func TestStoredSizeCountsManagedFieldsAndStatus(t *testing.T) {
	g := NewWithT(t)

	blob := cloudProfileObject("p.yaml", "blob", withProviderConfigOf(1<<20))
	size, err := storedSize(blob, nil)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(size-int64(jsonSize(t, blob.CloudProfile))).To(BeNumerically("<", 4<<10), "a profile of few fields: only its small status and managedFields")

	dense := cloudProfileObject("p.yaml", "dense", withStagedImageVersions(26, 100))
	size, err = storedSize(dense, nil)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(jsonSize(t, dense.CloudProfile)).To(BeNumerically("<", 600<<10))
	g.Expect(size).To(BeNumerically(">", 3*jsonSize(t, dense.CloudProfile)), "the managedFields of every keyed entry and the status of every version")

	child := namespacedObject("n.yaml", "child", "blob", nil)
	merged, errs := merge.Namespaced(WithServerDefaults(&blob.CloudProfile.Spec), &child.NamespacedCloudProfile.Spec)
	g.Expect(errs).To(BeEmpty())
	withoutStatus, err := storedSize(child, nil)
	g.Expect(err).NotTo(HaveOccurred())
	withStatus, err := storedSize(child, merged)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(withStatus-withoutStatus).To(BeNumerically(">", 1<<20), "status.cloudProfileSpec holds the parent's megabyte")
}
