package sandbox

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/profilesync/profilesync/internal/render/overlay"
	"github.com/profilesync/profilesync/internal/render/profile"
	"github.com/profilesync/profilesync/test/builders"
)

// realisticLandscape is a landscape of n CloudProfiles of kubernetes
// Kubernetes versions and images machine images of imageVersions versions
// each, every version with a four-stage lifecycle (hundreds of versions, as
// a provider's profile has after a few years), and ten
// NamespacedCloudProfiles for each, which keep one version of their parent
// longer: the proportions of the issue-7 landscape (docs/performance.md).
// base/ lists the files; overlay/ adds a patch to one profile, so that it
// goes through kustomize where base/ takes the linear path.
type realisticLandscape struct {
	cloudProfiles, kubernetes, images, imageVersions int
}

// namespacedPerCloudProfile is how many NamespacedCloudProfiles a
// CloudProfile of realisticLandscape has.
const namespacedPerCloudProfile = 10

func (l realisticLandscape) objects() int { return l.cloudProfiles * (1 + namespacedPerCloudProfile) }

func (l realisticLandscape) files() map[string]string {
	lifecycle := func(i int) string {
		preview := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC).Add(time.Duration(i) * 7 * 24 * time.Hour)
		at := func(days int) string {
			return preview.Add(time.Duration(days) * 24 * time.Hour).Format(time.RFC3339)
		}
		return fmt.Sprintf(`[{classification: preview, startTime: "%s"}, {classification: supported, startTime: "%s"}, `+
			`{classification: deprecated, startTime: "%s"}, {classification: expired, startTime: "%s"}]`, at(0), at(1), at(30), at(400))
	}
	files := map[string]string{}
	var resources []string
	for i := range l.cloudProfiles {
		var b strings.Builder
		fmt.Fprintf(&b, "apiVersion: core.profilesync.io/v1alpha1\nkind: CloudProfile\nmetadata:\n  name: provider-%04d\n"+
			"spec:\n  type: provider\n  kubernetes:\n    versions:\n", i)
		for v := range l.kubernetes {
			fmt.Fprintf(&b, "    - {version: 1.%d.0, lifecycle: %s}\n", v, lifecycle(v))
		}
		fmt.Fprintf(&b, "    - {version: 1.%d.0}\n", l.kubernetes)
		b.WriteString("  machineImages:\n")
		for m := range l.images {
			fmt.Fprintf(&b, "  - name: image-%d\n    updateStrategy: minor\n    versions:\n", m)
			for v := range l.imageVersions {
				fmt.Fprintf(&b, "    - {version: %d.%d.0, architectures: [amd64, arm64], lifecycle: %s}\n", 1000+m, v, lifecycle(v))
			}
		}
		b.WriteString("  machineTypes:\n  - {name: m5.large, cpu: \"2\", gpu: \"0\", memory: 8Gi, architecture: amd64}\n")
		b.WriteString("  regions:\n  - name: eu-1\n")
		for j := range namespacedPerCloudProfile {
			fmt.Fprintf(&b, `---
apiVersion: core.profilesync.io/v1alpha1
kind: NamespacedCloudProfile
metadata:
  name: provider-%04d
  namespace: tenant-%02d
spec:
  parent: {kind: CloudProfile, name: provider-%04d}
  kubernetes:
    versions:
    - {version: 1.0.0, lifecycle: [{classification: expired, startTime: "2026-01-01T00:00:00Z"}]}
`, i, j, i)
		}
		file := fmt.Sprintf("provider-%04d.yaml", i)
		files["base/"+file] = b.String()
		resources = append(resources, file)
	}
	files["base/kustomization.yaml"] = "resources:\n- " + strings.Join(resources, "\n- ") + "\n"
	files["overlay/kustomization.yaml"] = "resources:\n- ../base\npatches:\n- target: {kind: CloudProfile, name: provider-0000}\n" +
		"  patch: |-\n    - {op: replace, path: /spec/type, value: patched}\n"
	return files
}

// ordinaryProfiles is n small CloudProfiles of a few versions (about 600
// bytes each, as the 4,900), one file each, listed by base/; overlay/
// patches one of them.
func ordinaryProfiles(n int) map[string]string {
	files := map[string]string{}
	var resources []string
	for i := range n {
		file := fmt.Sprintf("profile-%05d.yaml", i)
		files["base/"+file] = fmt.Sprintf(`apiVersion: core.profilesync.io/v1alpha1
kind: CloudProfile
metadata:
  name: profile-%05d
spec:
  type: provider
  kubernetes:
    versions:
    - {version: 1.33.1}
    - {version: 1.32.4, expirationDate: "2027-01-31T23:59:59Z"}
    - {version: 1.31.7, expirationDate: "2026-10-31T23:59:59Z"}
  machineImages:
  - name: gardenlinux
    versions: [{version: 1592.4.0}, {version: 1443.10.0, expirationDate: "2026-12-31T23:59:59Z"}]
  machineTypes:
  - {name: m5.large, cpu: "2", gpu: "0", memory: 8Gi, usable: true}
  - {name: m5.xlarge, cpu: "4", gpu: "0", memory: 16Gi, usable: true}
  regions:
  - {name: eu-west-1, zones: [{name: eu-west-1a}, {name: eu-west-1b}]}
`, i)
		resources = append(resources, file)
	}
	files["base/kustomization.yaml"] = "resources:\n- " + strings.Join(resources, "\n- ") + "\n"
	files["overlay/kustomization.yaml"] = "resources:\n- ../base\npatches:\n- target: {kind: CloudProfile, name: profile-00000}\n" +
		"  patch: |-\n    - {op: replace, path: /spec/type, value: patched}\n"
	return files
}

// benchmarkBuilds builds base/ (the linear path) and overlay/ (kustomize)
// of files, each in its own process under the shipped limits (one core,
// the default build memory), as the operator does, and reports the
// build's wall time (ns/op), the child's CPU time and peak RSS, and the
// bytes rendered.
func benchmarkBuilds(b *testing.B, runner *Runner, files map[string]string, objects int) {
	root := b.TempDir()
	builders.WriteTree(b, root, files)
	for _, path := range []string{"base", "overlay"} {
		b.Run(path, func(b *testing.B) {
			var peakRSS, rendered int64
			var cpu time.Duration
			for b.Loop() {
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
				result, usage, err := runner.build(ctx, root, path, nil)
				cancel()
				if err != nil {
					b.Fatal(err)
				}
				if len(result.Documents) != objects {
					b.Fatalf("%d documents, want %d", len(result.Documents), objects)
				}
				rendered = 0
				for _, doc := range result.Documents {
					rendered += int64(len(doc.Data))
				}
				peakRSS = max(peakRSS, usage.Maxrss<<10)
				cpu = max(cpu, time.Duration(usage.Utime.Nano()+usage.Stime.Nano()))
			}
			b.ReportMetric(float64(peakRSS)/(1<<20), "child-MiB")
			b.ReportMetric(cpu.Seconds(), "child-CPU-s")
			b.ReportMetric(float64(rendered)/(1<<20), "rendered-MiB")
		})
	}
}

// BenchmarkBuildRealisticProfiles builds realistic landscapes
// (realisticLandscape: CloudProfiles of 300 versions, ten
// NamespacedCloudProfiles each) of more and more CloudProfiles, up to what
// the default --max-rendered-size allows: the curve docs/performance.md
// publishes, and what the default spec.timeout is chosen from.
func BenchmarkBuildRealisticProfiles(b *testing.B) {
	runner, err := New(Options{})
	if err != nil {
		b.Fatal(err)
	}
	for _, cloudProfiles := range realisticSizes {
		landscape := realisticLandscape{cloudProfiles: cloudProfiles, kubernetes: 100, images: 2, imageVersions: 100}
		b.Run(fmt.Sprintf("objects=%d", landscape.objects()), func(b *testing.B) {
			benchmarkBuilds(b, runner, landscape.files(), landscape.objects())
		})
	}
}

// BenchmarkBuildOrdinaryProfiles builds more and more small CloudProfiles,
// up to the 4,900 of issue 36 (--max-objects raised for it): where
// kustomize's time, which grows with the square of the objects, bounded a
// build before an overlay of patches took the linear path.
func BenchmarkBuildOrdinaryProfiles(b *testing.B) {
	runner, err := New(Options{Limits: overlay.Limits{MaxObjects: int64(slices.Max(ordinarySizes))}})
	if err != nil {
		b.Fatal(err)
	}
	for _, n := range ordinarySizes {
		b.Run(fmt.Sprintf("objects=%d", n), func(b *testing.B) {
			benchmarkBuilds(b, runner, ordinaryProfiles(n), n)
		})
	}
}

var (
	realisticSizes = []int{25, 50, overlay.DefaultMaxObjects / (1 + namespacedPerCloudProfile)}
	ordinarySizes  = []int{250, 500, overlay.DefaultMaxObjects, 2 * overlay.DefaultMaxObjects, 4900}
)

// TestTheRealisticLandscapeIsValid: the benchmarks' realistic profiles are
// profiles the sync would apply, so that what they measure is what a
// landscape costs.
func TestTheRealisticLandscapeIsValid(t *testing.T) {
	root := t.TempDir()
	builders.WriteTree(t, root, realisticLandscape{cloudProfiles: 2, kubernetes: 100, images: 2, imageVersions: 100}.files())
	for _, path := range []string{"base", "overlay"} {
		docs, err := overlay.Build(context.Background(), root, path, overlay.DefaultLimits())
		if err != nil {
			t.Fatal(err)
		}
		objects, problems := profile.DecodeDocuments(docs)
		if len(problems) > 0 {
			t.Fatalf("%s: %v", path, problems)
		}
		report, err := profile.Validate(objects, nil, time.Date(2026, 11, 28, 0, 0, 0, 0, time.UTC))
		if err != nil {
			t.Fatal(err)
		}
		if len(report.Problems) > 0 {
			t.Fatalf("%s: %v", path, report.Problems)
		}
		if len(objects) != 2*(1+namespacedPerCloudProfile) {
			t.Fatalf("%s: %d objects", path, len(objects))
		}
	}
}
