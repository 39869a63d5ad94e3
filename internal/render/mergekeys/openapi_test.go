package mergekeys

import (
	"bytes"
	"encoding/json"
	"sort"
	"testing"

	. "github.com/onsi/gomega"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"sigs.k8s.io/kustomize/kyaml/openapi"
	kyaml "sigs.k8s.io/kustomize/kyaml/yaml"

	v1alpha1 "github.com/profilesync/profilesync/api/v1alpha1"
	"github.com/profilesync/profilesync/config/crd"
	"github.com/profilesync/profilesync/internal/render/profile"
)

// withOpenAPISchema registers schema as kustomize's schema, the way a
// kustomization's openapi field does, for the duration of check. kustomize
// keeps one schema per process; this package's tests run one at a time and
// build nothing, so nothing else sets it meanwhile.
func withOpenAPISchema(t *testing.T, schema []byte, check func()) {
	t.Helper()
	openapi.ResetOpenAPI()
	defer openapi.ResetOpenAPI()
	if err := openapi.SetSchema(map[string]string{"path": "schema.json"}, schema, true); err != nil {
		t.Fatalf("registering the schema: %v", err)
	}
	check()
}

// mergeKeysAt returns kustomize's patch strategy and merge keys for the
// field at path (Elements for a list's entries) of kind in apiVersion.
func mergeKeysAt(apiVersion, kind string, path ...string) (string, []string, bool) {
	schema := openapi.SchemaForResourceType(kyaml.TypeMeta{APIVersion: apiVersion, Kind: kind})
	if schema == nil {
		return "", nil, false
	}
	field := schema.Lookup(path...)
	if field == nil {
		return "", nil, false
	}
	strategy, keys := field.PatchStrategyAndKeyList()
	return strategy, keys, true
}

func TestOpenAPISchemaMergesProfileListsByTheirKeys(t *testing.T) {
	schema, err := OpenAPISchema()
	NewWithT(t).Expect(err).NotTo(HaveOccurred())
	const each = openapi.Elements
	tests := []struct {
		name string
		kind string
		path []string
		key  string
	}{
		{"Kubernetes versions merge by version", v1alpha1.CloudProfileKind, []string{"spec", "kubernetes", "versions"}, "version"},
		{"the lifecycle stages of a Kubernetes version merge by classification", v1alpha1.CloudProfileKind, []string{"spec", "kubernetes", "versions", each, "lifecycle"}, "classification"},
		{"machine images merge by name", v1alpha1.CloudProfileKind, []string{"spec", "machineImages"}, "name"},
		{"machine image versions merge by version", v1alpha1.CloudProfileKind, []string{"spec", "machineImages", each, "versions"}, "version"},
		{"the lifecycle stages of an image version merge by classification", v1alpha1.CloudProfileKind, []string{"spec", "machineImages", each, "versions", each, "lifecycle"}, "classification"},
		{"an image version's container runtime interfaces merge by name", v1alpha1.CloudProfileKind, []string{"spec", "machineImages", each, "versions", each, "cri"}, "name"},
		{"container runtimes merge by type", v1alpha1.CloudProfileKind, []string{"spec", "machineImages", each, "versions", each, "cri", each, "containerRuntimes"}, "type"},
		{"machine types merge by name", v1alpha1.CloudProfileKind, []string{"spec", "machineTypes"}, "name"},
		{"volume types merge by name", v1alpha1.CloudProfileKind, []string{"spec", "volumeTypes"}, "name"},
		{"regions merge by name", v1alpha1.CloudProfileKind, []string{"spec", "regions"}, "name"},
		{"a region's zones merge by name", v1alpha1.CloudProfileKind, []string{"spec", "regions", each, "zones"}, "name"},
		{"a namespaced profile's Kubernetes versions merge by version", v1alpha1.NamespacedCloudProfileKind, []string{"spec", "kubernetes", "versions"}, "version"},
		{"a namespaced profile's lifecycle stages merge by classification", v1alpha1.NamespacedCloudProfileKind, []string{"spec", "kubernetes", "versions", each, "lifecycle"}, "classification"},
		{"a namespaced profile's machine image versions merge by version", v1alpha1.NamespacedCloudProfileKind, []string{"spec", "machineImages", each, "versions"}, "version"},
		{"a namespaced profile's machine types merge by name", v1alpha1.NamespacedCloudProfileKind, []string{"spec", "machineTypes"}, "name"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			withOpenAPISchema(t, schema, func() {
				for _, apiVersion := range []string{v1alpha1.GroupVersion.String(), profile.GardenerGroupVersion} {
					strategy, keys, found := mergeKeysAt(apiVersion, tt.kind, tt.path...)
					g.Expect(found).To(BeTrue(), "%s %s has %v", apiVersion, tt.kind, tt.path)
					g.Expect(strategy).To(Equal("merge"), apiVersion)
					g.Expect(keys).To(Equal([]string{tt.key}), apiVersion)
				}
			})
		})
	}
}

// TestOpenAPISchemaKeysEveryListTheCRDsKey walks the embedded CRDs, so that
// a list the API types mark +listType=map is merged by its keys without
// anyone remembering to say so.
func TestOpenAPISchemaKeysEveryListTheCRDsKey(t *testing.T) {
	g := NewWithT(t)
	schema, err := OpenAPISchema()
	g.Expect(err).NotTo(HaveOccurred())
	definitions, err := crd.Definitions()
	g.Expect(err).NotTo(HaveOccurred())
	keyed := 0
	withOpenAPISchema(t, schema, func() {
		for _, definition := range definitions {
			kind := definition.Spec.Names.Kind
			if kind != v1alpha1.CloudProfileKind && kind != v1alpha1.NamespacedCloudProfileKind {
				continue
			}
			walkKeyedLists(crdVersionSchema(definition, v1alpha1.GroupVersion.Version), nil, func(path, keys []string) {
				keyed++
				strategy, got, found := mergeKeysAt(v1alpha1.GroupVersion.String(), kind, path...)
				g.Expect(found).To(BeTrue(), "%s %v", kind, path)
				g.Expect(strategy).To(Equal("merge"), "%s %v", kind, path)
				g.Expect(got).To(Equal(keys), "%s %v", kind, path)
			})
		}
	})
	g.Expect(keyed).To(BeNumerically(">=", 20), "both kinds have many keyed lists")
}

// walkKeyedLists calls found with the path and keys of every list of type
// map below props.
func walkKeyedLists(props *apiextensionsv1.JSONSchemaProps, path []string, found func(path, keys []string)) {
	if props.XListType != nil && *props.XListType == "map" {
		found(path, props.XListMapKeys)
	}
	names := make([]string, 0, len(props.Properties))
	for name := range props.Properties {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		property := props.Properties[name]
		walkKeyedLists(&property, append(append([]string(nil), path...), name), found)
	}
	if props.Items != nil && props.Items.Schema != nil {
		walkKeyedLists(props.Items.Schema, append(append([]string(nil), path...), openapi.Elements), found)
	}
}

func TestOpenAPISchemaIsTheSameIndentedJSONOnEveryCall(t *testing.T) {
	g := NewWithT(t)
	first, err := OpenAPISchema()
	g.Expect(err).NotTo(HaveOccurred())
	generated, err := generateOpenAPISchema()
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(first).To(Equal(generated), "generated afresh, the bytes are the same")
	g.Expect(first).To(HaveSuffix("}\n"))
	var indented bytes.Buffer
	g.Expect(json.Indent(&indented, first, "", "  ")).To(Succeed())
	g.Expect(indented.Bytes()).To(Equal(first), "indented by two spaces")

	first[0] = 'x'
	again, err := OpenAPISchema()
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(again).To(Equal(generated), "a caller changing its copy changes no one else's")
}

func TestOpenAPISchemaRegistersBothKindsUnderBothAPIVersions(t *testing.T) {
	g := NewWithT(t)
	schema, err := OpenAPISchema()
	g.Expect(err).NotTo(HaveOccurred())
	var document struct {
		Definitions map[string]struct {
			GroupVersionKinds []map[string]string `json:"x-kubernetes-group-version-kind"`
		} `json:"definitions"`
	}
	g.Expect(json.Unmarshal(schema, &document)).To(Succeed())
	g.Expect(document.Definitions).To(HaveLen(2))
	for _, kind := range []string{v1alpha1.CloudProfileKind, v1alpha1.NamespacedCloudProfileKind} {
		definition, ok := document.Definitions["io.profilesync.core.v1alpha1."+kind]
		g.Expect(ok).To(BeTrue(), kind)
		g.Expect(definition.GroupVersionKinds).To(ConsistOf(
			map[string]string{"group": "core.profilesync.io", "version": "v1alpha1", "kind": kind},
			map[string]string{"group": "core.gardener.cloud", "version": "v1beta1", "kind": kind},
		))
	}
}
