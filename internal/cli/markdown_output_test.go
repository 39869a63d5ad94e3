package cli

import (
	"bytes"
	"regexp"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"

	v1alpha1 "github.com/profilesync/profilesync/api/v1alpha1"
)

// wordAfterAt is an @mention as GitHub finds one in the rendered comment.
var wordAfterAt = regexp.MustCompile(`@\w`)

func TestRolloutStatusMarkdownKeepsAHostileBranchInItsCodeSpan(t *testing.T) {
	g := NewWithT(t)
	at := time.Date(2026, 11, 22, 0, 0, 0, 0, time.UTC)
	branch := "x` <img src=x onerror=alert(1)> @admin `"
	status := rolloutStatus{
		At: at, Repository: "https://git.example/@org/<b>repo</b>", Branch: branch, Tip: "0cbf7382a1",
		Landscapes: []landscapeStatus{{
			Name: "dev", Path: "overlays/dev",
			Refused: &refusedRevision{Revision: "235aedc9", RefusedAt: at, Reason: "broken | <script>alert(1)</script>\n## @security"},
		}},
	}

	var out bytes.Buffer
	g.Expect(writeRolloutStatusMarkdown(&out, status)).To(Succeed())
	markdown := out.String()

	g.Expect(markdown).To(HavePrefix("### Rollout of `` x` <img src=x onerror=alert(1)> @\u200dadmin ` `` at `0cbf738`\n\n"),
		"the branch cannot close its code span: the fence is longer than its backticks")
	g.Expect(markdown).To(ContainSubstring("https://git.example/@\u200dorg/&lt;b&gt;repo&lt;/b&gt;, at 2026-11-22T00:00:00Z.\n"))
	g.Expect(markdown).To(ContainSubstring("- dev refused 235aedc at 2026-11-22T00:00:00Z (broken \\| &lt;script&gt;alert(1)&lt;/script&gt; \\#\\# @\u200dsecurity).\n"),
		"a refusal's reason stays on its line, without HTML or a mention")
	_, afterHeading, _ := strings.Cut(markdown, "\n")
	g.Expect(afterHeading).NotTo(ContainSubstring("<"), "no HTML outside the heading's code span, where < is text")
	g.Expect(wordAfterAt.MatchString(markdown)).To(BeFalse(), "no @mention: %s", markdown)
}

func TestDiffClusterMarkdownEscapesTheHoldReasonAndFencesThePatch(t *testing.T) {
	g := NewWithT(t)
	base := &clusterBase{held: []heldObject{{
		ref:   "CloudProfile/aws",
		hold:  v1alpha1.Hold{Until: time.Date(2026, 11, 25, 0, 0, 0, 0, time.UTC), Reason: "INC-7 <img src=x onerror=alert(1)> cc @oncall [x](javascript:y)"},
		patch: []byte("spec:\n  providerConfig: |\n    ```\n    @admin <b>\n"),
	}}}

	var stdout, stderr bytes.Buffer
	g.Expect(base.writeAfterReport(&stdout, &stderr, diffFormatMarkdown)).To(Succeed())
	markdown := stdout.String()

	g.Expect(markdown).To(ContainSubstring("\n#### CloudProfile/aws\n\nheld until 2026-11-25T00:00:00Z (INC-7 &lt;img src=x onerror=alert(1)&gt; cc @\u200doncall \\[x\\](javascript:y))\n\n"))
	g.Expect(markdown).To(HaveSuffix("````yaml\nspec:\n  providerConfig: |\n    ```\n    @\u200dadmin <b>\n````\n"),
		"a fence inside the patch cannot close its block")
	g.Expect(strings.Contains(markdown, "<img")).To(BeFalse())
	g.Expect(wordAfterAt.MatchString(markdown)).To(BeFalse(), "no @mention: %s", markdown)
}
