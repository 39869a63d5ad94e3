package cli

import (
	"bytes"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/profilesync/profilesync/internal/render/overlay"
	"github.com/profilesync/profilesync/internal/render/profile"
	"github.com/profilesync/profilesync/internal/repofile"
)

// inputOptions are the flags of the commands that read profiles with -f.
type inputOptions struct {
	paths  []string
	root   string
	limits overlay.Limits
}

// bindInputs binds -f, --root and the limits of reading them.
func bindInputs(fs *pflag.FlagSet, opts *inputOptions) {
	bindFilenames(fs, &opts.paths)
	fs.StringVar(&opts.root, "root", "", "the repository root the inputs must be in (default: the Git work tree containing each input, else its directory)")
	bindReadLimits(fs, &opts.limits)
}

// newInputReader returns the reader of the inputs: confined to --root when
// it is given, and sharing its limits with every other root of the inputs.
func newInputReader(opts inputOptions) (*repofile.Reader, error) {
	root := opts.root
	if root == "" {
		root = "."
	}
	reader, err := repofile.Open(root, opts.limits.ReaderLimits())
	if err != nil {
		return nil, usageError{err: fmt.Errorf("--root: %w", err)}
	}
	return reader, nil
}

// readerFor returns the reader for path: reader itself when --root is
// given, else one at the repository path is in.
func readerFor(reader *repofile.Reader, opts inputOptions, path string) (*repofile.Reader, error) {
	if opts.root != "" {
		return reader, nil
	}
	root, err := repofile.RepositoryOf(path)
	if err != nil {
		return nil, err
	}
	return reader.At(root)
}

// readInputs reads every PATH given with -f: a file, a directory (every
// *.yaml and *.yml file below it, in sorted order, except kustomization
// files, so that a kustomize base can be evaluated as it is, and versioning
// policy files) or "-" for stdin, in the order given. Files are read as the
// sync reads a repository (repofile): inside the root, never .git/, no link
// leading out, within the limits. Problems name files as given on the
// command line.
func readInputs(opts inputOptions, reader *repofile.Reader, stdin io.Reader) (profileInputs, error) {
	if len(opts.paths) == 0 {
		return profileInputs{}, usageErrorf("no input: give at least one -f PATH (a file, a directory or - for stdin)")
	}
	var docs []profile.Document
	// Values YAML types otherwise than written are refused, as the build
	// refuses them, so that every command means the same; with the problems
	// of decoding and validation, in one round (profile.LoadChecked).
	var typing profile.Problems
	for _, path := range opts.paths {
		if path == "-" {
			data, err := reader.ReadStream("<stdin>", stdin)
			if err != nil {
				return profileInputs{}, err
			}
			typing = append(typing, profile.CheckYAMLTyping("<stdin>", data)...)
			fileDocs, err := profile.SplitDocuments("<stdin>", bytes.NewReader(data))
			if err != nil {
				return profileInputs{}, err
			}
			docs = append(docs, fileDocs...)
			continue
		}
		pathReader, err := readerFor(reader, opts, path)
		if err != nil {
			return profileInputs{}, fmt.Errorf("reading input %s: %w", path, err)
		}
		given, err := pathReader.Rel(path)
		if err != nil {
			return profileInputs{}, fmt.Errorf("reading input %s: %w", path, err)
		}
		files, err := pathReader.Files(given, isProfileFileName)
		if err != nil {
			return profileInputs{}, fmt.Errorf("reading input %s: %w", path, err)
		}
		for _, file := range files {
			data, err := pathReader.ReadFile(file)
			if err != nil {
				return profileInputs{}, err
			}
			display := displayInput(path, given, file)
			typing = append(typing, profile.CheckYAMLTyping(display, data)...)
			fileDocs, err := profile.SplitDocuments(display, bytes.NewReader(data))
			if err != nil {
				return profileInputs{}, err
			}
			docs = append(docs, fileDocs...)
		}
	}
	return profileInputs{docs: docs, typing: typing}, nil
}

// profileInputs are the documents of the inputs and the typing problems of
// their files (profile.CheckYAMLTyping).
type profileInputs struct {
	docs   []profile.Document
	typing profile.Problems
}

// isProfileFileName reports whether a directory's file named name is read
// as profiles.
func isProfileFileName(name string) bool {
	ext := filepath.Ext(name)
	return (ext == ".yaml" || ext == ".yml") && !overlay.IsKustomizationFile(name) && !overlay.IsSettingsFile(name)
}

// displayInput names file (relative to the root) as the command line gave
// it: below path, which is given relative to the root.
func displayInput(path, given, file string) string {
	switch {
	case file == given:
		return path
	case given == ".":
		return filepath.Join(path, filepath.FromSlash(file))
	}
	return filepath.Join(path, filepath.FromSlash(strings.TrimPrefix(file, given+"/")))
}

// evaluateProfiles loads inputs as one set at t (profile.LoadChecked) and computes
// every object's status at t. It writes warnings to stderr, and when the set
// is invalid every problem, one per line; ok is false then.
func evaluateProfiles(inputs profileInputs, at time.Time, stderr io.Writer) ([]profile.Object, bool) {
	set, err := profile.LoadChecked(inputs.docs, inputs.typing, nil, at)
	if err != nil {
		// Without a parent lookup validation has nothing that can fail.
		fmt.Fprintf(stderr, "validating profiles: %v\n", err)
		return nil, false
	}
	for _, w := range set.Warnings.Summarize() {
		fmt.Fprintf(stderr, "warning: %s\n", w)
	}
	if len(set.Problems) > 0 {
		printProblems(set.Problems, stderr)
		return nil, false
	}
	return set.Evaluate(), true
}

// printProblems writes one problem per line, a mistake repeated many times
// cut short (profile.Problems.Summarize).
func printProblems(problems profile.Problems, stderr io.Writer) {
	for _, p := range problems.Summarize() {
		fmt.Fprintln(stderr, p.String())
	}
}
