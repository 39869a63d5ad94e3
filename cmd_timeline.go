package main

import (
	"fmt"
	"io"
	"sort"
	"text/tabwriter"
	"time"

	v1alpha1 "github.com/profilesync/profilesync/api/v1alpha1"
	"github.com/profilesync/profilesync/internal/lifecycle"
	"github.com/profilesync/profilesync/internal/render"
)

func init() {
	subcommands["timeline"] = subcommand{
		summary: "list upcoming lifecycle transitions in time order",
		run:     runTimeline,
	}
}

var timelineHelp = commandHelp{
	usage: "profilesync timeline [--at TIME] [--until TIME] -f PATH [-f PATH]...",
	description: `Lists every lifecycle transition after --at (default now) up to and including
--until (default: all), in time order: when, which profile, which Kubernetes
version or machine image version, and the classification it moves from and
to. Namespaced profiles are shown with their merged spec, so a retimed stage
appears at the namespace's time. The inputs are validated as a set first, as
'evaluate' does.`,
	example: `  profilesync timeline -f profiles/ --at 2025-06-01T00:00:00Z --until 2025-12-31T23:59:59Z`,
}

// transition is one change of classification of one version.
type transition struct {
	at       time.Time
	profile  string
	subject  string // "kubernetes" or the machine image's name
	version  string
	from, to v1alpha1.VersionClassification
}

func runTimeline(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	flags := newFlagSet("timeline", timelineHelp, stdout)
	var at, until timeFlag
	var paths []string
	flags.Var(&at, "at", "list transitions after this RFC 3339 time (default now)")
	flags.Var(&until, "until", "list transitions up to this RFC 3339 time (default: all)")
	flags.StringArrayVarP(&paths, "filename", "f", nil, "a file, a directory or - (stdin); repeatable")
	if done, status := parseFlags(flags, args, stderr); done {
		return status
	}
	from := at.or(time.Now())
	if flags.NArg() > 0 {
		return reportUsageError(flags, fmt.Errorf("unexpected argument %q: inputs are given with -f", flags.Arg(0)), stderr)
	}
	if !until.IsZero() && until.Before(from) {
		return reportUsageError(flags, fmt.Errorf("--until %s is before --at %s", until.String(), from.UTC().Format(time.RFC3339)), stderr)
	}
	docs, err := readInputs(paths, stdin)
	if err != nil {
		return inputError("timeline", err, stderr)
	}
	evaluated, ok := evaluateProfiles(docs, from, stderr)
	if !ok {
		return exitInvalidInput
	}
	transitions := upcomingTransitions(evaluated, from, until.Time)

	table := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(table, "WHEN\tPROFILE\tKIND OF VERSION\tVERSION\tFROM → TO")
	for _, tr := range transitions {
		fmt.Fprintf(table, "%s\t%s\t%s\t%s\t%s → %s\n", tr.at.UTC().Format(time.RFC3339), tr.profile, tr.subject, tr.version, tr.from, tr.to)
	}
	if err := table.Flush(); err != nil {
		fmt.Fprintf(stderr, "timeline: %v\n", err)
		return exitInvalidInput
	}
	return exitOK
}

// upcomingTransitions lists the transitions of every version of every
// profile after from and, unless until is zero, not after until, in time
// order; at the same instant in input order.
func upcomingTransitions(objects []render.Object, from, until time.Time) []transition {
	var transitions []transition
	add := func(profile, subject string, v v1alpha1.ExpirableVersion) {
		t := from
		for {
			at, next, ok := lifecycle.NextTransition(v, t)
			if !ok || (!until.IsZero() && at.After(until)) {
				return
			}
			transitions = append(transitions, transition{
				at: at, profile: profile, subject: subject, version: v.Version,
				from: lifecycle.ClassificationAt(v, t), to: next,
			})
			t = at
		}
	}
	for _, o := range objects {
		spec := o.EffectiveSpec()
		for _, v := range spec.Kubernetes.Versions {
			add(o.Ref(), "kubernetes", v)
		}
		for _, image := range spec.MachineImages {
			for _, v := range image.Versions {
				add(o.Ref(), image.Name, v.ExpirableVersion)
			}
		}
	}
	sort.SliceStable(transitions, func(i, j int) bool { return transitions[i].at.Before(transitions[j].at) })
	return transitions
}
