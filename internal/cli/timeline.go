package cli

import (
	"fmt"
	"io"
	"sort"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	v1alpha1 "github.com/profilesync/profilesync/api/v1alpha1"
	"github.com/profilesync/profilesync/internal/lifecycle"
	"github.com/profilesync/profilesync/internal/policy"
	"github.com/profilesync/profilesync/internal/render/profile"
	"github.com/profilesync/profilesync/internal/repofile"
)

func newTimelineCommand() *cobra.Command {
	var at, until timeFlag
	var inputs inputOptions
	var policyFile string
	var landscapes landscapeSelection
	output := timelineFormatTable
	cmd := &cobra.Command{
		Use: "timeline [--at TIME] [--until TIME] [--policy FILE] [--output table|ics] -f PATH [-f PATH]...\n" +
			"  profilesync timeline [--at TIME] [--until TIME] [--output table|ics] [--root DIR] (--landscape NAME... | --all-landscapes)",
		Short: "List upcoming lifecycle transitions in time order",
		Long: `Lists every lifecycle transition after --at (default now) up to and including
--until (default: all), in time order: when, which profile, which Kubernetes
version or machine image version, and the classification it moves from and
to. Namespaced profiles are shown with their merged spec, so a retimed stage
appears at the namespace's time. The inputs are validated as a set first, as
'evaluate' does.

With --policy FILE (a versioning policy, docs/policy.md), it lists instead when
the profiles, left as they are, stop satisfying that policy: every finding at
--at, then each new one at the instant it starts, up to --until, in time
order, so that the pull request that fixes it can be planned. The notice rule
is about changes and takes no part. It exits 1 when a finding of severity
error is listed (at --at or scheduled later: from its date the operator
refuses every new revision of the landscape), 0 when there are only warnings
or none.

With --landscape NAME (repeatable) or --all-landscapes, it lists the
transitions of landscapes of the repository's rollout file
(profilesync-rollout.yaml at --root, by default the root of the Git work tree
of the current directory; docs/rollout.md) instead of -f: each landscape's
overlay is built as 'build' builds it, and each line names its landscape.

--output ics writes the transitions as an iCalendar feed (RFC 5545) to
subscribe to: one event per transition, named by landscape, object (kind,
namespace and name), version and stage, with a UID that stays the same when the date moves, so that a calendar
fetching the feed again updates the event. Its DTSTAMP is --at.`,
		Example: `  profilesync timeline -f profiles/ --at 2025-06-01T00:00:00Z --until 2025-12-31T23:59:59Z
  profilesync timeline -f base --policy profilesync-policy.yaml
  profilesync timeline --all-landscapes --output ics > transitions.ics`,
		DisableFlagsInUseLine: true,
		Args:                  inputsOnlyWithFilenameFlag,
		RunE: failOnInput(func(cmd *cobra.Command, _ []string) error {
			if policyFile != "" {
				if !landscapes.empty() || output != timelineFormatTable {
					return usageErrorf("--policy lists policy findings; it goes with neither --landscape nor --output ics")
				}
				return runPolicyTimeline(inputs, policyFile, at.or(time.Now()), until.Time, cmd.InOrStdin(), cmd.OutOrStdout(), cmd.ErrOrStderr())
			}
			return runTimeline(cmd.Context(), inputs, landscapes, output, at.or(time.Now()), until.Time, cmd.InOrStdin(), cmd.OutOrStdout(), cmd.ErrOrStderr())
		}),
	}
	flags := cmd.Flags()
	flags.SortFlags = false
	flags.Var(&at, "at", "list transitions after this RFC 3339 time (default now)")
	flags.Var(&until, "until", "list transitions up to this RFC 3339 time (default: all)")
	flags.StringVar(&policyFile, "policy", "", "list when the profiles stop satisfying the versioning policy `FILE` instead (read as the inputs are, inside the root)")
	flags.StringArrayVar(&landscapes.names, "landscape", nil, "list the transitions of the rollout file's landscape `NAME` instead of -f; repeatable")
	flags.BoolVar(&landscapes.all, "all-landscapes", false, "list the transitions of every landscape of the rollout file instead of -f")
	bindMaxBuilds(flags, &landscapes.maxBuilds)
	flags.VarP(&output, "output", "o", "table, or ics for an iCalendar feed")
	bindInputs(flags, &inputs)
	return cmd
}

// transition is one change of classification of one version.
type transition struct {
	at       time.Time
	profile  string
	subject  string // "kubernetes" or the machine image's name
	version  string
	from, to v1alpha1.VersionClassification
}

// runPolicyTimeline prints when the profiles in paths start breaking the
// policy in policyFile: at from, then after it up to until unless that is
// zero.
func runPolicyTimeline(inputs inputOptions, policyFile string, from, until time.Time, stdin io.Reader, stdout, stderr io.Writer) error {
	reader, err := newInputReader(inputs)
	if err != nil {
		return err
	}
	p, err := readPolicy(inputs, reader, policyFile)
	if err != nil {
		return err
	}
	evaluated, err := evaluateWindow(inputs, reader, from, until, stdin, stderr)
	if err != nil {
		return err
	}
	findings := p.Timeline(evaluated, from, until)
	if len(findings) == 0 {
		horizon := "as far as their lifecycles are scheduled"
		if !until.IsZero() {
			horizon = "until " + until.UTC().Format(time.RFC3339)
		}
		fmt.Fprintf(stdout, "The profiles satisfy the policy %s.\n", horizon)
		return nil
	}
	table := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(table, "FROM\tSEVERITY\tFINDING")
	for _, f := range findings {
		fmt.Fprintf(table, "%s\t%s\t%s\n", f.At.UTC().Format(time.RFC3339), f.Severity, f.Problem)
	}
	if err := table.Flush(); err != nil {
		return fmt.Errorf("timeline: %w", err)
	}
	for _, f := range findings {
		if f.Severity == policy.SeverityError {
			// The table is the report; the exit status says a refusal is
			// scheduled, so that a CI job running this fails.
			return errInvalidInputReported
		}
	}
	return nil
}

// upcomingTransitions lists the transitions of every version of every
// profile after from and, unless until is zero, not after until, in time
// order; at the same instant in input order.
func upcomingTransitions(objects []profile.Object, from, until time.Time) []transition {
	var transitions []transition
	add := func(profileName, subject string, v v1alpha1.ExpirableVersion) {
		for _, tr := range lifecycle.Transitions(v, from, until) {
			transitions = append(transitions, transition{
				at: tr.At, profile: profileName, subject: subject, version: v.Version, from: tr.From, to: tr.To,
			})
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

// evaluateWindow reads the profiles of paths and evaluates them at from,
// once it has checked that until, when set, is not before from.
func evaluateWindow(inputs inputOptions, reader *repofile.Reader, from, until time.Time, stdin io.Reader, stderr io.Writer) ([]profile.Object, error) {
	if !until.IsZero() && until.Before(from) {
		return nil, usageErrorf("--until %s is before --at %s", until.UTC().Format(time.RFC3339), from.UTC().Format(time.RFC3339))
	}
	read, err := readInputs(inputs, reader, stdin)
	if err != nil {
		return nil, err
	}
	evaluated, ok := evaluateProfiles(read, from, stderr)
	if !ok {
		return nil, errInvalidInputReported
	}
	return evaluated, nil
}

// readPolicy reads the policy file as the inputs are read: inside the root
// (--root, else the repository file is in), within --max-file-size.
func readPolicy(inputs inputOptions, reader *repofile.Reader, file string) (*policy.Policy, error) {
	fileReader, err := readerFor(reader, inputs, file)
	if err == nil {
		var rel string
		if rel, err = fileReader.Rel(file); err == nil {
			var data []byte
			if data, err = fileReader.ReadFile(rel); err == nil {
				return policy.Decode(file, data)
			}
		}
	}
	return nil, fmt.Errorf("reading the policy: %w", err)
}
