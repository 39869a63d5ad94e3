package main

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/profilesync/profilesync/internal/render"
)

// Exit statuses of the offline subcommands.
const (
	exitOK           = 0
	exitInvalidInput = 1
	exitUsage        = 2
)

// usageError is a mistake in the command line (exit 2), as opposed to a
// problem in the profiles (exit 1).
type usageError struct{ message string }

func (e usageError) Error() string { return e.message }

func usageErrorf(format string, args ...any) error {
	return usageError{message: fmt.Sprintf(format, args...)}
}

// commandHelp is what --help prints for one subcommand.
type commandHelp struct {
	usage       string // "profilesync evaluate [--at TIME] -f PATH..."
	description string
	example     string
}

// newFlagSet returns a flag set that reports errors instead of exiting and
// prints the command's usage, flags and example for --help.
func newFlagSet(name string, help commandHelp, stdout io.Writer) *pflag.FlagSet {
	flags := pflag.NewFlagSet(name, pflag.ContinueOnError)
	flags.SortFlags = false
	flags.SetOutput(io.Discard)
	flags.Usage = func() {
		fmt.Fprintf(stdout, "Usage:\n  %s\n\n%s\n\nFlags:\n%s\nExample:\n%s\n", help.usage, help.description, flags.FlagUsages(), help.example)
	}
	return flags
}

// parseFlags parses args; it returns done with the exit status when the
// command should stop: after --help (0) or on a usage error (2, reported on
// stderr).
func parseFlags(flags *pflag.FlagSet, args []string, stderr io.Writer) (done bool, status int) {
	err := flags.Parse(args)
	if errors.Is(err, pflag.ErrHelp) {
		return true, exitOK // pflag has printed the usage
	}
	if err != nil {
		return true, reportUsageError(flags, err, stderr)
	}
	return false, exitOK
}

func reportUsageError(flags *pflag.FlagSet, err error, stderr io.Writer) int {
	fmt.Fprintf(stderr, "%s: %v\nRun 'profilesync %s --help' for usage.\n", flags.Name(), err, flags.Name())
	return exitUsage
}

// timeFlag is an RFC 3339 time flag; zero when not given.
type timeFlag struct{ time.Time }

func (t *timeFlag) String() string {
	if t.IsZero() {
		return ""
	}
	return t.Time.UTC().Format(time.RFC3339)
}

func (t *timeFlag) Set(value string) error {
	parsed, err := time.Parse(time.RFC3339, value)
	if err != nil {
		return fmt.Errorf("not an RFC 3339 time (for example 2025-06-01T00:00:00Z): %q", value)
	}
	t.Time = parsed
	return nil
}

func (t *timeFlag) Type() string { return "TIME" }

// or returns the flag's time, or fallback when it was not given.
func (t *timeFlag) or(fallback time.Time) time.Time {
	if t.IsZero() {
		return fallback
	}
	return t.Time
}

// readInputs reads every PATH given with -f: a file, a directory (every
// *.yaml and *.yml file below it, in sorted order, except kustomization
// files, so that a kustomize base can be evaluated as it is) or "-" for
// stdin, in the order given. Problems name files as given on the command line.
func readInputs(paths []string, stdin io.Reader) ([]render.Document, error) {
	if len(paths) == 0 {
		return nil, usageErrorf("no input: give at least one -f PATH (a file, a directory or - for stdin)")
	}
	var docs []render.Document
	for _, path := range paths {
		files, err := inputFiles(path)
		if err != nil {
			return nil, err
		}
		for _, file := range files {
			fileDocs, err := readInputFile(file, stdin)
			if err != nil {
				return nil, err
			}
			docs = append(docs, fileDocs...)
		}
	}
	return docs, nil
}

// inputFiles expands one -f PATH into the files to read.
func inputFiles(path string) ([]string, error) {
	if path == "-" {
		return []string{"-"}, nil
	}
	info, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("reading input %s: %w", path, err)
	}
	if !info.IsDir() {
		return []string{path}, nil
	}
	var files []string
	err = filepath.WalkDir(path, func(file string, entry fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if ext := filepath.Ext(file); !entry.IsDir() && (ext == ".yaml" || ext == ".yml") && !isKustomizationFile(entry.Name()) {
			files = append(files, file)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("reading input directory %s: %w", path, err)
	}
	sort.Strings(files)
	return files, nil
}

func readInputFile(file string, stdin io.Reader) ([]render.Document, error) {
	if file == "-" {
		return render.SplitDocuments("<stdin>", stdin)
	}
	f, err := os.Open(file)
	if err != nil {
		return nil, fmt.Errorf("reading input: %w", err)
	}
	defer f.Close()
	return render.SplitDocuments(file, f)
}

// loadProfiles decodes and validates docs as one set. It writes warnings
// to stderr, and when the set is invalid every problem, one per line; ok is
// false then.
func loadProfiles(docs []render.Document, stderr io.Writer) (objects []render.Object, ok bool) {
	objects, problems := render.DecodeDocuments(docs)
	report, err := render.ValidateSet(objects, nil)
	if err != nil {
		// Without a parent lookup ValidateSet has nothing that can fail.
		fmt.Fprintf(stderr, "validating profiles: %v\n", err)
		return nil, false
	}
	for _, w := range report.Warnings.Summarize() {
		fmt.Fprintf(stderr, "warning: %s\n", w)
	}
	problems = append(problems, report.Problems...)
	if len(problems) > 0 {
		printProblems(problems, stderr)
		return nil, false
	}
	return objects, true
}

// printProblems writes one problem per line, a mistake repeated many times
// cut short (render.Problems.Summarize).
func printProblems(problems render.Problems, stderr io.Writer) {
	for _, p := range problems.Summarize() {
		fmt.Fprintln(stderr, p.String())
	}
}

// evaluateProfiles loads docs and computes every object's status at t; ok is
// false when the input is invalid (reported on stderr).
func evaluateProfiles(docs []render.Document, at time.Time, stderr io.Writer) ([]render.Object, bool) {
	objects, ok := loadProfiles(docs, stderr)
	if !ok {
		return nil, false
	}
	evaluated, problems, err := render.EvaluateSet(objects, nil, at)
	if err != nil {
		fmt.Fprintf(stderr, "evaluating profiles: %v\n", err)
		return nil, false
	}
	if len(problems) > 0 {
		printProblems(problems, stderr)
		return nil, false
	}
	return evaluated, true
}

// inputError reports an error reading the input: a usage error exits 2,
// anything else (a missing file, unreadable YAML) exits 1.
func inputError(command string, err error, stderr io.Writer) int {
	var usage usageError
	if errors.As(err, &usage) {
		fmt.Fprintf(stderr, "%s: %v\nRun 'profilesync %s --help' for usage.\n", command, err, command)
		return exitUsage
	}
	fmt.Fprintf(stderr, "%s\n", strings.TrimSpace(err.Error()))
	return exitInvalidInput
}

// isKustomizationFile reports whether name is a kustomization file, which
// is never a profile.
func isKustomizationFile(name string) bool {
	return name == "kustomization.yaml" || name == "kustomization.yml"
}
