package bench

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime/pprof"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	crmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	v1alpha1 "github.com/profilesync/profilesync/api/v1alpha1"
	"github.com/profilesync/profilesync/test/gitserver"
	"github.com/profilesync/profilesync/test/procstat"
)

// pushPrefix names the objects of BenchmarkPush's landscape, so that it can
// run beside BenchmarkScale's in one control plane.
const pushPrefix = "push-"

// BenchmarkPush measures what a push to the bench landscape costs (issue 36,
// "A push pays for what changed"): one ProfileSync of the whole landscape
// (10 CloudProfiles of 600 versions, 100 NamespacedCloudProfiles, 2.3 MB by
// default), then pushes that each move one version's expiry in the first
// CloudProfile and call the push webhook. Per push it takes the time from
// the webhook call until a watch shows the new spec, the profile's status,
// and the status of every one of its NamespacedCloudProfiles; the manager's
// CPU (in-process, with the build's child processes); the manager's API
// requests by verb and resource; the reconciles of each controller; and the
// sync's phases. With
// PROFILESYNC_BENCH_PROFILE set it writes the CPU profile of the process
// over the pushes (push-manager.pprof: the manager, the Git server's
// client side and the benchmark's watches) and kube-apiserver's over their
// first 120 s (push-kube-apiserver.pprof).
func BenchmarkPush(b *testing.B) {
	if b.N > 1 {
		b.Skip("BenchmarkPush runs once")
	}
	useSharedControlPlane(b)
	ctx := context.Background()
	server, err := gitserver.New(b.TempDir(), gitserver.Options{})
	if err != nil {
		b.Fatalf("start git server: %v", err)
	}
	defer server.Close()
	ensureNamespace(b, clusterProfilesNamespace)
	l := scaleLandscape(b)
	for n := range l.namespaces {
		ensureNamespace(b, namespaceName(n))
	}
	rename := func(content string) string {
		return strings.ReplaceAll(strings.ReplaceAll(content, "bench-cp-", pushPrefix+"cp-"), "bench-ncp-", pushPrefix+"ncp-")
	}
	files := l.files()
	for name, content := range files {
		files[name] = rename(content)
	}
	if _, err := server.CreateRepo("push-landscape", files); err != nil {
		b.Fatalf("create repository: %v", err)
	}
	ensureWebhookSecret(b)
	observe, err := newObserver(shared.env, &v1alpha1.CloudProfile{}, &v1alpha1.NamespacedCloudProfile{})
	if err != nil {
		b.Fatalf("watch the profiles: %v", err)
	}
	defer observe.cancel()

	sync := newProfileSync("push-landscape", server.RepoURL("push-landscape"), overlayPath)
	sync.Spec.Interval.Duration = time.Hour
	start := time.Now()
	if err := env.client.Create(ctx, sync); err != nil {
		b.Fatalf("create ProfileSync: %v", err)
	}
	name := pushPrefix + "cp-000"
	children := childrenOf(l, 0)
	observe.waitAll(b, map[string]func() bool{"every profile Ready": func() bool {
		return pushProfilesReady(observe) == l.cloudProfiles+l.namespaced
	}}, 15*time.Minute)
	b.Logf("first sync: every profile Ready after %s", time.Since(start).Round(time.Millisecond))
	time.Sleep(2 * time.Second)

	if dir := os.Getenv(profileVariable); dir != "" {
		// kube-apiserver's over the first pushes (its endpoint takes a
		// fixed time).
		apiServerClient, err := rest.HTTPClientFor(env.restConfig)
		if err != nil {
			b.Fatalf("kube-apiserver client: %v", err)
		}
		profiled := make(chan struct{})
		go func() {
			defer close(profiled)
			saveProfile(b, apiServerClient, strings.TrimSuffix(env.restConfig.Host, "/")+"/debug/pprof/profile?seconds=120",
				filepath.Join(dir, "push-kube-apiserver.pprof"))
		}()
		defer func() { <-profiled }()
		f, err := os.Create(filepath.Join(dir, "push-manager.pprof"))
		if err != nil {
			b.Fatalf("create CPU profile: %v", err)
		}
		if err := pprof.StartCPUProfile(f); err != nil {
			b.Fatalf("start CPU profile: %v", err)
		}
		defer func() {
			pprof.StopCPUProfile()
			_ = f.Close()
		}()
	}

	var toSpec, toStatus, toChildren []time.Duration
	requestsBefore := env.requests.snapshot()
	phasesBefore := syncPhaseSums(b)
	controllerNames := []string{"profilesync", "cloudprofile", "namespacedcloudprofile"}
	reconcilesBefore := map[string]float64{}
	for _, c := range controllerNames {
		reconcilesBefore[c] = reconciles(b, c)
	}
	cpuBefore := processCPU()
	apiServer, err := procstat.ChildProcess("kube-apiserver")
	if err != nil {
		b.Fatalf("find kube-apiserver: %v", err)
	}
	etcd, err := procstat.ChildProcess("etcd")
	if err != nil {
		b.Fatalf("find etcd: %v", err)
	}
	processUsage(b, apiServer)
	processUsage(b, etcd)
	for k := 1; k <= pushes; k++ {
		shift := time.Duration(k) * time.Hour
		want := l.stageTimes(pushedVersion)[3].Add(shift)
		if _, err := server.Commit("push-landscape", map[string]string{cloudProfilesFile(0): rename(l.cloudProfilesFileYAML(0, shift))}, fmt.Sprintf("push %d", k)); err != nil {
			b.Fatalf("commit: %v", err)
		}
		pushed := time.Now()
		callWebhook(b, env.receiverURL, "push-landscape")
		conditions := map[string]func() bool{
			"spec":   func() bool { return observe.expiry(name, false).Equal(want) },
			"status": func() bool { return observe.expiry(name, true).Equal(want) },
			"children": func() bool {
				for _, child := range children {
					if !observe.namespacedExpiry(child, want) {
						return false
					}
				}
				return true
			},
		}
		reached := observe.waitAll(b, conditions, 2*time.Minute)
		toSpec = append(toSpec, reached["spec"].Sub(pushed))
		toStatus = append(toStatus, reached["status"].Sub(pushed))
		toChildren = append(toChildren, reached["children"].Sub(pushed))
		// Let the push's last writes land before the next one.
		time.Sleep(time.Second)
	}
	cpu := processCPU() - cpuBefore
	apiServerCPU, _ := processUsage(b, apiServer)
	etcdCPU, _ := processUsage(b, etcd)
	requests := countsSince(requestsBefore, env.requests.snapshot())
	phases := phasesSince(phasesBefore, syncPhaseSums(b))
	var reconciled []string
	for _, c := range controllerNames {
		reconciled = append(reconciled, fmt.Sprintf("%s %.0f", c, reconciles(b, c)-reconcilesBefore[c]))
	}

	var rows []row
	report := func(metric string, value float64, unit, target string) {
		b.ReportMetric(value, unit)
		rows = append(rows, row{"push", metric, fmt.Sprintf("%.3f %s", value, unit), target})
	}
	for _, m := range []struct {
		metric string
		d      []time.Duration
		unit   string
	}{{"push → spec visible", toSpec, "spec"}, {"push → status visible", toStatus, "status"}, {"push → every child's status visible", toChildren, "children"}} {
		p50, p99 := percentiles(m.d)
		report(m.metric+", p50", p50, "ms-"+m.unit+"-p50", "")
		report(m.metric+", p99", p99, "ms-"+m.unit+"-p99", "≤ 1000 ms")
	}
	report("manager CPU per push (with the build's child processes)", cpu/pushes, "cpu-s/push", "")
	report("kube-apiserver CPU per push", apiServerCPU/pushes, "apiserver-cpu-s/push", "")
	report("etcd CPU per push", etcdCPU/pushes, "etcd-cpu-s/push", "")
	printTable(rows)
	fmt.Fprintf(os.Stdout, "\nthe manager's requests over %d pushes: %s\nreconciles: %s\nsync phases over them: %s\n",
		pushes, requests, strings.Join(reconciled, ", "), phases)
}

// ensureWebhookSecret creates the push webhook's Secret once.
func ensureWebhookSecret(b *testing.B) {
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "webhook", Namespace: clusterProfilesNamespace},
		StringData: map[string]string{"token": webhookToken}}
	if err := env.client.Create(context.Background(), secret); err != nil && !apierrors.IsAlreadyExists(err) {
		b.Fatalf("create webhook Secret: %v", err)
	}
}

// childrenOf are the names of the NamespacedCloudProfiles of the i-th
// CloudProfile of BenchmarkPush's landscape.
func childrenOf(l landscape, i int) []client.ObjectKey {
	var keys []client.ObjectKey
	for j := i; j < l.namespaced; j += l.cloudProfiles {
		keys = append(keys, client.ObjectKey{Namespace: namespaceName(j % l.namespaces), Name: fmt.Sprintf("%sncp-%04d", pushPrefix, j)})
	}
	return keys
}

// pushProfilesReady counts BenchmarkPush's profiles Ready for their
// generation.
func pushProfilesReady(o *observer) int {
	var cps v1alpha1.CloudProfileList
	var ncps v1alpha1.NamespacedCloudProfileList
	ctx := context.Background()
	if o.cache.List(ctx, &cps, client.UnsafeDisableDeepCopy) != nil || o.cache.List(ctx, &ncps, client.UnsafeDisableDeepCopy) != nil {
		return 0
	}
	n := 0
	for i := range cps.Items {
		if strings.HasPrefix(cps.Items[i].Name, pushPrefix) && isReady(&cps.Items[i], cps.Items[i].Status.ObservedGeneration) {
			n++
		}
	}
	for i := range ncps.Items {
		if strings.HasPrefix(ncps.Items[i].Name, pushPrefix) && isReady(&ncps.Items[i], ncps.Items[i].Status.ObservedGeneration) {
			n++
		}
	}
	return n
}

// namespacedExpiry tells whether the NamespacedCloudProfile key is Ready for
// its generation with the pushed version expiring at want in its merged
// profile (status.cloudProfileSpec).
func (o *observer) namespacedExpiry(key client.ObjectKey, want time.Time) bool {
	var ncp v1alpha1.NamespacedCloudProfile
	if o.cache.Get(context.Background(), key, &ncp) != nil || !isReady(&ncp, ncp.Status.ObservedGeneration) {
		return false
	}
	merged := ncp.Status.CloudProfileSpec
	if merged == nil || len(merged.Kubernetes.Versions) <= pushedVersion {
		return false
	}
	for _, stage := range merged.Kubernetes.Versions[pushedVersion].Lifecycle {
		if stage.Classification == v1alpha1.ClassificationExpired && stage.StartTime != nil {
			return stage.StartTime.Time.Equal(want)
		}
	}
	return false
}

// processCPU is the CPU time of this process and of its children that
// have ended (the builds' child processes).
func processCPU() float64 {
	var children syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_CHILDREN, &children); err != nil {
		return cpuSeconds()
	}
	return cpuSeconds() + float64(children.Utime.Nano()+children.Stime.Nano())/1e9
}

// syncPhaseSums sums profilesync_sync_duration_seconds by phase, from the
// in-process registry.
func syncPhaseSums(b *testing.B) map[string]float64 {
	families, err := crmetrics.Registry.Gather()
	if err != nil {
		b.Fatalf("gather metrics: %v", err)
	}
	sums := map[string]float64{}
	for _, f := range families {
		if f.GetName() != "profilesync_sync_duration_seconds" {
			continue
		}
		for _, m := range f.GetMetric() {
			for _, label := range m.GetLabel() {
				if label.GetName() == "phase" {
					sums[label.GetValue()] += m.GetHistogram().GetSampleSum()
				}
			}
		}
	}
	return sums
}

// phasesSince lists the seconds spent per phase between two syncPhaseSums.
func phasesSince(before, after map[string]float64) string {
	var parts []string
	for phase, s := range after {
		if d := s - before[phase]; d > 0 {
			parts = append(parts, fmt.Sprintf("%s %.2fs", phase, d))
		}
	}
	sort.Strings(parts)
	return strings.Join(parts, ", ")
}
