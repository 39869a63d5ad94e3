package prdiff

import (
	"flag"

	"github.com/profilesync/profilesync/test/builders"

	"github.com/profilesync/profilesync/internal/render/overlay"
	"github.com/profilesync/profilesync/internal/render/profile"

	"bytes"
	"context"
	"encoding/json"
	"io"
	"path/filepath"
	"testing"
	"time"

	. "github.com/onsi/gomega"
)

// diffGoldenDir holds a pull request as two checkouts of a profiles
// repository (a copy of examples/profiles-repo plus an untouched profile):
// base/ before and head/ after it. The pull request moves stages of
// Kubernetes 1.33.5 and 1.33.7 (1.33.7 is supported now and deprecated in
// March, so its classification differs now and later), adds Kubernetes
// 1.32.12 (which becomes the automatic update target of the other 1.32
// versions), removes Garden Linux 1443.20.0, adds the image flatcar, changes
// ubuntu's update strategy (and with it ubuntu's forced update targets) and
// the deprecated API's expirationDate of ubuntu 22.4.5, retimes the
// namespaced profile's override, and makes prod support 1.34.2 before dev
// does (a rollout warning). The renderings are diff.txt, diff.md and
// diff.json.
// update rewrites the golden files from the current output.
var update = flag.Bool("update", false, "rewrite the golden files under testdata/diff from the current output")

const diffGoldenDir = "testdata/diff"

// diffGoldenTime is the time of the golden diff, the README's "now".
var diffGoldenTime = time.Date(2026, 11, 22, 0, 0, 0, 0, time.UTC)

func TestDiffGolden(t *testing.T) {
	g := NewWithT(t)
	report := diffGoldenReport(t)

	kinds := map[ChangeKind]bool{}
	for _, l := range report.Landscapes {
		for _, p := range l.Profiles {
			for _, c := range p.Changes {
				kinds[c.Kind] = true
			}
		}
	}
	for _, kind := range []ChangeKind{
		ChangeStageMoved, ChangeVersionAdded, ChangeVersionRemoved, ChangeImageAdded, ChangeUpdateStrategy,
		ChangeExpirationDate, ChangeClassification, ChangeUpdatePath,
	} {
		g.Expect(kinds).To(HaveKey(kind), "the fixture is meant to show a change of kind %s", kind)
	}
	g.Expect(report.RolloutWarnings).NotTo(BeEmpty(), "the fixture is meant to show a rollout warning")

	for _, golden := range []struct {
		file  string
		write func(io.Writer, Report) error
	}{
		{"diff.txt", WriteText},
		{"diff.md", WriteMarkdown},
		{"diff.json", WriteJSON},
	} {
		t.Run(golden.file, func(t *testing.T) {
			var out bytes.Buffer
			NewWithT(t).Expect(golden.write(&out, report)).To(Succeed())
			builders.AssertGolden(t, filepath.Join(diffGoldenDir, golden.file), out.Bytes(), *update)
		})
	}
}

func TestDiffJSONRoundTrips(t *testing.T) {
	g := NewWithT(t)
	report := diffGoldenReport(t)
	var out bytes.Buffer
	g.Expect(WriteJSON(&out, report)).To(Succeed())

	var decoded struct {
		Report
		Summary Summary `json:"summary"`
	}
	g.Expect(json.Unmarshal(out.Bytes(), &decoded)).To(Succeed())
	g.Expect(decoded.Report).To(Equal(report), "the JSON holds the whole report")
	g.Expect(decoded.Summary).To(Equal(report.Summary()))
}

// diffGoldenReport builds both overlays of both checkouts, diffs each
// overlay and checks the rollout order of the head.
func diffGoldenReport(t *testing.T) Report {
	t.Helper()
	report := Report{Base: "main", Head: "pull/42/head"}
	var heads []Landscape
	for _, name := range []string{"dev", "prod"} {
		base := evaluatedOverlay(t, filepath.Join(diffGoldenDir, "base"), name, diffGoldenTime)
		head := evaluatedOverlay(t, filepath.Join(diffGoldenDir, "head"), name, diffGoldenTime)
		report.Landscapes = append(report.Landscapes, Diff(name, base, head, diffGoldenTime, 0))
		heads = append(heads, Landscape{Name: name, Objects: head})
	}
	report.RolloutWarnings = CheckRolloutOrder(heads, diffGoldenTime)
	return report
}

// evaluatedOverlay builds overlays/<name> of the checkout at root the way
// the CLI does and returns its valid, evaluated objects.
func evaluatedOverlay(t *testing.T, root, name string, at time.Time) []profile.Object {
	t.Helper()
	g := NewWithT(t)
	absRoot, err := filepath.Abs(root)
	g.Expect(err).NotTo(HaveOccurred())
	docs, err := overlay.Build(context.Background(), absRoot, filepath.Join("overlays", name), overlay.DefaultLimits())
	g.Expect(err).NotTo(HaveOccurred())
	objects, problems := profile.DecodeDocuments(docs)
	g.Expect(problems).To(BeEmpty())
	validation, err := profile.Validate(objects, nil, at)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(validation.Problems).To(BeEmpty(), "%s of %s is valid", name, root)
	g.Expect(validation.Warnings).To(BeEmpty(), "%s of %s has no warnings", name, root)
	evaluated := validation.Evaluate()
	return evaluated
}
