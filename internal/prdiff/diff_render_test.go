package prdiff

import (
	"github.com/profilesync/profilesync/test/builders"

	"github.com/profilesync/profilesync/internal/render/profile"

	"bytes"
	"io"
	"strings"
	"testing"

	. "github.com/onsi/gomega"

	v1alpha1 "github.com/profilesync/profilesync/api/v1alpha1"
)

func written(t *testing.T, write func(io.Writer, Report) error, report Report) string {
	t.Helper()
	var out bytes.Buffer
	NewWithT(t).Expect(write(&out, report)).To(Succeed())
	return out.String()
}

func TestRenderersOfAReportWithoutChanges(t *testing.T) {
	g := NewWithT(t)
	same := []profile.Object{cloudProfile("aws", builders.Profile())}
	report := Report{Landscapes: []LandscapeDiff{Diff("dev", same, same, diffNow, 0), Diff("prod", same, same, diffNow, 0)}}

	g.Expect(written(t, WriteText, report)).To(Equal(
		"At 2026-01-01T00:00:00Z, classifications compared until 2026-06-30T00:00:00Z.\n\n" +
			"No changes in dev, prod.\n\n" +
			"Summary: no changes.\n"))
	g.Expect(written(t, WriteMarkdown, report)).To(Equal(
		"## Cloud profile changes\n\n" +
			"At 2026-01-01T00:00:00Z, classifications compared until 2026-06-30T00:00:00Z.\n\n" +
			"**Summary:** no changes.\n\n" +
			"### dev\n\nNo changes (1 profile unchanged).\n\n" +
			"### prod\n\nNo changes (1 profile unchanged).\n"))
	json := written(t, WriteJSON, Report{})
	g.Expect(json).To(ContainSubstring(`"landscapes": [],`))
	g.Expect(json).To(ContainSubstring(`"rolloutWarnings": [],`))
}

func TestRenderersShowProfilesAddedAndRemoved(t *testing.T) {
	g := NewWithT(t)
	report := Report{Base: "main", Head: "topic", Landscapes: []LandscapeDiff{
		Diff("dev", []profile.Object{cloudProfile("old", builders.Profile())}, []profile.Object{cloudProfile("new", builders.Profile())}, diffNow, 0),
	}}

	text := written(t, WriteText, report)
	g.Expect(text).To(ContainSubstring("dev        CloudProfile/new  -           -        profile added    -     -     -\n"))
	g.Expect(text).To(ContainSubstring("dev        CloudProfile/old  -           -        profile removed  -     -     -\n"))
	g.Expect(text).To(HaveSuffix("Summary: 1 profile added, 1 profile removed.\n"))

	markdown := written(t, WriteMarkdown, report)
	g.Expect(markdown).To(ContainSubstring("Base `main`, head `topic`; at 2026-01-01T00:00:00Z"))
	g.Expect(markdown).To(ContainSubstring("#### CloudProfile/new\n\nProfile added.\n"))
	g.Expect(markdown).To(ContainSubstring("#### CloudProfile/old\n\nProfile removed.\n"))
}

func TestMarkdownEscapesTextFromThePullRequest(t *testing.T) {
	g := NewWithT(t)
	base := builders.Profile()
	head := builders.Profile()
	head.MachineImages[0].Name = "evil|<img src=x>_*[link](y)"

	markdown := written(t, WriteMarkdown, Report{Landscapes: []LandscapeDiff{
		Diff("dev\n# heading", []profile.Object{cloudProfile("aws", base)}, []profile.Object{cloudProfile("aws", head)}, diffNow, 0),
	}})

	g.Expect(markdown).To(ContainSubstring("### dev \\# heading\n"), "a landscape name stays one line of text")
	g.Expect(markdown).To(ContainSubstring("| evil\\|&lt;img src=x&gt;\\_\\*\\[link\\](y) |  | machine image added |"))
	for _, line := range strings.Split(markdown, "\n") {
		if strings.HasPrefix(line, "| evil") {
			g.Expect(strings.Count(line, " |")).To(Equal(6), "the name does not add a column: %s", line)
		}
	}
}

func TestMarkdownMentionsNoOneAndKeepsRefsAndFilesInTheirCodeSpans(t *testing.T) {
	g := NewWithT(t)
	report := Report{
		Base: "main", Head: "x` <img src=x onerror=alert(1)> @admin `",
		Policy: []PolicySection{{
			Landscape: "dev",
			File:      "overlays/dev/@security-team`<b>.yaml",
			Errors:    profile.Problems{{File: "overlays/dev/@owners.yaml", Kind: "CloudProfile", Name: "aws", Message: "ping @org/team"}},
		}},
	}

	markdown := written(t, WriteMarkdown, report)

	g.Expect(markdown).To(ContainSubstring("Base `main`, head `` x` <img src=x onerror=alert(1)> @\u200dadmin ` ``.\n"),
		"the head ref stays inside a code span fenced longer than its backticks")
	g.Expect(markdown).To(ContainSubstring("dev (``overlays/dev/@\u200dsecurity-team`<b>.yaml``): 1 error."))
	g.Expect(markdown).To(ContainSubstring("- **Error:** overlays/dev/@\u200downers.yaml: CloudProfile/aws: ping @\u200dorg/team\n"))
	g.Expect(markdown).NotTo(MatchRegexp(`@\w`), "no @mention survives")
}

func TestTextKeepsOneLinePerRow(t *testing.T) {
	g := NewWithT(t)
	head := builders.Profile()
	head.MachineImages[0].Name = "two\nlines\tand a tab"

	text := written(t, WriteText, Report{Landscapes: []LandscapeDiff{
		Diff("dev", []profile.Object{cloudProfile("aws", builders.Profile())}, []profile.Object{cloudProfile("aws", head)}, diffNow, 0),
	}})

	g.Expect(text).To(ContainSubstring("CloudProfile/aws  two lines and a tab  -        machine image added"))
}

func TestSummaryCountsAVersionClassifiedDifferentlyNowOnceAsNow(t *testing.T) {
	g := NewWithT(t)
	base := withKubernetes(builders.Staged("1.30.0", builders.Stage(v1alpha1.ClassificationPreview, ""), builders.Stage(v1alpha1.ClassificationSupported, "2026-02-01T00:00:00Z"), builders.Stage(v1alpha1.ClassificationDeprecated, "2026-05-01T00:00:00Z")))
	head := withKubernetes(builders.Staged("1.30.0", builders.Stage(v1alpha1.ClassificationPreview, ""), builders.Stage(v1alpha1.ClassificationSupported, "2025-12-01T00:00:00Z"), builders.Stage(v1alpha1.ClassificationDeprecated, "2026-03-01T00:00:00Z")))
	later := withKubernetes(builders.Staged("1.30.0", builders.Stage(v1alpha1.ClassificationPreview, ""), builders.Stage(v1alpha1.ClassificationSupported, "2026-02-01T00:00:00Z"), builders.Stage(v1alpha1.ClassificationDeprecated, "2026-03-01T00:00:00Z")))

	report := Report{Landscapes: []LandscapeDiff{
		Diff("dev", []profile.Object{cloudProfile("aws", base)}, []profile.Object{cloudProfile("aws", head)}, diffNow, 0),
		Diff("prod", []profile.Object{cloudProfile("aws", base)}, []profile.Object{cloudProfile("aws", later)}, diffNow, 0),
	}}
	summary := report.Summary()

	g.Expect(summary.ClassificationsNow).To(Equal(1), "dev: differs now and again from March")
	g.Expect(summary.ClassificationsLater).To(Equal(1), "prod: differs only from March")
	g.Expect(summary.StageChanges).To(Equal(3))
	g.Expect(summary.Empty()).To(BeFalse())
	g.Expect(summary.String()).To(Equal("2 profiles changed, 3 lifecycle changes, 1 version classified differently now, 1 version classified differently later"))
}
