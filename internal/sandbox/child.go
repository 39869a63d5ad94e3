package sandbox

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"syscall"
	"time"

	"github.com/profilesync/profilesync/internal/render/overlay"
	"github.com/profilesync/profilesync/internal/render/profile"
)

// A process started by a Runner serves its request before main runs: the
// package's initialization is the earliest point that every binary linking
// it (the operator, the CLI, a test binary) passes through.
func init() {
	if os.Getenv(ChildEnv) == "" {
		return
	}
	os.Exit(serveChild(os.Stdin, os.Stdout))
}

// childRequest is what a Runner asks of its child.
type childRequest struct {
	Root, Path string
	Limits     overlay.Limits
	// Memory bounds the child's heap in bytes; CPUSeconds its CPU time.
	Memory     int64
	CPUSeconds uint64
	// ChecksUntil is when the checks after the build must stop, so that
	// the child answers before its parent kills it (extrasDeadline); zero
	// for no bound.
	ChecksUntil time.Time `json:",omitzero"`
	// Previous is what the previous build of the same target left to
	// reuse (overlay.BuildReusing), nil for none: the parent's, trusted.
	Previous *overlay.Reusable `json:",omitempty"`
}

// childReply is the child's answer: the build's documents and warnings, or
// its error.
type childReply struct {
	Documents []profile.Document `json:",omitempty"`
	Warnings  profile.Problems   `json:",omitempty"`
	Error     *childError        `json:",omitempty"`
	// Reused are the previous build's documents the parent splices in
	// among Documents, and Reusable what the next build may reuse of
	// this one (overlay.Built).
	Reused   []overlay.Reused  `json:",omitempty"`
	Reusable *overlay.Reusable `json:",omitempty"`
}

// childError carries a build's error across the process boundary: its
// message, cut to maxErrorMessage, and the limit it ran into, if any, so
// that the caller can still match it.
type childError struct {
	Message string
	Limit   *overlay.LimitError `json:",omitempty"`
	// Problems are the problems of the profiles themselves that the build
	// found (profile.Problems), summarized, when that is what it failed on.
	Problems profile.Problems `json:",omitempty"`
}

func (e *childError) err() error {
	switch {
	case e.Limit != nil:
		return e.Limit
	case len(e.Problems) > 0:
		return e.Problems
	}
	return errors.New(e.Message)
}

// maxProblems bounds the problems a child sends, after a mistake repeated
// many times has been summarized.
const maxProblems = 200

// maxErrorMessage bounds the error a child sends. A build's error names
// every problem it found, one per line; more than this is for
// `profilesync build` to list, not for a condition.
const maxErrorMessage = 16 << 10

// errChecksOutOfTime stops the checks after a build (warnings, which patch
// set which field) before the parent's deadline.
var errChecksOutOfTime = errors.New("the build's time was nearly up")

// maxRequest bounds a request: two paths and a few numbers, and what the
// previous build left to reuse (a few hundred bytes for each of its
// files and documents: 8 MiB holds some ten thousand objects). A parent
// whose facts do not fit sends none, and the build is a cold one.
const maxRequest = 64<<10 + maxReuseFacts

// maxReuseFacts bounds the facts of the previous build a request carries.
const maxReuseFacts = 8 << 20

// serveChild reads one request from in, applies its process limits, runs
// the build and writes the reply to out. It returns the exit code: 0 when a
// reply was written, whatever the build's outcome.
func serveChild(in io.Reader, out io.Writer) int {
	var request childRequest
	if err := json.NewDecoder(io.LimitReader(in, maxRequest)).Decode(&request); err != nil {
		fmt.Fprintf(os.Stderr, "build sandbox: reading the request: %v\n", err)
		return 2
	}
	if err := limitProcess(request.Memory, request.CPUSeconds); err != nil {
		fmt.Fprintf(os.Stderr, "build sandbox: %v\n", err)
		return 2
	}
	// The parent kills this process at the build's deadline, so the build
	// needs no context of its own; the checks after it stop in time for
	// the answer to reach the parent.
	checks := context.Background()
	if !request.ChecksUntil.IsZero() {
		var cancel context.CancelFunc
		checks, cancel = context.WithDeadlineCause(checks, request.ChecksUntil, errChecksOutOfTime)
		defer cancel()
	}
	built, err := overlay.BuildReusing(context.Background(), checks, request.Root, request.Path, request.Limits, request.Previous)
	reply := childReply{Documents: built.Documents, Warnings: built.Warnings, Reused: built.Reused, Reusable: built.Reusable}
	if err != nil {
		reply = childReply{Error: newChildError(err)}
	}
	buffered := bufio.NewWriter(out)
	if err := json.NewEncoder(buffered).Encode(reply); err != nil {
		fmt.Fprintf(os.Stderr, "build sandbox: writing the reply: %v\n", err)
		return 2
	}
	if err := buffered.Flush(); err != nil {
		fmt.Fprintf(os.Stderr, "build sandbox: writing the reply: %v\n", err)
		return 2
	}
	return 0
}

func newChildError(err error) *childError {
	var limit *overlay.LimitError
	if errors.As(err, &limit) {
		return &childError{Message: limit.Error(), Limit: limit}
	}
	var problems profile.Problems
	if errors.As(err, &problems) {
		problems = problems.Summarize()
		return &childError{Message: cutMessage(err.Error(), maxErrorMessage), Problems: problems[:min(len(problems), maxProblems)]}
	}
	return &childError{Message: cutMessage(err.Error(), maxErrorMessage)}
}

// cutMessage keeps the first max bytes of message, ending on a whole
// character, and says how much was cut.
func cutMessage(message string, max int) string {
	if len(message) <= max {
		return message
	}
	return fmt.Sprintf("%s ... (%d more bytes)", strings.ToValidUTF8(message[:max], ""), len(message)-max)
}

// limitProcess bounds this process's heap (RLIMIT_DATA, which counts the
// memory Go maps for its heap but not the address space it only reserves)
// and CPU time. The Go runtime's own memory limit sits below the kernel's,
// so the collector runs hard before an allocation is refused; below it, the
// collector is tuned for one build (tuneCollector).
//
// A process may lower its limits but not raise them past what it was given:
// where a limit the child inherited is lower already (a CI runner's), that
// one stays.
func limitProcess(memory int64, cpuSeconds uint64) error {
	data, err := lowered(syscall.RLIMIT_DATA, uint64(memory), uint64(memory))
	if err != nil {
		return fmt.Errorf("setting the memory limit: %w", err)
	}
	tuneCollector(int64(min(data, uint64(memory))))
	if _, err := lowered(syscall.RLIMIT_CPU, cpuSeconds, cpuSeconds+1); err != nil {
		return fmt.Errorf("setting the CPU time limit: %w", err)
	}
	return nil
}

// lowered sets the resource's limits to soft and hard, or to the hard limit
// in force where that is lower, and returns the soft limit set.
func lowered(resource int, soft, hard uint64) (uint64, error) {
	var current syscall.Rlimit
	if err := syscall.Getrlimit(resource, &current); err != nil {
		return 0, err
	}
	limit := syscall.Rlimit{Cur: min(soft, current.Max), Max: min(hard, current.Max)}
	return limit.Cur, syscall.Setrlimit(resource, &limit)
}
