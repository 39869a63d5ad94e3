package sandbox

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/profilesync/profilesync/internal/overlay"
)

// BenchmarkBuildByObjectCount builds overlays of more and more tiny
// objects, each in its own process as the operator does, and reports the
// build's time and the child's peak memory. kustomize accumulates objects in
// time that grows with their square: the curve (docs/performance.md) is
// what the default of --max-objects is chosen from.
func BenchmarkBuildByObjectCount(b *testing.B) {
	runner, err := New(Options{})
	if err != nil {
		b.Fatal(err)
	}
	for _, n := range []int{500, 1000, 2000, 3000, 4000, overlay.DefaultMaxObjects} {
		b.Run(fmt.Sprintf("objects=%d", n), func(b *testing.B) {
			root := b.TempDir()
			writeTree(b, root, manyObjects(n))
			var peakRSS int64
			for b.Loop() {
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
				docs, _, usage, err := runner.build(ctx, root, ".")
				cancel()
				if err != nil {
					b.Fatal(err)
				}
				if len(docs) != n {
					b.Fatalf("%d documents, want %d", len(docs), n)
				}
				peakRSS = max(peakRSS, usage.Maxrss<<10)
			}
			b.ReportMetric(float64(peakRSS)/(1<<20), "child-MiB")
		})
	}
}
