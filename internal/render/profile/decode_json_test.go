package profile

import (
	"bytes"
	"reflect"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	strictjson "sigs.k8s.io/json"
	"sigs.k8s.io/yaml"
)

// asJSON is document as the build renders it: canonical JSON.
func asJSON(t testing.TB, document string) string {
	t.Helper()
	data, err := yaml.YAMLToJSONStrict([]byte(document))
	if err != nil {
		t.Fatalf("converting %q: %v", document, err)
	}
	return string(data)
}

// yamlPathContent is what the YAML path makes of document.
func yamlPathContent(document []byte) ([]byte, any, error) {
	data, err := yaml.YAMLToJSONStrict(document)
	if err != nil {
		return nil, nil, err
	}
	var content any
	if err := strictjson.UnmarshalCaseSensitivePreserveInts(data, &content); err != nil {
		return nil, nil, err
	}
	return data, content, nil
}

func TestOnlyCanonicalJSONSkipsTheYAMLParse(t *testing.T) {
	tests := []struct {
		name      string
		document  string
		canonical bool
	}{
		{"JSON as encoding/json writes it is read as it is", `{"a":[1,0.5,"x",true,null,{}],"b":{"c":"\u003c\u0026\u003e"}}`, true},
		{"HTML characters encoding/json would escape take the YAML path", `{"c":"<&>"}`, false},
		{"a number beyond int64 that JSON writes in full is read as it is", `{"a":1e+21}`, true},
		{"YAML takes the YAML path", "a: 1\n", false},
		{"a YAML flow mapping that is not JSON takes the YAML path", `{a: 1}`, false},
		{"indented JSON takes the YAML path", "{\n  \"a\": 1\n}", false},
		{"JSON after a space takes the YAML path", ` {"a":1}`, false},
		{"JSON with a trailing newline takes the YAML path", "{\"a\":1}\n", false},
		{"keys out of order take the YAML path", `{"b":1,"a":2}`, false},
		{"a key given twice takes the YAML path", `{"a":1,"a":1}`, false},
		{"1.0 for 1 takes the YAML path", `{"a":1.0}`, false},
		{"an integer beyond int64 takes the YAML path, which keeps its digits", `{"a":18446744073709551615}`, false},
		{"an escape JSON need not write takes the YAML path", `{"a":"\u00e9"}`, false},
		{"a list takes the YAML path", `[{"a":1}]`, false},
		{"invalid JSON takes the YAML path", `{"a":}`, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			content, ok := canonicalJSONContent([]byte(tt.document))
			g.Expect(ok).To(Equal(tt.canonical))
			if !ok {
				return
			}
			data, want, err := yamlPathContent([]byte(tt.document))
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(string(data)).To(Equal(tt.document), "the YAML path gives the same JSON")
			g.Expect(content).To(Equal(want), "and the same content")
		})
	}
}

// TestJSONAndYAMLOfAnObjectDecodeAlike: an object as a person writes it in
// YAML and as the build renders it in JSON decodes to the same object or
// the same problems, the JSON without the YAML parse.
func TestJSONAndYAMLOfAnObjectDecodeAlike(t *testing.T) {
	tests := []struct {
		name     string
		document string
		problems int
		// canonical says whether the rendered JSON skips the YAML parse.
		canonical bool
	}{
		{"a valid CloudProfile", cloudProfileWithVersions(`{version: 1.31.0, lifecycle: [{classification: supported, startTime: "2025-01-01T00:00:00Z"}]}`), 0, true},
		{"a valid NamespacedCloudProfile", namespacedWithMetadata("  name: team-profile\n  namespace: team\n  labels: {a: \"1\"}\n"), 0, true},
		{"an unknown field", cloudProfileWithVersions("{version: 1.31.0, colour: blue}"), 1, true},
		{"a field of the wrong type", cloudProfileWithVersions("{version: [1, 31]}"), 1, true},
		{"a number where an integer is wanted", "apiVersion: core.profilesync.io/v1alpha1\nkind: CloudProfile\nmetadata:\n  name: p\nspec:\n  type: aws\n  kubernetes:\n    versions:\n    - version: 1.31.0\n  machineTypes: [{name: m, cpu: 2, gpu: 0, memory: 1Gi, storage: {class: ssd, size: 20Gi}, architecture: amd64, usable: true}]\n  volumeTypes: [{name: v, class: ssd, minSize: 1.5}]\n", -1, true},
		{"an integer beyond int64", "apiVersion: core.profilesync.io/v1alpha1\nkind: CloudProfile\nmetadata:\n  name: p\n  generation: 18446744073709551615\nspec:\n  type: aws\n", -1, false},
		{"a name that is no DNS name", cloudProfileWithMetadata("  name: Not_A_Name\n"), -1, true},
		{"an unsupported kind", "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\n", 1, true},
		{"no kind", "apiVersion: v1\nmetadata:\n  name: x\n", 1, true},
		{"a kind of another type", "apiVersion: v1\nkind: 1\nmetadata:\n  name: x\n", 1, true},
		{"an apiVersion of another group", strings.Replace(cloudProfileWithVersions("{version: 1.31.0}"), "core.profilesync.io/v1alpha1", "example.com/v1", 1), 1, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			rendered := asJSON(t, tt.document)
			_, canonical := canonicalJSONContent([]byte(rendered))
			g.Expect(canonical).To(Equal(tt.canonical))
			objects, problems := DecodeDocuments([]Document{{File: "p.yaml", Data: []byte(rendered)}})
			wantObjects, wantProblems := DecodeDocuments([]Document{{File: "p.yaml", Data: []byte(tt.document)}})
			g.Expect(reflect.DeepEqual(objects, wantObjects)).To(BeTrue(), "objects differ")
			g.Expect(problems.Lines()).To(Equal(wantProblems.Lines()))
			if tt.problems >= 0 {
				g.Expect(problems).To(HaveLen(tt.problems))
			} else {
				g.Expect(problems).NotTo(BeEmpty())
			}
		})
	}
}

// TestAJSONDocumentWithAKeyGivenTwiceIsAProblemOfItsDocument: JSON with a
// key given twice is not canonical, so it takes the YAML path, whose
// problem names the file and the document as for YAML.
func TestAJSONDocumentWithAKeyGivenTwiceIsAProblemOfItsDocument(t *testing.T) {
	g := NewWithT(t)
	valid := asJSON(t, cloudProfileWithVersions("{version: 1.31.0}"))
	twice := strings.Replace(valid, `"kind":"CloudProfile"`, `"kind":"CloudProfile","kind":"CloudProfile"`, 1)
	objects, problems := DecodeDocuments([]Document{{File: "p.json", Data: []byte(valid)}, {File: "p.json", Data: []byte(twice)}})
	g.Expect(objects).To(HaveLen(1))
	g.Expect(problems.Lines()).To(ConsistOf(
		`p.json: document 2: not valid YAML: yaml: unmarshal errors: line 1: key "kind" already set in map`))
}

// FuzzCanonicalJSONDecodesLikeYAML checks the promise of
// unstructuredContent: a document in canonical JSON (the fuzzer's YAML as
// the build renders it, or the fuzzer's bytes as they are) decodes, without
// the YAML parse, to the same JSON and content as through it, and so to the
// same objects and problems. The YAML parser refuses some canonical JSON
// (U+0080 unescaped, a key longer than 1,024 bytes); that JSON is decoded.
func FuzzCanonicalJSONDecodesLikeYAML(f *testing.F) {
	f.Add([]byte(cloudProfileWithVersions(`{version: 1.31.0, lifecycle: [{classification: supported, startTime: "2025-01-01T00:00:00Z"}]}`)))
	f.Add([]byte(namespacedWithMetadata("  name: n\n  namespace: team\n")))
	f.Add([]byte("apiVersion: core.profilesync.io/v1alpha1\nkind: CloudProfile\nmetadata:\n  name: p\n  generation: 1.0\nspec: {type: aws, x: [0x10, 1e3, -0, .5, 1e400, \"<&>\", ~]}\n"))
	f.Add([]byte(`{"a":1e+21,"b":[null,true,"\u2028"]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		candidates := [][]byte{data}
		if converted, err := yaml.YAMLToJSONStrict(data); err == nil {
			candidates = append(candidates, converted)
		}
		for _, document := range candidates {
			content, ok := canonicalJSONContent(document)
			if !ok {
				continue
			}
			yamlData, want, err := yamlPathContent(document)
			if err != nil {
				continue
			}
			if !bytes.Equal(yamlData, document) {
				t.Fatalf("the YAML path converts canonical JSON %s to %s", document, yamlData)
			}
			if !reflect.DeepEqual(content, want) {
				t.Fatalf("canonical JSON %s decodes to %#v, through YAML to %#v", document, content, want)
			}
		}
	})
}
