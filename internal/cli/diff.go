package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/profilesync/profilesync/internal/gitsource"
	"github.com/profilesync/profilesync/internal/policy"
	"github.com/profilesync/profilesync/internal/prdiff"
	"github.com/profilesync/profilesync/internal/render"
	"github.com/profilesync/profilesync/internal/repofile"
	"github.com/profilesync/profilesync/internal/sandbox"
)

// diffOptions are diff's flags.
type diffOptions struct {
	base, head       string
	repo             string
	baseDir, headDir string
	cluster          bool
	kubeconfig       string
	kubeContext      string
	at               timeFlag
	horizon          time.Duration
	output           diffFormat
	rollout          []string
	maxCheckoutSize  int64
	build            sandbox.Options
}

func newDiffCommand() *cobra.Command {
	opts := diffOptions{horizon: prdiff.DefaultHorizon, output: diffFormatTable, maxCheckoutSize: defaultMaxCheckoutSize}
	cmd := &cobra.Command{
		Use: "diff (--base REV --head REV [--repo DIR] | --base-dir DIR --head-dir DIR | --cluster [--head-dir DIR]) [PATH...]\n" +
			"       [--at TIME] [--horizon DURATION] [--output table|markdown|json] [--rollout LANDSCAPE,...]",
		Short: "Show what a change of the profiles does to every landscape, or how the cluster differs from a build",
		Long: `Builds each overlay PATH of two revisions of a profiles repository the way
'profilesync build' does, evaluates both sides at --at (default now) and prints
what changes in each landscape: versions and machine images added and removed,
update strategies, lifecycle stages added, removed or moved (with the shift),
every stretch of time up to --horizon ahead in which a version is classified
differently, and the automatic and forced update targets that change. A
NamespacedCloudProfile is compared by its merged spec, so a change of its
parent shows under it too.

The two sides are one of:

  --base REV --head REV
      Two commits of the Git repository at --repo (default: the current
      directory), read with go-git without touching the work tree or the index:
      a branch, a remote-tracking branch (origin/main), a tag, a SHA-1, HEAD or
      HEAD~1. Each is written to a temporary directory, at most
      --max-checkout-size. PATH is relative to --repo, which may be a directory
      inside the repository; a build may read the whole repository, as the
      operator's does. In a shallow clone, fetch the base first.
  --base-dir DIR --head-dir DIR
      Two checked-out trees. PATH is relative to each, and each build is
      confined to its tree.
  --cluster
      The cluster of the current kubeconfig (or --kubeconfig, --context) is the
      base, one overlay of the tree at --head-dir (default: the current
      directory) the head. The base holds the live CloudProfiles and
      NamespacedCloudProfiles that the build names, as stored; a namespaced one
      is merged with its live parent as the controller does (when that fails,
      its status.cloudProfileSpec is used, as the controller keeps it). Live
      objects the build does not name are not compared. A parent the build
      lacks is read from the cluster, as the sync reads it.

PATH defaults to every directory directly under overlays/ of the head that holds
a kustomization file, in name order. A landscape is named after its directory:
overlays/prod is "prod". With --cluster, name the overlay when overlays/ holds
several. As in 'build', no namespace is filled in for a NamespacedCloudProfile
without one: that is a problem.

--rollout dev,staging,prod also checks the rollout order of the head: no
landscape may take a version into a lifecycle stage before a landscape earlier
in the list does. Its warnings are part of the report; they do not change the
exit status.

A landscape whose overlay has a versioning policy in the head (the
profilesync-policy.yaml nearest to it, up to the repository root; see
docs/policy.md) is checked against it at --at, the notice rule against the
base: a deprecation or expiry the change schedules or brings forward must come
at least the policy's notice after the head's commit (with --base-dir and
--cluster, after --at). The findings are part of the report and printed on
stderr, warnings prefixed "warning: ".

Exit status: 0 when the head is valid and breaks no policy rule of severity
error: the report on stdout, warnings on stderr. 1 with the report on stdout
and the findings on stderr when it breaks one. A landscape the base lacks, or that does not build or is invalid in
the base, is compared with no profiles, so each of its profiles shows as
added; its problems are printed on stderr as warnings. 1 when the head does
not build or is invalid (nothing on stdout, every problem on stderr as
FILE: KIND/NAME: FIELD: message, as 'build' prints them), or when a
revision, a tree or the cluster cannot be read. 2 on a usage error.`,
		Example: `  profilesync diff --base origin/main --head HEAD               # every landscape under overlays/
  profilesync diff --base origin/main --head HEAD --output markdown --rollout dev,staging,prod
  profilesync diff --base-dir ../main --head-dir . overlays/prod --horizon 90d --output json
  profilesync diff --base-dir . --head-dir . --rollout dev,prod  # the rollout order check alone
  profilesync diff --cluster overlays/prod --context garden-prod`,
		DisableFlagsInUseLine: true,
		Args:                  cobra.ArbitraryArgs,
		RunE: failOnInput(func(cmd *cobra.Command, args []string) error {
			return runDiff(cmd.Context(), &opts, args, cmd.OutOrStdout(), cmd.ErrOrStderr())
		}),
	}
	flags := cmd.Flags()
	flags.SortFlags = false
	flags.StringVar(&opts.base, "base", "", "the base revision `REV` of the repository at --repo, e.g. origin/main")
	flags.StringVar(&opts.head, "head", "", "the head revision `REV` of the repository at --repo, e.g. HEAD")
	flags.StringVar(&opts.repo, "repo", "", "the Git repository `DIR` of --base and --head, or a directory inside it (default: the current directory)")
	flags.StringVar(&opts.baseDir, "base-dir", "", "the base tree `DIR`, instead of --base")
	flags.StringVar(&opts.headDir, "head-dir", "", "the head tree `DIR`, instead of --head; with --cluster, the tree to build (default: the current directory)")
	flags.BoolVar(&opts.cluster, "cluster", false, "compare the live objects of the cluster with the build of one overlay")
	flags.StringVar(&opts.kubeconfig, "kubeconfig", "", "with --cluster, the kubeconfig `FILE` (default: $KUBECONFIG, in-cluster, ~/.kube/config)")
	flags.StringVar(&opts.kubeContext, "context", "", "with --cluster, the kubeconfig context `NAME` (default: the current context)")
	flags.Var(&opts.at, "at", "compare at this RFC 3339 time (default now)")
	flags.Var(horizonFlag{&opts.horizon}, "horizon", "how far ahead of --at classifications are compared, a duration like 180d, 90d12h or 2160h")
	flags.VarP(&opts.output, "output", "o", "the report's format: table, markdown (a pull-request comment) or json")
	flags.StringSliceVar(&opts.rollout, "rollout", nil, "check the head's rollout order over the `LANDSCAPES`, earliest first, e.g. dev,staging,prod")
	flags.Var(byteSize{&opts.maxCheckoutSize}, gitsource.MaxCheckoutSizeFlag,
		"The largest tree of a revision written for --base and --head (bytes, or a quantity like 64Mi).")
	bindBuildOptions(flags, &opts.build)
	return cmd
}

// diffMode says where the two sides of a diff come from.
type diffMode int

const (
	diffRevisions diffMode = iota // --base and --head
	diffDirs                      // --base-dir and --head-dir
	diffCluster                   // --cluster
)

// mode checks which sides the flags name, refusing mixtures.
func (o *diffOptions) mode() (diffMode, error) {
	revisions := o.base != "" || o.head != ""
	dirs := o.baseDir != "" || o.headDir != ""
	switch {
	case o.cluster && (revisions || o.baseDir != "" || o.repo != ""):
		return 0, usageErrorf("--cluster compares the cluster with the tree at --head-dir; it takes no --base, --head, --base-dir or --repo")
	case o.cluster && len(o.rollout) > 0:
		return 0, usageErrorf("--rollout compares several landscapes; --cluster compares one")
	case !o.cluster && (o.kubeconfig != "" || o.kubeContext != ""):
		return 0, usageErrorf("--kubeconfig and --context go with --cluster")
	case o.cluster:
		return diffCluster, nil
	case revisions && dirs:
		return 0, usageErrorf("give either --base and --head (two revisions of a repository) or --base-dir and --head-dir (two trees), not both")
	case revisions && (o.base == "" || o.head == ""):
		return 0, usageErrorf("--base and --head go together: give both revisions")
	case revisions:
		return diffRevisions, nil
	case o.repo != "":
		return 0, usageErrorf("--repo goes with --base and --head")
	case dirs && (o.baseDir == "" || o.headDir == ""):
		return 0, usageErrorf("--base-dir and --head-dir go together: give both trees")
	case dirs:
		return diffDirs, nil
	}
	return 0, usageErrorf("nothing to compare: give --base REV --head REV, --base-dir DIR --head-dir DIR, or --cluster")
}

// diffTree is one side's tree: the directory a build is confined to, and the
// directory within it that PATHs are relative to.
type diffTree struct {
	// label names the side in the report and in messages.
	label string
	root  string
	// dir is relative to root; "." unless --repo is inside the repository.
	dir string
	// commitTime is when the revision was committed; zero for a tree that
	// is not a revision.
	commitTime time.Time
}

// path is an overlay's path relative to the tree's root, as render.Build
// takes it.
func (t diffTree) path(overlay string) string { return filepath.Join(t.dir, overlay) }

// landscape is one overlay to compare.
type landscape struct {
	name string
	// path is the overlay as given or found, relative to the trees' dir.
	path string
}

// sideSet is one side of every landscape: the evaluated profiles of each, in
// landscape order.
type sideSet [][]render.Object

func runDiff(ctx context.Context, opts *diffOptions, args []string, stdout, stderr io.Writer) error {
	mode, err := opts.mode()
	if err != nil {
		return err
	}
	paths, err := overlayArgs(args)
	if err != nil {
		return err
	}
	if err := checkRolloutFlag(opts.rollout); err != nil {
		return err
	}
	now := opts.at.or(time.Now())

	var sides *diffSides
	switch mode {
	case diffRevisions:
		sides, err = newRevisionSides(ctx, opts)
	case diffDirs:
		sides, err = newDirSides(opts)
	default:
		sides, err = newClusterSides(ctx, opts)
	}
	if err != nil {
		return err
	}
	defer sides.close()

	head := sides.head
	landscapes, err := resolveLandscapes(head, sides.display, paths)
	if err != nil {
		return err
	}
	rollout, err := rolloutOrder(opts.rollout, landscapes)
	if err != nil {
		return err
	}
	if err := sides.prepare(landscapes); err != nil {
		return err
	}

	heads, ok := loadHeads(ctx, head, landscapes, opts.build, sides.parentLookup(), now, stderr)
	if !ok {
		return errInvalidInputReported
	}
	bases, err := sides.bases(ctx, landscapes, heads, opts.build, now, stderr)
	if err != nil {
		return err
	}

	report := prdiff.Report{Landscapes: make([]prdiff.LandscapeDiff, len(landscapes))}
	report.Base, report.Head = sides.labels(landscapes)
	for i, l := range landscapes {
		report.Landscapes[i] = prdiff.Diff(l.name, bases[i], heads[i], now, opts.horizon)
	}
	if len(rollout) > 0 {
		ordered := make([]prdiff.Landscape, len(rollout))
		for i, index := range rollout {
			ordered[i] = prdiff.Landscape{Name: landscapes[index].name, Objects: heads[index]}
		}
		report.RolloutWarnings = prdiff.CheckRolloutOrder(ordered, now)
	}
	var satisfied bool
	report.Policy, satisfied, err = checkPolicies(head, landscapes, heads, bases, opts.build, now, stderr)
	if err != nil {
		return err
	}
	if err := opts.output.write(stdout, report); err != nil {
		return err
	}
	if !satisfied {
		return errInvalidInputReported
	}
	return nil
}

// checkPolicies checks every landscape of the head against its versioning
// policy (the profilesync-policy.yaml nearest to its overlay in the head),
// with the base for the notice rule, and prints the findings on stderr, each
// line once. The commit that makes the change is the head's when it is a
// revision, else it is made now. satisfied is false when a rule of severity
// error is broken. The error is for a policy file that cannot be read.
func checkPolicies(head diffTree, landscapes []landscape, heads, bases sideSet, build sandbox.Options, now time.Time, stderr io.Writer) (sections []prdiff.PolicySection, satisfied bool, err error) {
	commit := now
	if !head.commitTime.IsZero() {
		commit = head.commitTime
	}
	satisfied = true
	printed := map[string]bool{}
	for i, l := range landscapes {
		p, file, err := policy.Find(head.root, head.path(l.path), build.Limits.MaxFileSize)
		if err != nil {
			return nil, false, err
		}
		if p == nil {
			continue
		}
		findings := p.Check(heads[i], bases[i], now, commit)
		sections = append(sections, prdiff.PolicySection{Landscape: l.name, File: file, Errors: findings.Errors, Warnings: findings.Warnings})
		satisfied = printPolicyFindings(findings, printed, stderr) && satisfied
	}
	return sections, satisfied, nil
}

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
func (s *diffSides) parentLookup() render.ParentLookup {
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
		committed, err := gitsource.CommitTime(repo, commit)
		if err != nil {
			return diffTree{}, err
		}
		return diffTree{label: revisionLabel(revision, commit), root: dest, dir: prefix, commitTime: committed}, nil
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

// overlayArgs checks the PATHs: each must stay inside the tree it is
// relative to.
func overlayArgs(args []string) ([]string, error) {
	paths := make([]string, 0, len(args))
	for _, arg := range args {
		path := filepath.Clean(filepath.FromSlash(arg))
		if !filepath.IsLocal(path) && path != "." {
			return nil, usageErrorf("PATH %q must be relative to the repository and stay inside it", arg)
		}
		if slices.Contains(paths, path) {
			return nil, usageErrorf("PATH %q is given twice", arg)
		}
		paths = append(paths, path)
	}
	return paths, nil
}

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
		if slices.ContainsFunc(files, func(f fs.DirEntry) bool { return !f.IsDir() && render.IsKustomizationFile(f.Name()) }) {
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

// checkRolloutFlag checks --rollout on its own: at least two landscapes,
// each once.
func checkRolloutFlag(names []string) error {
	if len(names) == 0 {
		return nil
	}
	if len(names) < 2 {
		return usageErrorf("--rollout needs at least two landscapes, earliest first, e.g. dev,prod")
	}
	for i, name := range names {
		if name == "" {
			return usageErrorf("--rollout has an empty landscape name")
		}
		if slices.Contains(names[:i], name) {
			return usageErrorf("--rollout names %q twice", name)
		}
	}
	return nil
}

// rolloutOrder returns the index of each --rollout landscape among
// landscapes, in rollout order.
func rolloutOrder(names []string, landscapes []landscape) ([]int, error) {
	order := make([]int, 0, len(names))
	for _, name := range names {
		index := slices.IndexFunc(landscapes, func(l landscape) bool { return l.name == name })
		if index < 0 {
			known := make([]string, len(landscapes))
			for i, l := range landscapes {
				known[i] = l.name
			}
			return nil, usageErrorf("--rollout names %q, which is not a landscape of this diff (%s)", name, strings.Join(known, ", "))
		}
		order = append(order, index)
	}
	return order, nil
}

// loadedLandscape is one landscape of one side, built, validated and
// evaluated.
type loadedLandscape struct {
	objects  []render.Object
	warnings render.Problems
	// problems are why the landscape cannot be compared, one line each:
	// the build's error, or every problem, summarized.
	problems []string
	// missing is set when the tree has no such overlay.
	missing bool
}

// loadLandscape builds the overlay of tree the way 'build' does and checks
// and evaluates it at now, finding parents the build lacks with lookup. Its
// warnings are the build's (render.BuildWithWarnings) and the validation's.
func loadLandscape(ctx context.Context, tree diffTree, l landscape, build sandbox.Options, lookup render.ParentLookup, now time.Time) loadedLandscape {
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
	checked, err := checkProfiles(docs, lookup, now)
	if err != nil {
		return loadedLandscape{problems: []string{err.Error()}}
	}
	loaded := loadedLandscape{objects: checked.evaluated, warnings: append(buildWarnings, checked.warnings...)}
	for _, p := range checked.problems.Summarize() {
		loaded.problems = append(loaded.problems, p.String())
	}
	return loaded
}

// loadHeads loads every landscape of the head. It prints the warnings of
// all and, when one does not build or is invalid, the problems of all, each
// line once (landscapes share their base), and returns false then.
func loadHeads(ctx context.Context, tree diffTree, landscapes []landscape, build sandbox.Options, lookup render.ParentLookup, now time.Time, stderr io.Writer) (sideSet, bool) {
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

// checkedProfiles is a set of profiles decoded, validated and, when valid,
// evaluated.
type checkedProfiles struct {
	evaluated []render.Object
	warnings  render.Problems
	// problems make the set invalid; evaluated is nil then.
	problems render.Problems
}

// checkProfiles decodes and validates docs as one set, finding parents the
// set lacks with lookup (none when nil), and evaluates them at now when they
// are valid, as 'evaluate' does. The error is for a failed lookup.
func checkProfiles(docs []render.Document, lookup render.ParentLookup, now time.Time) (checkedProfiles, error) {
	objects, problems := render.DecodeDocuments(docs)
	report, err := render.ValidateSetAt(objects, lookup, now)
	if err != nil {
		return checkedProfiles{}, fmt.Errorf("validating profiles: %w", err)
	}
	checked := checkedProfiles{warnings: report.Warnings, problems: append(problems, report.Problems...)}
	if len(checked.problems) > 0 {
		return checked, nil
	}
	checked.evaluated = render.EvaluateSet(objects, report, now)
	return checked, nil
}

// diffFormat is --output.
type diffFormat string

const (
	diffFormatTable    diffFormat = "table"
	diffFormatMarkdown diffFormat = "markdown"
	diffFormatJSON     diffFormat = "json"
)

func (f *diffFormat) String() string { return string(*f) }
func (f *diffFormat) Type() string   { return "FORMAT" }

func (f *diffFormat) Set(value string) error {
	switch format := diffFormat(value); format {
	case diffFormatTable, diffFormatMarkdown, diffFormatJSON:
		*f = format
		return nil
	}
	return fmt.Errorf("not a report format: %q (table, markdown or json)", value)
}

func (f diffFormat) write(w io.Writer, report prdiff.Report) error {
	switch f {
	case diffFormatMarkdown:
		return prdiff.WriteMarkdown(w, report)
	case diffFormatJSON:
		return prdiff.WriteJSON(w, report)
	}
	return prdiff.WriteText(w, report)
}

// horizonFlag is a positive duration, written as Go writes durations or with
// a leading number of days: 180d, 90d12h, 2160h.
type horizonFlag struct{ d *time.Duration }

const day = 24 * time.Hour

func (h horizonFlag) String() string {
	if h.d == nil {
		return ""
	}
	days, rest := *h.d/day, *h.d%day
	switch {
	case days == 0:
		return rest.String()
	case rest == 0:
		return fmt.Sprintf("%dd", days)
	}
	return fmt.Sprintf("%dd%s", days, rest)
}

func (h horizonFlag) Type() string { return "DURATION" }

func (h horizonFlag) Set(value string) error {
	d, err := parseHorizon(value)
	if err != nil {
		return fmt.Errorf("not a duration like 180d, 90d12h or 2160h: %q", value)
	}
	if d <= 0 {
		return fmt.Errorf("the horizon must be positive: %q", value)
	}
	*h.d = d
	return nil
}

func parseHorizon(value string) (time.Duration, error) {
	days, rest, found := strings.Cut(value, "d")
	if !found {
		return time.ParseDuration(value)
	}
	n, err := strconv.ParseUint(days, 10, 32)
	if err != nil || n > uint64(math.MaxInt64/day) {
		return 0, fmt.Errorf("invalid number of days %q", days)
	}
	d := time.Duration(n) * day
	if rest == "" {
		return d, nil
	}
	more, err := time.ParseDuration(rest)
	if err != nil || more < 0 || d > math.MaxInt64-more {
		return 0, fmt.Errorf("invalid duration %q", rest)
	}
	return d + more, nil
}
