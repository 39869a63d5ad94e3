package profilestatus

import (
	"context"
	"fmt"
	"sort"
	"testing"
	"time"

	"github.com/fluxcd/pkg/runtime/conditions"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/client-go/tools/record"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1alpha1 "github.com/profilesync/profilesync/api/v1alpha1"
	"github.com/profilesync/profilesync/test/builders"
	"github.com/profilesync/profilesync/test/testenv"
)

// The benchmarks of this file run against the suite's envtest control plane
// and manager, on the real clock. They report figures with b.ReportMetric
// and assert nothing about time.

// lifecycleProfile is a valid CloudProfile spec with kubernetes Kubernetes
// versions and images machine images of perImage versions each. Every
// version is alone in its minor (1.<i>.0), so supported windows never
// overlap, and has the 4 stages preview, supported, deprecated, expired
// starting at stages(i); the highest Kubernetes version keeps only 3, as it
// may not expire.
func lifecycleProfile(kubernetes, images, perImage int, stages func(i int) [4]time.Time) v1alpha1.CloudProfileSpec {
	lifecycle := func(i int, expires bool) []v1alpha1.LifecycleStage {
		t := stages(i)
		out := []v1alpha1.LifecycleStage{
			{Classification: v1alpha1.ClassificationPreview, StartTime: &metav1.Time{Time: t[0]}},
			{Classification: v1alpha1.ClassificationSupported, StartTime: &metav1.Time{Time: t[1]}},
			{Classification: v1alpha1.ClassificationDeprecated, StartTime: &metav1.Time{Time: t[2]}},
			{Classification: v1alpha1.ClassificationExpired, StartTime: &metav1.Time{Time: t[3]}},
		}
		if !expires {
			out = out[:3]
		}
		return out
	}
	spec := builders.WithRequiredLists(v1alpha1.CloudProfileSpec{Type: "benchmark"})
	for i := range kubernetes {
		spec.Kubernetes.Versions = append(spec.Kubernetes.Versions, v1alpha1.ExpirableVersion{
			Version:   fmt.Sprintf("1.%d.0", i),
			Lifecycle: lifecycle(i, i < kubernetes-1),
		})
	}
	for n := range images {
		image := v1alpha1.MachineImage{Name: fmt.Sprintf("image-%d", n)}
		for i := range perImage {
			image.Versions = append(image.Versions, v1alpha1.MachineImageVersion{
				ExpirableVersion: v1alpha1.ExpirableVersion{Version: fmt.Sprintf("1.%d.0", i), Lifecycle: lifecycle(i, true)},
				Architectures:    []string{"amd64"},
			})
		}
		spec.MachineImages = append(spec.MachineImages, image)
	}
	return spec
}

// percentile is the p-th percentile (0..1) of sorted durations, in ms.
func percentile(sorted []time.Duration, p float64) float64 {
	if len(sorted) == 0 {
		return 0
	}
	i := int(float64(len(sorted)-1) * p)
	return float64(sorted[i]) / float64(time.Millisecond)
}

// BenchmarkWakeUpLateness creates CloudProfiles of 200 Kubernetes versions
// whose supported stage starts at one of 10 whole seconds in the near future
// (20 versions each; the API stores start times in seconds) and watches the
// status: the lateness of a version is when a watch event first shows it
// supported, minus its start time. Reports p50 and p99 over all versions.
func BenchmarkWakeUpLateness(b *testing.B) {
	ctx := context.Background()
	watcher, err := client.NewWithWatch(restConfig, client.Options{Scheme: testScheme})
	if err != nil {
		b.Fatalf("create watch client: %v", err)
	}
	var lateness []time.Duration
	for range b.N {
		name := testenv.UniqueName("wakeup")
		t0 := time.Now().Truncate(time.Second).Add(3 * time.Second)
		spec := lifecycleProfile(200, 0, 0, func(i int) [4]time.Time {
			supported := t0.Add(time.Duration(i/20) * time.Second)
			return [4]time.Time{supported.Add(-time.Hour), supported, supported.Add(24 * time.Hour), supported.Add(48 * time.Hour)}
		})
		cp := &v1alpha1.CloudProfile{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: spec}
		w, err := watcher.Watch(ctx, &v1alpha1.CloudProfileList{}, client.MatchingFieldsSelector{Selector: fields.OneTermEqualSelector("metadata.name", name)})
		if err != nil {
			b.Fatalf("watch: %v", err)
		}
		if err := k8sClient.Create(ctx, cp); err != nil {
			b.Fatalf("create %s: %v", name, err)
		}
		seen := map[string]bool{}
		deadline := time.After(time.Until(t0.Add(30 * time.Second)))
	watch:
		for len(seen) < 200 {
			select {
			case ev, ok := <-w.ResultChan():
				if !ok {
					b.Fatalf("watch of %s closed", name)
				}
				now := time.Now()
				got, ok := ev.Object.(*v1alpha1.CloudProfile)
				if !ok || got.Status.Kubernetes == nil {
					continue
				}
				for i, v := range got.Status.Kubernetes.Versions {
					if v.Classification == v1alpha1.ClassificationSupported && !seen[v.Version] {
						seen[v.Version] = true
						lateness = append(lateness, now.Sub(spec.Kubernetes.Versions[i].Lifecycle[1].StartTime.Time))
					}
				}
			case <-deadline:
				break watch
			}
		}
		w.Stop()
		if len(seen) < 200 {
			b.Fatalf("%s: only %d of 200 versions became supported within 30s", name, len(seen))
		}
		_ = k8sClient.Delete(ctx, cp)
	}
	sort.Slice(lateness, func(i, j int) bool { return lateness[i] < lateness[j] })
	b.ReportMetric(percentile(lateness, 0.50), "p50-ms")
	b.ReportMetric(percentile(lateness, 0.99), "p99-ms")
}

// BenchmarkCloudProfileReconcile calls Reconcile of a CloudProfile with 500
// versions (100 Kubernetes, 4 images of 100) with 4-stage lifecycles, through
// a cached client as in the manager. The status is already current, so one
// op is the steady-state reconcile: read from the cache, validate, compute
// the status, find nothing to write.
func BenchmarkCloudProfileReconcile(b *testing.B) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	informers, err := cache.New(restConfig, cache.Options{Scheme: testScheme})
	if err != nil {
		b.Fatalf("create cache: %v", err)
	}
	go func() { _ = informers.Start(ctx) }()
	cached, err := client.New(restConfig, client.Options{Scheme: testScheme, Cache: &client.CacheOptions{Reader: informers}})
	if err != nil {
		b.Fatalf("create client: %v", err)
	}

	base := time.Now().Add(-50 * 24 * time.Hour).Truncate(time.Second)
	spec := lifecycleProfile(100, 4, 100, func(i int) [4]time.Time {
		preview := base.Add(time.Duration(i) * 24 * time.Hour)
		return [4]time.Time{preview, preview.Add(24 * time.Hour), preview.Add(30 * 24 * time.Hour), preview.Add(400 * 24 * time.Hour)}
	})
	cp := &v1alpha1.CloudProfile{ObjectMeta: metav1.ObjectMeta{Name: testenv.UniqueName("reconcile-cpu")}, Spec: spec}
	if err := k8sClient.Create(ctx, cp); err != nil {
		b.Fatalf("create: %v", err)
	}
	defer func() { _ = k8sClient.Delete(context.Background(), cp) }()

	r := &CloudProfileReconciler{ProfileStatusController{Client: cached, EventRecorder: &record.FakeRecorder{}, Clock: testClock}}
	req := ctrl.Request{NamespacedName: client.ObjectKeyFromObject(cp)}
	// Wait until the manager's controller has written the status and our
	// cache has it, so every timed reconcile is a no-op.
	deadline := time.Now().Add(30 * time.Second)
	for {
		var got v1alpha1.CloudProfile
		if err := cached.Get(ctx, req.NamespacedName, &got); err == nil && conditions.IsReady(&got) && got.Status.ObservedGeneration == got.Generation {
			break
		}
		if time.Now().After(deadline) {
			b.Fatalf("%s did not become Ready", cp.Name)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if _, err := r.Reconcile(ctx, req); err != nil {
		b.Fatalf("reconcile: %v", err)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		if _, err := r.Reconcile(ctx, req); err != nil {
			b.Fatalf("reconcile: %v", err)
		}
	}
}
