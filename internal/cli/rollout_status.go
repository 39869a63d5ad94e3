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

	"github.com/spf13/cobra"

	v1alpha1 "github.com/profilesync/profilesync/api/v1alpha1"
	"github.com/profilesync/profilesync/internal/gitsource"
	"github.com/profilesync/profilesync/internal/lifecycle"
	"github.com/profilesync/profilesync/internal/render/profile"
	"github.com/profilesync/profilesync/internal/repofile"
	"github.com/profilesync/profilesync/internal/rollout"
	"github.com/profilesync/profilesync/internal/sandbox"
)

// defaultStatusFetchTimeout bounds the fetch of a repository given by URL,
// as a ProfileSync's spec.timeout bounds the operator's.
const defaultStatusFetchTimeout = 60 * time.Second

// rolloutStatusOptions are 'rollout status' flags.
type rolloutStatusOptions struct {
	branch          string
	at              timeFlag
	output          diffFormat
	maxCheckoutSize int64
	fetchTimeout    time.Duration
	build           sandbox.Options
	maxBuilds       int
	// upstreamKeys is the allowed_signers file of --upstream-keys: the
	// landscapes' record keys; empty checks no signature.
	upstreamKeys string
	// verify holds --verify-keys and --verify-allowed-signers: the rollout
	// file is read only from a tip they verify.
	verify verifyFlags
}

func newRolloutCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "rollout",
		Short: "Show how commits roll out across the landscapes of the rollout file",
		Args:  cobra.NoArgs,
		// Runnable, so that an unknown subcommand is a usage error
		// rather than help.
		RunE: func(cmd *cobra.Command, _ []string) error { return cmd.Help() },
	}
	cmd.AddCommand(newRolloutStatusCommand())
	return cmd
}

func newRolloutStatusCommand() *cobra.Command {
	opts := rolloutStatusOptions{output: diffFormatTable, maxCheckoutSize: defaultMaxCheckoutSize, fetchTimeout: defaultStatusFetchTimeout}
	cmd := &cobra.Command{
		Use:   "status [PATH|URL] [--branch NAME] [--at TIME] [--output table|markdown|json]",
		Short: "Show what each landscape runs, what it waits for, and where every version stands in each",
		Long: `Reads a profiles repository, read-only, without a cluster: its rollout file
(profilesync-rollout.yaml at the tip of --branch; docs/rollout.md) and the
records the operator keeps of what each landscape applied, under
refs/profilesync/landscapes/<name>. It prints:

  - per landscape: the revision it runs and since when (its newest applied or
    hotfix record), the candidate it waits for and when that becomes eligible:
    the commits of --branch after the revision it runs, judged on its
    upstreams' (after) records and its soak, as the operator judges them; a
    landscape whose records say it holds (spec.rollout.hold) takes nothing,
    and shows the candidate it holds back;
  - per version (the rollout matrix): its classification in each landscape at
    --at, and when it reaches each stage there. Each landscape's overlay is
    built, as 'build' builds it, at the revision it runs, or at the tip of
    --branch when it has no record (the report says so).

The repository is PATH (default: the Git work tree of the current directory),
whose records are there only when they were fetched, for example with
  git fetch origin '+refs/profilesync/*:refs/profilesync/*'
or a URL (https, or http without credentials; credentials go in the URL's
user information), fetched into a temporary directory that is removed
afterwards, within --max-checkout-size and --fetch-timeout as the operator's
fetch is. Nothing is written to the repository.

Records are untrusted input: a record that is garbled, names another landscape
or a commit the repository lacks is left out with a warning on stderr, as the
operator leaves it out. Records applied after --at are left out too, so that
--at shows the rollout as it stood then.

With --upstream-keys FILE (an allowed_signers file whose principals are
landscape names, "dev ssh-ed25519 AAAA...", as spec.rollout.upstreamKeys
holds), every record's SSH signature is checked: a landscape counts only the
records of its upstreams that verify, as an operator with
spec.rollout.upstreamKeys does, and the others are left out with a warning
naming the record commit and why (unsigned, unknown key, bad signature). The
report marks each landscape's own record that does not verify (unverified) and
lists the upstream records left out.

With --verify-keys or --verify-allowed-signers (the trusted keys, as
'build', 'diff' and 'verify' take them, spec.verify.secretRef's Secret as
files), the tip of --branch must be signed by one of them, as an operator
with spec.verify reads the rollout file only from a tip that verifies:
otherwise the status fails, naming the commit, the signer and why.

Exit status: 0 with the report on stdout and warnings on stderr; 1 when the
repository, the branch or the rollout file cannot be read (naming the file,
the ref and the field), or the tip does not verify; 2 on a usage error.`,
		Example: `  profilesync rollout status
  profilesync rollout status https://git.example.com/platform/profiles.git --branch main
  profilesync rollout status --output markdown > comment.md
  profilesync rollout status ../profiles --at 2026-12-01T00:00:00Z --output json
  profilesync rollout status --upstream-keys record_signers
  profilesync rollout status --verify-allowed-signers allowed_signers --upstream-keys record_signers`,
		DisableFlagsInUseLine: true,
		Args: func(_ *cobra.Command, args []string) error {
			if len(args) > 1 {
				return usageErrorf("one repository, PATH or URL, at most; got %d", len(args))
			}
			return nil
		},
		RunE: failOnInput(func(cmd *cobra.Command, args []string) error {
			source := "."
			if len(args) == 1 {
				source = args[0]
			}
			return runRolloutStatus(cmd.Context(), &opts, source, cmd.OutOrStdout(), cmd.ErrOrStderr())
		}),
	}
	flags := cmd.Flags()
	flags.SortFlags = false
	flags.StringVar(&opts.branch, "branch", "", "the branch `NAME` the landscapes follow (default: the branch HEAD names: of the work tree for a PATH, of the server for a URL)")
	flags.Var(&opts.at, "at", "show the rollout at this RFC 3339 time (default now)")
	flags.VarP(&opts.output, "output", "o", "the report's format: table, markdown (a pull-request comment) or json")
	flags.Var(byteSize{&opts.maxCheckoutSize}, gitsource.MaxCheckoutSizeFlag,
		"The most a fetch of a URL may write, and the largest tree of a revision written for a build (bytes, or a quantity like 64Mi); it also bounds each Git object read, as the operator's flag does.")
	flags.DurationVar(&opts.fetchTimeout, "fetch-timeout", defaultStatusFetchTimeout, "How long the fetch of a URL may take, listing included.")
	flags.StringVar(&opts.upstreamKeys, "upstream-keys", "",
		"an allowed_signers `FILE` of the landscapes' record keys (a landscape's name, then its SSH public key, a line each): "+
			"count only the upstream records signed by them, and mark the records that are not")
	opts.verify.bindKeys(flags, "verify-")
	bindBuildOptions(flags, &opts.build)
	bindMaxBuilds(flags, &opts.maxBuilds)
	return cmd
}

// readUpstreamKeys reads --upstream-keys, bounded as spec.rollout.upstreamKeys
// is.
func readUpstreamKeys(path string) (gitsource.RecordKeys, error) {
	file, err := os.Open(path)
	if err != nil {
		return gitsource.RecordKeys{}, fmt.Errorf("--upstream-keys: %w", err)
	}
	defer file.Close()
	data, err := io.ReadAll(io.LimitReader(file, gitsource.MaxRecordKeysSize+1))
	if err != nil {
		return gitsource.RecordKeys{}, fmt.Errorf("--upstream-keys: read %s: %w", path, err)
	}
	keys, err := gitsource.ParseRecordKeys("--upstream-keys "+path, data)
	if err != nil {
		return gitsource.RecordKeys{}, err
	}
	return keys, nil
}

// statusRepository is the repository a status reads, opened.
type statusRepository struct {
	// label names it in the report: the path, or the URL without
	// credentials.
	label      string
	landscapes *gitsource.Landscapes
	branch     string
	// tempDir holds the fetch of a URL and the trees of revisions.
	tempDir string
}

func (r *statusRepository) close() {
	if r.landscapes != nil {
		_ = r.landscapes.Close()
	}
	_ = os.RemoveAll(r.tempDir)
}

// openStatusRepository opens source, a path or a URL, and settles the
// branch.
func openStatusRepository(ctx context.Context, opts *rolloutStatusOptions, source string) (*statusRepository, error) {
	tempDir, err := os.MkdirTemp("", "profilesync-rollout-")
	if err != nil {
		return nil, fmt.Errorf("rollout status: %w", err)
	}
	repo := &statusRepository{tempDir: tempDir, branch: opts.branch}
	fail := func(err error) (*statusRepository, error) {
		repo.close()
		return nil, err
	}
	if strings.Contains(source, "://") {
		repo.label = gitsource.RedactURL(source)
		fetcher, err := gitsource.New(filepath.Join(tempDir, "fetch"), gitsource.FetcherOptions{MaxCheckoutSize: opts.maxCheckoutSize})
		if err != nil {
			return fail(err)
		}
		req := gitsource.LandscapeRequest{URL: source, Timeout: opts.fetchTimeout, CacheKey: "rollout/status"}
		if repo.branch == "" {
			if repo.branch, err = fetcher.DefaultBranch(ctx, req); err != nil {
				return fail(fmt.Errorf("%w; name the branch with --branch", err))
			}
		}
		req.Branch = repo.branch
		if repo.landscapes, err = fetcher.FetchLandscapes(ctx, req); err != nil {
			return fail(err)
		}
		return repo, nil
	}
	root, err := repofile.RepositoryOf(source)
	if err != nil {
		return fail(err)
	}
	repo.label = source
	if repo.landscapes, err = gitsource.OpenLandscapes(root, gitsource.ObjectLimitsFor(opts.maxCheckoutSize)); err != nil {
		return fail(err)
	}
	if repo.branch == "" {
		if repo.branch, err = repo.landscapes.HeadBranch(); err != nil {
			return fail(fmt.Errorf("%s: %w; name the branch with --branch", source, err))
		}
	}
	return repo, nil
}

// tree writes the files of commit into the status's temporary directory
// once and returns it.
func (r *statusRepository) tree(ctx context.Context, commit string, maxBytes int64) (string, error) {
	dest := filepath.Join(r.tempDir, "trees", commit)
	if _, err := os.Stat(dest); err == nil {
		return dest, nil
	}
	if err := os.MkdirAll(filepath.Dir(dest), 0o750); err != nil {
		return "", fmt.Errorf("rollout status: %w", err)
	}
	err := r.landscapes.ExportTree(ctx, commit, dest, maxBytes)
	if errors.Is(err, gitsource.ErrCheckoutTooLarge) {
		err = fmt.Errorf("%w; raise --%s to read it", err, gitsource.MaxCheckoutSizeFlag)
	}
	return dest, err
}

func runRolloutStatus(ctx context.Context, opts *rolloutStatusOptions, source string, stdout, stderr io.Writer) error {
	now := opts.at.or(time.Now()).UTC()
	var keys *gitsource.RecordKeys
	if opts.upstreamKeys != "" {
		read, err := readUpstreamKeys(opts.upstreamKeys)
		if err != nil {
			return err
		}
		keys = &read
	}
	var trusted *gitsource.TrustedKeys
	if opts.verify.enabled() {
		read, err := opts.verify.trustedKeys()
		if err != nil {
			return err
		}
		trusted = &read
	}
	repo, err := openStatusRepository(ctx, opts, source)
	if err != nil {
		return err
	}
	defer repo.close()
	if keys != nil {
		repo.landscapes.CheckRecordSignatures(*keys, now)
	}

	tips, err := repo.landscapes.Candidates(repo.branch, "", 1)
	if err != nil {
		return fmt.Errorf("%s: %w", repo.label, err)
	}
	if len(tips) == 0 {
		return fmt.Errorf("%s: branch %q has no commit", repo.label, repo.branch)
	}
	tip := tips[0]
	if trusted != nil {
		// The rollout file decides what each landscape takes: read from an
		// unsigned tip, a push could shorten a soak in the report as it
		// could in an operator without spec.verify.
		if _, err := repo.landscapes.VerifyCommit(tip, *trusted, now); err != nil {
			return fmt.Errorf("%s, branch %s at %s: %s is read from it, and it does not verify (--verify-keys, --verify-allowed-signers): %w",
				repo.label, repo.branch, shortCommit(tip), rollout.FileName, err)
		}
	}
	tipTree, err := repo.tree(ctx, tip, opts.maxCheckoutSize)
	if err != nil {
		return err
	}
	file, err := rollout.ReadAt(tipTree, opts.build.Limits.MaxFileSize)
	if err != nil {
		return fmt.Errorf("%s, branch %s at %s: %w", repo.label, repo.branch, shortCommit(tip), err)
	}
	if file == nil {
		return fmt.Errorf("%s, branch %s at %s: no %s at the repository root (docs/rollout.md)", repo.label, repo.branch, shortCommit(tip), rollout.FileName)
	}
	// Each landscape's overlay is built once, for the matrix.
	if err := (buildCount{landscapes: len(file.Landscapes), perLandscape: 1, fromRolloutFile: true}).check(opts.maxBuilds); err != nil {
		return fmt.Errorf("%s, branch %s at %s: %w", repo.label, repo.branch, shortCommit(tip), err)
	}

	status := rolloutStatus{At: now, Repository: repo.label, Branch: repo.branch, Tip: tip}
	for _, l := range file.Landscapes {
		status.Landscapes = append(status.Landscapes, statusOfLandscape(repo.landscapes, repo.branch, l, now, keys != nil))
	}
	status.Versions = rolloutMatrix(ctx, repo, opts, file, &status)
	for _, l := range status.Landscapes {
		for _, w := range l.Warnings {
			fmt.Fprintf(stderr, "warning: %s: %s\n", l.Name, w)
		}
	}
	return opts.output.writeRolloutStatus(stdout, status)
}

// statusOfLandscape says what l runs and what it waits for: the decision
// the operator makes (rollout.DecideLandscape), on what l's own records say
// it runs and whether it holds. What cannot be read or decided is a warning of the landscape,
// and so is every record left out and every upstream that records nothing.
// With requireSigned (--upstream-keys), it counts only the upstream records
// whose signature verified, lists the others, and marks its own records'
// signatures.
func statusOfLandscape(repo rollout.Repository, branch string, l rollout.Landscape, now time.Time, requireSigned bool) landscapeStatus {
	status := landscapeStatus{Name: l.Name, Path: l.Path, After: l.After}
	if l.Soak > 0 {
		status.Soak = horizonFlag{&l.Soak}.String()
	}
	question := rollout.Question{Landscape: l, Branch: branch, FromRecords: true, Now: now}
	if requireSigned {
		question.RequireSigned = l.After
	}
	answer, err := rollout.DecideLandscape(repo, question)
	if err != nil {
		status.Warnings = append(status.Warnings, fmt.Sprintf("what it runs and waits for cannot be decided: %v", err))
		return status
	}
	for _, w := range answer.OwnWarnings {
		status.Warnings = append(status.Warnings, "record left out: "+w.Error())
	}
	for _, upstream := range answer.Upstreams {
		for _, w := range upstream.Warnings {
			status.Warnings = append(status.Warnings, fmt.Sprintf("record of upstream %s left out: %v", upstream.Landscape, w))
		}
		if upstream.Truncated {
			status.Warnings = append(status.Warnings, fmt.Sprintf("only the newest %d records of upstream %s were read: a hold may look younger than it is",
				gitsource.DefaultMaxRecords, upstream.Landscape))
		}
		if upstream.NoRecords {
			status.Warnings = append(status.Warnings, rollout.NoRecordsNote(upstream.Landscape))
		}
		for _, r := range upstream.Unverified {
			status.Unverified = append(status.Unverified, unverifiedRecord{
				Landscape: upstream.Landscape, Record: r.Commit, Kind: string(r.Kind), Revision: r.Revision, Signature: signatureOf(r.Signature),
			})
		}
	}
	if r := answer.Applied; r != nil {
		readyAt := r.ReadyAt
		status.Applied = &appliedRevision{Revision: r.Revision, Kind: string(r.Kind), AppliedAt: r.AppliedAt, ReadyAt: &readyAt, Record: r.Commit}
		if r.Signature.Checked {
			signature := signatureOf(r.Signature)
			status.Applied.Signature = &signature
		}
	}
	if r := answer.Refused; r != nil {
		status.Refused = &refusedRevision{Revision: r.Revision, RefusedAt: r.AppliedAt, Reason: r.Reason, Record: r.Commit}
	}
	if r := answer.HoldRecord; answer.Held && r != nil {
		status.Held = &heldRevision{Revision: r.Revision, Since: r.AppliedAt, Record: r.Commit}
	}
	status.Candidates = len(answer.Candidates)
	decision := answer.Decision
	if decision.Promote != "" {
		takes := &candidateStatus{Revision: decision.Promote, Holds: holdStatuses(decision.PromotedHolds)}
		if eligible := latestHold(decision.PromotedHolds); !eligible.IsZero() {
			eligible = eligible.Add(l.Soak)
			takes.EligibleAt = &eligible
		}
		status.Takes = takes
	}
	if w := decision.Waiting; w != nil {
		waiting := &candidateStatus{Revision: w.Candidate, Holds: holdStatuses(w.Holds)}
		if !w.EligibleAt.IsZero() {
			eligible := w.EligibleAt
			waiting.EligibleAt = &eligible
		}
		status.Waiting = waiting
	}
	return status
}

func latestHold(holds []rollout.Hold) time.Time {
	var latest time.Time
	for _, h := range holds {
		if h.Since.After(latest) {
			latest = h.Since
		}
	}
	return latest
}

func holdStatuses(holds []rollout.Hold) []holdStatus {
	out := make([]holdStatus, len(holds))
	for i, h := range holds {
		out[i] = holdStatus{Landscape: h.Landscape, Running: h.Running, Holds: h.Holds, Refused: h.Refused}
		if h.Holds {
			since := h.Since
			out[i].Since = &since
		}
	}
	return out
}

// rolloutMatrix builds each landscape's overlay at the revision it runs (at
// the tip without a record), evaluates it at the status's time, and lists
// every version of every profile with its classification and stage starts
// in each landscape that has the profile. A landscape that does not build
// is shown without versions, with a warning.
func rolloutMatrix(ctx context.Context, repo *statusRepository, opts *rolloutStatusOptions, file *rollout.File, status *rolloutStatus) []versionRollout {
	var versions []versionRollout
	index := map[versionKey]int{}
	// hasProfile is, per landscape, the profiles its overlay builds: a
	// landscape without the profile has no row for its versions.
	hasProfile := make([]map[string]bool, len(file.Landscapes))
	for i, l := range file.Landscapes {
		hasProfile[i] = map[string]bool{}
		ls := &status.Landscapes[i]
		ls.Overlay = overlaySource{Revision: status.Tip, From: overlayFromTip}
		if ls.Applied != nil {
			ls.Overlay = overlaySource{Revision: ls.Applied.Revision, From: overlayFromRecord}
		}
		root, err := repo.tree(ctx, ls.Overlay.Revision, opts.maxCheckoutSize)
		if err != nil {
			ls.Warnings = append(ls.Warnings, fmt.Sprintf("its overlay at %s cannot be read: %v", shortCommit(ls.Overlay.Revision), err))
			continue
		}
		tree := diffTree{label: shortCommit(ls.Overlay.Revision), root: root, dir: "."}
		loaded := loadLandscape(ctx, tree, landscape{name: l.Name, path: filepath.FromSlash(l.Path)}, opts.build, nil, status.At)
		for _, p := range loaded.problems {
			ls.Warnings = append(ls.Warnings, fmt.Sprintf("%s at %s: %s", l.Path, shortCommit(ls.Overlay.Revision), p))
		}
		for _, o := range loaded.objects {
			hasProfile[i][o.Ref()] = true
			spec := o.EffectiveSpec()
			add := func(machineImage string, v v1alpha1.ExpirableVersion) {
				key := versionKey{profile: o.Ref(), machineImage: machineImage, version: v.Version}
				at, seen := index[key]
				if !seen {
					at = len(versions)
					index[key] = at
					versions = append(versions, newVersionRollout(o, machineImage, v.Version, file))
				}
				versions[at].Landscapes[i] = versionInLandscape{
					Landscape: l.Name, Listed: true,
					Classification: lifecycle.ClassificationAt(v, status.At), Stages: stageStarts(v),
				}
			}
			for _, v := range spec.Kubernetes.Versions {
				add("", v)
			}
			for _, image := range spec.MachineImages {
				for _, v := range image.Versions {
					add(image.Name, v.ExpirableVersion)
				}
			}
		}
	}
	for v := range versions {
		versions[v].Landscapes = slices.DeleteFunc(versions[v].Landscapes, func(in versionInLandscape) bool {
			return !hasProfile[slices.IndexFunc(file.Landscapes, func(l rollout.Landscape) bool { return l.Name == in.Landscape })][versions[v].Profile]
		})
	}
	return versions
}

type versionKey struct{ profile, machineImage, version string }

func newVersionRollout(o profile.Object, machineImage, version string, file *rollout.File) versionRollout {
	v := versionRollout{Profile: o.Ref(), MachineImage: machineImage, Version: version, Landscapes: make([]versionInLandscape, len(file.Landscapes))}
	for i, l := range file.Landscapes {
		v.Landscapes[i] = versionInLandscape{Landscape: l.Name}
	}
	return v
}

// stageStarts lists the stages v enters, each the first time it does, in
// time order; a stage in effect from the beginning has no time.
func stageStarts(v v1alpha1.ExpirableVersion) []stageStart {
	var stages []stageStart
	if first := lifecycle.ClassificationAt(v, time.Time{}); first != v1alpha1.ClassificationUnavailable {
		stages = append(stages, stageStart{Classification: first})
	}
	for _, tr := range lifecycle.Transitions(v, time.Time{}, time.Time{}) {
		if tr.To == v1alpha1.ClassificationUnavailable || slices.ContainsFunc(stages, func(s stageStart) bool { return s.Classification == tr.To }) {
			continue
		}
		at := tr.At.UTC()
		stages = append(stages, stageStart{Classification: tr.To, At: &at})
	}
	return stages
}

func shortCommit(commit string) string { return commit[:min(7, len(commit))] }
