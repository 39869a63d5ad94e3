package overlay

import (
	"fmt"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	. "github.com/onsi/gomega"

	"github.com/profilesync/profilesync/internal/render/profile"
	"github.com/profilesync/profilesync/test/builders"
)

// typingProfile is a CloudProfile whose Kubernetes versions are the given
// YAML lines (the form of the typing check's own tests).
func typingProfile(name string, versions ...string) string {
	return "apiVersion: core.profilesync.io/v1alpha1\nkind: CloudProfile\nmetadata:\n  name: " + name + "\nspec:\n  type: local\n  kubernetes:\n    versions:\n" +
		strings.Join(versions, "\n") + "\n"
}

// oneParseCases are files the one parse must read as the two parses do:
// the typing check's inputs, alone and as documents of one file, and the
// forms where the two parsers cut a file differently.
var oneParseCases = map[string]string{
	"a quoted version":        typingProfile("p", `    - version: "1.30"`, `      expirationDate: "2025-03-01T00:00:00Z"`),
	"a version as a number":   typingProfile("p", `    - version: 1.30`),
	"a date":                  typingProfile("p", `    - version: 1.30.0`, `      expirationDate: 2025-03-01`),
	"an RFC 3339 time":        typingProfile("p", `    - version: 1.30.0`, `      expirationDate: 2025-11-30T01:02:03Z`),
	"a time with a space":     typingProfile("p", `    - version: 1.30.0`, `      expirationDate: 2025-11-30 01:02:03`),
	"a time with fractions":   typingProfile("p", `    - version: 1.30.0`, `      expirationDate: 2025-11-30T01:02:03.000Z`),
	"a YAML 1.1 boolean":      "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c\ndata:\n  enabled: yes\n",
	"an octal number":         "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c\ndata:\n  mode: 0755\n",
	"a keyed entry twice":     typingProfile("p", `    - version: 1.31.0`, `      lifecycle:`, `      - classification: supported`, `      - classification: supported`, `    - version: 1.31.0`),
	"a list without keys":     "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c\n  finalizers: [a, a]\n",
	"several documents":       typingProfile("a", `    - version: 1.30`) + "---\n" + typingProfile("b", `    - version: 1.31.0`, `      expirationDate: 2025-03-01`) + "---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c\ndata:\n  on: off\n",
	"comments before ---":     "# head\n" + typingProfile("a", `    - version: 1.30`) + "# tail of a\n---\n# head of b\n" + typingProfile("b", `    - version: 1.30`),
	"a comment after ---":     typingProfile("a", `    - version: 1.30`) + "--- # b\n" + typingProfile("b", `    - version: 1.30`),
	"--- on the first line":   "---\n" + typingProfile("a", `    - version: 1.30`),
	"--- on the last line":    typingProfile("a", `    - version: 1.30`) + "---",
	"--- after ---":           typingProfile("a", `    - version: 1.30`) + "---\n---\n---\n" + typingProfile("b", `    - version: 1.30`),
	"a List":                  "apiVersion: v1\nkind: List\nitems:\n- " + strings.ReplaceAll(typingProfile("a", `    - version: 1.30`), "\n", "\n  "),
	"CRLF line ends":          strings.ReplaceAll(typingProfile("a", `    - version: 1.30`)+"---\n"+typingProfile("b", `    - version: 1.30`), "\n", "\r\n"),
	"a byte order mark":       "\uFEFF" + typingProfile("a", `    - version: 1.30`),
	"a directive":             "%YAML 1.1\n---\n" + typingProfile("a", `    - version: 1.30`),
	"a tag directive":         "%TAG !x! tag:example.com,2000:\n---\n" + typingProfile("a", `    - version: !x!v 1.30`),
	"an end of document":      typingProfile("a", `    - version: 1.30`) + "...\n" + typingProfile("b", `    - version: 1.30`),
	"content after ---":       typingProfile("a", `    - version: 1.30`) + "--- 1.30\n",
	"--- and a comment glued": typingProfile("a", `    - version: 1.30`) + "---#b\n" + typingProfile("b", `    - version: 1.30`),
	"a block scalar kept":     "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c\ndata:\n  x: |+\n    a\n\n\n---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: d\n",
	"an alias across ---":     "a: &x 1\n---\nb: *x\n",
	"not YAML":                "kind: [\n---\nkind: CloudProfile\n",
	"a NUL byte":              "kind: CloudProfile\x00\n",
	"a line separator":        "a: 1\u2028---\nb: 2\n",
	"an empty file":           "",
}

// TestOneParseIsTakenForPlainDocumentsOnly holds that the one parse is
// what a file of plain documents gets (else the fuzz target would compare
// nothing), and that the forms where the parsers part ways get both.
func TestOneParseIsTakenForPlainDocumentsOnly(t *testing.T) {
	onceParsed := []string{"a quoted version", "a version as a number", "several documents", "comments before ---",
		"a comment after ---", "--- on the first line", "--- after ---", "a List", "a block scalar kept", "an empty file"}
	bothParse := []string{"CRLF line ends", "a byte order mark", "a directive", "a tag directive", "an end of document",
		"content after ---", "--- and a comment glued", "an alias across ---", "not YAML", "a line separator",
		"--- on the last line"}
	for _, name := range onceParsed {
		t.Run(name+" is parsed once", func(t *testing.T) {
			if _, ok := parseOnce([]byte(oneParseCases[name])); !ok {
				t.Fatalf("%q: not parsed once", oneParseCases[name])
			}
		})
	}
	for _, name := range bothParse {
		t.Run(name+" is parsed by both", func(t *testing.T) {
			if _, ok := parseOnce([]byte(oneParseCases[name])); ok {
				t.Fatalf("%q: parsed once", oneParseCases[name])
			}
		})
	}
}

func TestOneParseReadsAsTwo(t *testing.T) {
	for name, content := range oneParseCases {
		t.Run(name, func(t *testing.T) {
			expectOneParseAsTwo(t, []byte(content))
		})
	}
}

// FuzzOneParseReadsAsTwo holds the one parse of a resource file (the typing
// check's problems, its count of objects, its parser error, and the objects
// the linear path makes of it) to what the typing check's own parse and
// kustomize's reader's give, for any file.
func FuzzOneParseReadsAsTwo(f *testing.F) {
	for _, content := range oneParseCases {
		f.Add([]byte(content))
	}
	for _, content := range readObjectsCases {
		f.Add([]byte(content))
	}
	f.Fuzz(func(t *testing.T, content []byte) {
		if len(content) > 4096 {
			return
		}
		expectOneParseAsTwo(t, content)
	})
}

func expectOneParseAsTwo(t *testing.T, content []byte) {
	t.Helper()
	const file = "base/p.yaml"
	wantProblems, wantCount, wantErr := profile.CheckYAMLTypingAndCount(file, content)
	problems, count, parsed, err := checkAndCountResourceFile(file, content)
	if !reflect.DeepEqual(problems, wantProblems) {
		t.Fatalf("one parse: problems\n%v\ntwo parses:\n%v", problems, wantProblems)
	}
	if count != wantCount {
		t.Fatalf("one parse: %d objects; two parses: %d", count, wantCount)
	}
	if fmt.Sprint(err) != fmt.Sprint(wantErr) {
		t.Fatalf("one parse: error %v; two parses: %v", err, wantErr)
	}
	factory := resmapFactory().RF()
	wantObjects, wantReadErr := readObjects(factory, content, nil)
	objects, readErr := readObjects(factory, content, parsed)
	if fmt.Sprint(readErr) != fmt.Sprint(wantReadErr) {
		t.Fatalf("one parse: error reading the objects %v; two parses: %v", readErr, wantReadErr)
	}
	if !reflect.DeepEqual(objects, wantObjects) {
		t.Fatalf("one parse read\n%s\ntwo parses\n%s", objectsAsYAML(t, objects), objectsAsYAML(t, wantObjects))
	}
}

// A linear build parses each resource file once: the typing check's parse
// gives the objects. A file the parsers could cut differently (CRLF) is
// parsed by both, as before.
func TestALinearBuildParsesEachResourceFileOnce(t *testing.T) {
	other := strings.ReplaceAll(mergeBase, "name: aws", "name: other")
	tests := []struct {
		name    string
		files   map[string]string
		overlay string
		// maxHeldParses bounds the parses held, when not zero.
		maxHeldParses int64
		parses        int64
	}{
		{name: "a plain list of two files", overlay: "", parses: 2},
		{name: "labels and annotations for every object", overlay: "labels:\n- pairs: {landscape: bench}\ncommonAnnotations: {team: x}\n", parses: 2},
		{name: "a file of two documents", files: map[string]string{"base/other.yaml": other + "---\n" + strings.ReplaceAll(mergeBase, "name: aws", "name: third")}, parses: 2},
		{name: "a file with CRLF line ends is parsed by both", files: map[string]string{"base/other.yaml": strings.ReplaceAll(other, "\n", "\r\n")}, parses: 3},
		{name: "a file read past the bound of the parses held is parsed by both", maxHeldParses: int64(len(mergeBase)), parses: 3},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			root := t.TempDir()
			files := map[string]string{
				"base/kustomization.yaml":       kustomization("aws.yaml", "other.yaml"),
				"base/aws.yaml":                 mergeBase,
				"base/other.yaml":               other,
				"overlays/x/kustomization.yaml": kustomization("../../base") + tt.overlay,
			}
			for path, content := range tt.files {
				files[path] = content
			}
			builders.WriteTree(t, root, files)
			before := resourceFileParses.Load()
			fs, target, err := confineBuild(t.Context(), root, filepath.Join("overlays", "x"), DefaultLimits())
			g.Expect(err).NotTo(HaveOccurred())
			if tt.maxHeldParses > 0 {
				fs.maxHeldParses = tt.maxHeldParses
			}
			_, linear, err := fs.buildWith(target, true)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(linear).To(BeTrue(), "the build took the linear path")
			g.Expect(resourceFileParses.Load() - before).To(Equal(tt.parses))
		})
	}
}
