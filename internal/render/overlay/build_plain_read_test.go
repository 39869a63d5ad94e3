package overlay

import (
	"fmt"
	"reflect"
	"strings"
	"testing"

	"sigs.k8s.io/kustomize/api/resource"
)

// readObjectsCases are files whose objects readObjects reads itself, and
// files it leaves to kustomize's factory: each one's objects must be the
// factory's.
var readObjectsCases = map[string]string{
	"one profile":             "apiVersion: core.profilesync.io/v1alpha1\nkind: CloudProfile\nmetadata:\n  name: a\nspec:\n  kubernetes:\n    versions:\n    - version: 1.30.1\n      lifecycle:\n      - classification: supported\n",
	"two documents":           "kind: CloudProfile\napiVersion: core.profilesync.io/v1alpha1\nmetadata: {name: a}\n---\n# a comment\nkind: CloudProfile\napiVersion: core.profilesync.io/v1alpha1\nmetadata: {name: b, labels: {x: \"1\"}}\n",
	"an anchor and its alias": "kind: CloudProfile\napiVersion: v1\nmetadata: {name: a}\nspec:\n  regions: &r [{name: eu}]\n  other: *r\n",
	"a merge key":             "kind: CloudProfile\napiVersion: v1\nmetadata: {name: a}\nbase: &b {x: 1, y: 2}\nspec:\n  <<: *b\n  y: 3\n",
	"a key twice":             "kind: CloudProfile\napiVersion: v1\nmetadata: {name: a}\nspec:\n  x: 1\n  y: 2\n  x: 3\n",
	"a key written twice as number and string": "kind: CloudProfile\napiVersion: v1\nmetadata: {name: a}\nspec:\n  1: a\n  \"1\": b\n",
	"a key that is a mapping":                  "kind: CloudProfile\napiVersion: v1\nmetadata: {name: a}\nspec:\n  ? {a: 1}\n  : b\n",
	"a List":                                   "apiVersion: v1\nkind: List\nitems:\n- kind: CloudProfile\n  apiVersion: v1\n  metadata: {name: a}\n",
	"a list of two kinds":                      "kind: CloudProfileList\napiVersion: v1\nitems:\n- kind: CloudProfile\n  apiVersion: v1\n  metadata: {name: a}\n---\nkind: CloudProfile\napiVersion: v1\nmetadata: {name: b}\n",
	"local configuration":                      "kind: CloudProfile\napiVersion: v1\nmetadata:\n  name: a\n  annotations: {config.kubernetes.io/local-config: \"true\"}\n",
	"no name":                                  "kind: CloudProfile\napiVersion: v1\nmetadata: {}\n",
	"no kind":                                  "apiVersion: v1\nmetadata: {name: a}\n",
	"an empty item":                            "kind: CloudProfile\napiVersion: v1\nmetadata: {name: a}\nspec:\n  regions:\n  -\n  - name: eu\n",
	"an empty document":                        "---\n---\nkind: CloudProfile\napiVersion: v1\nmetadata: {name: a}\n",
	"not YAML":                                 "kind: [\n",
	"a scalar":                                 "just text\n",
	"CRLF line ends":                           "kind: CloudProfile\r\napiVersion: v1\r\nmetadata: {name: a}\r\n",
	"a long mapping":                           "kind: CloudProfile\napiVersion: v1\nmetadata: {name: a}\nspec:\n" + longMapping(40, false),
	"a long mapping with a key twice":          "kind: CloudProfile\napiVersion: v1\nmetadata: {name: a}\nspec:\n" + longMapping(40, true),
}

func longMapping(keys int, repeat bool) string {
	var b strings.Builder
	for i := range keys {
		fmt.Fprintf(&b, "  k%d: %d\n", i, i)
	}
	if repeat {
		b.WriteString("  k7: again\n")
	}
	return b.String()
}

func TestReadObjectsReadsAsKustomizesFactory(t *testing.T) {
	for name, content := range readObjectsCases {
		t.Run(name, func(t *testing.T) {
			expectReadAsTheFactory(t, []byte(content))
		})
	}
}

// FuzzReadObjectsReadsAsKustomizesFactory holds readObjects to the objects,
// and the failures, of kustomize's factory for any file.
func FuzzReadObjectsReadsAsKustomizesFactory(f *testing.F) {
	for _, content := range readObjectsCases {
		f.Add([]byte(content))
	}
	f.Fuzz(func(t *testing.T, content []byte) {
		if len(content) > 4096 {
			return
		}
		expectReadAsTheFactory(t, content)
	})
}

func expectReadAsTheFactory(t *testing.T, content []byte) {
	t.Helper()
	factory := resmapFactory().RF()
	want, wantErr := factory.SliceFromBytes(content)
	got, err := readObjects(factory, content, nil)
	if (err == nil) != (wantErr == nil) {
		t.Fatalf("readObjects: error %v; the factory: %v", err, wantErr)
	}
	if err != nil {
		if err.Error() != wantErr.Error() {
			t.Fatalf("readObjects: %v; the factory: %v", err, wantErr)
		}
		return
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("readObjects read\n%s\nthe factory\n%s", objectsAsYAML(t, got), objectsAsYAML(t, want))
	}
}

func TestReadObjectsCopiesNothingForAFileWithoutAnchors(t *testing.T) {
	content := []byte(ordinaryLandscape(t, 1)["base/profile-00000.yaml"])
	factory := resmapFactory().RF()
	viaFactory := testing.AllocsPerRun(5, func() {
		if _, err := factory.SliceFromBytes(content); err != nil {
			t.Fatal(err)
		}
	})
	viaReadObjects := testing.AllocsPerRun(5, func() {
		if _, err := readObjects(factory, content, nil); err != nil {
			t.Fatal(err)
		}
	})
	t.Logf("readObjects %.0f, the factory %.0f allocations", viaReadObjects, viaFactory)
	// The factory copies each mapping once for each mapping above it; the
	// parse alone is what is left.
	if viaReadObjects > viaFactory*2/3 {
		t.Fatalf("readObjects made %.0f allocations, the factory %.0f: the copy was not skipped", viaReadObjects, viaFactory)
	}
}

func objectsAsYAML(t *testing.T, objects []*resource.Resource) string {
	t.Helper()
	var b strings.Builder
	for _, object := range objects {
		b.WriteString(object.MustString())
		b.WriteString("---\n")
	}
	return b.String()
}
