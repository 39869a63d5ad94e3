package cli

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"

	"github.com/profilesync/profilesync/internal/render"
)

func newBuildCommand() *cobra.Command {
	var at timeFlag
	var root string
	var limits render.Limits
	cmd := &cobra.Command{
		Use:   "build PATH [--at TIME] [--root DIR] [--max-file-size SIZE] [--max-rendered-size SIZE]",
		Short: "Kustomize-build an overlay, then evaluate it",
		Long: `Builds the directory PATH the way the sync does (kustomize, confined to the
repository's work tree: no remote locations, no paths outside the root or in
.git/, no plugins but kustomize's builtin ones, within the same size limits
as the operator; a directory without kustomization.yaml is read as all its
YAML files), then
validates and prints the result as 'profilesync evaluate' does. Problems name
the file each object came from, relative to the repository root.

The repository root is --root, by default the Git work tree that contains PATH
(the nearest directory above it with a .git entry), else the current
directory.`,
		Example:               `  profilesync build overlays/prod --at 2025-06-01T00:00:00Z`,
		DisableFlagsInUseLine: true,
		Args: func(_ *cobra.Command, args []string) error {
			if len(args) != 1 {
				return usageErrorf("expected exactly one PATH, got %d arguments", len(args))
			}
			return nil
		},
		RunE: failOnInput(func(cmd *cobra.Command, args []string) error {
			docs, warnings, err := buildOverlay(cmd.Context(), root, args[0], limits)
			if err != nil {
				return err
			}
			for _, w := range warnings.Summarize() {
				fmt.Fprintf(cmd.ErrOrStderr(), "warning: %s\n", w)
			}
			return printEvaluated(docs, at.or(time.Now()), cmd.OutOrStdout(), cmd.ErrOrStderr())
		}),
	}
	flags := cmd.Flags()
	flags.SortFlags = false
	flags.Var(&at, "at", "evaluate at this RFC 3339 time (default now)")
	flags.StringVar(&root, "root", "", "the repository root the build may read (default: the Git work tree containing PATH)")
	bindBuildLimits(flags, &limits)
	return cmd
}

// buildOverlay kustomize-builds path, confined to root (when empty, the
// repository that contains path), and returns the build's warnings too
// (a JSON patch addressing a keyed list by index).
func buildOverlay(ctx context.Context, root, path string, limits render.Limits) ([]render.Document, render.Problems, error) {
	if root == "" {
		var err error
		if root, err = repositoryRoot(path); err != nil {
			return nil, nil, fmt.Errorf("build: %w", err)
		}
	}
	absRoot, err := filepath.Abs(root)
	if err == nil {
		path, err = pathInRoot(absRoot, path)
	}
	if err != nil {
		return nil, nil, fmt.Errorf("build: %w", err)
	}
	// render.Build's errors name the file and say what is wrong; they are
	// printed as they are.
	return render.BuildWithWarnings(ctx, absRoot, path, limits)
}

// repositoryRoot returns the nearest directory at or above path that holds
// a .git entry, else the current directory.
func repositoryRoot(path string) (string, error) {
	dir, err := filepath.Abs(path)
	if err != nil {
		return "", fmt.Errorf("resolving %s: %w", path, err)
	}
	for {
		if _, err := os.Lstat(filepath.Join(dir, ".git")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return os.Getwd()
		}
		dir = parent
	}
}

// pathInRoot returns path relative to root, as render.Build takes it.
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
