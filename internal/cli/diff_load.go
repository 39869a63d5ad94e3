package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/profilesync/profilesync/internal/render/overlay"
	"github.com/profilesync/profilesync/internal/render/profile"
	"github.com/profilesync/profilesync/internal/repofile"
	"github.com/profilesync/profilesync/internal/sandbox"
)

// landscape is one overlay to compare.
type landscape struct {
	name string
	// path is the overlay as given or found, relative to the trees' dir.
	path string
}

// sideSet is one side of every landscape: the evaluated profiles of each, in
// landscape order.
type sideSet [][]profile.Object

// resolveLandscapes names the overlays to compare: the PATHs given, or every
// directory directly under overlays/ of the head tree with a kustomization
// file. Each is named after its directory, or by its path when two
// directories share a name.
func resolveLandscapes(head diffTree, display string, paths []string) ([]landscape, error) {
	if len(paths) == 0 {
		var err error
		if paths, err = discoverOverlays(head); err != nil {
			return nil, err
		}
	}
	landscapes := make([]landscape, len(paths))
	names := make(map[string]int, len(paths))
	displayAbs, err := filepath.Abs(display)
	if err != nil {
		displayAbs = display
	}
	for i, path := range paths {
		landscapes[i] = landscape{name: filepath.Base(filepath.Join(displayAbs, path)), path: path}
		names[landscapes[i].name]++
	}
	for i := range landscapes {
		if names[landscapes[i].name] > 1 {
			landscapes[i].name = filepath.ToSlash(landscapes[i].path)
		}
	}
	return landscapes, nil
}

// discoverOverlays lists the directories under overlays/ of the tree that
// hold a kustomization file, sorted.
func discoverOverlays(tree diffTree) ([]string, error) {
	dir := filepath.Join(tree.root, tree.path("overlays"))
	// A committed overlays link is not followed out of the tree, nor into
	// its .git/: the names listed there would reach the comment.
	if root, err := filepath.EvalSymlinks(tree.root); err == nil {
		if _, err := repofile.CheckPath(root, filepath.Join(root, tree.path("overlays")), filepath.ToSlash(tree.path("overlays"))); err != nil {
			return nil, fmt.Errorf("listing overlays of %s: %w", tree.label, err)
		}
	}
	entries, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, usageErrorf("no PATH given and %s has no overlays/ directory: name the overlays to compare", tree.label)
	}
	if err != nil {
		return nil, fmt.Errorf("listing overlays: %w", err)
	}
	var overlays []string
	for _, entry := range entries {
		if !entry.IsDir() {
			continue
		}
		files, err := os.ReadDir(filepath.Join(dir, entry.Name()))
		if err != nil {
			return nil, fmt.Errorf("listing overlays: %w", err)
		}
		if slices.ContainsFunc(files, func(f fs.DirEntry) bool { return !f.IsDir() && overlay.IsKustomizationFile(f.Name()) }) {
			overlays = append(overlays, filepath.Join("overlays", entry.Name()))
		}
	}
	if len(overlays) == 0 {
		return nil, usageErrorf("no PATH given and overlays/ of %s holds no directory with a kustomization file: name the overlays to compare", tree.label)
	}
	return overlays, nil
}

func joinPaths(landscapes []landscape) string {
	paths := make([]string, len(landscapes))
	for i, l := range landscapes {
		paths[i] = filepath.ToSlash(l.path)
	}
	return strings.Join(paths, ", ")
}

// loadedLandscape is one landscape of one side, built, validated and
// evaluated.
type loadedLandscape struct {
	objects  []profile.Object
	warnings profile.Problems
	// problems are why the landscape cannot be compared, one line each:
	// the build's error, or every problem, summarized.
	problems []string
	// missing is set when the tree has no such overlay.
	missing bool
}

// loadLandscape builds the overlay of tree the way 'build' does and checks
// and evaluates it at now, finding parents the build lacks with lookup. Its
// warnings are the build's (overlay.BuildWithWarnings) and the validation's.
func loadLandscape(ctx context.Context, tree diffTree, l landscape, build sandbox.Options, lookup profile.ParentLookup, now time.Time) loadedLandscape {
	path := tree.path(l.path)
	if _, err := os.Stat(filepath.Join(tree.root, path)); err != nil {
		message := fmt.Sprintf("%s: %v", filepath.ToSlash(path), err)
		if errors.Is(err, fs.ErrNotExist) {
			message = fmt.Sprintf("%s: no such overlay in %s", filepath.ToSlash(path), tree.label)
		}
		return loadedLandscape{problems: []string{message}, missing: errors.Is(err, fs.ErrNotExist)}
	}
	// The build's errors name the file and say what is wrong.
	docs, buildWarnings, err := sandbox.Build(ctx, build, tree.root, path)
	if err != nil {
		return loadedLandscape{problems: []string{strings.TrimSpace(err.Error())}}
	}
	set, err := profile.Load(docs, lookup, now)
	if err != nil {
		return loadedLandscape{problems: []string{fmt.Sprintf("validating profiles: %v", err)}}
	}
	loaded := loadedLandscape{warnings: append(buildWarnings, set.Warnings...)}
	loaded.problems = set.Problems.Summarize().Lines()
	if len(set.Problems) == 0 {
		loaded.objects = set.Evaluate()
	}
	return loaded
}

// loadHeads loads every landscape of the head. It prints the warnings of
// all and, when one does not build or is invalid, the problems of all, each
// line once (landscapes share their base), and returns false then.
func loadHeads(ctx context.Context, tree diffTree, landscapes []landscape, build sandbox.Options, lookup profile.ParentLookup, now time.Time, stderr io.Writer) (sideSet, bool) {
	heads := make(sideSet, len(landscapes))
	var warnings, problems []string
	for i, l := range landscapes {
		loaded := loadLandscape(ctx, tree, l, build, lookup, now)
		heads[i] = loaded.objects
		for _, w := range loaded.warnings.Summarize() {
			warnings = appendNew(warnings, "warning: "+w.String())
		}
		for _, p := range loaded.problems {
			problems = appendNew(problems, p)
		}
	}
	for _, line := range append(warnings, problems...) {
		fmt.Fprintln(stderr, line)
	}
	return heads, len(problems) == 0
}

func appendNew(lines []string, line string) []string {
	if slices.Contains(lines, line) {
		return lines
	}
	return append(lines, line)
}
