package overlay

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"reflect"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	yamlv3 "go.yaml.in/yaml/v3"
	strictjson "sigs.k8s.io/json"
	"sigs.k8s.io/kustomize/api/resource"
	"sigs.k8s.io/yaml"

	"github.com/profilesync/profilesync/internal/render/profile"
)

// parsedResources parses a YAML stream the way kustomize reads a resource
// file (aliases replaced and merge keys merged by its reader).
func parsedResources(t testing.TB, stream string) []*resource.Resource {
	t.Helper()
	resources, err := resmapFactory().RF().SliceFromBytes([]byte(stream))
	if err != nil {
		t.Fatalf("parsing %q: %v", stream, err)
	}
	return resources
}

// unstructured decodes JSON as the manager does: integers as int64.
func unstructured(t testing.TB, data []byte) any {
	t.Helper()
	var content any
	if err := strictjson.UnmarshalCaseSensitivePreserveInts(data, &content); err != nil {
		t.Fatalf("decoding %s: %v", data, err)
	}
	return content
}

// TestRenderJSONIsKustomizesJSON holds renderJSON to what it replaces: for
// scalars YAML reads in more than one way, it writes kustomize's own JSON of
// the object (Resource.MarshalJSON) byte for byte, which is also what the
// manager used to make of AsYAML's output (yaml.YAMLToJSONStrict), so every
// object decodes to the same unstructured value as before.
func TestRenderJSONIsKustomizesJSON(t *testing.T) {
	tests := []struct {
		name  string
		field string
		// want is the field's value as the manager's unstructured form holds it.
		want any
	}{
		{"a quoted number stays a string", `"0123"`, "0123"},
		{"a plain number is an int64", `123`, int64(123)},
		{"a negative number is an int64", `-7`, int64(-7)},
		{"a number with a leading zero is octal, as kustomize reads it", `0755`, int64(0o755)},
		{"a hexadecimal number is its value", `0x1F`, int64(31)},
		{"a quoted true stays a string", `"true"`, "true"},
		{"a plain true is a boolean", `true`, true},
		{"a YAML 1.1 yes is a string", `yes`, "yes"},
		{"a plain null is null", `null`, nil},
		{"a tilde is null", `~`, nil},
		{"an empty value is null", ``, nil},
		{"an int beyond int64 is a float", `9223372036854775808`, float64(9223372036854775808)},
		{"an int beyond uint64 is a float", `123456789012345678901234`, 1.2345678901234568e23},
		{"a float with a zero fraction is an integer", `1.0`, int64(1)},
		{"a float is a float", `0.25`, 0.25},
		{"an exponent is its value", `1e3`, int64(1000)},
		{"a large float keeps its exponent", `1.5e300`, 1.5e300},
		{"a version stays a string", `1.33.0`, "1.33.0"},
		{"a timestamp stays a string", `2025-06-01T00:00:00Z`, "2025-06-01T00:00:00Z"},
		{"a date is kustomize's timestamp of its midnight", `2025-06-01`, "2025-06-01T00:00:00Z"},
		{"an empty map is an empty object", `{}`, map[string]any{}},
		{"an empty list is an empty array", `[]`, []any{}},
		{"a literal block keeps its lines", "|\n    line one\n    line two\n", "line one\nline two\n"},
		{"a folded block joins its lines", ">-\n    one\n    two\n", "one two"},
		{"unicode is kept", `"grüße 🌍"`, "grüße 🌍"},
		{"an escaped line separator is kept", `"a\u2028b"`, "a\u2028b"},
		{"HTML characters are kept", `"<a & b>"`, "<a & b>"},
		{"a tab escape is kept", `"a\tb"`, "a\tb"},
		{"a binary value is its bytes", `!!binary aGVsbG8=`, "hello"},
		{"a string tag keeps a number a string", `!!str 42`, "42"},
		{"a map with keys that need quoting", `{"a: b": 1, "#c": 2, "": 3, "1": 4, "true": 5}`,
			map[string]any{"a: b": int64(1), "#c": int64(2), "": int64(3), "1": int64(4), "true": int64(5)}},
		{"a list keeps its order", `[c, a, b]`, []any{"c", "a", "b"}},
		{"a null written as nothing in a flow map is kustomize's empty string", `{a, b: , c: null}`,
			map[string]any{"a": "", "b": "", "c": nil}},
		{"a null written as nothing in a flow list is kustomize's empty string", `[{a}]`, []any{map[string]any{"a": ""}}},
		{"a null written as nothing in a block map stays null", "\n    a:\n    b: ~\n", map[string]any{"a": nil, "b": nil}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			source := "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\ndata:\n  value: " + tt.field + "\n"
			resources := parsedResources(t, source)
			g.Expect(resources).To(HaveLen(1))
			rendered, want := renderedBothWays(t, resources[0])
			g.Expect(string(rendered)).To(Equal(string(want)))
			content := unstructured(t, rendered).(map[string]any)
			g.Expect(content["data"]).To(Equal(map[string]any{"value": tt.want}))
		})
	}
}

// renderedBothWays renders res with renderJSON and, from a copy, with
// kustomize's MarshalJSON; it checks that AsYAML's output, converted as
// the manager converted it, is the same JSON, and returns both.
func renderedBothWays(t testing.TB, res *resource.Resource) (rendered, marshalled []byte) {
	t.Helper()
	copied := res.DeepCopy()
	rendered, err := renderJSON(res)
	if err != nil {
		t.Fatalf("renderJSON: %v", err)
	}
	marshalled, err = copied.MarshalJSON()
	if err != nil {
		t.Fatalf("MarshalJSON: %v", err)
	}
	asYAML, err := copied.AsYAML()
	if err != nil {
		t.Fatalf("AsYAML: %v", err)
	}
	converted, err := yaml.YAMLToJSONStrict(asYAML)
	if err != nil {
		t.Fatalf("converting AsYAML's output %s: %v", asYAML, err)
	}
	if !bytes.Equal(converted, marshalled) {
		t.Fatalf("AsYAML's output converted to JSON:\n%s\nMarshalJSON:\n%s", converted, marshalled)
	}
	return rendered, marshalled
}

// TestRenderJSONRefusesWhatKustomizeCannotWriteAsJSON: a map below the
// top whose key is no string (true, 1) has no JSON form; kustomize's
// MarshalJSON, which AsYAML called, fails on it too, and the build fails
// naming the file, as before.
func TestRenderJSONRefusesWhatKustomizeCannotWriteAsJSON(t *testing.T) {
	g := NewWithT(t)
	resources := parsedResources(t, "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\ndata:\n  value: {true: 5, 1: 2}\n")
	g.Expect(resources).To(HaveLen(1))
	_, err := resources[0].DeepCopy().MarshalJSON()
	g.Expect(err).To(MatchError(ContainSubstring("unsupported type")))
	_, err = renderJSON(resources[0])
	g.Expect(err).To(MatchError(ContainSubstring("unsupported type")))
}

// TestRenderJSONOfAnchorsAndMergeKeys: aliases and merge keys of the
// source are resolved as kustomize resolves them (its reader de-anchors
// every object), and the rendering is kustomize's JSON.
func TestRenderJSONOfAnchorsAndMergeKeys(t *testing.T) {
	g := NewWithT(t)
	source := `apiVersion: v1
kind: ConfigMap
metadata:
  name: anchors
  labels: &labels
    team: a
    tier: "1"
data:
  copy: *labels
  merged:
    <<: *labels
    tier: "2"
  list: &list [x, y]
  again: *list
`
	resources := parsedResources(t, source)
	g.Expect(resources).To(HaveLen(1))
	rendered, want := renderedBothWays(t, resources[0])
	g.Expect(string(rendered)).To(Equal(string(want)))
	g.Expect(unstructured(t, rendered).(map[string]any)["data"]).To(Equal(map[string]any{
		"copy":   map[string]any{"team": "a", "tier": "1"},
		"merged": map[string]any{"team": "a", "tier": "2"},
		"list":   []any{"x", "y"},
		"again":  []any{"x", "y"},
	}))
}

// TestRenderJSONOfProfilesDecodesAsAsYAMLDid: the test repository's
// profiles, built, decode from the rendered JSON to the same objects and
// problems as from AsYAML's output of the same build.
func TestRenderJSONOfProfilesDecodesAsAsYAMLDid(t *testing.T) {
	g := NewWithT(t)
	stream := fmt.Sprintf(minimalCloudProfile, "p") + "    - version: 1.30.0\n      expirationDate: \"2026-01-01T00:00:00Z\"\n" +
		"---\n" + fmt.Sprintf(minimalCloudProfile, "q") + "  unknown: 1.0\n"
	var rendered, asYAML []profile.Document
	for _, res := range parsedResources(t, stream) {
		copied := res.DeepCopy()
		data, err := renderJSON(res)
		g.Expect(err).NotTo(HaveOccurred())
		rendered = append(rendered, profile.Document{File: "p.yaml", Data: data})
		data, err = copied.AsYAML()
		g.Expect(err).NotTo(HaveOccurred())
		asYAML = append(asYAML, profile.Document{File: "p.yaml", Data: data})
	}
	objects, problems := profile.DecodeDocuments(rendered)
	wantObjects, wantProblems := profile.DecodeDocuments(asYAML)
	g.Expect(objects).To(HaveLen(1))
	g.Expect(problems.Lines()).To(ConsistOf(ContainSubstring("spec.unknown")))
	g.Expect(reflect.DeepEqual(objects, wantObjects)).To(BeTrue(), "objects differ")
	g.Expect(problems).To(Equal(wantProblems))
}

// readsAsYAML reports whether yaml.v3 decodes every document of stream.
// The fuzzer skips a stream it refuses, because kustomize's reader never
// returns from a stream whose merge key names an anchor that holds it
// (data: &d {a: {<<: *d}}), which yaml.v3 refuses as an anchor that
// contains itself. A build never gets there: such a file is past
// --max-file-size with its aliases written out, before kustomize reads it.
func readsAsYAML(stream string) bool {
	decoder := yamlv3.NewDecoder(strings.NewReader(stream))
	for {
		var document any
		err := decoder.Decode(&document)
		if errors.Is(err, io.EOF) {
			return true
		}
		if err != nil {
			return false
		}
	}
}

// FuzzRenderJSONDecodesLikeAsYAML parses the fuzzer's YAML as kustomize
// reads a resource file and checks, for every object, that renderJSON
// writes kustomize's JSON of it, and that the rendered JSON and AsYAML's
// output decode (profile.DecodeDocuments) to the same objects and the same
// problems. Where AsYAML fails, renderJSON may succeed: AsYAML parses its
// JSON again with yaml.v2, which refuses characters JSON keeps, such as
// U+0080 written as an escape in the source.
func FuzzRenderJSONDecodesLikeAsYAML(f *testing.F) {
	f.Add(fmt.Sprintf(minimalCloudProfile, "p"))
	f.Add(fmt.Sprintf(minimalCloudProfile, "p") + "    - version: 1.30.0\n      classification: deprecated\n      expirationDate: 2026-01-01\n")
	f.Add("apiVersion: core.profilesync.io/v1alpha1\nkind: NamespacedCloudProfile\nmetadata: {name: n, namespace: ns, labels: {a: \"1\", b: yes}}\n" +
		"spec: {parent: {kind: CloudProfile, name: p}, kubernetes: {versions: [{version: 1.2.3, lifecycle: [{classification: expired}]}]}}\n")
	f.Add("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\ndata: &d\n  a: 0x10\n  b: 1.0\n  c: ~\n  d: \"007\"\n  e: !!binary aGk=\n  f: [1, 1.5, -0, 1e400]\nextra:\n  <<: *d\n  g: |\n    text\n")
	f.Fuzz(func(t *testing.T, stream string) {
		if !readsAsYAML(stream) {
			return
		}
		resources, err := resmapFactory().RF().SliceFromBytes([]byte(stream))
		if err != nil {
			return
		}
		for _, res := range resources {
			copied := res.DeepCopy()
			asYAML, err := copied.AsYAML()
			if err != nil {
				continue
			}
			rendered, err := renderJSON(res)
			if err != nil {
				t.Fatalf("renderJSON failed where AsYAML succeeds: %v\nAsYAML:\n%s", err, asYAML)
			}
			marshalled, err := copied.MarshalJSON()
			if err != nil {
				t.Fatalf("MarshalJSON failed where AsYAML succeeds: %v", err)
			}
			if !bytes.Equal(rendered, marshalled) {
				t.Fatalf("renderJSON:\n%s\nMarshalJSON:\n%s", rendered, marshalled)
			}
			objects, problems := profile.DecodeDocuments([]profile.Document{{File: "f.yaml", Data: rendered}})
			wantObjects, wantProblems := profile.DecodeDocuments([]profile.Document{{File: "f.yaml", Data: asYAML}})
			if !reflect.DeepEqual(objects, wantObjects) {
				t.Fatalf("the rendered JSON decodes to other objects than AsYAML's output:\n%s\n%s", rendered, asYAML)
			}
			if got, want := strings.Join(problems.Lines(), "\n"), strings.Join(wantProblems.Lines(), "\n"); got != want {
				t.Fatalf("problems of the rendered JSON:\n%s\nof AsYAML's output:\n%s", got, want)
			}
		}
	})
}
