package profile

import (
	"os"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"

	"github.com/profilesync/profilesync/test/builders"
)

// differenceExample is a ```yaml block of docs/lifecycle.md's section on
// the differences from Gardener: its profiles and the verdict its first
// line states.
type differenceExample struct {
	verdict  string // the first line without "# ProfileSync "
	profiles string
}

// differenceExamples reads the yaml blocks of the section "Where we differ
// from Gardener, and why" of docs/lifecycle.md, whose lines are indented as
// list items (by as much as the block's opening line).
func differenceExamples(t *testing.T) []differenceExample {
	t.Helper()
	data, err := os.ReadFile("../../../docs/lifecycle.md")
	if err != nil {
		t.Fatalf("reading docs/lifecycle.md: %v", err)
	}
	_, section, found := strings.Cut(string(data), "\n## Where we differ from Gardener, and why\n")
	if !found {
		t.Fatal(`docs/lifecycle.md has no "## Where we differ from Gardener, and why" section`)
	}
	section, _, _ = strings.Cut(section, "\n## ")
	var examples []differenceExample
	for _, block := range builders.MarkdownYAMLBlocks(section) {
		first, profiles, _ := strings.Cut(block, "\n")
		verdict, ok := strings.CutPrefix(first, "# ProfileSync ")
		if !ok {
			t.Fatalf("a yaml block of the differences section starts with %q, not with the verdict (# ProfileSync accepts/refuses …)", first)
		}
		examples = append(examples, differenceExample{verdict: verdict, profiles: profiles})
	}
	return examples
}

// TestTheDifferencesFromGardenerHold checks each example of
// docs/lifecycle.md's differences from Gardener against the verdict it
// states: "accepts" (optionally ", warning: TEXT")
// or "refuses: TEXT", TEXT being part of a problem's line.
func TestTheDifferencesFromGardenerHold(t *testing.T) {
	examples := differenceExamples(t)
	if len(examples) < 6 {
		t.Fatalf("found %d examples in docs/lifecycle.md's differences from Gardener, want at least 6", len(examples))
	}
	now := time.Date(2025, 6, 1, 0, 0, 0, 0, time.UTC)
	for _, example := range examples {
		t.Run(example.verdict, func(t *testing.T) {
			g := NewWithT(t)
			objects, problems := decodeString(t, "example.yaml", example.profiles)
			if len(problems) == 0 {
				report, err := Validate(objects, nil, now)
				g.Expect(err).NotTo(HaveOccurred())
				problems = report.Problems
				if warning, ok := strings.CutPrefix(example.verdict, "accepts, warning: "); ok {
					g.Expect(report.Warnings.Lines()).To(ContainElement(ContainSubstring(warning)))
				}
			}
			if refusal, ok := strings.CutPrefix(example.verdict, "refuses: "); ok {
				g.Expect(problems.Lines()).To(ContainElement(ContainSubstring(refusal)))
				return
			}
			g.Expect(example.verdict).To(HavePrefix("accepts"))
			g.Expect(problems.Lines()).To(BeEmpty())
		})
	}
}
