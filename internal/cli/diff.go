package cli

import (
	"context"
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/profilesync/profilesync/internal/gitsource"
	"github.com/profilesync/profilesync/internal/policy"
	"github.com/profilesync/profilesync/internal/prdiff"
	"github.com/profilesync/profilesync/internal/sandbox"
)

// diffOptions are diff's flags.
type diffOptions struct {
	base, head       string
	repo             string
	baseDir, headDir string
	// baseLabel and headLabel name the trees of --base-dir and --head-dir
	// in the report when set (propose's copy of the checkout before its
	// edits has no name a reader knows); the directories otherwise.
	baseLabel, headLabel string
	cluster              bool
	kubeconfig           string
	kubeContext          string
	at                   timeFlag
	horizon              time.Duration
	policyHorizon        time.Duration
	output               diffFormat
	rollout              []string
	maxCheckoutSize      int64
	build                sandbox.Options
	maxBuilds            int
	verify               verifyFlags
}

func newDiffCommand() *cobra.Command {
	opts := diffOptions{horizon: prdiff.DefaultHorizon, policyHorizon: policy.DefaultHorizon, output: diffFormatTable, maxCheckoutSize: defaultMaxCheckoutSize}
	cmd := &cobra.Command{
		Use: "diff (--base REV --head REV [--repo DIR] | --base-dir DIR --head-dir DIR | --cluster [--head-dir DIR]) [PATH...]\n" +
			"       [--at TIME] [--horizon DURATION] [--policy-horizon DURATION] [--output table|markdown|json] [--rollout LANDSCAPE,...]",
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
      lacks is read from the cluster, as the sync reads it. Each live object
      held against the sync (the annotation profilesync.io/hold-until of
      break glass, see docs/gitops.md) is followed, after the report, by the
      strategic-merge patch of its drift, lists keyed as the build merges
      them: added to the overlay as a patch file, it makes the overlay build
      what the cluster holds, and the hold ends once that is merged. With
      --output json, a note on stderr names the held objects instead. What
      the sync would refuse to write over a live object, by a rule that needs
      it (an override a NamespacedCloudProfile already has whose
      expirationDate moves into the past, refused as Gardener refuses it), is
      printed on stderr after the report, one line as the sync reports it,
      and makes the exit status 1.

PATH defaults to the landscapes of the head's rollout file
(profilesync-rollout.yaml at the repository root, docs/rollout.md) in its
order, else to every directory directly under overlays/ of the head that holds
a kustomization file, in name order. A landscape is named as the rollout file
names its overlay, else after its directory: overlays/prod is "prod". With --cluster, name the overlay when overlays/ holds
several. As in 'build', no namespace is filled in for a NamespacedCloudProfile
without one: that is a problem.

The head's rollout file sets the rollout order it is checked against: no
landscape may take a version into a lifecycle stage before an upstream
landscape (after) does, nor before that plus the lag the file sets for the
stage. Findings of a lag of severity error are printed on stderr too and make
the exit status 1; the others are warnings in the report. A bad rollout file
fails the diff, naming the file and the field. --rollout dev,staging,prod
overrides the file: no landscape may take a version into a stage before a
landscape earlier in the list does, every finding a warning that does not
change the exit status.

A landscape whose overlay has a versioning policy in the head (the
profilesync-policy.yaml nearest to it, up to the repository root; see
docs/policy.md) is checked against it at --at, the notice rule against the
base: a deprecation or expiry the change schedules or brings forward must come
at least the policy's notice after the head's commit (with --base-dir and
--cluster, after --at). The head is checked again at every instant up to
--policy-horizon (default 180d) after --at at which a finding can appear: an
error that time alone brings is an error of the pull request, naming its date
("from DATE ... the operator refuses every revision with this: policy RULE:
..."), because from that date the operator refuses every new revision of the
landscape. The findings are part of the report and printed on stderr,
warnings prefixed "warning: ".

With --verify-keys or --verify-allowed-signers (and --verify-mode,
--verify-path-rules, --verify-max-commits), the commits --base..--head are
verified first, as 'profilesync verify' does, every verdict printed on
stderr: a refused one fails the diff (exit 1) before anything is built, so a
pull request is checked as the operator's spec.verify will check it.

Exit status: 0 when the head is valid and breaks no policy rule of severity
error: the report on stdout, warnings on stderr. 1 with the report on stdout
and the findings on stderr when it breaks one, or a lag of the rollout file of
severity error. A landscape the base lacks, or that does not build or is invalid in
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
	bindPolicyHorizon(flags, &opts.policyHorizon)
	flags.VarP(&opts.output, "output", "o", "the report's format: table, markdown (a pull-request comment) or json")
	flags.StringSliceVar(&opts.rollout, "rollout", nil, "check the head's rollout order over the `LANDSCAPES`, earliest first, e.g. dev,staging,prod, instead of the rollout file's")
	flags.Var(byteSize{&opts.maxCheckoutSize}, gitsource.MaxCheckoutSizeFlag,
		"The largest tree of a revision written for --base and --head (bytes, or a quantity like 64Mi); it also bounds each Git object read, as the operator's flag does.")
	bindBuildOptions(flags, &opts.build)
	bindMaxBuilds(flags, &opts.maxBuilds)
	opts.verify.bind(flags, "verify-")
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
	if opts.verify.enabled() {
		// The pull request's commits are verified before anything is built
		// of them, as the operator refuses a revision before its build.
		if mode != diffRevisions {
			return usageErrorf("--verify-keys and --verify-allowed-signers verify the commits --base..--head; they need --base and --head")
		}
		repo := opts.repo
		if repo == "" {
			repo = "."
		}
		if err := opts.verify.verifyRange(repo, opts.base+".."+opts.head, now, opts.maxCheckoutSize, stderr); err != nil {
			return err
		}
	}

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
	landscapes, rolloutFile, err := rolloutLandscapes(head, sides.display, paths, opts.build.Limits.MaxFileSize)
	if err != nil {
		return err
	}
	rollout, err := rolloutOrder(opts.rollout, landscapes)
	if err != nil {
		return err
	}
	count := buildCount{landscapes: len(landscapes), perLandscape: 2, what: "base and head", fromRolloutFile: len(paths) == 0 && rolloutFile != nil}
	if sides.cluster != nil {
		count.perLandscape = 1 // the base is the cluster
	}
	if err := count.check(opts.maxBuilds); err != nil {
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

	compared := make([]prdiff.LandscapeSides, len(landscapes))
	for i, l := range landscapes {
		compared[i] = prdiff.LandscapeSides{Name: l.name, Base: bases[i], Head: sides.comparedHead(heads[i])}
	}
	baseLabel, headLabel := sides.labels(landscapes)
	report := prdiff.Compare(baseLabel, headLabel, compared, now, opts.horizon)
	var satisfied, inOrder bool
	report.RolloutWarnings, inOrder = checkRollout(rolloutFile, rollout, head, landscapes, heads, now, stderr)
	report.Policy, satisfied, err = checkPolicies(head, landscapes, heads, bases, opts.build, now, opts.policyHorizon, stderr)
	if err != nil {
		return err
	}
	if err := opts.output.write(stdout, report); err != nil {
		return err
	}
	if err := sides.writeAfterReport(stdout, stderr, opts.output); err != nil {
		return err
	}
	if !satisfied || !inOrder {
		return errInvalidInputReported
	}
	return nil
}

// checkPolicies checks every landscape of the head against its versioning
// policy (the profilesync-policy.yaml nearest to its overlay in the head),
// with the base for the notice rule, and prints the findings on stderr, each
// line once. The commit that makes the change is the head's when it is a
// revision, else it is made now; a revision whose committer time no report
// can hold (years 0000 to 9999) is taken as made now, with a warning.
// satisfied is false when a rule of severity
// error is broken, at now or within policyHorizon after it. The error is for a policy file that cannot be read.
func checkPolicies(
	head diffTree, landscapes []landscape, heads, bases sideSet, build sandbox.Options, now time.Time, policyHorizon time.Duration, stderr io.Writer,
) (sections []prdiff.PolicySection, satisfied bool, err error) {
	commit := now
	if !head.commitTime.IsZero() {
		commit = head.commitTime
	}
	if head.commitTimeIgnored != nil {
		fmt.Fprintf(stderr, "warning: head %s: %v; the policy's notice is measured from now (--at)\n", head.label, head.commitTimeIgnored)
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
		findings := checkPolicyAhead(p, heads[i], bases[i], now, commit, policyHorizon)
		sections = append(sections, prdiff.PolicySection{Landscape: l.name, File: file, Errors: findings.Errors, Warnings: findings.Warnings})
		satisfied = printPolicyFindings(findings, printed, stderr) && satisfied
	}
	return sections, satisfied, nil
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
