package main

import (
	"bytes"
	"fmt"
	"io"
	"time"

	"github.com/profilesync/profilesync/internal/render"
)

func init() {
	subcommands["evaluate"] = subcommand{
		summary: "print profiles with the status the controllers would write at a time",
		run:     runEvaluate,
	}
}

var evaluateHelp = commandHelp{
	usage: "profilesync evaluate [--at TIME] -f PATH [-f PATH]...",
	description: `Reads CloudProfiles and NamespacedCloudProfiles (core.profilesync.io/v1alpha1
or core.gardener.cloud/v1beta1), validates them as one set and prints them as a
YAML stream, in input order, with the status the controllers write at TIME:
every version's classification, the next classification and when it starts,
status.nextTransitionTime and, for a namespaced profile, the merged
status.cloudProfileSpec (its parent must be among the inputs).

PATH is a file, a directory (every *.yaml and *.yml file below it, sorted,
kustomization files skipped) or - for standard input.

Exit status: 0 valid (warnings on stderr, prefixed "warning: "); 1 invalid
input (nothing on stdout, every problem on stderr as
FILE: KIND/NAME: FIELD: message); 2 usage error.`,
	example: `  profilesync evaluate --at 2024-12-03T00:00:00Z -f profiles/
  kustomize build overlays/prod | profilesync evaluate -f -`,
}

func runEvaluate(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	flags := newFlagSet("evaluate", evaluateHelp, stdout)
	var at timeFlag
	var paths []string
	flags.Var(&at, "at", "evaluate at this RFC 3339 time (default now)")
	flags.StringArrayVarP(&paths, "filename", "f", nil, "a file, a directory or - (stdin); repeatable")
	if done, status := parseFlags(flags, args, stderr); done {
		return status
	}
	if flags.NArg() > 0 {
		return reportUsageError(flags, fmt.Errorf("unexpected argument %q: inputs are given with -f", flags.Arg(0)), stderr)
	}
	docs, err := readInputs(paths, stdin)
	if err != nil {
		return inputError("evaluate", err, stderr)
	}
	return printEvaluated(docs, at.or(time.Now()), stdout, stderr)
}

// printEvaluated validates and evaluates docs at t and prints them; on
// invalid input nothing reaches stdout.
func printEvaluated(docs []render.Document, at time.Time, stdout, stderr io.Writer) int {
	evaluated, ok := evaluateProfiles(docs, at, stderr)
	if !ok {
		return exitInvalidInput
	}
	var out bytes.Buffer
	if err := render.EncodeDocuments(&out, evaluated); err != nil {
		fmt.Fprintf(stderr, "printing profiles: %v\n", err)
		return exitInvalidInput
	}
	if _, err := stdout.Write(out.Bytes()); err != nil {
		fmt.Fprintf(stderr, "printing profiles: %v\n", err)
		return exitInvalidInput
	}
	return exitOK
}
