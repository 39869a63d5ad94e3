package cli

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"strings"
	"time"
	"unicode/utf8"
)

// The iCalendar feed of 'timeline --output ics' (RFC 5545): one VEVENT per
// transition, so that a team subscribes to when each version of each
// landscape changes classification.

// icsTimeFormat is the UTC DATE-TIME form (RFC 5545 3.3.5, form #2).
const icsTimeFormat = "20060102T150405Z"

// icsLineOctets is the longest content line before it is folded.
const icsLineOctets = 75

// writeTransitionsICS writes transitions as an iCalendar feed named name.
// stamp is the feed's DTSTAMP (when it was made: --at). An event's UID
// depends on the landscape, profile, version and the stage it enters, never
// on the date, so that a calendar that fetches the feed again updates an
// event whose date moved instead of adding a second one.
func writeTransitionsICS(w io.Writer, name string, stamp time.Time, transitions []landscapeTransition) error {
	var out strings.Builder
	line := func(property, value string) { writeICSLine(&out, property+":"+value) }
	line("BEGIN", "VCALENDAR")
	line("VERSION", "2.0")
	line("PRODID", "-//profilesync.io//profilesync timeline//EN")
	line("CALSCALE", "GREGORIAN")
	line("METHOD", "PUBLISH")
	line("X-WR-CALNAME", escapeICSText(name))
	for _, tr := range transitions {
		where := ""
		if tr.landscape != "" {
			where = tr.landscape + ": "
		}
		line("BEGIN", "VEVENT")
		line("UID", transitionUID(tr))
		line("DTSTAMP", stamp.UTC().Format(icsTimeFormat))
		line("DTSTART", tr.at.UTC().Format(icsTimeFormat))
		// The title names the object (kind, namespace, name): a CloudProfile
		// and a NamespacedCloudProfile that inherits its transition would
		// otherwise have two events of the same title.
		line("SUMMARY", escapeICSText(fmt.Sprintf("%s%s: %s %s %s → %s", where, tr.profile, tr.subject, tr.version, tr.from, tr.to)))
		line("DESCRIPTION", escapeICSText(fmt.Sprintf("%s%s: %s %s moves from %s to %s at %s.",
			where, tr.profile, tr.subject, tr.version, tr.from, tr.to, tr.at.UTC().Format(time.RFC3339))))
		line("CATEGORIES", escapeICSText(string(tr.to)))
		line("TRANSP", "TRANSPARENT")
		line("END", "VEVENT")
	}
	line("END", "VCALENDAR")
	if _, err := io.WriteString(w, out.String()); err != nil {
		return fmt.Errorf("timeline: %w", err)
	}
	return nil
}

// transitionUID identifies a transition across versions of the feed.
func transitionUID(tr landscapeTransition) string {
	sum := sha256.Sum256([]byte(strings.Join([]string{tr.landscape, tr.profile, tr.subject, tr.version, string(tr.to)}, "\x00")))
	return hex.EncodeToString(sum[:16]) + "@profilesync.io"
}

// escapeICSText escapes a TEXT value (RFC 5545 3.3.11): backslash,
// semicolon, comma and newline; other control characters, which TEXT may
// not hold, are dropped.
func escapeICSText(s string) string {
	var b strings.Builder
	for _, r := range s {
		switch {
		case r == '\\' || r == ';' || r == ',':
			b.WriteByte('\\')
			b.WriteRune(r)
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\t':
			b.WriteRune(r)
		case r < 0x20 || r == 0x7f:
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}

// writeICSLine writes a content line, folded (RFC 5545 3.1) so that no line
// is longer than icsLineOctets octets without its CRLF, each continuation
// starting with a space, and never inside a UTF-8 character.
func writeICSLine(w *strings.Builder, line string) {
	limit := icsLineOctets
	for len(line) > limit {
		cut := limit
		for cut > 0 && !utf8.RuneStart(line[cut]) {
			cut--
		}
		w.WriteString(line[:cut])
		w.WriteString("\r\n ")
		line = line[cut:]
		limit = icsLineOctets - 1
	}
	w.WriteString(line)
	w.WriteString("\r\n")
}
