package prdiff

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/profilesync/profilesync/internal/markdown"
	"github.com/profilesync/profilesync/internal/render/profile"
	"github.com/profilesync/profilesync/internal/repofile"
)

// PolicySection is one landscape's versioning policy findings in a diff
// report (internal/policy checks them; this package only prints them).
type PolicySection struct {
	// Landscape names the overlay, as LandscapeDiff.Landscape does.
	Landscape string
	// File is the policy file, relative to the repository root.
	File string
	// Errors refuse the change; Warnings do not. Both are the head's, each
	// a problem whose message names the rule.
	Errors   profile.Problems
	Warnings profile.Problems
}

// MarshalJSON writes the findings as the lines the CLI prints
// ("FILE: KIND/NAME: FIELD: message"), lists never null.
func (s PolicySection) MarshalJSON() ([]byte, error) {
	lines := func(problems profile.Problems) []string {
		out := make([]string, len(problems))
		for i, p := range problems {
			out[i] = p.String()
		}
		return out
	}
	return json.Marshal(struct {
		Landscape string   `json:"landscape"`
		File      string   `json:"file"`
		Errors    []string `json:"errors"`
		Warnings  []string `json:"warnings"`
	}{s.Landscape, s.File, lines(s.Errors), lines(s.Warnings)})
}

// writePolicyText writes the policy sections for a terminal: per landscape
// its policy file, then one line per finding, errors first.
func writePolicyText(b *strings.Builder, sections []PolicySection) {
	for _, s := range sections {
		fmt.Fprintf(b, "Policy of %s (%s): %s.\n", repofile.OneLine(s.Landscape), repofile.OneLine(s.File), policyVerdict(s))
		for _, p := range s.Errors.Summarize() {
			b.WriteString("  error: " + p.String() + "\n")
		}
		for _, p := range s.Warnings.Summarize() {
			b.WriteString("  warning: " + p.String() + "\n")
		}
		b.WriteString("\n")
	}
}

// writePolicyMarkdown writes the policy sections of a pull-request comment:
// a heading, then per landscape its policy file and a list of findings,
// errors first.
func writePolicyMarkdown(b *strings.Builder, sections []PolicySection) {
	if len(sections) == 0 {
		return
	}
	b.WriteString("\n### Versioning policy\n")
	for _, s := range sections {
		fmt.Fprintf(b, "\n%s (%s): %s.\n", markdown.Text(s.Landscape), markdown.Code(s.File), policyVerdict(s))
		if len(s.Errors)+len(s.Warnings) > 0 {
			b.WriteString("\n")
		}
		for _, p := range s.Errors.Summarize() {
			b.WriteString("- **Error:** " + markdown.Text(p.String()) + "\n")
		}
		for _, p := range s.Warnings.Summarize() {
			b.WriteString("- **Warning:** " + markdown.Text(p.String()) + "\n")
		}
	}
}

// policyVerdict sums a section up: "satisfied", "1 error, 2 warnings".
func policyVerdict(s PolicySection) string {
	if len(s.Errors)+len(s.Warnings) == 0 {
		return "satisfied"
	}
	var parts []string
	if n := len(s.Errors); n > 0 {
		parts = append(parts, plural(n, "error"))
	}
	if n := len(s.Warnings); n > 0 {
		parts = append(parts, plural(n, "warning"))
	}
	return strings.Join(parts, ", ")
}

func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}
