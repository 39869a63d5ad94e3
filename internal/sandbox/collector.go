package sandbox

import (
	"runtime"
	"runtime/debug"
	"runtime/metrics"
)

// lazyGCPercent is the child's GOGC while its build is small. A build
// allocates many times what it keeps (kustomize's YAML trees, copied at
// each step, and each object encoded on its way out), and at Go's default
// of 100 the collector took a fifth of a build's CPU: the bench landscape
// builds in 1.45 instead of 1.82 CPU-s at 400 (docs/performance.md, "The
// build child's collector").
const lazyGCPercent = 400

// lazyHeapDivisor sets where a build stops being small: a live heap of a
// sixteenth of the memory limit (64 MiB of the default 1 GiB). Up to it the
// heap grows to at most five times that between collections, well inside
// the limit; past it the child collects at Go's default, since a large
// build near its limit needs every collection it can get: at 150 already,
// a build through kustomize that peaks at 890 MiB of 1 GiB at the default
// (1,100 realistic profiles, the default --max-objects) went past the
// limit.
const lazyHeapDivisor = 16

// tuneCollector tunes the collector for one build within memoryLimit: a
// soft memory limit of 80 % of it, so that the collector runs hard before
// the kernel refuses an allocation, and lazyGCPercent until the live heap
// after a collection reaches memoryLimit/lazyHeapDivisor, Go's default
// after that.
func tuneCollector(memoryLimit int64) {
	debug.SetMemoryLimit(memoryLimit / 10 * 8)
	debug.SetGCPercent(lazyGCPercent)
	afterCollectionWithLiveHeap(uint64(memoryLimit/lazyHeapDivisor), func() { debug.SetGCPercent(100) })
}

// afterCollectionWithLiveHeap calls large once, after the first collection
// that leaves a live heap of at least threshold bytes. It looks after
// every collection, from the runtime's finalizer goroutine: a finalizer of
// an object nothing references runs once a collection has found it
// unreachable, and each one arms the next.
func afterCollectionWithLiveHeap(threshold uint64, large func()) {
	sample := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
	var arm func()
	arm = func() {
		runtime.SetFinalizer(&collectionMark{}, func(*collectionMark) {
			metrics.Read(sample)
			if sample[0].Value.Kind() == metrics.KindUint64 && sample[0].Value.Uint64() >= threshold {
				large()
				return
			}
			arm()
		})
	}
	arm()
}

// collectionMark is the object whose finalizer marks a collection. It holds
// a pointer so that it is never one of the tiny allocations the runtime
// batches into one block, whose finalizers may never run.
type collectionMark struct{ _ *collectionMark }
