package overlay

import (
	"flag"
	"testing"

	"github.com/profilesync/profilesync/test/builders"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/build from the current output")

// assertGolden compares got with the golden file, or rewrites the file when
// the test runs with -update.
func assertGolden(t *testing.T, path string, got []byte) {
	t.Helper()
	builders.AssertGolden(t, path, got, *update)
}
