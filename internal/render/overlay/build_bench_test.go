package overlay

import (
	"context"
	"fmt"
	"runtime"
	"runtime/metrics"
	"sync"
	"syscall"
	"testing"
	"time"

	"sigs.k8s.io/yaml"

	v1alpha1 "github.com/profilesync/profilesync/api/v1alpha1"
	"github.com/profilesync/profilesync/test/builders"
)

// ordinaryLandscape is a base of n ordinary CloudProfiles, one file each
// (Kubernetes versions with lifecycles, a machine image of two versions
// with architectures and container runtimes, machine types, a volume type,
// a region with zones: about 1.1 KB of YAML each, what a provider's
// profile holds in its first year), listed by base/, and overlay/, which builds base/ with the
// patches an overlay of a landscape has: a patch file that expires a
// version by its key, an inline strategic-merge patch that adds a version,
// a JSON patch by target, and a $patch: delete of a machine type.
func ordinaryLandscape(t testing.TB, n int) map[string]string {
	t.Helper()
	files := map[string]string{}
	var resources []string
	for i := range n {
		spec := builders.Profile()
		spec.Type = "provider"
		spec.Kubernetes.Versions = builders.WithNewest(
			builders.Staged("1.33.4", builders.Stage(v1alpha1.ClassificationSupported, ""),
				builders.Stage(v1alpha1.ClassificationDeprecated, "2027-03-01T00:00:00Z")),
			builders.Staged("1.32.8", builders.Stage(v1alpha1.ClassificationSupported, ""),
				builders.Stage(v1alpha1.ClassificationDeprecated, "2026-12-01T00:00:00Z"),
				builders.Stage(v1alpha1.ClassificationExpired, "2027-06-01T00:00:00Z")),
		)
		image := spec.MachineImages[0]
		second := image.Versions[0]
		second.ExpirableVersion = builders.DeprecatedAPIVersion("1443.10.0", "", "2027-01-31T23:59:59Z")
		image.Versions = append(image.Versions, second)
		spec.MachineImages = []v1alpha1.MachineImage{image}
		spec.MachineTypes = []v1alpha1.MachineType{builders.MachineType("m5.large", "2"), builders.MachineType("m5.2xlarge", "8")}
		spec.Regions = []v1alpha1.Region{{Name: "eu-west-1", Zones: []v1alpha1.AvailabilityZone{{Name: "eu-west-1a"}, {Name: "eu-west-1b"}}}}
		body, err := yaml.Marshal(spec)
		if err != nil {
			t.Fatal(err)
		}
		file := fmt.Sprintf("profile-%05d.yaml", i)
		files["base/"+file] = fmt.Sprintf("apiVersion: core.profilesync.io/v1alpha1\nkind: CloudProfile\nmetadata:\n  name: profile-%05d\nspec:\n%s",
			i, indentLines(string(body), "  "))
		resources = append(resources, file)
	}
	header := func(i int) string {
		return fmt.Sprintf("apiVersion: core.profilesync.io/v1alpha1\nkind: CloudProfile\nmetadata:\n  name: profile-%05d\nspec:\n", i%n)
	}
	files["base/kustomization.yaml"] = kustomization(resources...)
	files["overlay/expire.yaml"] = header(1) + "  kubernetes:\n    versions:\n    - version: 1.32.8\n      expirationDate: \"2027-06-01T00:00:00Z\"\n"
	files["overlay/kustomization.yaml"] = kustomization("../base") + "patches:\n- path: expire.yaml\n" +
		inlinePatch(header(2)+"  kubernetes:\n    versions:\n    - version: 1.34.0\n      classification: preview\n") +
		"- target: {kind: CloudProfile, name: " + fmt.Sprintf("profile-%05d", 3%n) + "}\n  patch: |-\n    - {op: replace, path: /spec/type, value: patched}\n" +
		inlinePatch(header(4)+"  machineTypes:\n  - name: m5.2xlarge\n    $patch: delete\n")
	return files
}

// ordinaryLandscapePatchObjects are the objects of ordinaryLandscape's
// strategic-merge patches, which the build reads and counts.
const ordinaryLandscapePatchObjects = 3

// BenchmarkBuildOrdinaryProfilesWithPatches builds the overlay of
// ordinaryLandscape, in process, at more and more CloudProfiles: up to
// the default --max-objects and the 4,900 of issue 36 (the limit raised
// for it). It reports, besides the time and the bytes allocated, the CPU
// time of a build (CPU-s/op: the process's, while it builds), its peak live
// heap (peak-heap-MiB, sampled) and the bytes rendered.
//
//	go test ./internal/render/overlay/ -run '^$' -bench BenchmarkBuildOrdinaryProfilesWithPatches -benchtime 1x -benchmem
func BenchmarkBuildOrdinaryProfilesWithPatches(b *testing.B) {
	for _, n := range []int{100, 1000, DefaultMaxObjects, 4900} {
		b.Run(fmt.Sprintf("objects=%d", n), func(b *testing.B) {
			root := b.TempDir()
			builders.WriteTree(b, root, ordinaryLandscape(b, n))
			limits := DefaultLimits()
			limits.MaxObjects = int64(n + ordinaryLandscapePatchObjects) // the patches' objects are read too
			var rendered int
			peak := sampleHeapPeak(b)
			cpuBefore := processCPU(b)
			for b.Loop() {
				docs, warnings, err := BuildWithWarnings(context.Background(), root, "overlay", limits)
				if err != nil {
					b.Fatal(err)
				}
				if len(docs) != n || len(warnings) != 0 {
					b.Fatalf("%d documents, want %d; warnings: %v", len(docs), n, warnings)
				}
				rendered = 0
				for _, doc := range docs {
					rendered += len(doc.Data)
				}
			}
			b.ReportMetric((processCPU(b)-cpuBefore).Seconds()/float64(b.N), "CPU-s/op")
			b.ReportMetric(float64(peak())/(1<<20), "peak-heap-MiB")
			b.ReportMetric(float64(rendered)/(1<<20), "rendered-MiB")
		})
	}
}

// processCPU is the CPU time the process has used (user and system), the
// garbage collector's included: what a build costs a core of its own,
// whatever else the machine runs.
func processCPU(b *testing.B) time.Duration {
	var usage syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &usage); err != nil {
		b.Fatal(err)
	}
	return time.Duration(usage.Utime.Nano() + usage.Stime.Nano())
}

// sampleHeapPeak samples the live heap every few milliseconds from now on;
// the function it returns stops the sampling and returns the peak seen.
func sampleHeapPeak(b *testing.B) func() uint64 {
	runtime.GC()
	sample := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	var peak uint64
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		ticker := time.NewTicker(2 * time.Millisecond)
		defer ticker.Stop()
		for {
			metrics.Read(sample)
			peak = max(peak, sample[0].Value.Uint64())
			select {
			case <-done:
				return
			case <-ticker.C:
			}
		}
	}()
	var once sync.Once
	stop := func() uint64 {
		once.Do(func() { close(done); wg.Wait() })
		return peak
	}
	b.Cleanup(func() { stop() })
	return stop
}
