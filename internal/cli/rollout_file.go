package cli

import (
	"fmt"
	"io"
	"path/filepath"
	"time"

	"github.com/profilesync/profilesync/internal/policy"
	"github.com/profilesync/profilesync/internal/prdiff"
	"github.com/profilesync/profilesync/internal/rollout"
)

// The rollout file (profilesync-rollout.yaml at the repository root) as
// build, diff and timeline read it.

// rolloutLandscapes resolves the landscapes of a diff as resolveLandscapes
// does, with the rollout file of the head when it has one: without PATHs,
// the file's landscapes in its order (those below the trees' dir), and each
// overlay the file lists is named as the file names it. A rollout file that
// is bad fails the diff.
func rolloutLandscapes(head diffTree, display string, paths []string, maxFileSize int64) ([]landscape, *rollout.File, error) {
	file, err := rollout.ReadAt(head.root, maxFileSize)
	if err != nil {
		return nil, nil, err
	}
	if len(paths) == 0 && file != nil {
		for _, l := range file.Landscapes {
			if path, inDir := relativeToDir(head.dir, l.Path); inDir {
				paths = append(paths, path)
			}
		}
	}
	landscapes, err := resolveLandscapes(head, display, paths)
	if err != nil {
		return nil, nil, err
	}
	for i, l := range landscapes {
		if listed := file.LandscapeAt(filepath.ToSlash(head.path(l.path))); listed != nil {
			landscapes[i].name = listed.Name
		}
	}
	return landscapes, file, nil
}

// relativeToDir returns path, relative to the repository root, relative to
// dir, when it is dir or below it.
func relativeToDir(dir, path string) (string, bool) {
	rel, err := filepath.Rel(dir, filepath.FromSlash(path))
	if err != nil || (!filepath.IsLocal(rel) && rel != ".") {
		return "", false
	}
	return rel, true
}

// checkRollout checks the rollout order of the heads: over the landscapes
// of --rollout (flagOrder, their indexes) when it is given, all as
// warnings; else, when there is a rollout file, each landscape the file
// lists against each of its upstreams (after) that the diff has too, with
// the file's lags and severities. Findings of severity error are printed on
// stderr too, a mistake repeated many times cut short
// (prdiff.SummarizeRolloutWarnings); ok is false when there is one. Without
// either, there are no findings (nil).
func checkRollout(file *rollout.File, flagOrder []int, head diffTree, landscapes []landscape, heads sideSet, now time.Time, stderr io.Writer) (findings []prdiff.RolloutWarning, ok bool) {
	if len(flagOrder) > 0 {
		ordered := make([]prdiff.Landscape, len(flagOrder))
		for i, index := range flagOrder {
			ordered[i] = prdiff.Landscape{Name: landscapes[index].name, Objects: heads[index]}
		}
		return prdiff.CheckRolloutOrder(ordered, now), true
	}
	if file == nil {
		return nil, true
	}
	all := make([]prdiff.Landscape, len(landscapes))
	index := make(map[string]int, len(landscapes))
	for i, l := range landscapes {
		all[i] = prdiff.Landscape{Name: l.name, Objects: heads[i]}
		index[l.name] = i
	}
	var pairs []prdiff.RolloutPair
	for i, l := range landscapes {
		listed := file.LandscapeAt(filepath.ToSlash(head.path(l.path)))
		if listed == nil {
			continue
		}
		for _, upstream := range listed.After {
			if j, found := index[upstream]; found {
				pairs = append(pairs, prdiff.RolloutPair{Later: i, Earlier: j, Lags: listed.Lag})
			}
		}
	}
	if len(pairs) == 0 {
		return nil, true
	}
	findings = prdiff.CheckRolloutPairs(all, pairs, now)
	var errs []prdiff.RolloutWarning
	for _, f := range findings {
		if f.Severity == policy.SeverityError {
			errs = append(errs, f)
		}
	}
	for _, line := range prdiff.SummarizeRolloutWarnings(errs) {
		fmt.Fprintf(stderr, "%s: %s\n", rollout.FileName, line.Text)
	}
	return findings, len(errs) == 0
}

// parseHorizon reads diff's --horizon as the rollout file's durations are
// read: 180d, 90d12h, 2160h.
func parseHorizon(value string) (time.Duration, error) { return rollout.ParseDuration(value) }

// checkRolloutFile refuses a build in a repository whose rollout file is
// bad, naming the file and the field: the operator refuses the revision
// too.
func checkRolloutFile(root string, maxFileSize int64) error {
	_, err := rollout.ReadAt(root, maxFileSize)
	return err
}
