package bench

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
	"text/tabwriter"
	"time"

	"github.com/fluxcd/pkg/apis/meta"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	v1alpha1 "github.com/profilesync/profilesync/api/v1alpha1"
	"github.com/profilesync/profilesync/test/gitserver"
	"github.com/profilesync/profilesync/test/procstat"
	"github.com/profilesync/profilesync/test/testenv"
)

// The side-by-side benchmark's settings, from the environment.
const (
	// fluxVariable names the directory `make flux` fills: Flux's
	// source-controller and kustomize-controller binaries and their CRDs in
	// crds/. Without it BenchmarkSideBySide is skipped, so `make bench` runs
	// without Flux.
	fluxVariable = "PROFILESYNC_FLUX"
	// runsVariable is how many times each system runs (default 3); the
	// table shows the medians.
	runsVariable = "PROFILESYNC_BENCH_RUNS"
	// idleVariable is how long the idle phase lasts (a Go duration, default
	// 2m).
	idleVariable = "PROFILESYNC_BENCH_IDLE"
	// systemsVariable restricts the systems that run, comma-separated out
	// of floor, flux and profilesync (default all three): the full-scale run
	// measures ProfileSync alone.
	systemsVariable = "PROFILESYNC_BENCH_SYSTEMS"
	// pushesVariable is how many commits each system follows (default 10).
	pushesVariable = "PROFILESYNC_BENCH_PUSHES"
	// profileVariable names a directory that receives CPU profiles of
	// kube-apiserver and the manager over the first 30 s after each
	// system's sync object is created (<system>-<run>-<process>.pprof), to
	// see where the work goes.
	profileVariable = "PROFILESYNC_BENCH_PROFILE"
)

const (
	floorSystem       = "floor"
	fluxSystem        = "flux"
	profileSyncSystem = "profilesync"

	// sideBySideInterval is both systems' sync interval, as in Flux's
	// documentation examples.
	sideBySideInterval = time.Minute
	fluxNamespace      = "flux-system"
)

var (
	kustomizationGVK = schema.GroupVersionKind{Group: "kustomize.toolkit.fluxcd.io", Version: "v1", Kind: "Kustomization"}
	gitRepositoryGVK = schema.GroupVersionKind{Group: "source.toolkit.fluxcd.io", Version: "v1", Kind: "GitRepository"}
)

// systemRun is what one run of one system measured. Durations count from
// the creation of the sync object (the floor: from its first apply).
type systemRun struct {
	exists, syncReady, profilesReady time.Duration
	// requests are kube-apiserver's requests for the profiles until done,
	// by verb and resource, for the log of the run.
	requests string
	// idleRequests are the profile requests of the idle phase.
	idleRequests string
	// phases are the manager's time per sync phase until done (ProfileSync).
	phases string
	// CPU seconds and peak RSS from creation until done: the sync object
	// Ready (Flux, the floor) or every profile Ready (ProfileSync).
	controllerCPU, controllerPeakMiB float64
	apiServerCPU, apiServerPeakMiB   float64
	// CPU seconds over the idle phase.
	idleControllerCPU, idleAPIServerCPU float64
	// The controllers' CPU seconds and peak RSS over all the pushes, from
	// the first commit to the last one's status seen.
	pushesControllerCPU, pushesControllerPeakMiB float64
	// From the commit's trigger (webhook call, reconcile annotation) to the
	// watch event that shows the change.
	pushSpec, pushStatus []time.Duration
}

// BenchmarkSideBySide runs the floor, Flux and ProfileSync on the same
// landscape, each on a fresh control plane, from the same Git server, and
// prints the medians of each figure with the ratios ProfileSync/Flux and
// ProfileSync/floor. The controllers run as processes of their own, so
// their CPU and RSS are theirs alone; docs/performance.md explains each row.
func BenchmarkSideBySide(b *testing.B) {
	if b.N > 1 {
		b.Skip("BenchmarkSideBySide runs once")
	}
	fluxDir := os.Getenv(fluxVariable)
	systems := sideBySideSystems(b)
	if fluxDir == "" && systems[fluxSystem] {
		b.Skipf("%s is not set: run the side-by-side benchmark with 'make bench-flux'", fluxVariable)
	}
	runs, pushes := countSetting(b, runsVariable, 3), countSetting(b, pushesVariable, 10)
	idle := 2 * time.Minute
	if v := os.Getenv(idleVariable); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil {
			b.Fatalf("%s=%q: %v", idleVariable, v, err)
		}
		idle = d
	}
	manager := buildManager(b)
	server, err := gitserver.New(b.TempDir(), gitserver.Options{})
	if err != nil {
		b.Fatalf("start git server: %v", err)
	}
	defer server.Close()
	l := scaleLandscape(b)
	files := l.files()
	rendered, err := renderLandscape(b.TempDir(), files)
	if err != nil {
		b.Fatalf("render: %v", err)
	}
	fmt.Printf("landscape: %d CloudProfiles × %d versions, %d NamespacedCloudProfiles; %d runs, idle %s\n",
		l.cloudProfiles, l.kubernetesVersions+l.images*l.imageVersions, l.namespaced, runs, idle)

	results := map[string][]systemRun{}
	for run := range runs {
		for _, system := range []string{floorSystem, fluxSystem, profileSyncSystem} {
			if !systems[system] {
				continue
			}
			s := sideBySide{b: b, l: l, server: server, idle: idle, pushes: pushes, fluxDir: fluxDir, repo: fmt.Sprintf("%s-%d", system, run)}
			var r systemRun
			switch system {
			case floorSystem:
				r = s.floor(floorObjects(b, rendered.Objects, ""))
			case fluxSystem:
				r = s.flux(files)
			default:
				r = s.profileSync(manager, files)
			}
			printSystemRun(system, run, r)
			results[system] = append(results[system], r)
		}
	}
	printSideBySide(b, results, l.cloudProfiles+l.namespaced)
}

// countSetting is the number the variable holds, or def when it is unset.
func countSetting(b *testing.B, variable string, def int) int {
	v := os.Getenv(variable)
	if v == "" {
		return def
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 0 {
		b.Fatalf("%s=%q: want a number", variable, v)
	}
	return n
}

func sideBySideSystems(b *testing.B) map[string]bool {
	systems := map[string]bool{floorSystem: true, fluxSystem: true, profileSyncSystem: true}
	if v := os.Getenv(systemsVariable); v != "" {
		systems = map[string]bool{}
		for _, s := range strings.Split(v, ",") {
			switch s = strings.TrimSpace(s); s {
			case floorSystem, fluxSystem, profileSyncSystem:
				systems[s] = true
			default:
				b.Fatalf("%s: unknown system %q (want floor, flux or profilesync)", systemsVariable, s)
			}
		}
	}
	return systems
}

// buildManager builds the profilesync binary of this tree.
func buildManager(b *testing.B) string {
	root, err := testenv.ModuleRoot()
	if err != nil {
		b.Fatal(err)
	}
	out := filepath.Join(b.TempDir(), "profilesync")
	cmd := exec.Command("go", "build", "-o", out, ".")
	cmd.Dir = root
	if output, err := cmd.CombinedOutput(); err != nil {
		b.Fatalf("build the manager: %v\n%s", err, output)
	}
	return out
}

// sideBySide is one run of one system: its own control plane, repository,
// processes and watches.
type sideBySide struct {
	b      *testing.B
	l      landscape
	server *gitserver.Server
	idle   time.Duration
	pushes int
	// fluxDir is where Flux's binaries and CRDs are, if it runs.
	fluxDir string
	repo    string

	env        *testenv.Env
	kubeconfig string
	apiServer  int
	// apiServerClient reads kube-apiserver's metrics and profiles.
	apiServerClient *http.Client
	// pprofAddr serves the manager's profiles (ProfileSync only).
	pprofAddr string
	// phases, if set, tells how long the phases of the syncs took so far.
	phases    func() string
	observer  *observer
	processes []*controllerProcess
}

// start starts the control plane with the CRDs of both systems (the same
// API server work for every system), the landscape's namespaces, and the
// watches the figures are taken from.
func (s *sideBySide) start(syncObject client.Object) {
	b := s.b
	var err error
	opts := []testenv.Option{testenv.WithErrorLog(),
		testenv.WithRESTConfig(func(cfg *rest.Config) { cfg.QPS, cfg.Burst = 1000, 2000 })}
	if os.Getenv(profileVariable) != "" {
		opts = append(opts, testenv.WithAPIServerFlag("profiling", "true"))
	}
	s.env, err = testenv.Start(opts...)
	if err != nil {
		b.Fatalf("start the control plane: %v", err)
	}
	if s.fluxDir != "" {
		if _, err := envtest.InstallCRDs(s.env.Config, envtest.CRDInstallOptions{
			Paths: []string{filepath.Join(s.fluxDir, "crds")}, ErrorIfPathMissing: true}); err != nil {
			b.Fatalf("install Flux's CRDs: %v", err)
		}
	}
	for _, ns := range append([]string{clusterProfilesNamespace, fluxNamespace}, tenantNamespaces(s.l)...) {
		if err := s.env.Client.Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
			b.Fatalf("create namespace %s: %v", ns, err)
		}
	}
	admin, err := s.env.Environment.AddUser(envtest.User{Name: "admin", Groups: []string{"system:masters"}}, nil)
	if err != nil {
		b.Fatalf("add a user: %v", err)
	}
	kubeconfig, err := admin.KubeConfig()
	if err != nil {
		b.Fatalf("write a kubeconfig: %v", err)
	}
	s.kubeconfig = filepath.Join(b.TempDir(), "kubeconfig")
	if err := os.WriteFile(s.kubeconfig, kubeconfig, 0o600); err != nil {
		b.Fatal(err)
	}
	if s.apiServer, err = procstat.ChildProcess("kube-apiserver"); err != nil {
		b.Fatal(err)
	}
	if s.apiServerClient, err = rest.HTTPClientFor(s.env.Config); err != nil {
		b.Fatal(err)
	}
	watched := []client.Object{&v1alpha1.CloudProfile{}, &v1alpha1.NamespacedCloudProfile{}}
	if syncObject != nil {
		watched = append(watched, syncObject)
	}
	if s.observer, err = newObserver(s.env, watched...); err != nil {
		b.Fatalf("watch: %v", err)
	}
}

// stop stops the processes, the watches and the control plane.
func (s *sideBySide) stop() {
	for _, p := range s.processes {
		p.stop(s.b)
	}
	if s.observer != nil {
		s.observer.cancel()
	}
	if err := s.env.Stop(); err != nil {
		s.b.Errorf("stop the control plane: %v", err)
	}
}

func tenantNamespaces(l landscape) []string {
	var out []string
	for n := range l.namespaces {
		out = append(out, namespaceName(n))
	}
	return out
}

// floor applies the rendered objects, spec only, one after another with
// server-side apply and the operator's client limits, as
// `kubectl apply --server-side` does.
func (s *sideBySide) floor(objects []*unstructured.Unstructured) systemRun {
	s.start(nil)
	defer s.stop()
	floorConfig := rest.CopyConfig(s.env.Config)
	floorConfig.QPS, floorConfig.Burst = managerQPS, managerBurst
	c, err := client.New(floorConfig, client.Options{Scheme: s.env.Scheme})
	if err != nil {
		s.b.Fatal(err)
	}
	requestsBefore := s.profileRequests()
	before := s.sample()
	start := time.Now()
	for _, u := range objects {
		if err := c.Apply(context.Background(), client.ApplyConfigurationFromUnstructured(u), client.FieldOwner("bench-floor"), client.ForceOwnership); err != nil {
			s.b.Fatalf("apply %s: %v", u.GetName(), err)
		}
	}
	elapsed := time.Since(start)
	after := s.sample()
	return systemRun{exists: elapsed, syncReady: elapsed, requests: requestsSince(requestsBefore, s.profileRequests()),
		apiServerCPU: after.apiServerCPU - before.apiServerCPU, apiServerPeakMiB: after.apiServerPeakMiB}
}

// flux runs source-controller and kustomize-controller on a GitRepository
// and a Kustomization (prune, no wait, interval 1m) of the overlay.
func (s *sideBySide) flux(files map[string]string) systemRun {
	kustomization := &unstructured.Unstructured{}
	kustomization.SetGroupVersionKind(kustomizationGVK)
	s.start(kustomization)
	defer s.stop()
	storage := s.b.TempDir()
	storageAddr := s.freeAddress()
	fluxEnv := []string{"RUNTIME_NAMESPACE=" + fluxNamespace}
	s.startProcess("source-controller", filepath.Join(s.fluxDir, "source-controller"), fluxEnv,
		"--storage-path="+storage, "--storage-addr="+storageAddr, "--storage-adv-addr="+storageAddr)
	s.startProcess("kustomize-controller", filepath.Join(s.fluxDir, "kustomize-controller"), fluxEnv)
	if _, err := s.server.CreateRepo(s.repo, files); err != nil {
		s.b.Fatalf("create repository: %v", err)
	}
	repository := fluxObject(gitRepositoryGVK, map[string]any{
		"url": s.server.RepoURL(s.repo), "ref": map[string]any{"branch": "main"},
		"interval": sideBySideInterval.String(), "timeout": "5m"})
	sync := fluxObject(kustomizationGVK, map[string]any{
		"sourceRef": map[string]any{"kind": "GitRepository", "name": "landscape"},
		"path":      "./" + overlayPath, "prune": true, "wait": false,
		"interval": sideBySideInterval.String(), "timeout": "5m"})
	return s.measure([]client.Object{repository, sync},
		func() bool { return fluxReady(s.observer.kustomization()) },
		func() { s.annotateForReconcile(repository) }, false)
}

// shippedMemoryFlags are config/manager's memory flags, its container's
// limit as --memory-budget: the manager runs within the budget it ships
// with, so its Go soft memory limit and its collector are the Deployment's
// (docs/security.md, "The memory budget"), whatever this machine's cgroup
// says.
var shippedMemoryFlags = []string{"--memory-budget=3Gi", "--max-concurrent-builds=2", "--build-memory-limit=1Gi", "--decoded-cache-size=128Mi"}

// profileSync runs the manager binary on a ProfileSync of the overlay.
func (s *sideBySide) profileSync(manager string, files map[string]string) systemRun {
	s.start(&v1alpha1.ProfileSync{})
	defer s.stop()
	receiver := s.freeAddress()
	s.pprofAddr = s.freeAddress()
	metrics := s.freeAddress()
	s.startProcess("profilesync", manager, nil, append(shippedMemoryFlags,
		"--storage-path="+s.b.TempDir(), "--cluster-profiles-namespace="+clusterProfilesNamespace,
		"--receiver-addr="+receiver, "--pprof-addr="+s.pprofAddr,
		"--metrics-addr="+metrics, "--metrics-secure=false")...)
	s.phases = func() string { return syncPhases(s.b, "http://"+metrics+"/metrics") }
	if _, err := s.server.CreateRepo(s.repo, files); err != nil {
		s.b.Fatalf("create repository: %v", err)
	}
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "webhook", Namespace: clusterProfilesNamespace},
		StringData: map[string]string{"token": webhookToken}}
	if err := s.env.Client.Create(context.Background(), secret); err != nil {
		s.b.Fatalf("create webhook Secret: %v", err)
	}
	sync := newProfileSync("landscape", s.server.RepoURL(s.repo), overlayPath)
	sync.Spec.Interval.Duration = sideBySideInterval
	return s.measure([]client.Object{sync},
		func() bool {
			var ps v1alpha1.ProfileSync
			err := s.observer.cache.Get(context.Background(), client.ObjectKeyFromObject(sync), &ps)
			return err == nil && ps.Status.LastAppliedRevision != "" && isReady(&ps, ps.Status.ObservedGeneration)
		},
		func() { callWebhook(s.b, "http://"+receiver, "landscape") }, true)
}

// measure creates the sync objects and takes every figure: the first sync,
// the idle phase and the pushes. trigger tells the system about a new
// commit; withStatus says whether the system computes profile status.
func (s *sideBySide) measure(create []client.Object, syncReady func() bool, trigger func(), withStatus bool) systemRun {
	b, l := s.b, s.l
	ctx := context.Background()
	var r systemRun
	profiled := s.profile(30 * time.Second)
	defer func() { <-profiled }()
	requestsBefore := s.profileRequests()
	before := s.sample()
	start := time.Now()
	for _, obj := range create {
		if err := s.env.Client.Create(ctx, obj); err != nil {
			b.Fatalf("create %s: %v", obj.GetName(), err)
		}
	}
	milestones := map[string]func() bool{
		"exist":      func() bool { return s.observer.counts(false) >= l.cloudProfiles+l.namespaced },
		"sync Ready": syncReady,
	}
	if withStatus {
		milestones["profiles Ready"] = func() bool { return s.observer.counts(true) >= l.cloudProfiles+l.namespaced }
	}
	reached := s.observer.waitAll(b, milestones, 15*time.Minute)
	r.exists, r.syncReady = reached["exist"].Sub(start), reached["sync Ready"].Sub(start)
	if withStatus {
		r.profilesReady = reached["profiles Ready"].Sub(start)
	}
	done := s.sample()
	r.requests = requestsSince(requestsBefore, s.profileRequests())
	s.heapProfile()
	if s.phases != nil {
		r.phases = s.phases()
	}
	r.controllerCPU, r.controllerPeakMiB = done.controllerCPU-before.controllerCPU, done.controllerPeakMiB
	r.apiServerCPU, r.apiServerPeakMiB = done.apiServerCPU-before.apiServerCPU, done.apiServerPeakMiB

	// Idle: nothing changes in Git; both systems sync at their interval.
	time.Sleep(5 * time.Second)
	idleStart, idleRequestsBefore := s.sample(), s.profileRequests()
	time.Sleep(s.idle)
	idleEnd := s.sample()
	r.idleRequests = requestsSince(idleRequestsBefore, s.profileRequests())
	r.idleControllerCPU = idleEnd.controllerCPU - idleStart.controllerCPU
	r.idleAPIServerCPU = idleEnd.apiServerCPU - idleStart.apiServerCPU

	// Pushes: each moves the expiry of one version of the first
	// CloudProfile by another hour.
	name := cloudProfileName(0)
	pushesStart := s.sample()
	for k := 1; k <= s.pushes; k++ {
		shift := time.Duration(k) * time.Hour
		want := l.stageTimes(pushedVersion)[3].Add(shift)
		if _, err := s.server.Commit(s.repo, map[string]string{cloudProfilesFile(0): l.cloudProfilesFileYAML(0, shift)}, fmt.Sprintf("push %d", k)); err != nil {
			b.Fatalf("commit: %v", err)
		}
		pushed := time.Now()
		trigger()
		checks := map[string]func() bool{"spec": func() bool { return s.observer.expiry(name, false).Equal(want) }}
		if withStatus {
			checks["status"] = func() bool { return s.observer.expiry(name, true).Equal(want) }
		}
		seen := s.observer.waitAll(b, checks, 2*time.Minute)
		r.pushSpec = append(r.pushSpec, seen["spec"].Sub(pushed))
		if withStatus {
			r.pushStatus = append(r.pushStatus, seen["status"].Sub(pushed))
		}
	}
	pushesEnd := s.sample()
	r.pushesControllerCPU, r.pushesControllerPeakMiB = pushesEnd.controllerCPU-pushesStart.controllerCPU, pushesEnd.controllerPeakMiB
	return r
}

func fluxObject(gvk schema.GroupVersionKind, spec map[string]any) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{"spec": spec}}
	u.SetGroupVersionKind(gvk)
	u.SetName("landscape")
	u.SetNamespace(fluxNamespace)
	return u
}

// annotateForReconcile asks a Flux object to reconcile now, as Flux's
// notification-controller Receiver does for a push.
func (s *sideBySide) annotateForReconcile(obj *unstructured.Unstructured) {
	patch := fmt.Sprintf(`{"metadata":{"annotations":{%q:%q}}}`, meta.ReconcileRequestAnnotation, time.Now().Format(time.RFC3339Nano))
	target := &unstructured.Unstructured{}
	target.SetGroupVersionKind(obj.GroupVersionKind())
	target.SetName(obj.GetName())
	target.SetNamespace(obj.GetNamespace())
	if err := s.env.Client.Patch(context.Background(), target, client.RawPatch(types.MergePatchType, []byte(patch))); err != nil {
		s.b.Fatalf("annotate %s: %v", obj.GetName(), err)
	}
}

// fluxReady is whether a Kustomization has applied a revision and is Ready
// for its generation.
func fluxReady(u *unstructured.Unstructured) bool {
	if u == nil {
		return false
	}
	revision, _, _ := unstructured.NestedString(u.Object, "status", "lastAppliedRevision")
	observed, _, _ := unstructured.NestedInt64(u.Object, "status", "observedGeneration")
	conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
	for _, c := range conds {
		m, _ := c.(map[string]any)
		if m["type"] == meta.ReadyCondition && m["status"] == string(metav1.ConditionTrue) {
			return revision != "" && observed == u.GetGeneration()
		}
	}
	return false
}

func (s *sideBySide) freeAddress() string {
	addr, err := testenv.FreeLoopbackAddress()
	if err != nil {
		s.b.Fatal(err)
	}
	return addr
}

func printSystemRun(system string, run int, r systemRun) {
	p50s, p99s := percentiles(r.pushSpec)
	p50, p99 := percentiles(r.pushStatus)
	fmt.Printf("run %d %s: exist %.1fs, sync Ready %.1fs, profiles Ready %.1fs; controllers %.1f CPU-s %.0f MiB; kube-apiserver %.1f CPU-s %.0f MiB; idle %.1f + %.1f CPU-s; push → spec p50 %.0f p99 %.0f ms, → status p50 %.0f p99 %.0f ms; pushes: controllers %.1f CPU-s %.0f MiB\n",
		run+1, system, r.exists.Seconds(), r.syncReady.Seconds(), r.profilesReady.Seconds(),
		r.controllerCPU, r.controllerPeakMiB, r.apiServerCPU, r.apiServerPeakMiB,
		r.idleControllerCPU, r.idleAPIServerCPU, p50s, p99s, p50, p99, r.pushesControllerCPU, r.pushesControllerPeakMiB)
	fmt.Printf("run %d %s: profile requests until done: %s\n", run+1, system, r.requests)
	fmt.Printf("run %d %s: profile requests while idle: %s\n", run+1, system, r.idleRequests)
	if r.phases != "" {
		fmt.Printf("run %d %s: sync phases until done: %s\n", run+1, system, r.phases)
	}
}

// printSideBySide prints the medians over the runs of each figure, per
// system, with the ratios, and reports the ratios as benchmark metrics.
func printSideBySide(b *testing.B, results map[string][]systemRun, objects int) {
	median := func(system string, figure func(systemRun) float64) float64 {
		var values []float64
		for _, r := range results[system] {
			values = append(values, figure(r))
		}
		if len(values) == 0 {
			return 0
		}
		sort.Float64s(values)
		return values[len(values)/2]
	}
	seconds := func(d func(systemRun) time.Duration) func(systemRun) float64 {
		return func(r systemRun) float64 { return d(r).Seconds() }
	}
	pushes := func(d func(systemRun) []time.Duration, p99 bool) func(systemRun) float64 {
		return func(r systemRun) float64 {
			p50, p99v := percentiles(d(r))
			if p99 {
				return p99v
			}
			return p50
		}
	}
	type figure struct {
		name, unit string
		value      func(systemRun) float64
		// ourReference is the Flux figure ProfileSync's is compared with,
		// when not the same row's.
		ourReference func(systemRun) float64
	}
	syncReady := seconds(func(r systemRun) time.Duration { return r.syncReady })
	figures := []figure{
		{name: fmt.Sprintf("all %d objects exist", objects), unit: "s", value: seconds(func(r systemRun) time.Duration { return r.exists })},
		{name: "sync object Ready", unit: "s", value: syncReady},
		{name: "every profile Ready (/ Flux's sync Ready)", unit: "s", value: seconds(func(r systemRun) time.Duration { return r.profilesReady }), ourReference: syncReady},
		{name: "kube-apiserver CPU, creation → done", unit: "CPU-s", value: func(r systemRun) float64 { return r.apiServerCPU }},
		{name: "kube-apiserver peak RSS, creation → done", unit: "MiB", value: func(r systemRun) float64 { return r.apiServerPeakMiB }},
		{name: "controllers' CPU, creation → done", unit: "CPU-s", value: func(r systemRun) float64 { return r.controllerCPU }},
		{name: "controllers' peak RSS (sum of processes)", unit: "MiB", value: func(r systemRun) float64 { return r.controllerPeakMiB }},
		{name: "push → spec visible, p50", unit: "ms", value: pushes(func(r systemRun) []time.Duration { return r.pushSpec }, false)},
		{name: "push → spec visible, p99", unit: "ms", value: pushes(func(r systemRun) []time.Duration { return r.pushSpec }, true)},
		{name: "push → status visible, p50", unit: "ms", value: pushes(func(r systemRun) []time.Duration { return r.pushStatus }, false)},
		{name: "push → status visible, p99", unit: "ms", value: pushes(func(r systemRun) []time.Duration { return r.pushStatus }, true)},
		{name: "all pushes: controllers' CPU", unit: "CPU-s", value: func(r systemRun) float64 { return r.pushesControllerCPU }},
		{name: "all pushes: controllers' peak RSS", unit: "MiB", value: func(r systemRun) float64 { return r.pushesControllerPeakMiB }},
		{name: "idle: controllers' CPU", unit: "CPU-s", value: func(r systemRun) float64 { return r.idleControllerCPU }},
		{name: "idle: kube-apiserver CPU", unit: "CPU-s", value: func(r systemRun) float64 { return r.idleAPIServerCPU }},
	}
	var buf strings.Builder
	w := tabwriter.NewWriter(&buf, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(w, "median of runs\tfloor\tFlux\tProfileSync\tPS/Flux\tPS/floor\t")
	cell := func(system string, f figure) string {
		if len(results[system]) == 0 {
			return "—"
		}
		v := median(system, f.value)
		if v == 0 {
			return "—"
		}
		return strconv.FormatFloat(v, 'f', 1, 64) + " " + f.unit
	}
	ratio := func(ours, theirs float64) string {
		if ours == 0 || theirs == 0 {
			return "—"
		}
		return strconv.FormatFloat(ours/theirs, 'f', 2, 64)
	}
	for i, f := range figures {
		ours := median(profileSyncSystem, f.value)
		reference := f.value
		if f.ourReference != nil {
			reference = f.ourReference
		}
		flux, floor := median(fluxSystem, reference), median(floorSystem, reference)
		fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\t%s\t\n", f.name, cell(floorSystem, f), cell(fluxSystem, f), cell(profileSyncSystem, f), ratio(ours, flux), ratio(ours, floor))
		if ours != 0 && flux != 0 {
			b.ReportMetric(ours/flux, fmt.Sprintf("row%02d-PS/Flux", i+1))
		}
	}
	_ = w.Flush()
	fmt.Print("\n" + buf.String())
}
