package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/profilesync/profilesync/internal/render"
)

func init() {
	subcommands["build"] = subcommand{
		summary: "kustomize-build an overlay, then evaluate it",
		run:     runBuild,
	}
}

var buildHelp = commandHelp{
	usage: "profilesync build PATH [--at TIME] [--root DIR] [--max-file-size SIZE] [--max-rendered-size SIZE]",
	description: `Builds the directory PATH the way the sync does (kustomize, confined to the
repository's work tree: no remote locations, no paths outside the root or in
.git/, no plugins but kustomize's builtin ones, within the same size limits
as the operator; a directory without kustomization.yaml is read as all its
YAML files), then
validates and prints the result as 'profilesync evaluate' does. Problems name
the file each object came from, relative to the repository root.

The repository root is --root, by default the Git work tree that contains PATH
(the nearest directory above it with a .git entry), else the current
directory.`,
	example: `  profilesync build overlays/prod --at 2025-06-01T00:00:00Z`,
}

func runBuild(args []string, _ io.Reader, stdout, stderr io.Writer) int {
	flags := newFlagSet("build", buildHelp, stdout)
	var at timeFlag
	var root string
	flags.Var(&at, "at", "evaluate at this RFC 3339 time (default now)")
	flags.StringVar(&root, "root", "", "the repository root the build may read (default: the Git work tree containing PATH)")
	var limits render.Limits
	bindBuildLimits(flags, &limits)
	if done, status := parseFlags(flags, args, stderr); done {
		return status
	}
	if flags.NArg() != 1 {
		return reportUsageError(flags, fmt.Errorf("expected exactly one PATH, got %d arguments", flags.NArg()), stderr)
	}
	path := flags.Arg(0)
	if root == "" {
		var err error
		if root, err = repositoryRoot(path); err != nil {
			fmt.Fprintf(stderr, "build: %v\n", err)
			return exitInvalidInput
		}
	}
	absRoot, err := filepath.Abs(root)
	if err == nil {
		path, err = pathInRoot(absRoot, path)
	}
	if err != nil {
		fmt.Fprintf(stderr, "build: %v\n", err)
		return exitInvalidInput
	}
	docs, err := render.Build(context.Background(), absRoot, path, limits)
	if err != nil {
		fmt.Fprintf(stderr, "%v\n", err)
		return exitInvalidInput
	}
	return printEvaluated(docs, at.or(time.Now()), stdout, stderr)
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
