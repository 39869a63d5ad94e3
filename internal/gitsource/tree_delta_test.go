package gitsource

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestADeltaOfALargeBaseIsReadByteForByte exports files that git packs as
// deltas of one large base, whose copies jump back and forth in it: each
// must come out as it went in. go-git's streaming reader of large objects
// returned the right size and the wrong bytes for them, which a build then
// refused as invalid YAML.
func TestADeltaOfALargeBaseIsReadByteForByte(t *testing.T) {
	dir := t.TempDir()
	runGit(t, dir, "init", "-q", "-b", "main")
	files := map[string][]byte{}
	for f := range 4 {
		var content strings.Builder
		for i := range 250 {
			fmt.Fprintf(&content, "---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c%d-%d\ndata:\n", f, i)
			for k := range 300 {
				fmt.Fprintf(&content, "  k%03d: v\n", k)
			}
		}
		name := fmt.Sprintf("objects-%d.yaml", f)
		files[name] = []byte(content.String())
		if err := os.WriteFile(filepath.Join(dir, name), files[name], 0o644); err != nil {
			t.Fatal(err)
		}
	}
	runGit(t, dir, "add", "-A")
	runGit(t, dir, "-c", "user.name=t", "-c", "user.email=t@example.com", "commit", "-q", "-m", "objects")
	runGit(t, dir, "gc", "-q", "--aggressive")
	if packed := runGit(t, dir, "count-objects", "-v"); !strings.Contains(packed, "count: 0") {
		t.Fatalf("the objects are not all packed:\n%s", packed)
	}

	dest := filepath.Join(t.TempDir(), "export")
	if _, err := ExportTree(t.Context(), dir, "HEAD", dest, 64<<20); err != nil {
		t.Fatal(err)
	}
	for name, want := range files {
		got, err := os.ReadFile(filepath.Join(dest, name))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("%s: exported %d bytes that differ from the %d committed", name, len(got), len(want))
		}
	}
}
