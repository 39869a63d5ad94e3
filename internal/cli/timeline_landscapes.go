package cli

import (
	"context"
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/profilesync/profilesync/internal/repofile"
	"github.com/profilesync/profilesync/internal/rollout"
	"github.com/profilesync/profilesync/internal/sandbox"
)

// timelineFormat is timeline's --output.
type timelineFormat string

const (
	timelineFormatTable timelineFormat = "table"
	timelineFormatICS   timelineFormat = "ics"
)

func (f *timelineFormat) String() string { return string(*f) }
func (f *timelineFormat) Type() string   { return "FORMAT" }

func (f *timelineFormat) Set(value string) error {
	switch format := timelineFormat(value); format {
	case timelineFormatTable, timelineFormatICS:
		*f = format
		return nil
	}
	return fmt.Errorf("not a timeline format: %q (table or ics)", value)
}

// landscapeSelection is which landscapes of the rollout file the timeline
// shows: those named with --landscape, or all of them.
type landscapeSelection struct {
	names []string
	all   bool
	// maxBuilds bounds the landscapes built (--max-builds).
	maxBuilds int
}

func (s landscapeSelection) empty() bool { return len(s.names) == 0 && !s.all }

// landscapeTransition is a transition in one landscape; landscape is empty
// for profiles read with -f.
type landscapeTransition struct {
	landscape string
	transition
}

// runTimeline prints the transitions after from and, unless until is zero,
// not after until, of the profiles of -f or, when landscapes are selected,
// of those landscapes (each overlay of the rollout file built as 'build'
// builds it, each line naming its landscape), as a table or as an
// iCalendar feed.
func runTimeline(ctx context.Context, inputs inputOptions, selection landscapeSelection, format timelineFormat, from, until time.Time, stdin io.Reader, stdout, stderr io.Writer) error {
	var transitions []landscapeTransition
	var names []string
	if selection.empty() {
		reader, err := newInputReader(inputs)
		if err != nil {
			return err
		}
		evaluated, err := evaluateWindow(inputs, reader, from, until, stdin, stderr)
		if err != nil {
			return err
		}
		for _, tr := range upcomingTransitions(evaluated, from, until) {
			transitions = append(transitions, landscapeTransition{transition: tr})
		}
	} else {
		var err error
		if names, transitions, err = landscapeTransitions(ctx, inputs, selection, from, until, stderr); err != nil {
			return err
		}
	}
	if format == timelineFormatICS {
		return writeTransitionsICS(stdout, calendarName(names), from, transitions)
	}
	table := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	// A landscape column only with landscapes: -f reads profiles, not a
	// landscape.
	withLandscape := !selection.empty()
	header := "WHEN\tPROFILE\tKIND OF VERSION\tVERSION\tFROM → TO"
	if withLandscape {
		header = "WHEN\tLANDSCAPE\tPROFILE\tKIND OF VERSION\tVERSION\tFROM → TO"
	}
	fmt.Fprintln(table, header)
	for _, tr := range transitions {
		when := tr.at.UTC().Format(time.RFC3339)
		if withLandscape {
			when += "\t" + tr.landscape
		}
		fmt.Fprintf(table, "%s\t%s\t%s\t%s\t%s → %s\n", when, tr.profile, tr.subject, tr.version, tr.from, tr.to)
	}
	if err := table.Flush(); err != nil {
		return fmt.Errorf("timeline: %w", err)
	}
	return nil
}

// landscapeTransitions builds the overlay of each landscape selected, in the
// rollout file's order, and lists their transitions in time order, at the
// same instant in that order. The rollout file is the one at --root, else
// at the root of the repository of the current directory.
func landscapeTransitions(ctx context.Context, inputs inputOptions, selection landscapeSelection, from, until time.Time, stderr io.Writer) ([]string, []landscapeTransition, error) {
	if len(inputs.paths) > 0 {
		return nil, nil, usageErrorf("--landscape builds each landscape's overlay of the rollout file: give no -f")
	}
	if !until.IsZero() && until.Before(from) {
		return nil, nil, usageErrorf("--until %s is before --at %s", until.UTC().Format(time.RFC3339), from.UTC().Format(time.RFC3339))
	}
	root := inputs.root
	if root == "" {
		var err error
		if root, err = repofile.RepositoryOf("."); err != nil {
			return nil, nil, err
		}
	}
	absRoot, err := filepath.Abs(root)
	if err != nil {
		return nil, nil, fmt.Errorf("timeline: %w", err)
	}
	file, err := rollout.ReadAt(absRoot, inputs.limits.MaxFileSize)
	if err != nil {
		return nil, nil, err
	}
	if file == nil {
		return nil, nil, usageErrorf("--landscape: %s has no %s (docs/rollout.md); give the repository with --root", root, rollout.FileName)
	}
	selected, err := selectLandscapes(file, selection)
	if err != nil {
		return nil, nil, err
	}
	if err := (buildCount{landscapes: len(selected), perLandscape: 1, fromRolloutFile: selection.all}).check(selection.maxBuilds); err != nil {
		return nil, nil, err
	}
	tree := diffTree{label: root, root: absRoot, dir: "."}
	build := sandbox.Options{Limits: inputs.limits}
	var transitions []landscapeTransition
	var warnings, problems, names []string
	for _, l := range selected {
		names = append(names, l.Name)
		loaded := loadLandscape(ctx, tree, landscape{name: l.Name, path: filepath.FromSlash(l.Path)}, build, nil, from)
		for _, w := range loaded.warnings.Summarize() {
			warnings = appendNew(warnings, "warning: "+w.String())
		}
		for _, p := range loaded.problems {
			problems = appendNew(problems, p)
		}
		for _, tr := range upcomingTransitions(loaded.objects, from, until) {
			transitions = append(transitions, landscapeTransition{landscape: l.Name, transition: tr})
		}
	}
	for _, line := range append(warnings, problems...) {
		fmt.Fprintln(stderr, line)
	}
	if len(problems) > 0 {
		return nil, nil, errInvalidInputReported
	}
	sort.SliceStable(transitions, func(i, j int) bool { return transitions[i].at.Before(transitions[j].at) })
	return names, transitions, nil
}

// selectLandscapes returns the landscapes of the selection in the file's
// order.
func selectLandscapes(file *rollout.File, selection landscapeSelection) ([]rollout.Landscape, error) {
	for _, name := range selection.names {
		if file.Landscape(name) == nil {
			known := make([]string, len(file.Landscapes))
			for i, l := range file.Landscapes {
				known[i] = l.Name
			}
			return nil, usageErrorf("--landscape %q: %s lists %s", name, rollout.FileName, strings.Join(known, ", "))
		}
	}
	var selected []rollout.Landscape
	for _, l := range file.Landscapes {
		if selection.all || slices.Contains(selection.names, l.Name) {
			selected = append(selected, l)
		}
	}
	return selected, nil
}

func calendarName(landscapes []string) string {
	if len(landscapes) == 0 {
		return "ProfileSync lifecycle transitions"
	}
	return "ProfileSync lifecycle transitions: " + strings.Join(landscapes, ", ")
}
