package render

import (
	"bytes"
	"path/filepath"
	"testing"
	"time"

	. "github.com/onsi/gomega"
)

// profilesRepo is the fixture repository shared with the sync e2e tests.
var profilesRepo = filepath.Join("..", "..", "test", "testdata", "profiles-repo")

// buildGoldenTime is the instant the golden outputs are evaluated at: some
// versions of the fixture are in each stage then, and the dev and prod
// overlays disagree about several.
var buildGoldenTime = time.Date(2025, 6, 1, 0, 0, 0, 0, time.UTC)

// TestBuildGolden builds each overlay of the fixture repository, validates
// and evaluates it, and compares the objects (each preceded by the file it
// came from) with testdata/build/<overlay>.yaml.
func TestBuildGolden(t *testing.T) {
	for _, overlay := range []string{"dev", "prod"} {
		t.Run(overlay, func(t *testing.T) {
			g := NewWithT(t)
			docs, err := buildWithDefaults(t, profilesRepo, filepath.Join("overlays", overlay))
			g.Expect(err).NotTo(HaveOccurred())
			assertGolden(t, filepath.Join("testdata", "build", overlay+".yaml"), evaluatedStream(t, docs, buildGoldenTime))
		})
	}
}

// evaluatedStream decodes, validates and evaluates docs, which must be
// valid, and returns them as a YAML stream with a "# Source:" comment
// naming each object's file.
func evaluatedStream(t *testing.T, docs []Document, at time.Time) []byte {
	t.Helper()
	g := NewWithT(t)
	objects, problems := DecodeDocuments(docs)
	g.Expect(problems).To(BeEmpty())
	report, err := ValidateSet(objects, nil)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(report.Problems).To(BeEmpty())
	evaluated, problems, err := EvaluateSet(objects, nil, at)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(problems).To(BeEmpty())

	var out bytes.Buffer
	for i, o := range evaluated {
		if i > 0 {
			out.WriteString("---\n")
		}
		out.WriteString("# Source: " + o.File + "\n")
		g.Expect(EncodeDocuments(&out, []Object{o})).To(Succeed())
	}
	return out.Bytes()
}
