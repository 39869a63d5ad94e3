package profile

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// FuzzDecode feeds arbitrary input through the path every profile from Git
// takes: split into documents, decode, validate the set, evaluate it. It
// checks that nothing panics, that every problem is one line, and that what
// decodes encodes to a stream that decodes to the same objects.
func FuzzDecode(f *testing.F) {
	for _, dir := range []string{filepath.Join(profilesRepo, "base"), filepath.Join(mergeExamples, "gep-32-compatibility")} {
		files, err := filepath.Glob(filepath.Join(dir, "*.yaml"))
		if err != nil {
			f.Fatal(err)
		}
		for _, file := range files {
			data, err := os.ReadFile(file)
			if err != nil {
				f.Fatal(err)
			}
			f.Add(data)
		}
	}
	f.Add([]byte("apiVersion: core.gardener.cloud/v1beta1\nkind: CloudProfile\nmetadata:\n  name: x\nspec:\n  type: t\n  kubernetes:\n    versions:\n    - version: 1.2.3\n      expirationDate: \"2024-01-01T00:00:00Z\"\n"))
	f.Add([]byte("kind: NamespacedCloudProfile\napiVersion: core.profilesync.io/v1alpha1\nmetadata: {name: n}\nspec: {parent: {kind: CloudProfile, name: x}, kubernetes: {versions: [{version: 1.2.3, lifecycle: [{classification: expired}]}]}}\n"))
	f.Add([]byte("---\n---\n# nothing\n---\n{\"kind\": \"CloudProfile\", \"metadata\": []}\n"))
	f.Add([]byte("apiVersion: v1\nkind: List\nitems: []\n"))

	now := time.Date(2025, 6, 1, 0, 0, 0, 0, time.UTC)
	f.Fuzz(func(t *testing.T, data []byte) {
		docs, err := SplitDocuments("fuzz.yaml", bytes.NewReader(data))
		if err != nil {
			return
		}
		objects, problems := DecodeDocuments(docs)
		for _, p := range problems {
			if line := p.String(); strings.Contains(line, "\n") {
				t.Fatalf("problem spans several lines: %q", line)
			}
		}
		set, err := Validate(objects, nil, now)
		if err != nil {
			t.Fatalf("Validate without a lookup failed: %v", err)
		}
		if evaluated := set.Evaluate(); len(set.Problems) == 0 && len(evaluated) != len(objects) {
			t.Fatalf("Evaluate of a valid set returned %d of its %d objects", len(evaluated), len(objects))
		}

		var encoded bytes.Buffer
		if err := EncodeDocuments(&encoded, objects); err != nil {
			t.Fatalf("encoding decoded objects: %v", err)
		}
		redocs, err := SplitDocuments("fuzz.yaml", &encoded)
		if err != nil {
			t.Fatalf("splitting encoded objects: %v\n%s", err, encoded.String())
		}
		again, problems := DecodeDocuments(redocs)
		if len(problems) > 0 {
			t.Fatalf("encoded objects do not decode: %v\n%s", problems, encoded.String())
		}
		if len(again) != len(objects) {
			t.Fatalf("decoded %d objects, after encoding %d", len(objects), len(again))
		}
		for i := range again {
			if again[i].Ref() != objects[i].Ref() {
				t.Fatalf("object %d was %s, after encoding %s", i, objects[i].Ref(), again[i].Ref())
			}
		}
	})
}
