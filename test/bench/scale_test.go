package bench

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"runtime/pprof"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"text/tabwriter"
	"time"

	"github.com/fluxcd/pkg/apis/meta"
	"github.com/fluxcd/pkg/runtime/conditions"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	crmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	v1alpha1 "github.com/profilesync/profilesync/api/v1alpha1"
	"github.com/profilesync/profilesync/internal/render/profile"
	"github.com/profilesync/profilesync/test/gitserver"
)

// cloudProfilesVariable sets the landscape's size: this many CloudProfiles
// of 100 Kubernetes versions and 10 images of 50 versions, and ten times as
// many NamespacedCloudProfiles in 10 namespaces. The default is 10; the
// full scale of issue 7 is 100 (docs/performance.md has what that needs).
const cloudProfilesVariable = "PROFILESYNC_BENCH_CLOUDPROFILES"

func scaleLandscape(b *testing.B) landscape {
	l := landscape{cloudProfiles: 10, kubernetesVersions: 100, images: 10, imageVersions: 50,
		namespaces: 10, base: time.Now().Add(-300 * day).Truncate(day)}
	if v := os.Getenv(cloudProfilesVariable); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			b.Fatalf("%s=%q: want a positive number", cloudProfilesVariable, v)
		}
		l.cloudProfiles = n
	}
	l.namespaced = 10 * l.cloudProfiles
	return l
}

const (
	// syncInterval is the ProfileSyncs' spec.interval; S3 idles for
	// idleIntervals of it.
	syncInterval  = 10 * time.Second
	idleIntervals = 10
	// pushes is how many commits S4 pushes.
	pushes = 20
	// transitions is how many stage starts S5 schedules over
	// transitionWindow, on transitionProfiles CloudProfiles.
	transitions        = 1000
	transitionProfiles = 50
	transitionWindow   = 60 * time.Second
	webhookToken       = "bench-webhook-token"
)

// row is one line of the printed table.
type row struct{ scenario, metric, value, target string }

// BenchmarkScale runs the scenarios S1 to S5 of docs/performance.md once, in
// order, against one control plane and manager, reports every figure with
// b.ReportMetric and prints the table.
func BenchmarkScale(b *testing.B) {
	if b.N > 1 {
		// One run takes minutes; the first call already measured it.
		b.Skip("BenchmarkScale runs once")
	}
	useSharedControlPlane(b)
	ctx := context.Background()
	var rows []row
	report := func(scenario, metric string, value float64, unit, target string) {
		b.ReportMetric(value, scenario+"-"+unit)
		r := row{scenario, metric, strconv.FormatFloat(value, 'f', 3, 64) + " " + unit, target}
		rows = append(rows, r)
		// At once, so that a run cut short still says what it measured.
		fmt.Fprintf(os.Stdout, "%s: %s: %s (target %s)\n", r.scenario, r.metric, r.value, r.target)
	}

	server, err := gitserver.New(b.TempDir(), gitserver.Options{})
	if err != nil {
		b.Fatalf("start git server: %v", err)
	}
	defer server.Close()
	for _, ns := range []string{clusterProfilesNamespace} {
		ensureNamespace(b, ns)
	}
	l := scaleLandscape(b)
	for n := range l.namespaces {
		ensureNamespace(b, namespaceName(n))
	}
	files := l.files()
	if _, err := server.CreateRepo("landscape", files); err != nil {
		b.Fatalf("create repository: %v", err)
	}
	ensureWebhookSecret(b)

	// S1: from ProfileSync creation to every object Ready.
	runtime.GC()
	debug.FreeOSMemory()
	resetPeakRSS(b, "self")
	writes := env.writes.Load()
	start := time.Now()
	landscapeSync := newProfileSync("landscape", server.RepoURL("landscape"), overlayPath)
	if err := env.client.Create(ctx, landscapeSync); err != nil {
		b.Fatalf("create ProfileSync: %v", err)
	}
	waitAllReady(b, l.cloudProfiles, l.namespaced, 15*time.Minute)
	s1 := time.Since(start)
	s1Writes := env.writes.Load() - writes
	peak := peakRSSMiB(b, "self")
	objectsLabel := fmt.Sprintf("%d objects", l.cloudProfiles+l.namespaced)
	report("S1", "ProfileSync created → all "+objectsLabel+" Ready", s1.Seconds(), "s", "≤ 1.5 × S2")
	report("S1", "manager peak RSS (VmHWM, in-process)", peak, "MiB", "≤ 200 MiB")
	report("S1", "manager API writes", float64(s1Writes), "writes", "")

	// S2: the same rendered objects, server-side applied by a plain loop
	// with the manager's client rate limits, under other names so that each
	// apply creates, as in S1.
	rendered, err := renderLandscape(b.TempDir(), files)
	if err != nil {
		b.Fatalf("render: %v", err)
	}
	floor := floorObjects(b, rendered.Objects, "-s2")
	start = time.Now()
	for _, u := range floor {
		if err := env.floorClient.Apply(ctx, client.ApplyConfigurationFromUnstructured(u), client.FieldOwner("bench-floor"), client.ForceOwnership); err != nil {
			b.Fatalf("apply %s: %v", u.GetName(), err)
		}
	}
	s2 := time.Since(start)
	report("S2", "plain server-side apply loop of the same "+objectsLabel, s2.Seconds(), "s", "floor")
	report("S2", "S1 / S2", s1.Seconds()/s2.Seconds(), "ratio", "≤ 1.5")

	// Let the floor objects' status settle before idling.
	waitAllReady(b, 2*l.cloudProfiles, 2*l.namespaced, 10*time.Minute)

	// S3: idle intervals without a commit.
	time.Sleep(2 * time.Second)
	writes = env.writes.Load()
	cpu := cpuSeconds()
	syncs := reconciles(b, "profilesync")
	statusReconciles := reconciles(b, "cloudprofile") + reconciles(b, "namespacedcloudprofile")
	stopProfile := profileIdle(b)
	time.Sleep(idleIntervals * syncInterval)
	stopProfile()
	idleCPU := cpuSeconds() - cpu
	idleSyncs := reconciles(b, "profilesync") - syncs
	report("S3", fmt.Sprintf("API writes during %d idle intervals of %s", idleIntervals, syncInterval), float64(env.writes.Load()-writes), "writes", "0")
	report("S3", "manager CPU during them", idleCPU, "cpu-s", "")
	report("S3", "syncs run during them", idleSyncs, "syncs", "")
	report("S3", "manager CPU per idle interval", idleCPU/idleIntervals, "cpu-s-per-interval", "< 0.1")
	report("S3", "profile status reconciles during them (no transition is due)",
		reconciles(b, "cloudprofile")+reconciles(b, "namespacedcloudprofile")-statusReconciles, "status-reconciles", "0")

	// S4: push, call the webhook, see the status change. On its own
	// ProfileSync of one CloudProfile of the landscape's size with 10
	// NamespacedCloudProfiles: at the scale of S1, every sync of a new
	// revision re-renders the whole overlay (see S3), which the push
	// latency would only repeat.
	p50, p99 := pushLatency(b, server)
	report("S4", fmt.Sprintf("push + webhook → status visible, %d pushes, p50", pushes), p50, "ms-p50", "")
	report("S4", "p99", p99, "ms-p99", "≤ 1000 ms")

	// S5: stage starts spread over a minute.
	p50, p99, between := transitionLateness(b)
	report("S5", fmt.Sprintf("%d stage starts over %s → status visible, p50", transitions, transitionWindow), p50, "ms-p50", "")
	report("S5", "p99", p99, "ms-p99", "≤ 1000 ms")
	report("S5", "reconciles between transitions", between, "reconciles", "0")

	printTable(rows)
}

// profileIdle starts a CPU profile of this process (the manager runs in
// it) into scale-idle-manager.pprof of the directory profileVariable names,
// and returns what stops it; without the variable it does nothing. The idle
// phase is where it tells most: every CPU-second there is a sync of a
// revision that did not change.
func profileIdle(b *testing.B) (stop func()) {
	dir := os.Getenv(profileVariable)
	if dir == "" {
		return func() {}
	}
	f, err := os.Create(filepath.Join(dir, "scale-idle-manager.pprof"))
	if err != nil {
		b.Fatalf("%s: %v", profileVariable, err)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		_ = f.Close()
		b.Fatalf("start the idle phase's CPU profile: %v", err)
	}
	return func() {
		pprof.StopCPUProfile()
		if err := f.Close(); err != nil {
			b.Errorf("write the idle phase's CPU profile: %v", err)
		}
	}
}

func printTable(rows []row) {
	var buf bytes.Buffer
	w := tabwriter.NewWriter(&buf, 0, 0, 2, ' ', 0)
	fmt.Fprintln(w, "scenario\tmetric\tvalue\ttarget")
	for _, r := range rows {
		fmt.Fprintf(w, "%s\t%s\t%s\t%s\n", r.scenario, r.metric, r.value, r.target)
	}
	_ = w.Flush()
	fmt.Fprint(os.Stdout, "\n"+buf.String())
}

func ensureNamespace(b *testing.B, name string) {
	err := env.client.Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		b.Fatalf("create namespace %s: %v", name, err)
	}
}

func newProfileSync(name, url, path string) *v1alpha1.ProfileSync {
	return &v1alpha1.ProfileSync{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: clusterProfilesNamespace},
		Spec: v1alpha1.ProfileSyncSpec{
			URL: url, Path: path,
			Interval: metav1.Duration{Duration: syncInterval},
			Timeout:  &metav1.Duration{Duration: 5 * time.Minute},
			Webhook:  &v1alpha1.ProfileSyncWebhook{SecretRef: meta.LocalObjectReference{Name: "webhook"}},
		},
	}
}

// waitAllReady waits until the manager's cache holds at least the given
// numbers of CloudProfiles and NamespacedCloudProfiles, all Ready for their
// generation: what the manager's watches see, without loading the API
// server with lists of every large object.
func waitAllReady(b *testing.B, cloudProfiles, namespaced int, timeout time.Duration) {
	ctx := context.Background()
	reader := env.manager.GetCache()
	deadline := time.Now().Add(timeout)
	for {
		var cps v1alpha1.CloudProfileList
		var ncps v1alpha1.NamespacedCloudProfileList
		if err := reader.List(ctx, &cps, client.UnsafeDisableDeepCopy); err != nil {
			b.Fatalf("list CloudProfiles: %v", err)
		}
		if err := reader.List(ctx, &ncps, client.UnsafeDisableDeepCopy); err != nil {
			b.Fatalf("list NamespacedCloudProfiles: %v", err)
		}
		ready := 0
		for i := range cps.Items {
			if isReady(&cps.Items[i], cps.Items[i].Status.ObservedGeneration) {
				ready++
			}
		}
		readyNamespaced := 0
		for i := range ncps.Items {
			if isReady(&ncps.Items[i], ncps.Items[i].Status.ObservedGeneration) {
				readyNamespaced++
			}
		}
		if ready >= cloudProfiles && readyNamespaced >= namespaced {
			return
		}
		if time.Now().After(deadline) {
			b.Fatalf("after %s: %d of %d CloudProfiles and %d of %d NamespacedCloudProfiles Ready", timeout, ready, cloudProfiles, readyNamespaced, namespaced)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func isReady(obj interface {
	conditions.Getter
	GetGeneration() int64
}, observed int64) bool {
	return observed == obj.GetGeneration() && conditions.IsReady(obj)
}

// floorObjects are the rendered objects as the sync would apply them (spec,
// labels, annotations; no status), their names (and their parents') with
// suffix appended.
func floorObjects(b *testing.B, objects []profile.Object, suffix string) []*unstructured.Unstructured {
	var out []*unstructured.Unstructured
	for _, o := range objects {
		var typed k8sruntime.Object
		var labels map[string]string
		switch {
		case o.CloudProfile != nil:
			cp := &v1alpha1.CloudProfile{Spec: o.CloudProfile.Spec}
			cp.SetGroupVersionKind(v1alpha1.GroupVersion.WithKind(v1alpha1.CloudProfileKind))
			cp.Name = o.Name() + suffix
			labels = o.CloudProfile.Labels
			typed = cp
		default:
			ncp := &v1alpha1.NamespacedCloudProfile{Spec: o.NamespacedCloudProfile.Spec}
			ncp.SetGroupVersionKind(v1alpha1.GroupVersion.WithKind(v1alpha1.NamespacedCloudProfileKind))
			ncp.Name, ncp.Namespace = o.Name()+suffix, o.Namespace()
			ncp.Spec.Parent.Name += suffix
			labels = o.NamespacedCloudProfile.Labels
			typed = ncp
		}
		content, err := k8sruntime.DefaultUnstructuredConverter.ToUnstructured(typed)
		if err != nil {
			b.Fatalf("convert %s: %v", o.Ref(), err)
		}
		delete(content, "status")
		u := &unstructured.Unstructured{Object: content}
		unstructured.RemoveNestedField(u.Object, "metadata", "creationTimestamp")
		u.SetLabels(labels)
		out = append(out, u)
	}
	return out
}

// resetPeakRSS resets VmHWM of a process, "self" or a PID (Linux:
// clear_refs 5).
func resetPeakRSS(b *testing.B, process string) {
	if err := os.WriteFile("/proc/"+process+"/clear_refs", []byte("5"), 0); err != nil {
		b.Logf("cannot reset the peak RSS of process %s, it counts from the process start: %v", process, err)
	}
}

// peakRSSMiB is VmHWM of a process, "self" or a PID.
func peakRSSMiB(b *testing.B, process string) float64 {
	status, err := os.ReadFile("/proc/" + process + "/status")
	if err != nil {
		b.Fatalf("read the status of process %s: %v", process, err)
	}
	for _, line := range strings.Split(string(status), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			kb, err := strconv.ParseFloat(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), 64)
			if err != nil {
				b.Fatalf("parse VmHWM %q: %v", rest, err)
			}
			return float64(int(kb/1024*10)) / 10
		}
	}
	b.Fatalf("no VmHWM in the status of process %s", process)
	return 0
}

// cpuSeconds is the user and system CPU time of this process.
func cpuSeconds() float64 {
	var usage syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &usage); err != nil {
		return 0
	}
	return float64(usage.Utime.Nano()+usage.Stime.Nano()) / 1e9
}

// reconciles is how many reconciles the named controller ran so far,
// from controller-runtime's controller_runtime_reconcile_total.
func reconciles(b *testing.B, controller string) float64 {
	families, err := crmetrics.Registry.Gather()
	if err != nil {
		b.Fatalf("gather metrics: %v", err)
	}
	var total float64
	for _, f := range families {
		if f.GetName() != "controller_runtime_reconcile_total" {
			continue
		}
		for _, m := range f.GetMetric() {
			for _, label := range m.GetLabel() {
				if label.GetName() == "controller" && label.GetValue() == controller {
					total += m.GetCounter().GetValue()
				}
			}
		}
	}
	return total
}

// pushLatency pushes commits that move the expiry of one Kubernetes version
// and calls the webhook after each; the latency is from the call to the
// watch event that shows the version's new next transition time.
func pushLatency(b *testing.B, server *gitserver.Server) (p50, p99 float64) {
	ctx := context.Background()
	l := scaleLandscape(b)
	l.cloudProfiles, l.namespaced, l.namespaces = 1, 10, 1
	files := l.files()
	// Its own names: prefix every object.
	for name, content := range files {
		files[name] = strings.ReplaceAll(strings.ReplaceAll(content, "bench-cp-", "push-cp-"), "bench-ncp-", "push-ncp-")
	}
	if _, err := server.CreateRepo("push", files); err != nil {
		b.Fatalf("create repository: %v", err)
	}
	pushSync := newProfileSync("push", server.RepoURL("push"), overlayPath)
	pushSync.Spec.Interval.Duration = time.Hour
	if err := env.client.Create(ctx, pushSync); err != nil {
		b.Fatalf("create ProfileSync: %v", err)
	}
	watcher, err := client.NewWithWatch(env.restConfig, client.Options{Scheme: env.scheme})
	if err != nil {
		b.Fatalf("create watch client: %v", err)
	}
	name := "push-cp-000"
	var latencies []time.Duration
	for k := 0; k <= pushes; k++ {
		shift := time.Duration(k) * time.Hour
		want := l.stageTimes(pushedVersion)[3].Add(shift)
		w, err := watcher.Watch(ctx, &v1alpha1.CloudProfileList{}, client.MatchingFields{"metadata.name": name})
		if err != nil {
			b.Fatalf("watch: %v", err)
		}
		var start time.Time
		if k > 0 {
			content := strings.ReplaceAll(l.cloudProfileYAML(0, shift), "bench-cp-", "push-cp-")
			if _, err := server.Commit("push", map[string]string{cloudProfilesFile(0): content}, fmt.Sprintf("push %d", k)); err != nil {
				b.Fatalf("commit: %v", err)
			}
			start = time.Now()
			callWebhook(b, env.receiverURL, "push")
		}
		deadline := time.After(2 * time.Minute)
	wait:
		for {
			select {
			case ev, ok := <-w.ResultChan():
				if !ok {
					b.Fatal("watch closed")
				}
				cp, ok := ev.Object.(*v1alpha1.CloudProfile)
				if !ok || cp.Status.Kubernetes == nil || len(cp.Status.Kubernetes.Versions) <= pushedVersion {
					continue
				}
				next := cp.Status.Kubernetes.Versions[pushedVersion].NextTransitionTime
				if next != nil && next.Time.Equal(want) && conditions.IsReady(cp) {
					break wait
				}
			case <-deadline:
				b.Fatalf("push %d: status of %s did not show the new expiry within 2 minutes", k, name)
			}
		}
		w.Stop()
		if k > 0 {
			latencies = append(latencies, time.Since(start))
		}
	}
	return percentiles(latencies)
}

// callWebhook calls the receiver at receiverURL for the ProfileSync name,
// as GitHub does for a push.
func callWebhook(b *testing.B, receiverURL, name string) {
	body := []byte(`{"ref":"refs/heads/main"}`)
	mac := hmac.New(sha256.New, []byte(webhookToken))
	mac.Write(body)
	req, err := http.NewRequest(http.MethodPost, receiverURL+"/hook/"+clusterProfilesNamespace+"/"+name, bytes.NewReader(body))
	if err != nil {
		b.Fatal(err)
	}
	req.Header.Set("X-Hub-Signature-256", "sha256="+hex.EncodeToString(mac.Sum(nil)))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		b.Fatalf("call webhook: %v", err)
	}
	_ = resp.Body.Close()
	if resp.StatusCode != http.StatusAccepted {
		b.Fatalf("webhook answered %s", resp.Status)
	}
}

// transitionLateness creates transitionProfiles CloudProfiles whose
// versions' supported stages start at whole seconds spread over
// transitionWindow, transitions in all, and measures when a watch first shows
// each version supported. between is the number of CloudProfile reconciles in
// the window beyond one per distinct start time of each profile.
func transitionLateness(b *testing.B) (p50, p99, between float64) {
	ctx := context.Background()
	perProfile := transitions / transitionProfiles
	t0 := time.Now().Truncate(time.Second).Add(15 * time.Second)
	type key struct{ profile, version string }
	starts := map[key]time.Time{}
	wakeUps := 0
	watcher, err := client.NewWithWatch(env.restConfig, client.Options{Scheme: env.scheme})
	if err != nil {
		b.Fatalf("create watch client: %v", err)
	}
	w, err := watcher.Watch(ctx, &v1alpha1.CloudProfileList{}, client.MatchingLabels{"bench": "transitions"})
	if err != nil {
		b.Fatalf("watch: %v", err)
	}
	defer w.Stop()
	for p := range transitionProfiles {
		name := fmt.Sprintf("transition-%02d", p)
		cp := &v1alpha1.CloudProfile{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"bench": "transitions"}},
			Spec: v1alpha1.CloudProfileSpec{
				Type: "bench",
				MachineImages: []v1alpha1.MachineImage{{Name: "ubuntu", Versions: []v1alpha1.MachineImageVersion{
					{ExpirableVersion: v1alpha1.ExpirableVersion{Version: "24.4.0"}},
				}}},
				MachineTypes: []v1alpha1.MachineType{{
					Name: "m5.large", CPU: resource.MustParse("2"), GPU: resource.MustParse("0"), Memory: resource.MustParse("8Gi"),
				}},
				Regions: []v1alpha1.Region{{Name: "eu-1"}},
			}}
		distinct := map[time.Time]bool{}
		for v := range perProfile {
			at := t0.Add(time.Duration((p*7+v*3)%int(transitionWindow/time.Second)) * time.Second)
			distinct[at] = true
			version := fmt.Sprintf("1.%d.0", v)
			starts[key{name, version}] = at
			stages := []v1alpha1.LifecycleStage{
				{Classification: v1alpha1.ClassificationPreview},
				{Classification: v1alpha1.ClassificationSupported, StartTime: &metav1.Time{Time: at}},
				{Classification: v1alpha1.ClassificationDeprecated, StartTime: &metav1.Time{Time: at.Add(30 * day)}},
				{Classification: v1alpha1.ClassificationExpired, StartTime: &metav1.Time{Time: at.Add(400 * day)}},
			}
			if v == perProfile-1 {
				stages = stages[:3]
			}
			cp.Spec.Kubernetes.Versions = append(cp.Spec.Kubernetes.Versions, v1alpha1.ExpirableVersion{Version: version, Lifecycle: stages})
		}
		wakeUps += len(distinct)
		if err := env.client.Create(ctx, cp); err != nil {
			b.Fatalf("create %s: %v", name, err)
		}
	}
	// Every profile has had its first reconcile well before t0.
	waitForCount := func() float64 {
		deadline := time.Now().Add(10 * time.Second)
		for time.Now().Before(deadline) {
			var cps v1alpha1.CloudProfileList
			_ = env.manager.GetCache().List(ctx, &cps, client.MatchingLabels{"bench": "transitions"}, client.UnsafeDisableDeepCopy)
			ready := 0
			for i := range cps.Items {
				if conditions.IsReady(&cps.Items[i]) {
					ready++
				}
			}
			if ready == transitionProfiles {
				break
			}
			time.Sleep(50 * time.Millisecond)
		}
		return reconciles(b, "cloudprofile")
	}
	before := waitForCount()
	if time.Now().After(t0.Add(-time.Second)) {
		b.Fatalf("the profiles were not Ready before their first transition")
	}

	var lateness []time.Duration
	seen := map[key]bool{}
	deadline := time.After(time.Until(t0.Add(transitionWindow + 30*time.Second)))
watch:
	for len(seen) < len(starts) {
		select {
		case ev, ok := <-w.ResultChan():
			if !ok {
				b.Fatal("watch closed")
			}
			now := time.Now()
			cp, ok := ev.Object.(*v1alpha1.CloudProfile)
			if !ok || cp.Status.Kubernetes == nil {
				continue
			}
			for _, v := range cp.Status.Kubernetes.Versions {
				k := key{cp.Name, v.Version}
				if v.Classification == v1alpha1.ClassificationSupported && !seen[k] {
					seen[k] = true
					lateness = append(lateness, now.Sub(starts[k]))
				}
			}
		case <-deadline:
			break watch
		}
	}
	if len(seen) < len(starts) {
		b.Fatalf("only %d of %d versions became supported", len(seen), len(starts))
	}
	// Let a stray extra reconcile show up before counting.
	time.Sleep(2 * time.Second)
	between = reconciles(b, "cloudprofile") - before - float64(wakeUps)
	p50, p99 = percentiles(lateness)
	return p50, p99, between
}

func percentiles(d []time.Duration) (p50, p99 float64) {
	if len(d) == 0 {
		return 0, 0
	}
	sort.Slice(d, func(i, j int) bool { return d[i] < d[j] })
	ms := func(p float64) float64 {
		return float64(d[int(float64(len(d)-1)*p)].Milliseconds())
	}
	return ms(0.50), ms(0.99)
}
