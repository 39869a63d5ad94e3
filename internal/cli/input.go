package cli

import (
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"time"

	"github.com/profilesync/profilesync/internal/render"
)

// readInputs reads every PATH given with -f: a file, a directory (every
// *.yaml and *.yml file below it, in sorted order, except kustomization
// files, so that a kustomize base can be evaluated as it is, and versioning
// policy files) or "-" for stdin, in the order given. Problems name files as given on the command line.
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
		if ext := filepath.Ext(file); !entry.IsDir() && (ext == ".yaml" || ext == ".yml") && !render.IsKustomizationFile(entry.Name()) && !render.IsPolicyFile(entry.Name()) {
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
// false then. The report holds the merged namespaced profiles for
// render.EvaluateSet.
func loadProfiles(docs []render.Document, stderr io.Writer) (objects []render.Object, report render.Report, ok bool) {
	objects, problems := render.DecodeDocuments(docs)
	report, err := render.ValidateSet(objects, nil)
	if err != nil {
		// Without a parent lookup ValidateSet has nothing that can fail.
		fmt.Fprintf(stderr, "validating profiles: %v\n", err)
		return nil, report, false
	}
	for _, w := range report.Warnings.Summarize() {
		fmt.Fprintf(stderr, "warning: %s\n", w)
	}
	problems = append(problems, report.Problems...)
	if len(problems) > 0 {
		printProblems(problems, stderr)
		return nil, report, false
	}
	return objects, report, true
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
	objects, report, ok := loadProfiles(docs, stderr)
	if !ok {
		return nil, false
	}
	return render.EvaluateSet(objects, report, at), true
}
