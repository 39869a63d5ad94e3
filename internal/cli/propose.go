package cli

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/go-git/go-git/v5"
	gitconfig "github.com/go-git/go-git/v5/config"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/go-git/go-git/v5/plumbing/transport"
	githttp "github.com/go-git/go-git/v5/plumbing/transport/http"
	"github.com/spf13/cobra"

	"github.com/profilesync/profilesync/internal/policy"
	"github.com/profilesync/profilesync/internal/prdiff"
	"github.com/profilesync/profilesync/internal/propose"
	"github.com/profilesync/profilesync/internal/propose/sources"
	"github.com/profilesync/profilesync/internal/render/overlay"
	"github.com/profilesync/profilesync/internal/render/profile"
	"github.com/profilesync/profilesync/internal/repofile"
	"github.com/profilesync/profilesync/internal/sandbox"
)

// Environment variables of propose: the credentials of --push-branch's
// push, and of the Git sources over http(s) whose credentials name no
// variables of their own (git.credentials), for CI.
const (
	proposeGitUsernameEnv = "PROFILESYNC_GIT_USERNAME"
	proposeGitPasswordEnv = "PROFILESYNC_GIT_PASSWORD"
)

// proposeOptions are propose's flags.
type proposeOptions struct {
	repo          string
	at            timeFlag
	commit        bool
	pushBranch    string
	remote        string
	messageFile   string
	horizon       time.Duration
	policyHorizon time.Duration
	output        diffFormat
	sourceLimits  sources.Limits
	build         sandbox.Options
	maxBuilds     int
	// lookupEnv reads the environment (os.LookupEnv); tests inject theirs.
	lookupEnv func(string) (string, bool)
}

func newProposeCommand() *cobra.Command {
	opts := proposeOptions{
		repo: ".", remote: "origin", horizon: prdiff.DefaultHorizon, policyHorizon: policy.DefaultHorizon,
		output: diffFormatTable, sourceLimits: sources.DefaultLimits(), lookupEnv: os.LookupEnv,
	}
	cmd := &cobra.Command{
		Use:   "propose [--repo DIR] [--at TIME] [--commit] [--push-branch BRANCH] [--message-file FILE]",
		Short: "Propose the new versions the sources of profilesync-versions.yaml found, as edits of the profiles",
		Long: `Reads the sources of new versions that profilesync-versions.yaml, at the root of
the repository --repo (default: the current directory), declares (Kubernetes
versions from a Git repository's tags, machine image versions from an OCI
repository's tags), and writes into the checkout the edits that the schedule
of the file and the versioning policy ask for (docs/versions.md): a new patch
that takes over from the one it replaces, which is deprecated with the
policy's notice and expires after the schedule's duration; a new minor in
preview; versions expired longer than the retirement age retired. Only what
the validation and the policy accept now and at every transition it schedules
is proposed. The files are edited in place: comments, key order and quoting
stay as written.

It prints the commit message (one line per change and its reason), then the
report 'profilesync diff' prints for the checkout before and after the edits
(with --output json, the message goes to stderr and stdout is the report).
With --commit the edits are committed to the checkout's current branch; with
--push-branch BRANCH they are committed on BRANCH, made from the checkout's
HEAD, and BRANCH is pushed to --remote, replacing what it held: a branch that
already carries a proposal is updated in place. Pushing uses the remote's
URL, with the credentials of ` + proposeGitUsernameEnv + ` and ` + proposeGitPasswordEnv + `
when they are set. A source's own credentials are the environment variables
its credentials name in the versions file: for a Git source over ssh
(ssh:// or git@host:path), identityEnv (the private key) and knownHostsEnv
(the server's host keys, always checked). Running it again on its own result
proposes nothing.

A source that fails (unreachable, bad credentials, bad tags, over its limits)
is printed on stderr by its name and changes nothing; the others are
proposed, and the exit status is 1. Exit status 0: proposed, or nothing to
propose. 1: a source failed, the versions file or a profile is invalid, or
the report finds a refusal. 2: a usage error.`,
		Example: `  profilesync propose                                          # edit the checkout, print message and report
  profilesync propose --push-branch profilesync/versions        # CI on a schedule: push a branch to review
  profilesync propose --at 2026-11-28T00:00:00Z --message-file msg.txt`,
		DisableFlagsInUseLine: true,
		Args:                  cobra.NoArgs,
		RunE: failOnInput(func(cmd *cobra.Command, _ []string) error {
			return runPropose(cmd.Context(), &opts, cmd.OutOrStdout(), cmd.ErrOrStderr())
		}),
	}
	flags := cmd.Flags()
	flags.SortFlags = false
	flags.StringVar(&opts.repo, "repo", opts.repo, "the checkout `DIR` of the profiles repository; profilesync-versions.yaml is at its root")
	flags.Var(&opts.at, "at", "propose at this RFC 3339 time (default now)")
	flags.BoolVar(&opts.commit, "commit", false, "commit the edits to the checkout's current branch")
	flags.StringVar(&opts.pushBranch, "push-branch", "", "commit the edits on `BRANCH`, made from HEAD, and push it to --remote, replacing what it held")
	flags.StringVar(&opts.remote, "remote", opts.remote, "the remote `NAME` --push-branch pushes to")
	flags.StringVar(&opts.messageFile, "message-file", "", "also write the commit message to `FILE`")
	flags.Var(horizonFlag{&opts.horizon}, "horizon", "how far ahead of --at the report compares classifications, a duration like 180d")
	bindPolicyHorizon(flags, &opts.policyHorizon)
	flags.VarP(&opts.output, "output", "o", "the report's format: table, markdown (a pull-request comment) or json")
	flags.Var(byteSize{&opts.sourceLimits.MaxBytes}, "max-source-size", "The most a source's responses may hold in all (bytes, or a quantity like 64Mi).")
	flags.IntVar(&opts.sourceLimits.MaxTags, "max-source-tags", opts.sourceLimits.MaxTags, "The most tags a source may list.")
	flags.DurationVar(&opts.sourceLimits.Timeout, "source-timeout", opts.sourceLimits.Timeout, "How long reading one source may take.")
	bindBuildOptions(flags, &opts.build)
	bindMaxBuilds(flags, &opts.maxBuilds)
	return cmd
}

func runPropose(ctx context.Context, opts *proposeOptions, stdout, stderr io.Writer) error {
	if opts.commit && opts.pushBranch != "" {
		return usageErrorf("--commit commits to the current branch, --push-branch to a branch of its own: give one of them")
	}
	now := opts.at.or(time.Now()).UTC().Truncate(time.Second)
	root, err := filepath.Abs(opts.repo)
	if err != nil {
		return fmt.Errorf("reading --repo %s: %w", opts.repo, err)
	}
	readLimits := repofile.Limits{MaxFileSize: opts.build.Limits.MaxFileSize, MaxTotalSize: opts.build.Limits.MaxRenderedSize}
	reader, err := repofile.Open(root, readLimits)
	if err != nil {
		return err
	}
	file, err := propose.Read(reader)
	if err != nil {
		return err
	}
	if file == nil {
		return fmt.Errorf("%s: no %s at the repository root: it declares the sources of new versions (docs/versions.md)", opts.repo, propose.FileName)
	}
	objects, err := proposalProfiles(reader, file)
	if err != nil {
		return err
	}

	discovered, failed := discoverReleases(ctx, file, objects, opts, stderr)
	result, err := proposeByPolicy(root, file, objects, discovered, now, opts.build.Limits.MaxFileSize)
	if err != nil {
		return err
	}
	for _, skip := range result.Skipped {
		fmt.Fprintln(stderr, "skipped: "+skip.String())
	}
	if len(result.Proposals) == 0 {
		fmt.Fprintln(stdout, "Nothing to propose: the profiles hold every version the sources offer that the schedule and the policy allow.")
		if failed {
			return errInvalidInputReported
		}
		return nil
	}
	message := commitMessage(result.Proposals)

	// The base of the report: the files as they were, in a copy of the tree.
	baseDir, err := os.MkdirTemp("", "profilesync-propose-base-")
	if err != nil {
		return fmt.Errorf("writing the tree before the edits: %w", err)
	}
	defer func() { _ = os.RemoveAll(baseDir) }()
	if err := copyRepositoryTree(reader, baseDir); err != nil {
		return err
	}
	edited, err := writeEdits(reader, result.Edits())
	if err != nil {
		return err
	}
	// With --output json, stdout is the report alone, for scripts.
	messageOut := stdout
	if opts.output == diffFormatJSON {
		messageOut = stderr
	}
	fmt.Fprintln(messageOut, message)
	if opts.messageFile != "" {
		if err := os.WriteFile(opts.messageFile, []byte(message+"\n"), 0o644); err != nil {
			return fmt.Errorf("writing --message-file: %w", err)
		}
	}
	diff := diffOptions{
		baseDir: baseDir, headDir: root, baseLabel: opts.repo + " before the proposal", headLabel: opts.repo + " with the proposal",
		at: timeFlag{now}, horizon: opts.horizon, policyHorizon: opts.policyHorizon,
		output: opts.output, build: opts.build, maxBuilds: opts.maxBuilds, maxCheckoutSize: defaultMaxCheckoutSize,
	}
	reportErr := runDiff(ctx, &diff, nil, stdout, stderr)
	if reportErr != nil && !errors.Is(reportErr, errInvalidInputReported) {
		return reportErr
	}
	if opts.commit || opts.pushBranch != "" {
		if err := commitProposal(ctx, root, edited, message, now, opts); err != nil {
			return err
		}
	}
	if reportErr != nil || failed {
		return errInvalidInputReported
	}
	return nil
}

// proposalProfiles decodes the CloudProfiles the sources feed, from their
// files, and every NamespacedCloudProfile of the repository's YAML files,
// whose overrides keep a version from retiring. Files of other YAML
// (kustomizations, patches) are not profiles and are passed over.
func proposalProfiles(reader *repofile.Reader, file *propose.File) ([]profile.Object, error) {
	fed := map[string]bool{}
	for _, s := range file.Sources {
		for _, f := range s.Feeds {
			fed[f.File] = true
		}
	}
	isYAML := func(name string) bool {
		ext := path.Ext(name)
		return (ext == ".yaml" || ext == ".yml") && !overlay.IsSettingsFile(name)
	}
	files, err := reader.Files(".", isYAML)
	if err != nil {
		return nil, fmt.Errorf("listing the repository's YAML files: %w", err)
	}
	var objects []profile.Object
	for _, name := range files {
		data, err := reader.ReadFile(name)
		if err != nil {
			return nil, err
		}
		docs, err := profile.SplitDocuments(name, bytes.NewReader(data))
		if err != nil {
			if fed[name] {
				return nil, err
			}
			continue
		}
		decoded, problems := profile.DecodeDocuments(docs)
		if fed[name] && len(problems) > 0 {
			return nil, fmt.Errorf("%s does not decode:\n%w", name, problems)
		}
		for _, o := range decoded {
			if o.NamespacedCloudProfile != nil || fed[name] {
				objects = append(objects, o)
			}
		}
	}
	return objects, nil
}

// discoverReleases reads every source; one that fails is printed on stderr
// by its name and contributes nothing.
func discoverReleases(ctx context.Context, file *propose.File, objects []profile.Object, opts *proposeOptions, stderr io.Writer) (discovered []propose.Discovered, failed bool) {
	for i := range file.Sources {
		s := &file.Sources[i]
		var releases []propose.Release
		var err error
		if s.Git != nil {
			// The variables the source's credentials name, else, over
			// http(s), those of --push-branch's push.
			auth, authErr := sources.GitEnvironmentAuth(s, opts.lookupEnv, false, "")
			if scheme, _ := propose.GitURLScheme(s.Git.URL); auth == nil && authErr == nil && scheme != "ssh" {
				if username, ok := opts.lookupEnv(proposeGitUsernameEnv); ok {
					password, _ := opts.lookupEnv(proposeGitPasswordEnv)
					auth = &githttp.BasicAuth{Username: username, Password: password}
				}
			}
			if authErr != nil {
				err = authErr
			} else {
				releases, err = sources.ListGit(ctx, s, sources.GitOptions{Auth: auth, Limits: opts.sourceLimits})
			}
		} else {
			auth, authErr := sources.EnvironmentAuth(s, opts.lookupEnv)
			if authErr != nil {
				err = authErr
			} else {
				releases, err = sources.ListOCI(ctx, s, sources.OCIOptions{Auth: auth, Limits: opts.sourceLimits,
					NeedsTime: func(version string) bool { return propose.NewerThanListed(objects, s.Feeds, version) }})
			}
		}
		if err != nil {
			fmt.Fprintf(stderr, "error: %v; it changes nothing\n", err)
			failed = true
			continue
		}
		for _, feed := range s.Feeds {
			discovered = append(discovered, propose.Discovered{Source: s.Name, Cooldown: s.Cooldown, Target: feed, Releases: releases})
		}
	}
	return discovered, failed
}

// proposeByPolicy runs the engine for the feeds of each policy (the one
// nearest to each feed's file), each run building on the one before.
func proposeByPolicy(root string, file *propose.File, objects []profile.Object, discovered []propose.Discovered, now time.Time, maxFileSize int64) (*propose.Result, error) {
	type group struct {
		policy     *policy.Policy
		discovered []propose.Discovered
	}
	var groups []*group
	byFile := map[string]*group{}
	for _, d := range discovered {
		p, policyFile, err := policy.Find(root, path.Dir(d.Target.File), maxFileSize)
		if err != nil {
			return nil, err
		}
		g, ok := byFile[policyFile]
		if !ok {
			g = &group{policy: p}
			byFile[policyFile] = g
			groups = append(groups, g)
		}
		g.discovered = append(g.discovered, d)
	}
	all := &propose.Result{Profiles: objects}
	for _, g := range groups {
		result, err := propose.Propose(propose.Input{Profiles: all.Profiles, Policy: g.policy, Schedule: file.Schedule, Now: now, Discovered: g.discovered})
		if err != nil {
			return nil, err
		}
		all.Proposals = append(all.Proposals, result.Proposals...)
		all.Skipped = append(all.Skipped, result.Skipped...)
		all.Profiles = result.Profiles
	}
	return all, nil
}

// commitMessage is a subject naming the count, then one line per proposal:
// the change and its reason.
func commitMessage(proposals []propose.Proposal) string {
	noun := "changes"
	if len(proposals) == 1 {
		noun = "change"
	}
	var b strings.Builder
	fmt.Fprintf(&b, "profilesync propose: %d %s of versions\n\n", len(proposals), noun)
	for _, p := range proposals {
		fmt.Fprintf(&b, "- %s\n", p.Summary)
	}
	fmt.Fprintf(&b, "\nProposed from the sources of %s; see docs/versions.md.", propose.FileName)
	return b.String()
}

// writeEdits makes the edits in their files, through the confined reader,
// and returns the files changed.
func writeEdits(reader *repofile.Reader, edits []propose.Edit) ([]string, error) {
	byFile := map[string][]propose.Edit{}
	for _, e := range edits {
		byFile[e.Target.File] = append(byFile[e.Target.File], e)
	}
	files := make([]string, 0, len(byFile))
	for f := range byFile {
		files = append(files, f)
	}
	sort.Strings(files)
	for _, f := range files {
		data, err := reader.ReadFile(f)
		if err != nil {
			return nil, err
		}
		edited, err := propose.EditFile(f, data, byFile[f])
		if err != nil {
			return nil, err
		}
		target := filepath.Join(reader.Root(), filepath.FromSlash(f))
		info, err := os.Stat(target)
		if err != nil {
			return nil, fmt.Errorf("writing %s: %w", f, err)
		}
		if err := os.WriteFile(target, edited, info.Mode().Perm()); err != nil {
			return nil, fmt.Errorf("writing %s: %w", f, err)
		}
	}
	return files, nil
}

// copyRepositoryTree copies the repository's regular files (not .git/) to dir.
func copyRepositoryTree(reader *repofile.Reader, dir string) error {
	files, err := reader.Files(".", func(string) bool { return true })
	if err != nil {
		return fmt.Errorf("copying the tree before the edits: %w", err)
	}
	for _, f := range files {
		data, err := reader.ReadFile(f)
		if err != nil {
			return fmt.Errorf("copying the tree before the edits: %w", err)
		}
		target := filepath.Join(dir, filepath.FromSlash(f))
		if err := os.MkdirAll(filepath.Dir(target), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(target, data, 0o644); err != nil {
			return err
		}
	}
	return nil
}

// commitProposal commits the edited files with go-git: to the current
// branch (--commit), or to --push-branch made from HEAD, which is then
// pushed to --remote, replacing what it held.
func commitProposal(ctx context.Context, root string, files []string, message string, now time.Time, opts *proposeOptions) error {
	repo, err := git.PlainOpen(root)
	if err != nil {
		return fmt.Errorf("committing: %s is not the root of a Git checkout: %w", opts.repo, err)
	}
	worktree, err := repo.Worktree()
	if err != nil {
		return fmt.Errorf("committing: %w", err)
	}
	if opts.pushBranch != "" {
		branch := plumbing.NewBranchReferenceName(opts.pushBranch)
		if err := branch.Validate(); err != nil {
			return usageErrorf("--push-branch %q: %v", opts.pushBranch, err)
		}
		head, err := repo.Head()
		if err != nil {
			return fmt.Errorf("committing: reading HEAD: %w", err)
		}
		if err := repo.Storer.SetReference(plumbing.NewHashReference(branch, head.Hash())); err != nil {
			return fmt.Errorf("committing: making branch %s: %w", opts.pushBranch, err)
		}
		if err := worktree.Checkout(&git.CheckoutOptions{Branch: branch, Keep: true}); err != nil {
			return fmt.Errorf("committing: switching to branch %s: %w", opts.pushBranch, err)
		}
	}
	for _, f := range files {
		if _, err := worktree.Add(f); err != nil {
			return fmt.Errorf("committing: adding %s: %w", f, err)
		}
	}
	signature := &object.Signature{Name: "profilesync", Email: "profilesync@users.noreply.invalid", When: now}
	hash, err := worktree.Commit(message, &git.CommitOptions{Author: signature, Committer: signature})
	if err != nil {
		return fmt.Errorf("committing: %w", err)
	}
	if opts.pushBranch == "" {
		return nil
	}
	var auth transport.AuthMethod
	if username, ok := opts.lookupEnv(proposeGitUsernameEnv); ok {
		password, _ := opts.lookupEnv(proposeGitPasswordEnv)
		auth = &githttp.BasicAuth{Username: username, Password: password}
	}
	spec := gitconfig.RefSpec(fmt.Sprintf("+refs/heads/%s:refs/heads/%s", opts.pushBranch, opts.pushBranch))
	err = repo.PushContext(ctx, &git.PushOptions{RemoteName: opts.remote, RefSpecs: []gitconfig.RefSpec{spec}, Auth: auth})
	if err != nil && !errors.Is(err, git.NoErrAlreadyUpToDate) {
		return fmt.Errorf("pushing branch %s (commit %s) to %s: %w", opts.pushBranch, hash, opts.remote, err)
	}
	return nil
}
