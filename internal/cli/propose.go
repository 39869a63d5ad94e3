package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/go-git/go-git/v5/plumbing/transport"
	githttp "github.com/go-git/go-git/v5/plumbing/transport/http"
	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/spf13/cobra"

	"github.com/profilesync/profilesync/internal/policy"
	"github.com/profilesync/profilesync/internal/prdiff"
	"github.com/profilesync/profilesync/internal/propose"
	"github.com/profilesync/profilesync/internal/propose/delivery"
	"github.com/profilesync/profilesync/internal/propose/sources"
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
is proposed, in the profiles' files and in every directory of the checkout
with a kustomization, built with the proposals as build builds it. The files are edited in place: comments, key order and quoting
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
	outcome, err := delivery.Plan(ctx, delivery.Options{
		Root: root, Label: opts.repo, Now: now,
		ReadLimits:   repofile.Limits{MaxFileSize: opts.build.Limits.MaxFileSize, MaxTotalSize: opts.build.Limits.MaxRenderedSize},
		SourceLimits: opts.sourceLimits,
		Credentials: delivery.Credentials{
			Git: opts.gitSourceAuth,
			OCI: func(s *propose.Source) (authn.Authenticator, error) {
				return sources.EnvironmentAuth(s, opts.lookupEnv)
			},
		},
		// Every landscape of the checkout is built with the proposals, in
		// the sandbox as build and diff build it: a proposal one of them
		// would refuse is skipped.
		Build: func(ctx context.Context, root, path string) ([]profile.Document, error) {
			docs, _, err := sandbox.Build(ctx, opts.build, root, path)
			return docs, err
		},
	})
	if err != nil {
		return err
	}
	failed := outcome.Failed()
	for _, s := range outcome.Sources {
		if s.Err != nil {
			fmt.Fprintf(stderr, "error: %v; it changes nothing\n", s.Err)
		}
	}
	result := outcome.Result
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
	message := outcome.Message()

	// The base of the report: the files as they were, in a copy of the tree.
	baseDir, err := os.MkdirTemp("", "profilesync-propose-base-")
	if err != nil {
		return fmt.Errorf("writing the tree before the edits: %w", err)
	}
	defer func() { _ = os.RemoveAll(baseDir) }()
	if err := delivery.CopyTree(outcome.Reader, baseDir); err != nil {
		return err
	}
	edited, err := delivery.WriteEdits(outcome.Reader, result.Edits())
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
		_, err := delivery.CommitToCheckout(ctx, delivery.CheckoutCommit{
			Root: root, Files: edited, Message: message,
			Author: object.Signature{Name: delivery.DefaultAuthorName, Email: delivery.DefaultAuthorEmail, When: now},
			Branch: opts.pushBranch, Remote: opts.remote, Auth: opts.environmentGitAuth(),
		})
		if errors.Is(err, delivery.ErrInvalidBranch) {
			return usageErrorf("--push-branch: %v", err)
		}
		if err != nil {
			return err
		}
	}
	if reportErr != nil || failed {
		return errInvalidInputReported
	}
	return nil
}

// gitSourceAuth is a Git source's credentials: the variables its
// credentials name, else, over http(s), those of --push-branch's push.
func (opts *proposeOptions) gitSourceAuth(s *propose.Source) (transport.AuthMethod, error) {
	auth, err := sources.GitEnvironmentAuth(s, opts.lookupEnv, false, "")
	if err != nil || auth != nil {
		return auth, err
	}
	if scheme, _ := propose.GitURLScheme(s.Git.URL); scheme == "ssh" {
		return nil, nil
	}
	return opts.environmentGitAuth(), nil
}

// environmentGitAuth is the basic authentication of Git sources and of the
// push, from the environment; nil when it sets none.
func (opts *proposeOptions) environmentGitAuth() transport.AuthMethod {
	username, ok := opts.lookupEnv(proposeGitUsernameEnv)
	if !ok {
		return nil
	}
	password, _ := opts.lookupEnv(proposeGitPasswordEnv)
	return &githttp.BasicAuth{Username: username, Password: password}
}
