package sandbox

import (
	"context"
	"errors"
	"fmt"
	"os"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"

	"github.com/profilesync/profilesync/internal/render/overlay"
	"github.com/profilesync/profilesync/test/builders"
)

func newRunner(t *testing.T, options Options) *Runner {
	t.Helper()
	runner, err := New(options)
	if err != nil {
		t.Fatal(err)
	}
	return runner
}

const profileYAML = `apiVersion: core.profilesync.io/v1alpha1
kind: CloudProfile
metadata:
  name: %s
spec:
  type: local
`

// slowObjects ConfigMaps take kustomize about ten seconds: a build that
// runs long enough to be stopped, within slowLimits.
const slowObjects = 4800

var slowLimits = overlay.Limits{MaxObjects: slowObjects}

// manyObjects is an overlay of n tiny ConfigMaps in one file: kustomize
// accumulates them in time that grows with n².
func manyObjects(n int) map[string]string {
	var b strings.Builder
	for i := range n {
		fmt.Fprintf(&b, "---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c%d\n", i)
	}
	return map[string]string{"kustomization.yaml": "resources:\n- objects.yaml\n", "objects.yaml": b.String()}
}

// largeObjects is an overlay of files of large ConfigMaps: within every
// build limit, and quick to read, but hundreds of MB in kustomize.
func largeObjects() map[string]string {
	files := map[string]string{}
	value := strings.Repeat("x", 100<<10)
	var resources strings.Builder
	for f := range 10 {
		var b strings.Builder
		for i := range 25 {
			fmt.Fprintf(&b, "---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c%d-%d\ndata:\n  v: %s\n", f, i, value)
		}
		files[fmt.Sprintf("objects%d.yaml", f)] = b.String()
		fmt.Fprintf(&resources, "- objects%d.yaml\n", f)
	}
	files["kustomization.yaml"] = "resources:\n" + resources.String()
	return files
}

func TestABuildInItsOwnProcessGivesWhatTheBuildGivesInProcess(t *testing.T) {
	g := NewWithT(t)
	root := t.TempDir()
	builders.WriteTree(t, root, map[string]string{
		"base/kustomization.yaml": "resources:\n- a.yaml\n- b.yaml\n",
		"base/a.yaml":             fmt.Sprintf(profileYAML, "a"),
		"base/b.yaml":             fmt.Sprintf(profileYAML, "b"),
		"overlay/kustomization.yaml": "resources:\n- ../base\n" +
			// An index patch of a keyed list: a warning, not an error.
			"patches:\n- target: {kind: CloudProfile, name: a}\n  patch: |\n    - op: add\n      path: /spec/kubernetes\n      value: {versions: [{version: 1.31.0}]}\n    - op: add\n      path: /spec/kubernetes/versions/0/classification\n      value: supported\n",
	})
	wantDocs, wantWarnings, err := overlay.BuildWithWarnings(context.Background(), root, "overlay", overlay.DefaultLimits())
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(wantWarnings).NotTo(BeEmpty(), "the fixture has a warning to carry across")

	docs, warnings, err := newRunner(t, Options{}).Build(context.Background(), root, "overlay")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(docs).To(Equal(wantDocs))
	g.Expect(warnings).To(Equal(wantWarnings))
}

func TestABuildsErrorsAndLimitsCrossTheProcessBoundary(t *testing.T) {
	t.Run("an error names the file", func(t *testing.T) {
		g := NewWithT(t)
		root := t.TempDir()
		builders.WriteTree(t, root, map[string]string{"kustomization.yaml": "resources:\n- missing.yaml\n"})
		_, _, err := newRunner(t, Options{}).Build(context.Background(), root, ".")
		g.Expect(err).To(MatchError(ContainSubstring(`kustomization.yaml: resources entry "missing.yaml": no such file or directory in the repository`)))
	})
	t.Run("a build limit is still a LimitError", func(t *testing.T) {
		g := NewWithT(t)
		root := t.TempDir()
		builders.WriteTree(t, root, manyObjects(3))
		_, _, err := newRunner(t, Options{Limits: overlay.Limits{MaxObjects: 2}}).Build(context.Background(), root, ".")
		var limit *overlay.LimitError
		g.Expect(errors.As(err, &limit)).To(BeTrue(), "errors.As(%v, *overlay.LimitError)", err)
		g.Expect(limit.Flag).To(Equal(overlay.MaxObjectsFlag))
		g.Expect(errors.Is(err, overlay.ErrLimitExceeded)).To(BeTrue())
	})
	t.Run("a chain of 34 components is refused with a short error", func(t *testing.T) {
		g := NewWithT(t)
		root := t.TempDir()
		files := map[string]string{"kustomization.yaml": "components:\n- c33\n", "c0/kustomization.yaml": ""}
		for i := 1; i < 34; i++ {
			files[fmt.Sprintf("c%d/kustomization.yaml", i)] = fmt.Sprintf("apiVersion: kustomize.config.k8s.io/v1alpha1\nkind: Component\ncomponents:\n- ../c%d\n", i-1)
		}
		builders.WriteTree(t, root, files)
		_, _, err := newRunner(t, Options{}).Build(context.Background(), root, ".")
		g.Expect(err).To(MatchError(ContainSubstring("components nest 11 deep")))
		g.Expect(len(err.Error())).To(BeNumerically("<", 4<<10))
	})
}

// rss is this process's resident set in bytes.
func rss(t *testing.T) int64 {
	t.Helper()
	status, err := os.ReadFile("/proc/self/status")
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(status), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), 10, 64)
			if err != nil {
				t.Fatal(err)
			}
			return kb << 10
		}
	}
	t.Fatal("no VmRSS in /proc/self/status")
	return 0
}

func TestABuildOverItsMemoryLimitFailsAloneAndTheCallersMemoryDoesNotMove(t *testing.T) {
	g := NewWithT(t)
	root := t.TempDir()
	builders.WriteTree(t, root, largeObjects())
	runner := newRunner(t, Options{Memory: 192 << 20})
	before := rss(t)
	_, _, err := runner.Build(context.Background(), root, ".")
	after := rss(t)

	var limit *ProcessLimitError
	g.Expect(errors.As(err, &limit)).To(BeTrue(), "errors.As(%v, *ProcessLimitError)", err)
	g.Expect(err).To(MatchError("build of . stopped: it went past the memory limit of 192Mi (raise it with --build-memory-limit)"))
	g.Expect(errors.Is(err, overlay.ErrLimitExceeded)).To(BeTrue())
	g.Expect(after-before).To(BeNumerically("<", 16<<20), "this process's RSS grew from %d to %d bytes", before, after)

	t.Run("the next build runs as usual", func(t *testing.T) {
		g := NewWithT(t)
		other := t.TempDir()
		builders.WriteTree(t, other, map[string]string{"p.yaml": fmt.Sprintf(profileYAML, "p")})
		docs, _, err := runner.Build(context.Background(), other, ".")
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(docs).To(HaveLen(1))
	})
}

func TestABuildIsKilledAtItsDeadline(t *testing.T) {
	g := NewWithT(t)
	root := t.TempDir()
	builders.WriteTree(t, root, manyObjects(slowObjects))
	runner := newRunner(t, Options{Concurrency: 1, Limits: slowLimits})
	ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, _, err := runner.Build(ctx, root, ".")
	g.Expect(err).To(MatchError(ContainSubstring("kustomize build of . abandoned: context deadline exceeded")))
	g.Expect(time.Since(start)).To(BeNumerically("<", 5*time.Second))

	// Its one slot is free again: the child is gone, not running on.
	quick := t.TempDir()
	builders.WriteTree(t, quick, map[string]string{"p.yaml": fmt.Sprintf(profileYAML, "p")})
	ctx, cancel = context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_, _, err = runner.Build(ctx, quick, ".")
	g.Expect(err).NotTo(HaveOccurred())
}

func TestABuildWithoutADeadlineTakesTheRunnersTimeoutNamingItsFlag(t *testing.T) {
	g := NewWithT(t)
	root := t.TempDir()
	builders.WriteTree(t, root, manyObjects(slowObjects))
	_, _, err := newRunner(t, Options{Timeout: 300 * time.Millisecond, Limits: slowLimits}).Build(context.Background(), root, ".")
	g.Expect(err).To(MatchError(ContainSubstring("abandoned: the build timeout of 300ms passed (raise it with --build-timeout)")))
}

func TestABuildOverItsCPUTimeLimitFailsNamingTheFlag(t *testing.T) {
	g := NewWithT(t)
	root := t.TempDir()
	builders.WriteTree(t, root, manyObjects(slowObjects))
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	_, _, err := newRunner(t, Options{CPUTime: time.Second, Limits: slowLimits}).Build(ctx, root, ".")
	g.Expect(err).To(MatchError("build of . stopped: it went past the CPU time limit of 1s (raise it with --build-cpu-limit)"))
}

func TestBuildsOfDifferentCallersDoNotWaitOnEachOther(t *testing.T) {
	g := NewWithT(t)
	slow, quick := t.TempDir(), t.TempDir()
	builders.WriteTree(t, slow, manyObjects(slowObjects))
	builders.WriteTree(t, quick, map[string]string{"p.yaml": fmt.Sprintf(profileYAML, "p")})
	runner := newRunner(t, Options{Concurrency: 2, Limits: slowLimits})

	slowCtx, cancelSlow := context.WithTimeout(context.Background(), time.Minute)
	defer cancelSlow()
	slowDone := make(chan error, 1)
	go func() {
		_, _, err := runner.Build(slowCtx, slow, ".")
		slowDone <- err
	}()
	time.Sleep(200 * time.Millisecond) // the slow build is under way
	start := time.Now()
	_, _, err := runner.Build(context.Background(), quick, ".")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(time.Since(start)).To(BeNumerically("<", 10*time.Second))
	g.Expect(slowDone).NotTo(Receive(), "the slow build is still running")
	cancelSlow()
	g.Expect(<-slowDone).To(MatchError(ContainSubstring("abandoned")))
}

// TestOutOfMemoryReadsEveryWayTheRuntimeSaysTheKernelRefusedMemory: a child
// stopped by its address-space limit says so in one of the runtime's
// words, depending on what it was allocating; each is the memory limit, and
// another crash is not.
func TestOutOfMemoryReadsEveryWayTheRuntimeSaysTheKernelRefusedMemory(t *testing.T) {
	for _, row := range []struct {
		stderr string
		want   bool
	}{
		{"fatal error: runtime: out of memory", true},
		{"runtime: mmap: cannot allocate memory", true},
		{"runtime: failed to create new OS thread (have 5 already; errno=11)", true},
		{"runtime/cgo: pthread_create failed: Resource temporarily unavailable\nSIGABRT: abort", true},
		{"panic: runtime error: index out of range [3] with length 3", false},
		{"", false},
	} {
		t.Run(row.stderr, func(t *testing.T) {
			NewWithT(t).Expect(outOfMemory(row.stderr)).To(Equal(row.want))
		})
	}
}

// A child's collector is lazy while its live heap is small, and collects
// at Go's default once it is large: a large build near its memory limit
// needs every collection it can get.
func TestTheChildCollectsLazilyUntilItsLiveHeapIsLarge(t *testing.T) {
	previousPercent, previousLimit := debug.SetGCPercent(100), debug.SetMemoryLimit(-1)
	t.Cleanup(func() {
		debug.SetGCPercent(previousPercent)
		debug.SetMemoryLimit(previousLimit)
	})
	tuneCollector(1 << 30)
	if got := debug.SetGCPercent(lazyGCPercent); got != lazyGCPercent {
		t.Errorf("GOGC: got %d, want %d", got, lazyGCPercent)
	}
	if got, want := debug.SetMemoryLimit(previousLimit), int64(1<<30)/10*8; got != want {
		t.Errorf("soft memory limit: got %d, want %d", got, want)
	}

	const threshold = 32 << 20
	large := make(chan struct{}, 2)
	afterCollectionWithLiveHeap(threshold, func() { large <- struct{}{} })
	for range 3 {
		runtime.GC()
	}
	select {
	case <-large:
		t.Fatal("called with a live heap under the threshold")
	case <-time.After(200 * time.Millisecond):
	}
	kept := make([]byte, 2*threshold)
	for i := range kept {
		kept[i] = byte(i)
	}
	deadline := time.After(10 * time.Second)
	for called := false; !called; {
		runtime.GC()
		select {
		case <-large:
			called = true
		case <-time.After(50 * time.Millisecond):
		case <-deadline:
			t.Fatal("not called after collections with a live heap over the threshold")
		}
	}
	runtime.KeepAlive(kept)
	runtime.GC()
	select {
	case <-large:
		t.Fatal("called twice")
	case <-time.After(200 * time.Millisecond):
	}
}

// TestAReusingBuildInItsOwnProcessGivesWhatAColdBuildGives builds a
// landscape, changes one of its files, and builds it again reusing the
// first result: the child answers the unchanged file by reference, and
// the documents spliced in are a cold build's.
func TestAReusingBuildInItsOwnProcessGivesWhatAColdBuildGives(t *testing.T) {
	g := NewWithT(t)
	root := t.TempDir()
	builders.WriteTree(t, root, map[string]string{
		"base/kustomization.yaml":    "resources:\n- a.yaml\n- b.yaml\n- c.yaml\n",
		"base/a.yaml":                fmt.Sprintf(profileYAML, "a"),
		"base/b.yaml":                fmt.Sprintf(profileYAML, "b"),
		"base/c.yaml":                fmt.Sprintf(profileYAML, "c"),
		"overlay/kustomization.yaml": "resources:\n- ../base\nlabels:\n- pairs: {landscape: bench}\n",
	})
	runner := newRunner(t, Options{})
	first, err := runner.BuildReusing(context.Background(), root, "overlay", nil)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(first.Reusable).NotTo(BeNil(), "the build took the linear path")
	g.Expect(first.Reused).To(BeZero())

	builders.WriteTree(t, root, map[string]string{"base/b.yaml": fmt.Sprintf(profileYAML, "b") + "  regions: [{name: local}]\n"})
	second, err := runner.BuildReusing(context.Background(), root, "overlay", &first)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(second.Reused).To(Equal(2), "a.yaml's and c.yaml's documents are reused")
	cold, err := runner.BuildReusing(context.Background(), root, "overlay", nil)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(second.Documents).To(Equal(cold.Documents))
	g.Expect(second.Warnings).To(Equal(cold.Warnings))
	g.Expect(second.Reusable).To(Equal(cold.Reusable))
}

// reusableBeforeSlowObjects builds, at root, a revision of
// manyObjects's tree that takes the linear path (a profile in place of the
// ConfigMaps, and p.yaml, which the next revision keeps), and writes the
// next revision, whose build of slowObjects ConfigMaps reuses p.yaml and
// then runs long in kustomize: the limit tests run with reuse on.
func reusableBeforeSlowObjects(t *testing.T, runner *Runner, root string) *Result {
	t.Helper()
	kustomization := "resources:\n- p.yaml\n- objects.yaml\n"
	builders.WriteTree(t, root, map[string]string{"kustomization.yaml": kustomization, "p.yaml": fmt.Sprintf(profileYAML, "p"),
		"objects.yaml": fmt.Sprintf(profileYAML, "q")})
	previous, err := runner.BuildReusing(context.Background(), root, ".", nil)
	if err != nil || previous.Reusable == nil {
		t.Fatalf("the revision before: %v (reusable %v)", err, previous.Reusable)
	}
	// One object fewer: p.yaml counts too.
	slow := manyObjects(slowObjects - 1)
	slow["kustomization.yaml"] = kustomization
	builders.WriteTree(t, root, slow)
	return &previous
}

func TestAReusingBuildIsKilledAtItsDeadlineAndAtItsCPUTimeLimit(t *testing.T) {
	t.Run("its deadline", func(t *testing.T) {
		g := NewWithT(t)
		root := t.TempDir()
		runner := newRunner(t, Options{Concurrency: 1, Limits: slowLimits})
		previous := reusableBeforeSlowObjects(t, runner, root)
		ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
		defer cancel()
		start := time.Now()
		_, err := runner.BuildReusing(ctx, root, ".", previous)
		g.Expect(err).To(MatchError(ContainSubstring("kustomize build of . abandoned: context deadline exceeded")))
		g.Expect(time.Since(start)).To(BeNumerically("<", 5*time.Second))
	})
	t.Run("its CPU time limit", func(t *testing.T) {
		g := NewWithT(t)
		root := t.TempDir()
		runner := newRunner(t, Options{CPUTime: time.Second, Limits: slowLimits})
		previous := reusableBeforeSlowObjects(t, runner, root)
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		_, err := runner.BuildReusing(ctx, root, ".", previous)
		g.Expect(err).To(MatchError("build of . stopped: it went past the CPU time limit of 1s (raise it with --build-cpu-limit)"))
	})
}

// TestAReusingBuildsRequestIsBounded sends no facts past maxRequest: a
// previous result too large to send is a cold build, which still builds.
func TestAReusingBuildsRequestIsBounded(t *testing.T) {
	g := NewWithT(t)
	root := t.TempDir()
	builders.WriteTree(t, root, map[string]string{"kustomization.yaml": "resources:\n- p.yaml\n", "p.yaml": fmt.Sprintf(profileYAML, "p")})
	runner := newRunner(t, Options{})
	first, err := runner.BuildReusing(context.Background(), root, ".", nil)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(first.Reusable).NotTo(BeNil())
	again, err := runner.BuildReusing(context.Background(), root, ".", &first)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(again.Reused).To(Equal(1))

	huge := first
	huge.Reusable = &overlay.Reusable{Files: append([]overlay.ReusableFile{{File: strings.Repeat("x", maxRequest)}}, first.Reusable.Files...)}
	cold, err := runner.BuildReusing(context.Background(), root, ".", &huge)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(cold.Reused).To(BeZero(), "facts past the bound are not sent")
	g.Expect(cold.Documents).To(Equal(first.Documents))
}
