package cli

import (
	"fmt"
	"strconv"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/profilesync/profilesync/internal/render/overlay"
	"github.com/profilesync/profilesync/internal/sandbox"
)

// bindReadLimits binds the flags that bound every reading of the
// repository, a build's included. The manager and every command share them,
// so that a revision the CLI accepts in a pull request is one the operator
// accepts too.
func bindReadLimits(fs *pflag.FlagSet, limits *overlay.Limits) {
	*limits = overlay.DefaultLimits()
	fs.Var(byteSize{&limits.MaxFileSize}, overlay.MaxFileSizeFlag,
		"The largest file read from the repository, counting YAML aliases written out (bytes, or a quantity like 4Mi).")
	fs.Var(byteSize{&limits.MaxRenderedSize}, overlay.MaxRenderedSizeFlag,
		"The largest rendered output of a build (its objects as JSON), and the most read from the repository in all (bytes, or a quantity like 32Mi).")
}

// bindBuildLimits binds bindReadLimits and the flags that bound a build and
// its process, for the manager and the commands that build overlays.
func bindBuildLimits(fs *pflag.FlagSet, options *sandbox.Options) {
	bindReadLimits(fs, &options.Limits)
	fs.Int64Var(&options.Limits.MaxObjects, overlay.MaxObjectsFlag, overlay.DefaultMaxObjects,
		"The most objects a build reads, every YAML document and List item of every file it reads counted; they are counted before kustomize, whose time grows with their square, sees them.")
	options.Memory = sandbox.DefaultMemory
	fs.Var(byteSize{&options.Memory}, sandbox.MemoryFlag,
		"The memory limit of a build's process: each build runs in a child process of its own, which is stopped when its heap would grow past this (bytes, or a quantity like 1Gi).")
	fs.DurationVar(&options.CPUTime, sandbox.CPUTimeFlag, 0,
		"The CPU time limit of a build's process; 0 (the default) allows as much as its deadline lasts.")
}

// bindBuildOptions binds bindBuildLimits and the deadline of a build, for
// the commands that build overlays; the operator's builds have spec.timeout.
func bindBuildOptions(fs *pflag.FlagSet, options *sandbox.Options) {
	bindBuildLimits(fs, options)
	fs.DurationVar(&options.Timeout, sandbox.TimeoutFlag, sandbox.DefaultTimeout,
		"How long one build may take before its process is killed.")
}

// bindFilenames binds -f, the inputs of the commands that read profiles
// (readInputs).
func bindFilenames(fs *pflag.FlagSet, paths *[]string) {
	fs.StringArrayVarP(paths, "filename", "f", nil, "a file, a directory or - (stdin); repeatable")
}

// inputsOnlyWithFilenameFlag refuses positional arguments of a command that
// reads its inputs with -f: a forgotten -f would otherwise go unnoticed.
func inputsOnlyWithFilenameFlag(_ *cobra.Command, args []string) error {
	if len(args) > 0 {
		return usageErrorf("unexpected argument %q: inputs are given with -f", args[0])
	}
	return nil
}

// timeFlag is an RFC 3339 time flag; zero when not given.
type timeFlag struct{ time.Time }

func (t *timeFlag) String() string {
	if t.IsZero() {
		return ""
	}
	return t.Time.UTC().Format(time.RFC3339)
}

func (t *timeFlag) Set(value string) error {
	parsed, err := time.Parse(time.RFC3339, value)
	if err != nil {
		return fmt.Errorf("not an RFC 3339 time (for example 2025-06-01T00:00:00Z): %q", value)
	}
	t.Time = parsed
	return nil
}

func (t *timeFlag) Type() string { return "TIME" }

// or returns the flag's time, or fallback when it was not given.
func (t *timeFlag) or(fallback time.Time) time.Time {
	if t.IsZero() {
		return fallback
	}
	return t.Time
}

// byteSize is a flag of a size in bytes, written as a number of bytes or as
// a Kubernetes quantity (64Mi, 1G).
type byteSize struct{ bytes *int64 }

func (s byteSize) String() string {
	if s.bytes == nil {
		return ""
	}
	return resource.NewQuantity(*s.bytes, resource.BinarySI).String()
}

func (s byteSize) Set(value string) error {
	if n, err := strconv.ParseInt(value, 10, 64); err == nil {
		return s.set(n, value)
	}
	quantity, err := resource.ParseQuantity(value)
	if err != nil {
		return fmt.Errorf("not a size in bytes or a quantity like 64Mi: %q", value)
	}
	return s.set(quantity.Value(), value)
}

func (s byteSize) set(n int64, value string) error {
	if n <= 0 {
		return fmt.Errorf("a size must be positive: %q", value)
	}
	*s.bytes = n
	return nil
}

func (s byteSize) Type() string { return "SIZE" }

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
