package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/profilesync/profilesync/internal/gitsource"
	"github.com/profilesync/profilesync/internal/render/profile"
	"github.com/profilesync/profilesync/internal/rollout"
	"github.com/profilesync/profilesync/internal/sandbox"
)

// diffTree is one side's tree: the directory a build is confined to, and the
// directory within it that PATHs are relative to.
type diffTree struct {
	// label names the side in the report and in messages.
	label string
	root  string
	// dir is relative to root; "." unless --repo is inside the repository.
	dir string
	// commitTime is when the revision was committed; zero for a tree that
	// is not a revision, or for a commit whose time no report can hold.
	commitTime time.Time
	// commitTimeIgnored says why commitTime is zero for a revision: its
	// committer claims a time outside years 0000 to 9999
	// (rollout.ErrTimeOutOfRange). The policy's notice is then measured
	// from now, with a warning, as the sync does.
	commitTimeIgnored error
}

// path is an overlay's path relative to the tree's root, as overlay.Build
// takes it.
func (t diffTree) path(overlay string) string { return filepath.Join(t.dir, overlay) }

// diffSides are the two sides of a diff: the head's tree, and as the base
// either a tree (two revisions or two directories) or the cluster.
type diffSides struct {
	head diffTree
	// display is the directory PATHs are relative to, as the user gave it,
	// for landscape names.
	display string
	// base is the base's tree; with --cluster, or until exportBase has
	// written it, only its label is set.
	base diffTree
	// exportBase writes the base revision when it is first needed, so that
	// an invalid head fails before the base is read; nil when the base is
	// already there.
	exportBase func() error
	// cluster is the base with --cluster; nil otherwise.
	cluster *clusterBase
	// tempDir holds the exported revisions; empty when there are none.
	tempDir string
}

// close removes what the sides wrote.
func (s *diffSides) close() {
	if s.tempDir != "" {
		_ = os.RemoveAll(s.tempDir)
	}
}

// prepare checks the landscapes and readies the base before the heads are
// loaded.
func (s *diffSides) prepare(landscapes []landscape) error {
	if s.cluster == nil {
		return nil
	}
	return s.cluster.prepare(landscapes)
}

// parentLookup finds parents the head lacks; nil offline.
func (s *diffSides) parentLookup() profile.ParentLookup {
	if s.cluster == nil {
		return nil
	}
	return s.cluster.parentLookup()
}

// labels name the sides in the report: with --cluster, the head by the
// overlay it builds.
func (s *diffSides) labels(landscapes []landscape) (base, head string) {
	if s.cluster != nil {
		return s.base.label, filepath.ToSlash(filepath.Join(s.display, landscapes[0].path))
	}
	return s.base.label, s.head.label
}

// writeAfterReport writes what the sides add after the report, in its
// format: with --cluster, the patches of the held objects.
func (s *diffSides) writeAfterReport(stdout, stderr io.Writer, format diffFormat) error {
	if s.cluster == nil {
		return nil
	}
	return s.cluster.writeAfterReport(stdout, stderr, format)
}

// bases loads the base of every landscape, given the heads.
func (s *diffSides) bases(ctx context.Context, landscapes []landscape, heads sideSet, build sandbox.Options, now time.Time, stderr io.Writer) (sideSet, error) {
	if s.cluster != nil {
		return s.cluster.bases(heads, now, stderr)
	}
	if s.exportBase != nil {
		if err := s.exportBase(); err != nil {
			return nil, err
		}
	}
	bases := make(sideSet, len(landscapes))
	var reported []string
	warn := func(line string) {
		if !slices.Contains(reported, line) {
			reported = append(reported, line)
			fmt.Fprintf(stderr, "warning: base %s: %s\n", s.base.label, line)
		}
	}
	for i, l := range landscapes {
		loaded := loadLandscape(ctx, s.base, l, build, nil, now)
		if len(loaded.problems) == 0 {
			bases[i] = loaded.objects
			continue
		}
		for _, line := range loaded.problems {
			warn(line)
		}
		what := "does not build or is invalid there"
		if loaded.missing {
			what = "is not there"
		}
		warn(fmt.Sprintf("%s %s: %s is compared with no profiles, so each of its profiles shows as added", l.path, what, l.name))
	}
	return bases, nil
}

// newRevisionSides writes the head revision into a temporary directory now
// and prepares the base's.
func newRevisionSides(ctx context.Context, opts *diffOptions) (*diffSides, error) {
	repo := opts.repo
	if repo == "" {
		repo = "."
	}
	prefix, err := workTreePrefix(repo)
	if err != nil {
		return nil, err
	}
	tempDir, err := os.MkdirTemp("", "profilesync-diff-")
	if err != nil {
		return nil, fmt.Errorf("diff: %w", err)
	}
	sides := &diffSides{display: repo, tempDir: tempDir}
	export := func(revision, name string) (diffTree, error) {
		dest := filepath.Join(tempDir, name)
		commit, err := gitsource.ExportTree(ctx, repo, revision, dest, opts.maxCheckoutSize)
		if errors.Is(err, gitsource.ErrCheckoutTooLarge) {
			err = fmt.Errorf("%w; raise --%s to compare it", err, gitsource.MaxCheckoutSizeFlag)
		}
		if err != nil {
			return diffTree{}, err
		}
		tree := diffTree{label: revisionLabel(revision, commit), root: dest, dir: prefix}
		tree.commitTime, err = gitsource.CommitTime(repo, commit, gitsource.ObjectLimitsFor(opts.maxCheckoutSize))
		if errors.Is(err, rollout.ErrTimeOutOfRange) {
			tree.commitTimeIgnored, err = err, nil
		}
		if err != nil {
			return diffTree{}, err
		}
		return tree, nil
	}
	if sides.head, err = export(opts.head, "head"); err != nil {
		sides.close()
		return nil, err
	}
	sides.base = diffTree{label: opts.base}
	sides.exportBase = func() error {
		base, err := export(opts.base, "base")
		if err != nil {
			return err
		}
		sides.base = base
		return nil
	}
	return sides, nil
}

// revisionLabel names a revision and the commit it resolved to, e.g.
// "origin/main (1a2b3c4)".
func revisionLabel(revision, commit string) string {
	short := commit[:min(7, len(commit))]
	if strings.HasPrefix(commit, strings.ToLower(revision)) {
		return short
	}
	return fmt.Sprintf("%s (%s)", revision, short)
}

// workTreePrefix is where dir lies inside its Git work tree, "." at its top
// or when dir is not inside a work tree (a bare repository); go-git finds
// the repository from dir the same way.
func workTreePrefix(dir string) (string, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", fmt.Errorf("resolving --repo %s: %w", dir, err)
	}
	for top := abs; ; {
		if _, err := os.Lstat(filepath.Join(top, ".git")); err == nil {
			return filepath.Rel(top, abs)
		}
		parent := filepath.Dir(top)
		if parent == top {
			return ".", nil
		}
		top = parent
	}
}

func newDirSides(opts *diffOptions) (*diffSides, error) {
	head, err := dirTree(opts.headDir, "--head-dir")
	if err != nil {
		return nil, err
	}
	base, err := dirTree(opts.baseDir, "--base-dir")
	if err != nil {
		return nil, err
	}
	if opts.baseLabel != "" {
		base.label = opts.baseLabel
	}
	if opts.headLabel != "" {
		head.label = opts.headLabel
	}
	return &diffSides{head: head, base: base, display: opts.headDir}, nil
}

// dirTree is a checked-out tree given on the command line.
func dirTree(dir, flag string) (diffTree, error) {
	abs, err := filepath.Abs(dir)
	if err == nil {
		var info os.FileInfo
		if info, err = os.Stat(abs); err == nil && !info.IsDir() {
			err = errors.New("not a directory")
		}
	}
	if err != nil {
		return diffTree{}, fmt.Errorf("reading %s %s: %w", flag, dir, err)
	}
	return diffTree{label: dir, root: abs, dir: "."}, nil
}
