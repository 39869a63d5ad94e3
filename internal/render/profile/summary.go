package profile

import (
	"fmt"
	"regexp"
	"strconv"
)

// SummaryKeep is how many problems of one kind Summarize keeps before it
// counts the rest.
const SummaryKeep = 10

// Summarize returns the problems with every run of the same mistake cut
// short: when more than SummaryKeep problems of one object have the same
// field path once list indices are ignored and the same message once quoted
// values and numbers are ignored, the first SummaryKeep are kept and one
// line "... and 9,990 more like it" stands for the rest, right after them.
// Everything else keeps its order. A repository with one mistake copied ten
// thousand times then reads as that mistake, not as ten thousand lines.
//
// It is meant for people (the CLI's output, the sync's condition and events);
// the full list stays available to code.
func (ps Problems) Summarize() Problems {
	shapes := make([]problemShape, len(ps))
	counts := make(map[problemShape]int)
	for i, p := range ps {
		shapes[i] = shapeOf(p)
		counts[shapes[i]]++
	}
	summarized := make(Problems, 0, len(ps))
	seen := make(map[problemShape]int)
	for i, p := range ps {
		shape := shapes[i]
		count := counts[shape]
		seen[shape]++
		switch {
		case count <= SummaryKeep || seen[shape] < SummaryKeep:
			summarized = append(summarized, p)
		case seen[shape] == SummaryKeep:
			summary := p
			summary.Field = shape.field
			summary.Message = fmt.Sprintf("... and %s more like it", thousands(count-SummaryKeep))
			summarized = append(summarized, p, summary)
		}
	}
	return summarized
}

// problemShape is what problems of the same mistake have in common.
type problemShape struct {
	file, kind, namespace, name string
	field                       string // list indices as [*]
	message                     string // values as placeholders
}

var (
	listIndex    = regexp.MustCompile(`\[[0-9]+\](?: \([^)]*\))?`)
	quotedValue  = regexp.MustCompile(`"(?:[^"\\]|\\.)*"`)
	numberInText = regexp.MustCompile(`[0-9]+`)
)

func shapeOf(p Problem) problemShape {
	message := quotedValue.ReplaceAllString(p.Message, `"…"`)
	message = numberInText.ReplaceAllString(message, "0")
	return problemShape{
		file: p.File, kind: p.Kind, namespace: p.Namespace, name: p.Name,
		field:   listIndex.ReplaceAllString(p.Field, "[*]"),
		message: message,
	}
}

// thousands formats n with a comma between groups of three digits: 9,990.
func thousands(n int) string {
	if n < 0 {
		return "-" + thousands(-n)
	}
	digits := strconv.Itoa(n)
	var out []byte
	for i := range len(digits) {
		if i > 0 && (len(digits)-i)%3 == 0 {
			out = append(out, ',')
		}
		out = append(out, digits[i])
	}
	return string(out)
}
