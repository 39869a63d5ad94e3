package sandbox

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/profilesync/profilesync/internal/render/overlay"
	"github.com/profilesync/profilesync/internal/render/profile"
	"github.com/profilesync/profilesync/test/builders"
)

// benchLandscape is the landscape of test/bench (10 CloudProfiles of 600
// versions, 100 NamespacedCloudProfiles) in realisticLandscape's terms.
var benchLandscape = realisticLandscape{cloudProfiles: 10, kubernetes: 200, images: 2, imageVersions: 200}

// BenchmarkFirstSyncBuildParts splits the build of the bench landscape into
// the steps docs/performance.md ("The first sync: where each second goes")
// publishes: starting a child, kustomize in it (for the overlay of a patch,
// and for test/bench's overlay of a label on every object), the child's answer encoded
// and decoded across the process boundary, and the decoding of the
// documents into profiles, which the manager does (reusing, at a push, the
// documents its previous revision decoded: profile.DecodeDocumentsReusing).
// Each step but the first runs in this process so that -cpuprofile sees it.
func BenchmarkFirstSyncBuildParts(b *testing.B) {
	root := b.TempDir()
	builders.WriteTree(b, root, benchLandscape.files())
	builders.WriteTree(b, root, map[string]string{
		"tiny/kustomization.yaml": "resources: []\n",
		// test/bench's overlay: a label on every object, no patch.
		"labelled/kustomization.yaml": "resources:\n- ../base\nlabels:\n- pairs:\n    landscape: bench\n",
	})
	runner, err := New(Options{})
	if err != nil {
		b.Fatal(err)
	}
	childCPU := func(b *testing.B, path string) {
		var cpu time.Duration
		var peakRSS int64
		for b.Loop() {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
			_, usage, err := runner.build(ctx, root, path, nil)
			cancel()
			if err != nil {
				b.Fatal(err)
			}
			cpu += time.Duration(usage.Utime.Nano() + usage.Stime.Nano())
			peakRSS = max(peakRSS, usage.Maxrss<<10)
		}
		b.ReportMetric(cpu.Seconds()/float64(b.N), "child-CPU-s/op")
		b.ReportMetric(float64(peakRSS)/(1<<20), "child-MiB")
	}
	b.Run("child start (an empty build)", func(b *testing.B) { childCPU(b, "tiny") })
	b.Run("whole build in a child", func(b *testing.B) { childCPU(b, "overlay") })
	b.Run("whole build in a child, an overlay of labels", func(b *testing.B) { childCPU(b, "labelled") })
	// A push: one version's expiry moved in the first CloudProfile's file,
	// built reusing the build before (docs/performance.md, "A push builds
	// only the files it changed").
	// test/bench's layout: every CloudProfile in one file.
	var all []string
	for i := range benchLandscape.cloudProfiles {
		all = append(all, benchLandscape.files()[fmt.Sprintf("base/provider-%04d.yaml", i)])
	}
	builders.WriteTree(b, root, map[string]string{
		"onefile/base/kustomization.yaml":     "resources:\n- profiles.yaml\n",
		"onefile/base/profiles.yaml":          strings.Join(all, "---\n"),
		"onefile/labelled/kustomization.yaml": "resources:\n- ../base\nlabels:\n- pairs:\n    landscape: bench\n",
	})
	pushes := func(b *testing.B, file, path string, edit func(push int) string) {
		previous, err := runner.BuildReusing(context.Background(), root, path, nil)
		if err != nil {
			b.Fatal(err)
		}
		var cpu time.Duration
		var reused int
		push := 0
		for b.Loop() {
			push++
			builders.WriteTree(b, root, map[string]string{file: edit(push)})
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
			result, usage, err := runner.build(ctx, root, path, &previous)
			cancel()
			if err != nil {
				b.Fatal(err)
			}
			previous, reused = result, result.Reused
			cpu += time.Duration(usage.Utime.Nano() + usage.Stime.Nano())
		}
		b.ReportMetric(cpu.Seconds()/float64(b.N), "child-CPU-s/op")
		b.ReportMetric(float64(reused), "documents-reused")
	}
	expiry := func(content string, push int) string {
		return strings.Replace(content, "{version: 1.200.0}", fmt.Sprintf("{version: 1.200.0, expirationDate: \"%d-01-01T00:00:00Z\"}", 2030+push), 1)
	}
	b.Run("a push in a child, every CloudProfile in one file, reusing the build before", func(b *testing.B) {
		pushes(b, "onefile/base/profiles.yaml", "onefile/labelled", func(push int) string { return expiry(strings.Join(all, "---\n"), push) })
	})
	b.Run("a push in a child, an overlay of labels, reusing the build before", func(b *testing.B) {
		first := benchLandscape.files()["base/provider-0000.yaml"]
		pushes(b, "base/provider-0000.yaml", "labelled", func(push int) string { return expiry(first, push) })
	})
	docs, warnings, err := overlay.BuildWithWarningsWithin(context.Background(), context.Background(), root, "overlay", overlay.DefaultLimits())
	if err != nil {
		b.Fatal(err)
	}
	b.Run("kustomize in process", func(b *testing.B) {
		for b.Loop() {
			if _, _, err := overlay.BuildWithWarningsWithin(context.Background(), context.Background(), root, "overlay", overlay.DefaultLimits()); err != nil {
				b.Fatal(err)
			}
		}
	})
	// The labelled overlay's build in this process, for -cpuprofile: where
	// the child's CPU goes (docs/performance.md, "A push builds only the
	// files it changed").
	b.Run("an overlay of labels in process", func(b *testing.B) {
		for b.Loop() {
			if _, _, err := overlay.BuildWithWarningsWithin(context.Background(), context.Background(), root, "labelled", overlay.DefaultLimits()); err != nil {
				b.Fatal(err)
			}
		}
	})
	answer, err := json.Marshal(childReply{Documents: docs, Warnings: warnings})
	if err != nil {
		b.Fatal(err)
	}
	b.Run("answer encoded", func(b *testing.B) {
		for b.Loop() {
			if _, err := json.Marshal(childReply{Documents: docs, Warnings: warnings}); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(len(answer))/(1<<20), "answer-MiB")
	})
	b.Run("answer decoded", func(b *testing.B) {
		for b.Loop() {
			var reply childReply
			if err := json.Unmarshal(answer, &reply); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("documents decoded into profiles", func(b *testing.B) {
		var before syscall.Rusage
		if err := syscall.Getrusage(syscall.RUSAGE_SELF, &before); err != nil {
			b.Fatal(err)
		}
		for b.Loop() {
			if _, problems := profile.DecodeDocuments(docs); len(problems) > 0 {
				b.Fatal(problems)
			}
		}
		// CPU time, the garbage collector's included: on a shared machine
		// a steadier measure than the wall time.
		var after syscall.Rusage
		if err := syscall.Getrusage(syscall.RUSAGE_SELF, &after); err != nil {
			b.Fatal(err)
		}
		cpu := time.Duration(after.Utime.Nano() + after.Stime.Nano() - before.Utime.Nano() - before.Stime.Nano())
		b.ReportMetric(cpu.Seconds()/float64(b.N), "CPU-s/op")
	})
}
