package overlay

import (
	"bytes"
	"context"
	"path/filepath"
	"testing"
	"time"

	. "github.com/onsi/gomega"

	"github.com/profilesync/profilesync/internal/render/profile"
)

// profilesRepo is the fixture repository shared with the sync e2e tests.
var profilesRepo = filepath.Join("..", "..", "..", "test", "testdata", "profiles-repo")

// examplesRepo is the example repository that make run-local serves.
var examplesRepo = filepath.Join("..", "..", "..", "examples", "profiles-repo")

// buildGoldenTime is the instant the golden outputs are evaluated at: some
// versions of the fixture are in each stage then, and the dev and prod
// overlays disagree about several.
var buildGoldenTime = time.Date(2025, 6, 1, 0, 0, 0, 0, time.UTC)

// examplesGoldenTime is the instant the example repository is evaluated at,
// the one DEVELOPMENT.md runs it at: a week before its overlays disagree.
var examplesGoldenTime = time.Date(2026, 11, 22, 0, 0, 0, 0, time.UTC)

// TestBuildGolden builds each overlay of the fixture and the example
// repository, validates and evaluates it, and compares the objects (each
// preceded by the file it came from) with testdata/build/. The golden files
// were written when the overlays still patched versions by index: that they
// still match shows the overlays that name versions by key mean the same.
func TestBuildGolden(t *testing.T) {
	tests := []struct {
		name, repo, overlay, golden string
		at                          time.Time
	}{
		{"the fixture's dev landscape", profilesRepo, "dev", "dev.yaml", buildGoldenTime},
		{"the fixture's prod landscape", profilesRepo, "prod", "prod.yaml", buildGoldenTime},
		{"the example's dev landscape", examplesRepo, "dev", "examples-dev.yaml", examplesGoldenTime},
		{"the example's prod landscape", examplesRepo, "prod", "examples-prod.yaml", examplesGoldenTime},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			docs, warnings, err := BuildWithWarnings(context.Background(), tt.repo, filepath.Join("overlays", tt.overlay), DefaultLimits())
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(warnings).To(BeEmpty(), "the overlays name versions by key, never by index")
			assertGolden(t, filepath.Join("testdata", "build", tt.golden), evaluatedStream(t, docs, tt.at))
		})
	}
}

// evaluatedStream decodes, validates and evaluates docs, which must be
// valid, and returns them as a YAML stream with a "# Source:" comment
// naming each object's file.
func evaluatedStream(t *testing.T, docs []profile.Document, at time.Time) []byte {
	t.Helper()
	g := NewWithT(t)
	objects, problems := profile.DecodeDocuments(docs)
	g.Expect(problems).To(BeEmpty())
	report, err := profile.Validate(objects, nil, at)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(report.Problems).To(BeEmpty())
	evaluated := report.Evaluate()

	var out bytes.Buffer
	for i, o := range evaluated {
		if i > 0 {
			out.WriteString("---\n")
		}
		out.WriteString("# Source: " + o.File + "\n")
		g.Expect(profile.EncodeDocuments(&out, []profile.Object{o})).To(Succeed())
	}
	return out.Bytes()
}
