package lifecycle

import (
	"fmt"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"

	v1alpha1 "github.com/profilesync/profilesync/api/v1alpha1"
)

// benchmarkBase is the start of the benchmark profile's release train.
var benchmarkBase = at("2024-01-01T00:00:00Z")

// releaseTrain gives the patch-th version of a minor a 4-stage lifecycle: a
// patch is released weekly, is supported from a day later until the next
// patch is, and expires 90 days after release. Supported windows of one minor
// therefore abut and never overlap, so the profile is valid.
func releaseTrain(minorStart time.Time, patch int, last bool) []v1alpha1.LifecycleStage {
	const day, week = 24 * time.Hour, 7 * 24 * time.Hour
	released := minorStart.Add(time.Duration(patch) * week)
	stages := []v1alpha1.LifecycleStage{
		{Classification: preview, StartTime: &metav1.Time{Time: released}},
		{Classification: supported, StartTime: &metav1.Time{Time: released.Add(day)}},
		{Classification: deprecated, StartTime: &metav1.Time{Time: released.Add(week + day)}},
		{Classification: expired, StartTime: &metav1.Time{Time: released.Add(90 * day)}},
	}
	if last {
		// The highest Kubernetes version may not expire.
		stages = stages[:3]
	}
	return stages
}

// benchmarkProfile builds a valid profile with kubernetesVersions Kubernetes
// versions (20 patches per minor) and images machine images of
// versionsPerImage versions each (10 patches per minor), all with 4-stage
// lifecycles.
func benchmarkProfile(kubernetesVersions, images, versionsPerImage int) *v1alpha1.CloudProfileSpec {
	spec := &v1alpha1.CloudProfileSpec{
		Type:         "benchmark",
		MachineTypes: []v1alpha1.MachineType{{Name: "m5.large"}},
		Regions:      []v1alpha1.Region{{Name: "eu-west-1"}},
	}
	for i := range kubernetesVersions {
		minor, patch := i/20, i%20
		minorStart := benchmarkBase.Add(time.Duration(minor) * 30 * 24 * time.Hour)
		spec.Kubernetes.Versions = append(spec.Kubernetes.Versions, v1alpha1.ExpirableVersion{
			Version:   fmt.Sprintf("1.%d.%d", minor, patch),
			Lifecycle: releaseTrain(minorStart, patch, i == kubernetesVersions-1),
		})
	}
	for n := range images {
		image := v1alpha1.MachineImage{Name: fmt.Sprintf("image-%d", n), UpdateStrategy: strategy(v1alpha1.UpdateStrategyMinor)}
		for i := range versionsPerImage {
			minor, patch := i/10, i%10
			minorStart := benchmarkBase.Add(time.Duration(minor) * 15 * 24 * time.Hour)
			constraint := ">= 1.28"
			image.Versions = append(image.Versions, v1alpha1.MachineImageVersion{
				ExpirableVersion: v1alpha1.ExpirableVersion{
					Version:   fmt.Sprintf("%d.%d.%d", 1000+n, minor, patch),
					Lifecycle: releaseTrain(minorStart, patch, false),
				},
				Architectures:            []string{"amd64", "arm64"},
				KubeletVersionConstraint: &constraint,
			})
		}
		spec.MachineImages = append(spec.MachineImages, image)
	}
	return spec
}

func TestBenchmarkProfileIsValid(t *testing.T) {
	errs, warnings := ValidateCloudProfileSpec(benchmarkProfile(1000, 5, 200), field.NewPath("spec"))
	if len(errs) > 0 || len(warnings) > 0 {
		t.Fatalf("the benchmark profile should be valid, got errors %v and warnings %v", errs, warnings)
	}
}

// BenchmarkEvaluate measures one full status computation of a profile with
// 1,000 Kubernetes versions and 50 images of 200 versions, all with 4-stage
// lifecycles: the work of one reconcile.
func BenchmarkEvaluate(b *testing.B) {
	spec := benchmarkProfile(1000, 50, 200)
	now := benchmarkBase.Add(200 * 24 * time.Hour)
	b.ReportAllocs()
	for b.Loop() {
		_ = Status(spec, now)
	}
}

// BenchmarkValidateCloudProfileSpec validates the same profile as
// BenchmarkEvaluate.
func BenchmarkValidateCloudProfileSpec(b *testing.B) {
	spec := benchmarkProfile(1000, 50, 200)
	path := field.NewPath("spec")
	b.ReportAllocs()
	for b.Loop() {
		_, _ = ValidateCloudProfileSpec(spec, path)
	}
}
