package sandbox

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"time"

	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/profilesync/profilesync/internal/memorybudget"
	"github.com/profilesync/profilesync/internal/render/overlay"
	"github.com/profilesync/profilesync/internal/render/profile"
)

// ChildEnv, set in a process's environment, makes it serve one build
// request from standard input instead of running its main (see child.go).
const ChildEnv = "PROFILESYNC_SANDBOX_CHILD"

// Names of the flags that set each process limit, the same in the manager
// and the CLI, so that a refusal can say how to get past it.
const (
	// The two flags of the manager's memory budget (internal/memorybudget).
	MemoryFlag      = memorybudget.BuildMemoryFlag
	ConcurrencyFlag = memorybudget.BuildsFlag
	CPUTimeFlag     = "build-cpu-limit"
	TimeoutFlag     = "build-timeout"
)

// Defaults of Options. One GiB holds the build of ten times the largest
// landscape we know of (its build peaks near 230 MiB) with room to spare,
// and is far below what a node gives the manager.
const (
	DefaultMemory      int64 = 1 << 30
	DefaultTimeout           = 10 * time.Minute
	DefaultConcurrency       = 4
)

// Options bound the builds of a Runner. A field left zero takes its default.
type Options struct {
	// Limits bound what one build reads and renders (overlay.Limits).
	Limits overlay.Limits
	// Memory is the most heap one build's process may hold, in bytes.
	Memory int64
	// CPUTime is the most CPU time one build may use; zero means as long
	// as its deadline lasts.
	CPUTime time.Duration
	// Timeout is the deadline of a build whose context has none (the CLI's;
	// the operator's builds have spec.timeout).
	Timeout time.Duration
	// Concurrency is how many builds may run at once; more wait for a
	// slot, within their deadline.
	Concurrency int
}

func (o Options) orDefaults() Options {
	if o.Memory <= 0 {
		o.Memory = DefaultMemory
	}
	if o.Timeout <= 0 {
		o.Timeout = DefaultTimeout
	}
	if o.Concurrency <= 0 {
		o.Concurrency = DefaultConcurrency
	}
	o.Limits = o.Limits.OrDefaults()
	return o
}

// Runner runs builds in child processes of the running binary. It is safe
// for concurrent use.
type Runner struct {
	options    Options
	executable string
	slots      chan struct{}
}

// New returns a Runner whose children are the running executable.
func New(options Options) (*Runner, error) {
	executable, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("build sandbox: locating our own executable: %w", err)
	}
	options = options.orDefaults()
	return &Runner{options: options, executable: executable, slots: make(chan struct{}, options.Concurrency)}, nil
}

// Build runs one build with a Runner of its own: for a command that builds
// one overlay after another.
func Build(ctx context.Context, options Options, root, path string) ([]profile.Document, profile.Problems, error) {
	runner, err := New(options)
	if err != nil {
		return nil, nil, err
	}
	return runner.Build(ctx, root, path)
}

// Limits are the limits of what one build reads and renders.
func (r *Runner) Limits() overlay.Limits { return r.options.Limits }

// Build is overlay.BuildWithWarnings run in a child process under the
// Runner's Options: the documents of the overlay at path of the work tree
// root, and the build's warnings. When ctx is done first, the child is
// killed and Build says the build was abandoned.
func (r *Runner) Build(ctx context.Context, root, path string) ([]profile.Document, profile.Problems, error) {
	result, _, err := r.build(ctx, root, path, nil)
	return result.Documents, result.Warnings, err
}

// Result is a build's documents and warnings, and what the next build of
// the same target may reuse of it.
type Result struct {
	Documents []profile.Document
	Warnings  profile.Problems
	// Reusable is nil when the build did not take the linear path.
	Reusable *overlay.Reusable
	// Reused counts the documents taken from the previous result.
	Reused int
}

// BuildReusing is Build that may reuse the documents of previous, the
// result of the previous build of the same path (nil for none): the child
// answers the documents of the resource files it did not build again by
// reference (overlay.BuildReusing), and they are spliced in here. The
// caller keeps the result for the next build.
func (r *Runner) BuildReusing(ctx context.Context, root, path string, previous *Result) (Result, error) {
	result, _, err := r.build(ctx, root, path, previous)
	return result, err
}

// build is BuildReusing that also returns what the child's process used,
// when it ran (for the benchmarks).
func (r *Runner) build(ctx context.Context, root, path string, previous *Result) (Result, *syscall.Rusage, error) {
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeoutCause(ctx, r.options.Timeout,
			fmt.Errorf("the build timeout of %s passed (raise it with --%s)", r.options.Timeout, TimeoutFlag))
		defer cancel()
	}
	select {
	case r.slots <- struct{}{}:
		defer func() { <-r.slots }()
	case <-ctx.Done():
		return Result{}, nil, abandoned(ctx, path, "while it waited for one of the other builds to end")
	}

	cpuTime := r.cpuTime(ctx)
	deadline, _ := ctx.Deadline()
	asked := childRequest{Root: root, Path: path, Limits: r.options.Limits,
		Memory: r.options.Memory, CPUSeconds: uint64(cpuTime / time.Second), ChecksUntil: checksDeadline(deadline)}
	if previous != nil {
		asked.Previous = previous.Reusable
	}
	request, err := json.Marshal(asked)
	if err == nil && len(request) > maxRequest {
		// Facts past the bound: a cold build.
		asked.Previous = nil
		request, err = json.Marshal(asked)
	}
	if err != nil {
		return Result{}, nil, fmt.Errorf("build of %s: encoding the request: %w", path, err)
	}
	cmd := exec.CommandContext(ctx, r.executable)
	// Nothing of the manager's environment (credentials, tokens) reaches
	// the build. GOTRACEBACK=none drops the stacks of a panic (the runtime
	// still prints its own for a fatal error; failure keeps only the first
	// paragraph, and headBuffer the first 4 KiB).
	cmd.Env = []string{ChildEnv + "=1", "GOMAXPROCS=1", "GOTRACEBACK=none"}
	cmd.Stdin = bytes.NewReader(request)
	stderr := &headBuffer{max: maxStderr}
	cmd.Stderr = stderr
	cmd.WaitDelay = time.Second
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return Result{}, nil, fmt.Errorf("build of %s: %w", path, err)
	}
	if err := cmd.Start(); err != nil {
		return Result{}, nil, fmt.Errorf("build of %s: starting its process: %w", path, err)
	}
	maxAnswer := maxAnswerSize(r.options.Limits)
	answer, readErr := io.ReadAll(io.LimitReader(stdout, maxAnswer+1))
	if int64(len(answer)) > maxAnswer {
		_ = cmd.Process.Kill()
	}
	waitErr := cmd.Wait()
	usage, _ := cmd.ProcessState.SysUsage().(*syscall.Rusage)
	switch {
	case ctx.Err() != nil:
		return Result{}, usage, abandoned(ctx, path, "")
	case int64(len(answer)) > maxAnswer:
		return Result{}, usage, &overlay.LimitError{File: path, What: "maximum rendered size", Flag: overlay.MaxRenderedSizeFlag,
			Max: r.options.Limits.MaxRenderedSize}
	}
	var reply childReply
	if readErr == nil && waitErr == nil && json.Unmarshal(answer, &reply) == nil {
		if reply.Error != nil {
			return Result{}, usage, reply.Error.err()
		}
		var previousDocs []profile.Document
		if asked.Previous != nil {
			previousDocs = previous.Documents
		}
		docs, err := overlay.Built{Documents: reply.Documents, Reused: reply.Reused}.Splice(previousDocs)
		if err != nil {
			return Result{}, usage, fmt.Errorf("build of %s: %w", path, err)
		}
		reused := 0
		for _, r := range reply.Reused {
			reused += r.Count
		}
		return Result{Documents: docs, Warnings: reply.Warnings, Reusable: reply.Reusable, Reused: reused}, usage, nil
	}
	return Result{}, usage, r.failure(path, cpuTime, cmd.ProcessState, stderr.String(), errors.Join(readErr, waitErr))
}

// checksDeadline is when the checks after a build that must end by
// deadline stop: the last tenth of the time left is kept for the child to
// encode its answer and the parent to read it, so that a build that
// finished is never lost to the checks that follow it.
func checksDeadline(deadline time.Time) time.Time {
	// Wall-clock time for a process deadline, not a time a rule reads.
	return deadline.Add(-time.Until(deadline) / 10)
}

// cpuTime is the CPU time limit of a build that must end by ctx's
// deadline: Options.CPUTime, else the time left until the deadline, rounded
// up to whole seconds (RLIMIT_CPU's unit), at least one. With GOMAXPROCS=1
// a build cannot use much more CPU time than wall time, so the default only
// stops a child that the kill at the deadline somehow missed.
func (r *Runner) cpuTime(ctx context.Context) time.Duration {
	limit := r.options.CPUTime
	if limit <= 0 {
		deadline, _ := ctx.Deadline()
		// Wall-clock time for a process deadline, not a time a rule reads.
		limit = time.Until(deadline)
	}
	return time.Duration(max(1, math.Ceil(limit.Seconds()))) * time.Second
}

// failure explains a child that exited without an answer: a limit it ran
// into, or else how it ended, with the first lines it wrote.
func (r *Runner) failure(path string, cpuTime time.Duration, state *os.ProcessState, stderr string, err error) error {
	if state != nil {
		usage, _ := state.SysUsage().(*syscall.Rusage)
		// The Go runtime reports an allocation the kernel refused as "out of
		// memory" or "cannot allocate memory", and a thread whose stack it
		// refused as "failed to create new OS thread" or, when it makes
		// threads through cgo, "pthread_create failed" (glibc answers EAGAIN
		// when the address-space limit refuses the stack); near the limit a
		// child may instead be killed before it can say so.
		if outOfMemory(stderr) || usage != nil && usage.Maxrss*1024 >= r.options.Memory*9/10 {
			return &ProcessLimitError{Path: path, What: "memory limit",
				Limit: resource.NewQuantity(r.options.Memory, resource.BinarySI).String(), Flag: MemoryFlag}
		}
		// The kernel signals SIGXCPU at the soft limit and kills at the hard
		// one, a second later.
		status, _ := state.Sys().(syscall.WaitStatus)
		if status.Signaled() && (status.Signal() == syscall.SIGXCPU || status.Signal() == syscall.SIGKILL) &&
			state.UserTime()+state.SystemTime() >= cpuTime-time.Second/2 {
			return &ProcessLimitError{Path: path, What: "CPU time limit", Limit: cpuTime.String(), Flag: CPUTimeFlag}
		}
	}
	// The first paragraph says what happened; a crash's stack follows it.
	detail, _, _ := strings.Cut(strings.TrimSpace(stderr), "\n\n")
	if detail == "" && err != nil {
		detail = err.Error()
	}
	return fmt.Errorf("build of %s: its process failed: %s", path, detail)
}

// outOfMemory tells whether a child's report says the kernel refused it
// memory, in the Go runtime's words.
func outOfMemory(stderr string) bool {
	for _, said := range []string{"out of memory", "cannot allocate memory", "failed to create new OS thread", "pthread_create failed"} {
		if strings.Contains(stderr, said) {
			return true
		}
	}
	return false
}

// ProcessLimitError is a build stopped by a limit of its process.
type ProcessLimitError struct {
	// Path is the overlay built.
	Path string
	// What is the limit in words ("memory limit"), Limit its value, and
	// Flag the flag that raises it, without dashes.
	What, Limit, Flag string
}

func (e *ProcessLimitError) Error() string {
	return fmt.Sprintf("build of %s stopped: it went past the %s of %s (raise it with --%s)", e.Path, e.What, e.Limit, e.Flag)
}

// Is makes errors.Is(err, overlay.ErrLimitExceeded) true.
func (e *ProcessLimitError) Is(target error) bool { return target == overlay.ErrLimitExceeded }

// abandoned is the error of a build whose context ended first.
func abandoned(ctx context.Context, path, when string) error {
	if when != "" {
		when = " " + when
	}
	return fmt.Errorf("kustomize build of %s abandoned%s: %w", path, when, context.Cause(ctx))
}

// maxStderr bounds what is kept of a child's standard error: a report of
// why it failed, never a stream to keep.
const maxStderr = 4 << 10

// maxAnswerSize bounds a child's answer: the rendered documents (at most
// MaxRenderedSize, base64 in JSON adds a third), their file names and the
// warnings, and what the next build may reuse: the facts of the files it
// reused (at most those of the request) and of each document it built (its
// identity, which its document holds, and a few hundred bytes more).
func maxAnswerSize(limits overlay.Limits) int64 {
	return limits.MaxRenderedSize*2 + 1<<20 + maxReuseFacts + limits.MaxObjects*512
}

// headBuffer keeps the first max bytes written to it and drops the rest.
type headBuffer struct {
	bytes.Buffer
	max int
}

func (b *headBuffer) Write(p []byte) (int, error) {
	if room := b.max - b.Len(); room > 0 {
		b.Buffer.Write(p[:min(len(p), room)])
	}
	return len(p), nil
}
