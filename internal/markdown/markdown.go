// Package markdown writes text from the input (names, branches, reasons,
// messages) into the markdown of a pull-request comment so that it is shown
// as written: it can neither make markup (a heading, a table cell, a link,
// HTML) nor notify anyone (an @mention). Every markdown writer of the CLI
// (diff, diff --cluster, rollout status) and of internal/prdiff escapes
// through it, so one set of rules holds for all of them.
//
// The rules are CommonMark's, as GitHub renders it (GFM): any ASCII
// punctuation may be backslash-escaped outside code; a code span ends at the
// first backtick run as long as the one that opened it; a line ending (LF,
// CR or CRLF) ends a heading, a list item and a table row. An @mention is
// found by GitHub in the rendered text, after escapes and entities are
// decoded, so neither "\@" nor "&#64;" stops one: an invisible zero-width
// joiner after every "@" does.
package markdown

import (
	"strings"
	"unicode"

	"github.com/profilesync/profilesync/internal/repofile"
)

// MentionBreaker follows every "@" written: U+200D ZERO WIDTH JOINER is
// invisible but not a word character, so "@admin" is never a mention (or an
// e-mail autolink) in the rendered comment.
const MentionBreaker = "\u200d"

// Text returns s escaped for inline markdown (a paragraph, a heading, a list
// item; Cell for a table cell), the rendered text reading as s on one line:
//
//   - line endings and every other control character become spaces
//     (repofile.OneLine, then a lone CR, which CommonMark takes as a line
//     ending, a tab, NUL), so s stays in its heading, item or row;
//   - <, > and & are written as entities: no HTML, no autolink <...>;
//   - every @ is followed by MentionBreaker: no @mention, no e-mail link;
//   - the punctuation that makes inline markup anywhere in a line (emphasis,
//     links and images, code, a cell's |, strikethrough, math, a heading's
//     closing #) is backslash-escaped, and so are the markers of a block at
//     the start of s (a list's -, + or 1., a thematic break's ---, a setext
//     heading's =), unless a letter or digit follows, which makes them none
//     (-30d, 1.30); leading spaces are entities (no indented code block).
//
// Other punctuation (. - : / in versions, paths and times) is left as it
// is, so the comment's source stays readable.
func Text(s string) string { return escape(s, true) }

// Cell is Text for a table cell, where GFM parses no block: the markers of
// a block at its start and leading spaces are left as written, so a cell
// of "-" stays "-". A | is escaped as in Text, and cannot add a column.
func Cell(s string) string { return escape(s, false) }

// escape is Text, with the markers of a block at the start of s escaped
// when blockStart is set.
func escape(s string, blockStart bool) string {
	s = oneLine(s)
	var b strings.Builder
	b.Grow(len(s) + len(s)/4)
	leading := blockStart
	for i, r := range s {
		if leading && r == ' ' {
			b.WriteString("&#32;")
			continue
		}
		switch {
		case r == '<':
			b.WriteString("&lt;")
		case r == '>':
			b.WriteString("&gt;")
		case r == '&':
			b.WriteString("&amp;")
		case r == '@':
			b.WriteString("@" + MentionBreaker)
		case strings.ContainsRune(inlineMarkup, r),
			leading && strings.ContainsRune(blockMarkers, r) && !wordFollows(s[i+1:]),
			blockStart && (r == '.' || r == ')') && isDigits(s[:i]) && !wordFollows(s[i+1:]):
			b.WriteByte('\\')
			b.WriteRune(r)
		default:
			b.WriteRune(r)
		}
		leading = false
	}
	return b.String()
}

// inlineMarkup is the ASCII punctuation that makes markup anywhere in a
// line (GFM: emphasis, code, links, images, footnotes, tables,
// strikethrough, math; a heading's closing #s); blockMarkers what makes a
// block at the start of one (< and > are entities anyway).
const (
	inlineMarkup = "\\`*_[]!|~$#^"
	blockMarkers = "-+="
)

// wordFollows reports whether rest starts with a letter or a digit.
func wordFollows(rest string) bool {
	for _, r := range rest {
		return unicode.IsLetter(r) || unicode.IsDigit(r)
	}
	return false
}

// isDigits reports whether s is one or more ASCII digits: "12" before a
// "." or ")" would make an ordered list at the start of a line.
func isDigits(s string) bool {
	if s == "" {
		return false
	}
	for i := range len(s) {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// Code returns s as one code span, which GitHub shows in monospace exactly
// as written (one line, @ followed by MentionBreaker): fenced by a backtick
// run longer than any inside s, so nothing in s can close it, and padded
// with a space on each side when s starts or ends with a backtick or a
// space, which CommonMark strips again (the empty string is a span of one
// space). Backslashes and entities mean
// nothing in a code span, so nothing else needs escaping: a < inside one is
// text, never HTML. Not for a table cell, where a | in it would still split
// the row: use Text there.
func Code(s string) string {
	content := strings.ReplaceAll(oneLine(s), "@", "@"+MentionBreaker)
	fence := strings.Repeat("`", longestBacktickRun(content)+1)
	switch {
	case content == "":
		content = " " // "``" would be two backticks, not a span
	case strings.Trim(content, " ") == "":
		// CommonMark strips nothing from a span of spaces only.
	case strings.HasPrefix(content, "`") || strings.HasSuffix(content, "`") ||
		strings.HasPrefix(content, " ") && strings.HasSuffix(content, " "):
		content = " " + content + " "
	}
	return fence + content + fence
}

// CodeBlock returns content as a fenced code block of the language info
// ("yaml"), ending with a line break: fenced by a backtick run longer than
// any inside content (and at least three), so no line of content, however
// indented, can close it. Its lines are kept; an @ in it is followed by
// MentionBreaker like everywhere else.
func CodeBlock(info, content string) string {
	content = strings.ReplaceAll(content, "@", "@"+MentionBreaker)
	fence := strings.Repeat("`", max(3, longestBacktickRun(content)+1))
	if content != "" && !strings.HasSuffix(content, "\n") {
		content += "\n"
	}
	return fence + oneLine(strings.ReplaceAll(info, "`", "")) + "\n" + content + fence + "\n"
}

// oneLine is repofile.OneLine with every remaining control character (a
// lone CR, which CommonMark takes as a line ending, a tab, NUL) turned into
// a space.
func oneLine(s string) string {
	return strings.Map(func(r rune) rune {
		if unicode.IsControl(r) {
			return ' '
		}
		return r
	}, repofile.OneLine(s))
}

// longestBacktickRun is the length of the longest run of backticks in s.
func longestBacktickRun(s string) int {
	longest, run := 0, 0
	for i := range len(s) {
		if s[i] == '`' {
			run++
			longest = max(longest, run)
		} else {
			run = 0
		}
	}
	return longest
}
