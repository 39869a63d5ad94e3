// Package sandbox runs the kustomize build of a commit in a child process
// of our own binary, under limits, so that whatever a commit makes the
// build do can fail only that build.
//
// kustomize's CPU and memory cannot be bounded or interrupted from inside
// the process that calls it: a chain of components whose errors quote each
// other doubles its message at every level, a few thousand objects take
// minutes to accumulate, and a build abandoned at its deadline would go on
// running. A child process can be bounded by the kernel and killed. Each
// build gets one:
//
//   - its heap is bounded by RLIMIT_DATA (Options.Memory; the Go runtime's
//     own memory limit is set just below it, so the collector works hard
//     before the kernel refuses), its CPU time by RLIMIT_CPU
//     (Options.CPUTime), and it runs on one thread of Go code
//     (GOMAXPROCS=1);
//   - it is killed at the build's deadline (the context's, else
//     Options.Timeout), so no work and no lock outlives it;
//   - it starts with an empty environment, so it sees none of the manager's
//     credentials, and reads its one request from standard input, bounded
//     (maxRequest: the paths, limits and, for Runner.BuildReusing, the
//     facts of the previous build, which the parent drops past the bound);
//   - what it sends back (documents, warnings, or one bounded error) is read
//     through a bound derived from overlay.Limits.MaxRenderedSize.
//
// A limit that stops a build is a *overlay.LimitError naming the limit and
// the flag that raises it, as the build's own limits are, so the operator
// reports it as BuildFailed and the CLI prints it.
//
// Builds of different callers run at the same time, up to
// Options.Concurrency, and never share a lock or kustomize's process-wide
// state (its OpenAPI schema): each child runs exactly one build.
//
// The child is this same binary: a process started with the environment
// variable ChildEnv set runs the build of its request, writes the answer
// and exits before main (or a test binary's TestMain) runs. Any binary
// that links this package, a test binary included, can therefore serve as
// its own sandbox.
package sandbox
