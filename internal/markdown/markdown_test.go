package markdown

import (
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"
)

func TestText(t *testing.T) {
	tests := []struct {
		name, in, want string
	}{
		{"plain words and the punctuation of versions, paths and times are left as written", "overlays/dev 1.30.2 at 2026-11-25T00:00:00Z", "overlays/dev 1.30.2 at 2026-11-25T00:00:00Z"},
		{"a backtick cannot open a code span", "a`b``c", "a\\`b\\`\\`c"},
		{"HTML is written as entities", `<img src=x onerror="alert(1)">`, `&lt;img src=x onerror="alert(1)"&gt;`},
		{"an ampersand cannot start an entity", "&amp;", "&amp;amp;"},
		{"an @mention is broken by an invisible joiner", "ping @admin and a@b.c", "ping @\u200dadmin and a@\u200db.c"},
		{"a newline cannot end the heading or the row", "name\n## injected\r\nmore\rand a\ttab", `name \#\# injected more and a tab`},
		{"a lone carriage return is a line ending too", "a\rb", "a b"},
		{"a cell's pipe is escaped", "a|b", `a\|b`},
		{"emphasis, links, images, strikethrough and math are escaped", "*a* _b_ [c](d) ![e](f) ~g~ $h$ #i \\j ^k", `\*a\* \_b\_ \[c\](d) \!\[e\](f) \~g\~ \$h\$ \#i \\j \^k`},
		{"a list marker at the start is escaped", "- item", `\- item`},
		{"a plus at the start is escaped", "+ item", `\+ item`},
		{"a setext underline at the start is escaped", "===", `\===`},
		{"an ordered list marker at the start is escaped", "12. item", `12\. item`},
		{"an ordered list marker with a parenthesis is escaped", "3) item", `3\) item`},
		{"a dash inside is left as written", "a-b", "a-b"},
		{"a thematic break at the start is escaped", "---", `\---`},
		{"a negative number at the start is no list and is left as written", "-30d", "-30d"},
		{"a version at the start is no list and is left as written", "1.30.2", "1.30.2"},
		{"leading spaces cannot make an indented code block", "    code", "&#32;&#32;&#32;&#32;code"},
		{"the empty string stays empty", "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Text(tt.in); got != tt.want {
				t.Errorf("Text(%q) = %q, want %q", tt.in, got, tt.want)
			}
		})
	}
}

func TestCell(t *testing.T) {
	tests := []struct {
		name, in, want string
	}{
		{"a dash alone stays a dash, a cell holds no list", "-", "-"},
		{"an ordered list marker is left as written", "1. x", "1. x"},
		{"a pipe cannot add a column", "a|b", `a\|b`},
		{"HTML, mentions and markup are escaped as in text", "<b>@x *y*", "&lt;b&gt;@\u200dx \\*y\\*"},
		{"a newline cannot end the row", "a\nb", "a b"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Cell(tt.in); got != tt.want {
				t.Errorf("Cell(%q) = %q, want %q", tt.in, got, tt.want)
			}
		})
	}
}

func TestCode(t *testing.T) {
	tests := []struct {
		name, in, want string
	}{
		{"plain text takes one backtick", "main", "`main`"},
		{"a backtick inside takes a longer fence and padding", "a`b", "``a`b``"},
		{"a run of three inside takes four", "x```y", "````x```y````"},
		{"a backtick at the start is padded so it does not join the fence", "`x", "`` `x ``"},
		{"a backtick at the end is padded", "x`", "`` x` ``"},
		{"spaces on both sides are kept by one more space each", " x ", "`  x  `"},
		{"HTML inside a code span is text", "<b>", "`<b>`"},
		{"a branch that tries to close the span and inject HTML and a mention stays inside", "x` <img src=x> @admin `",
			"`` x` <img src=x> @\u200dadmin ` ``"},
		{"an @mention is broken by an invisible joiner", "@team", "`@\u200dteam`"},
		{"a newline cannot end the heading", "a\nb\r\nc\rd", "`a b c d`"},
		{"the empty string is a span of one space", "", "` `"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Code(tt.in); got != tt.want {
				t.Errorf("Code(%q) = %q, want %q", tt.in, got, tt.want)
			}
		})
	}
}

func TestCodeBlock(t *testing.T) {
	tests := []struct {
		name, info, in, want string
	}{
		{"plain content takes three backticks", "yaml", "a: 1\n", "```yaml\na: 1\n```\n"},
		{"an indented fence inside cannot close the block", "yaml", "a: |\n  ```\n  b\n", "````yaml\na: |\n  ```\n  b\n````\n"},
		{"content without a final newline gets one", "yaml", "a: 1", "```yaml\na: 1\n```\n"},
		{"an @mention inside is broken", "yaml", "owner: '@team'\n", "```yaml\nowner: '@\u200dteam'\n```\n"},
		{"the info string cannot hold a backtick or a newline", "ya`ml\nx", "a\n", "```yaml x\na\n```\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := CodeBlock(tt.info, tt.in); got != tt.want {
				t.Errorf("CodeBlock(%q, %q) = %q, want %q", tt.info, tt.in, got, tt.want)
			}
		})
	}
}

// FuzzMarkdownText checks that the output of Text and Cell is inert and
// reads as the input: no line ending or control character, no raw < > or
// unescaped markup, no @ followed by a word character (and, for Text, no
// block marker at the start), and decoding its escapes gives the input on
// one line back.
func FuzzMarkdownText(f *testing.F) {
	for _, seed := range []string{"", "a`b", "<script>", "@admin", "- x", "12. x", "    x", "a\r\nb", "&lt;", "\\", "x|y", "@", "1)"} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, in string) {
		if !utf8.ValidString(in) {
			return
		}
		checkInert(t, in, Text(in), true)
		checkInert(t, in, Cell(in), false)
	})
}

func checkInert(t *testing.T, in, out string, blockStart bool) {
	t.Helper()
	var decoded strings.Builder
	for i := 0; i < len(out); {
		r, size := utf8.DecodeRuneInString(out[i:])
		rest := out[i:]
		switch {
		case unicode.IsControl(r):
			t.Fatalf("%q escaped is %q: a control character at %d", in, out, i)
		case r == '<' || r == '>':
			t.Fatalf("%q escaped is %q: a raw %c at %d", in, out, r, i)
		case r == '\\':
			next, n := utf8.DecodeRuneInString(out[i+1:])
			if n == 0 || next >= utf8.RuneSelf || !unicode.IsPunct(next) && !unicode.IsSymbol(next) {
				t.Fatalf("%q escaped is %q: a backslash that escapes nothing at %d", in, out, i)
			}
			decoded.WriteRune(next)
			i += 1 + n
			continue
		case r == '&':
			entity, ok := entityAt(rest)
			if !ok {
				t.Fatalf("%q escaped is %q: an & that is no entity of ours at %d", in, out, i)
			}
			decoded.WriteString(entity.text)
			i += len(entity.written)
			continue
		case r == '@':
			if !strings.HasPrefix(rest, "@"+MentionBreaker) {
				t.Fatalf("%q escaped is %q: an @ without the joiner at %d", in, out, i)
			}
			decoded.WriteByte('@')
			i += 1 + len(MentionBreaker)
			continue
		case strings.ContainsRune(inlineMarkup, r):
			t.Fatalf("%q escaped is %q: unescaped markup %c at %d", in, out, r, i)
		case blockStart && i == 0 && strings.ContainsRune(blockMarkers, r) && !wordFollows(out[1:]):
			t.Fatalf("%q escaped is %q: a block marker at the start", in, out)
		}
		decoded.WriteRune(r)
		i += size
	}
	if want := oneLine(in); decoded.String() != want {
		t.Fatalf("%q escaped is %q, which reads as %q, want %q", in, out, decoded.String(), want)
	}
}

type entity struct{ written, text string }

func entityAt(s string) (entity, bool) {
	for _, e := range []entity{{"&lt;", "<"}, {"&gt;", ">"}, {"&amp;", "&"}, {"&#32;", " "}} {
		if strings.HasPrefix(s, e.written) {
			return e, true
		}
	}
	return entity{}, false
}

// FuzzMarkdownCode checks that Code's output is exactly one code span as
// CommonMark reads it: an opening backtick run, content that holds no run
// of the same length (so nothing inside closes it), and the closing run at
// the very end; on one line, with no @ followed by a word character, and
// reading as its input on one line. A < inside a code span is text.
func FuzzMarkdownCode(f *testing.F) {
	for _, seed := range []string{"", "`", "``", "a`b", "` x `", " ", "  ", "x` <img src=x> @admin `", "a\nb", "@"} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, in string) {
		if !utf8.ValidString(in) {
			return
		}
		out := Code(in)
		fence := len(out) - len(strings.TrimLeft(out, "`"))
		if fence == 0 || len(out) < 2*fence+1 || !strings.HasSuffix(out, strings.Repeat("`", fence)) {
			t.Fatalf("Code(%q) = %q: not fenced", in, out)
		}
		content := out[fence : len(out)-fence]
		if strings.HasPrefix(content, "`") || strings.HasSuffix(content, "`") {
			t.Fatalf("Code(%q) = %q: the content's backticks join a fence", in, out)
		}
		for _, run := range strings.FieldsFunc(content, func(r rune) bool { return r != '`' }) {
			if len(run) == fence {
				t.Fatalf("Code(%q) = %q: a run of %d backticks inside closes the span", in, out, fence)
			}
		}
		if strings.ContainsFunc(content, unicode.IsControl) {
			t.Fatalf("Code(%q) = %q: a control character", in, out)
		}
		for i := 0; i < len(content); i++ {
			if content[i] == '@' && !strings.HasPrefix(content[i:], "@"+MentionBreaker) {
				t.Fatalf("Code(%q) = %q: an @ without the joiner", in, out)
			}
		}
		// CommonMark strips one space from each side when both are spaces
		// and the content is not all spaces.
		shown := content
		if strings.HasPrefix(shown, " ") && strings.HasSuffix(shown, " ") && strings.Trim(shown, " ") != "" {
			shown = shown[1 : len(shown)-1]
		}
		shown = strings.ReplaceAll(shown, "@"+MentionBreaker, "@")
		if want := oneLine(in); shown != want && (want != "" || shown != " ") {
			t.Fatalf("Code(%q) = %q shows %q, want %q", in, out, shown, want)
		}
	})
}
