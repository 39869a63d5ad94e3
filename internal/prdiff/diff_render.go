package prdiff

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/profilesync/profilesync/internal/markdown"
	"github.com/profilesync/profilesync/internal/repofile"
)

// Summary counts what a Report holds, for its summary line and for
// callers that decide on it (for example to fail a check on rollout
// warnings).
type Summary struct {
	Landscapes int `json:"landscapes"`
	// ProfilesChanged counts profiles on both sides that differ,
	// ProfilesUnchanged those that do not; ProfilesAdded and
	// ProfilesRemoved those on one side only. Each landscape counts its own.
	ProfilesChanged   int `json:"profilesChanged"`
	ProfilesUnchanged int `json:"profilesUnchanged"`
	ProfilesAdded     int `json:"profilesAdded"`
	ProfilesRemoved   int `json:"profilesRemoved"`
	VersionsAdded     int `json:"versionsAdded"`
	VersionsRemoved   int `json:"versionsRemoved"`
	ImagesAdded       int `json:"imagesAdded"`
	ImagesRemoved     int `json:"imagesRemoved"`
	UpdateStrategies  int `json:"updateStrategies"`
	// StageChanges counts stages added, removed and moved, and changes of
	// the deprecated API's classification and expirationDate.
	StageChanges int `json:"stageChanges"`
	// ClassificationsNow counts versions whose classification differs at the
	// diff's time; ClassificationsLater those that differ only later within
	// the horizon.
	ClassificationsNow   int `json:"classificationsNow"`
	ClassificationsLater int `json:"classificationsLater"`
	UpdatePaths          int `json:"updatePaths"`
	RolloutWarnings      int `json:"rolloutWarnings"`
}

// Empty reports whether the report has nothing to say: no profile differs
// and there is no rollout warning.
func (s Summary) Empty() bool {
	return s.ProfilesChanged+s.ProfilesAdded+s.ProfilesRemoved+s.RolloutWarnings == 0
}

// Summary counts the report's changes.
func (r Report) Summary() Summary {
	s := Summary{Landscapes: len(r.Landscapes), RolloutWarnings: len(r.RolloutWarnings)}
	for _, l := range r.Landscapes {
		s.ProfilesUnchanged += l.Unchanged
		for _, p := range l.Profiles {
			switch p.Status {
			case ProfileAdded:
				s.ProfilesAdded++
			case ProfileRemoved:
				s.ProfilesRemoved++
			default:
				s.ProfilesChanged++
			}
			// A version's classification may differ in several stretches;
			// it is counted once, as "now" when one of them starts now.
			type subjectVersion struct{ image, version string }
			classified := make(map[subjectVersion]bool)
			for _, c := range p.Changes {
				switch c.Kind {
				case ChangeVersionAdded:
					s.VersionsAdded++
				case ChangeVersionRemoved:
					s.VersionsRemoved++
				case ChangeImageAdded:
					s.ImagesAdded++
				case ChangeImageRemoved:
					s.ImagesRemoved++
				case ChangeUpdateStrategy:
					s.UpdateStrategies++
				case ChangeStageAdded, ChangeStageRemoved, ChangeStageMoved, ChangeExpirationDate, ChangeDeclaredClassification:
					s.StageChanges++
				case ChangeUpdatePath:
					s.UpdatePaths++
				case ChangeClassification:
					key := subjectVersion{c.MachineImage, c.Version}
					now := c.From != nil && c.From.Equal(l.Now)
					if seenNow, seen := classified[key]; !seen || (now && !seenNow) {
						classified[key] = now
					}
				}
			}
			for _, now := range classified {
				if now {
					s.ClassificationsNow++
				} else {
					s.ClassificationsLater++
				}
			}
		}
	}
	return s
}

// String is the summary in one line, like "3 profiles changed, 1 profile
// unchanged, 2 versions added, 1 rollout warning"; it starts with "no
// changes" when no profile differs.
func (s Summary) String() string {
	var parts []string
	add := func(n int, one, many string) {
		switch {
		case n == 1:
			parts = append(parts, "1 "+one)
		case n > 1:
			parts = append(parts, fmt.Sprintf("%d %s", n, many))
		}
	}
	add(s.ProfilesChanged, "profile changed", "profiles changed")
	add(s.ProfilesAdded, "profile added", "profiles added")
	add(s.ProfilesRemoved, "profile removed", "profiles removed")
	if len(parts) == 0 {
		// Unchanged profiles are worth a word only next to changed ones.
		parts = append(parts, "no changes")
	} else {
		add(s.ProfilesUnchanged, "profile unchanged", "profiles unchanged")
	}
	add(s.VersionsAdded, "version added", "versions added")
	add(s.VersionsRemoved, "version removed", "versions removed")
	add(s.ImagesAdded, "machine image added", "machine images added")
	add(s.ImagesRemoved, "machine image removed", "machine images removed")
	add(s.UpdateStrategies, "update strategy changed", "update strategies changed")
	add(s.StageChanges, "lifecycle change", "lifecycle changes")
	add(s.ClassificationsNow, "version classified differently now", "versions classified differently now")
	add(s.ClassificationsLater, "version classified differently later", "versions classified differently later")
	add(s.UpdatePaths, "update path changed", "update paths changed")
	add(s.RolloutWarnings, "rollout warning", "rollout warnings")
	return strings.Join(parts, ", ")
}

// diffCells is one change as the tables show it; an empty cell is shown as
// "-" in text and left empty in markdown.
type diffCells struct {
	subject, version, change, base, head, detail string
}

// cellsOf describes change c of a diff computed at now.
func cellsOf(c Change, now time.Time) diffCells {
	cells := diffCells{subject: subjectName(c.MachineImage), version: c.Version, detail: c.Shift}
	value := func(v *string, absent string) string {
		if v == nil {
			return absent
		}
		return *v
	}
	switch c.Kind {
	case ChangeImageAdded:
		cells.change, cells.head = "machine image added", value(c.Head, "")
	case ChangeImageRemoved:
		cells.change, cells.base = "machine image removed", value(c.Base, "")
	case ChangeUpdateStrategy:
		cells.change, cells.base, cells.head = "update strategy", value(c.Base, ""), value(c.Head, "")
	case ChangeVersionAdded:
		cells.change, cells.head = "version added", value(c.Head, "")
	case ChangeVersionRemoved:
		cells.change, cells.base = "version removed", value(c.Base, "")
	case ChangeDeclaredClassification:
		cells.change, cells.base, cells.head = "classification field", value(c.Base, "unset"), value(c.Head, "unset")
	case ChangeExpirationDate:
		cells.change, cells.base, cells.head = "expirationDate", value(c.Base, "unset"), value(c.Head, "unset")
	case ChangeStageAdded:
		cells.change, cells.head = string(c.Stage)+" stage added", value(c.Head, "no start")
	case ChangeStageRemoved:
		cells.change, cells.base = string(c.Stage)+" stage removed", value(c.Base, "no start")
	case ChangeStageMoved:
		cells.change, cells.base, cells.head = string(c.Stage)+" moved", value(c.Base, "no start"), value(c.Head, "no start")
	case ChangeClassification:
		cells.change, cells.base, cells.head = "classification", value(c.Base, ""), value(c.Head, "")
		cells.detail = stretch(c.From, c.Until, now)
	case ChangeUpdatePath:
		cells.change = "auto update"
		if c.Path == UpdatePathForce {
			cells.change = "forced update"
		}
		cells.base, cells.head = value(c.Base, "none"), value(c.Head, "none")
	default:
		cells.change, cells.base, cells.head = string(c.Kind), value(c.Base, ""), value(c.Head, "")
	}
	return cells
}

// stretch words when a classification change holds: "now until X",
// "from X until Y", "from X on" (still at the end of the horizon).
func stretch(from, until *time.Time, now time.Time) string {
	start := "now"
	if from != nil && !from.Equal(now) {
		start = "from " + from.UTC().Format(time.RFC3339)
	}
	if until == nil {
		return start + " on"
	}
	return start + " until " + until.UTC().Format(time.RFC3339)
}

// profileCells is the row of a profile added or removed.
func profileCells(p ProfileDiff) diffCells {
	return diffCells{change: "profile " + string(p.Status)}
}

// reportHeader says which revisions and which stretch of time the report
// covers, taken from its first landscape (all are computed alike).
func reportHeader(r Report, code func(string) string) string {
	var parts []string
	if r.Base != "" || r.Head != "" {
		parts = append(parts, fmt.Sprintf("base %s, head %s", code(orDash(r.Base)), code(orDash(r.Head))))
	}
	if len(r.Landscapes) > 0 {
		l := r.Landscapes[0]
		parts = append(parts, fmt.Sprintf("at %s, classifications compared until %s",
			l.Now.UTC().Format(time.RFC3339), l.Until.UTC().Format(time.RFC3339)))
	}
	return strings.Join(parts, "; ")
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// WriteText writes the report for a terminal or a CI log: one aligned
// table of every change (LANDSCAPE, PROFILE, VERSION OF, VERSION, CHANGE,
// BASE, HEAD, DETAIL), the landscapes without changes, the rollout
// warnings, and the summary line.
func WriteText(w io.Writer, r Report) error {
	var b strings.Builder
	if header := reportHeader(r, func(s string) string { return s }); header != "" {
		b.WriteString(upperFirst(header) + ".\n\n")
	}
	var unchanged []string
	rows := 0
	table := tabwriter.NewWriter(&b, 0, 4, 2, ' ', 0)
	fmt.Fprintln(table, "LANDSCAPE\tPROFILE\tVERSION OF\tVERSION\tCHANGE\tBASE\tHEAD\tDETAIL")
	for _, l := range r.Landscapes {
		if len(l.Profiles) == 0 {
			unchanged = append(unchanged, l.Landscape)
			continue
		}
		for _, p := range l.Profiles {
			if p.Status != ProfileChanged {
				writeTextRow(table, l.Landscape, p.Ref(), profileCells(p))
				rows++
				continue
			}
			for _, c := range p.Changes {
				writeTextRow(table, l.Landscape, p.Ref(), cellsOf(c, l.Now))
				rows++
			}
		}
	}
	if rows > 0 {
		if err := table.Flush(); err != nil {
			return fmt.Errorf("writing the diff table: %w", err)
		}
		b.WriteString("\n")
	}
	if len(unchanged) > 0 {
		fmt.Fprintf(&b, "No changes in %s.\n\n", strings.Join(unchanged, ", "))
	}
	if len(r.RolloutWarnings) > 0 {
		b.WriteString("Rollout order:\n")
		for _, line := range SummarizeRolloutWarnings(r.RolloutWarnings) {
			b.WriteString("  " + string(line.Severity) + ": " + repofile.OneLine(line.Text) + "\n")
		}
		b.WriteString("\n")
	}
	writePolicyText(&b, r.Policy)
	b.WriteString("Summary: " + r.Summary().String() + ".\n")
	if _, err := io.WriteString(w, b.String()); err != nil {
		return fmt.Errorf("writing the diff: %w", err)
	}
	return nil
}

func writeTextRow(table io.Writer, landscape, profileName string, cells diffCells) {
	// Names come from the input; a tab or newline in one would break the
	// table, so every cell is made one line without tabs.
	cell := func(s string) string {
		return strings.ReplaceAll(repofile.OneLine(orDash(s)), "\t", " ")
	}
	fmt.Fprintf(table, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", cell(landscape), cell(profileName), cell(cells.subject),
		cell(cells.version), cell(cells.change), cell(cells.base), cell(cells.head), cell(cells.detail))
}

// WriteMarkdown writes the report as a pull-request comment: a title
// with the summary line, a heading per landscape, a table per changed
// profile, and the rollout warnings as a list. Text from the input is
// escaped (internal/markdown), so a name cannot break the table, inject
// markup or HTML, or mention anyone.
func WriteMarkdown(w io.Writer, r Report) error {
	var b strings.Builder
	b.WriteString("## Cloud profile changes\n\n")
	if header := reportHeader(r, markdown.Code); header != "" {
		b.WriteString(upperFirst(header) + ".\n\n")
	}
	b.WriteString("**Summary:** " + r.Summary().String() + ".\n")
	for _, l := range r.Landscapes {
		b.WriteString("\n### " + markdown.Text(l.Landscape) + "\n\n")
		if len(l.Profiles) == 0 {
			fmt.Fprintf(&b, "No changes (%s).\n", unchangedProfiles(l.Unchanged))
			continue
		}
		for _, p := range l.Profiles {
			b.WriteString("#### " + markdown.Text(p.Ref()) + "\n\n")
			if p.Status != ProfileChanged {
				b.WriteString("Profile " + string(p.Status) + ".\n\n")
				continue
			}
			b.WriteString("| Version of | Version | Change | Base | Head | Detail |\n")
			b.WriteString("| --- | --- | --- | --- | --- | --- |\n")
			for _, c := range p.Changes {
				cells := cellsOf(c, l.Now)
				b.WriteString("|")
				for _, cell := range []string{cells.subject, cells.version, cells.change, cells.base, cells.head, cells.detail} {
					b.WriteString(" " + markdown.Cell(cell) + " |")
				}
				b.WriteString("\n")
			}
			b.WriteString("\n")
		}
		if l.Unchanged > 0 {
			fmt.Fprintf(&b, "%s.\n", upperFirst(unchangedProfiles(l.Unchanged)))
		}
	}
	if len(r.RolloutWarnings) > 0 {
		b.WriteString("\n### Rollout order\n\n")
		for _, line := range SummarizeRolloutWarnings(r.RolloutWarnings) {
			b.WriteString("- **" + upperFirst(string(line.Severity)) + ":** " + markdown.Text(line.Text) + "\n")
		}
	}
	writePolicyMarkdown(&b, r.Policy)
	if _, err := io.WriteString(w, b.String()); err != nil {
		return fmt.Errorf("writing the diff: %w", err)
	}
	return nil
}

func unchangedProfiles(n int) string {
	if n == 1 {
		return "1 profile unchanged"
	}
	return fmt.Sprintf("%d profiles unchanged", n)
}

func upperFirst(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}

// WriteJSON writes the report as indented JSON, with its summary under
// "summary". Lists are written as [] rather than null when empty, so that
// consumers can iterate without checks.
func WriteJSON(w io.Writer, r Report) error {
	landscapes := make([]LandscapeDiff, len(r.Landscapes))
	for i, l := range r.Landscapes {
		profiles := make([]ProfileDiff, len(l.Profiles))
		for j, p := range l.Profiles {
			if p.Changes == nil {
				p.Changes = []Change{}
			}
			profiles[j] = p
		}
		l.Profiles = profiles
		landscapes[i] = l
	}
	summary := r.Summary()
	r.Landscapes = landscapes
	if r.RolloutWarnings == nil {
		r.RolloutWarnings = []RolloutWarning{}
	}
	out := struct {
		Report
		Summary Summary `json:"summary"`
	}{r, summary}
	encoder := json.NewEncoder(w)
	encoder.SetIndent("", "  ")
	// Versions like ">= 1.30" and names are clearer unescaped; the output
	// is not embedded in HTML.
	encoder.SetEscapeHTML(false)
	if err := encoder.Encode(out); err != nil {
		return fmt.Errorf("writing the diff as JSON: %w", err)
	}
	return nil
}
