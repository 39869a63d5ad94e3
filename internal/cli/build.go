package cli

import (
	"context"
	"fmt"
	"io"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"

	"github.com/profilesync/profilesync/internal/policy"
	"github.com/profilesync/profilesync/internal/repofile"
	"github.com/profilesync/profilesync/internal/sandbox"
)

func newBuildCommand() *cobra.Command {
	var at timeFlag
	var root string
	var build sandbox.Options
	policyHorizon := policy.DefaultHorizon
	var verify verifyFlags
	verifyRange := "HEAD"
	cmd := &cobra.Command{
		Use:   "build PATH [--at TIME] [--policy-horizon DURATION] [--root DIR] [--max-file-size SIZE] [--max-rendered-size SIZE]",
		Short: "Kustomize-build an overlay, then evaluate it",
		Long: `Builds the directory PATH the way the sync does (kustomize, confined to the
repository's work tree: no remote locations, no paths outside the root or in
.git/, no plugins but kustomize's builtin ones, within the same size limits
as the operator; a directory without kustomization.yaml is read as all its
YAML files), then
validates and prints the result as 'profilesync evaluate' does. Problems name
the file each object came from, relative to the repository root.

The repository root is --root, by default the Git work tree that contains PATH
(the nearest directory above it with a .git entry), else the working directory
when it contains PATH, else PATH itself, as for every other command; when the
build fails outside a Git work tree, the message says which root was used.

The landscape's versioning policy is the file profilesync-policy.yaml nearest
to PATH: in PATH or a directory above it, up to the repository root
(docs/policy.md). Its findings at --at are printed as problems are, warnings
prefixed "warning: ". The notice rule compares two revisions and is checked by
'diff' and the operator, not here. The policy is checked again at every
instant up to --policy-horizon (default 180d) after --at at which a finding
can appear (every lifecycle stage start, every expiry, the end of every
preview's allowed time): an error that time alone brings is an error now,
printed "FILE: KIND/NAME: FIELD: from DATE (...) the operator refuses every
revision with this: policy RULE: ...", because from that date the operator
refuses every new revision of the landscape (docs/policy.md).

A rollout file at the repository root (profilesync-rollout.yaml,
docs/rollout.md) is checked too: a bad one fails the build, naming the file
and the field, as the operator refuses the revision.

With --verify-keys or --verify-allowed-signers (and --verify-mode,
--verify-path-rules, --verify-max-commits), the commits of --verify-range
(default HEAD) of the repository root are verified first, as 'profilesync
verify' does, every verdict printed on stderr; a refused one fails the build
before it runs.

Exit status: 0 valid, warnings on stderr; 1 when the overlay does not build,
is invalid, breaks a policy rule of severity error (at --at or within
--policy-horizon) or has a bad rollout file (nothing on stdout,
every problem on stderr as FILE: KIND/NAME: FIELD: message); 2 usage error.`,
		Example:               `  profilesync build overlays/prod --at 2025-06-01T00:00:00Z`,
		DisableFlagsInUseLine: true,
		Args: func(_ *cobra.Command, args []string) error {
			if len(args) != 1 {
				return usageErrorf("expected exactly one PATH, got %d arguments", len(args))
			}
			return nil
		},
		RunE: failOnInput(func(cmd *cobra.Command, args []string) error {
			now := at.or(time.Now())
			if verify.enabled() {
				overlay, err := locateOverlay(root, args[0])
				if err != nil {
					return err
				}
				// Verified before the build, as the operator refuses an
				// unsigned revision before its build.
				if err := verify.verifyRange(overlay.root, verifyRange, now, defaultMaxCheckoutSize, cmd.ErrOrStderr()); err != nil {
					return err
				}
			}
			return runBuild(cmd.Context(), root, args[0], build, now, policyHorizon, cmd.OutOrStdout(), cmd.ErrOrStderr())
		}),
	}
	flags := cmd.Flags()
	flags.SortFlags = false
	flags.Var(&at, "at", "evaluate at this RFC 3339 time (default now)")
	flags.StringVar(&root, "root", "", "the repository root the build may read (default: the Git work tree containing PATH, else the working directory when it contains PATH, else PATH)")
	bindPolicyHorizon(flags, &policyHorizon)
	bindBuildOptions(flags, &build)
	verify.bind(flags, "verify-")
	flags.StringVar(&verifyRange, "verify-range", verifyRange,
		"with --verify-keys or --verify-allowed-signers, the `REV_RANGE` of the repository root verified before the build, as 'profilesync verify' does "+
			"(default HEAD: the commit checked out; the work tree's uncommitted changes are not signed, and not verified)")
	return cmd
}

// runBuild builds the overlay at path, validates and evaluates it at now,
// checks it against its policy at now and up to policyHorizon after it and
// prints it; on any error nothing reaches stdout.
func runBuild(ctx context.Context, root, path string, build sandbox.Options, now time.Time, policyHorizon time.Duration, stdout, stderr io.Writer) error {
	overlay, err := locateOverlay(root, path)
	if err != nil {
		return err
	}
	if err := checkRolloutFile(overlay.root, build.Limits.MaxFileSize); err != nil {
		return err
	}
	// The build's errors name the file and say what is wrong; they are
	// printed as they are.
	docs, warnings, err := sandbox.Build(ctx, build, overlay.root, overlay.path)
	if err != nil {
		if overlay.found != nil && overlay.found.Chosen != repofile.RootGit {
			// Without Git the root is a guess: say which, and how to set it.
			return fmt.Errorf("%w\nbuild: %s", err, overlay.found.Describe())
		}
		return err
	}
	for _, w := range warnings.Summarize() {
		fmt.Fprintf(stderr, "warning: %s\n", w)
	}
	evaluated, ok := evaluateProfiles(profileInputs{docs: docs}, now, stderr)
	if !ok {
		return errInvalidInputReported
	}
	p, _, err := policy.Find(overlay.root, overlay.path, build.Limits.MaxFileSize)
	if err != nil {
		return err
	}
	if !printPolicyFindings(checkPolicyAhead(p, evaluated, nil, now, now, policyHorizon), map[string]bool{}, stderr) {
		return errInvalidInputReported
	}
	return writeProfiles(evaluated, stdout)
}

// overlayLocation is an overlay to build: the repository root the build is
// confined to, absolute, and the overlay's path relative to it.
type overlayLocation struct {
	root, path string
	// found is how the root was chosen when --root was not given.
	found *repofile.Root
}

// locateOverlay resolves path and the root it is confined to (when empty,
// the repository that contains path).
func locateOverlay(root, path string) (overlayLocation, error) {
	var found *repofile.Root
	if root == "" {
		chosen, err := repofile.FindRoot(path)
		if err != nil {
			return overlayLocation{}, fmt.Errorf("build: %w", err)
		}
		root, found = chosen.Dir, &chosen
	}
	absRoot, err := filepath.Abs(root)
	if err == nil {
		path, err = pathInRoot(absRoot, path)
	}
	if err != nil {
		return overlayLocation{}, fmt.Errorf("build: %w", err)
	}
	return overlayLocation{root: absRoot, path: path, found: found}, nil
}

// pathInRoot returns path relative to root, as overlay.Build takes it.
func pathInRoot(root, path string) (string, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return "", fmt.Errorf("resolving %s: %w", path, err)
	}
	rel, err := filepath.Rel(root, abs)
	if err != nil {
		return "", fmt.Errorf("%s is not inside the repository root %s: %w", path, root, err)
	}
	return rel, nil
}
