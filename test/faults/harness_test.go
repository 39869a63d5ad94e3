// Package faults is the fault suite: every controller runs against a real
// API server and a real Git server while the test breaks one of them (a
// fault-injecting transport on the manager's REST config, a Git server that
// stops answering, a manager stopped mid-sync, a clock that jumps) and then
// checks what survived: the revision on the cluster, the inventory, the
// conditions and the number of writes.
//
// Each test starts its own control plane, so the managers of one test never
// see the objects of another, and counts of writes mean what they say.
package faults

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/fluxcd/pkg/apis/meta"
	runtimecontroller "github.com/fluxcd/pkg/runtime/controller"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1alpha1 "github.com/profilesync/profilesync/api/v1alpha1"
	"github.com/profilesync/profilesync/controllers"
	"github.com/profilesync/profilesync/test/gitserver"
	"github.com/profilesync/profilesync/test/testenv"
)

// landscapeNamespace is where the landscape's ProfileSync lives.
const landscapeNamespace = "profilesync-system"

// landscape is one test's world: a control plane, a Git server with the
// profiles repository, and the ProfileSync that syncs it.
type landscape struct {
	t       *testing.T
	env     *testenv.Env
	git     *gitserver.Server
	repo    string
	created bool // the repository exists
	sync    *v1alpha1.ProfileSync
}

func newLandscape(t *testing.T, opts ...testenv.Option) *landscape {
	t.Helper()
	env := testenv.StartForTest(t, append([]testenv.Option{testenv.WithErrorLog()}, opts...)...)
	git, err := gitserver.New(t.TempDir(), gitserver.Options{})
	if err != nil {
		t.Fatalf("start Git server: %v", err)
	}
	t.Cleanup(func() { _ = git.Close() })
	for _, ns := range []string{landscapeNamespace, "team-a", "team-b"} {
		if err := env.Client.Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
			t.Fatalf("create namespace %s: %v", ns, err)
		}
	}
	return &landscape{t: t, env: env, git: git, repo: "profiles"}
}

// managerConfig is how one manager of the landscape runs.
type managerConfig struct {
	// faults, when set, sits between the manager and the API server.
	faults *faultTransport
	// clock is the controllers' clock; real time when nil.
	clock clock.PassiveClock
	// user, when set, is who the manager acts as (impersonated), as the
	// operator's service account with its role; the admin when nil.
	user *rest.ImpersonationConfig
	// statusRecheck is controllers.Options.StatusRecheck; its default when 0.
	statusRecheck time.Duration
	// leaderElection runs the manager as one of several replicas.
	leaderElection bool
	leaseDuration  time.Duration
	// releaseLease gives up the lease when the manager stops, as the
	// operator does on SIGTERM (--leader-election-release-on-cancel); a
	// killed process cannot.
	releaseLease bool
}

// startManager starts a manager with every controller, as the operator's
// main does, with its own Git cache (a restarted Pod starts with an empty
// emptyDir).
func (l *landscape) startManager(cfg managerConfig) *testenv.Manager {
	l.t.Helper()
	cacheDir := l.t.TempDir()
	clk := cfg.clock
	if clk == nil {
		clk = clock.RealClock{}
	}
	m, err := l.env.StartManager(testenv.ManagerOptions{
		RESTConfig: func(c *rest.Config) {
			// The operator's client limits, so a burst of retries is paced
			// as in production.
			c.QPS, c.Burst = 50, 300
			if cfg.user != nil {
				c.Impersonate = *cfg.user
			}
			if cfg.faults != nil {
				c.Wrap(cfg.faults.wrap)
			}
		},
		Cache: controllers.CacheOptions(nil),
		Options: func(o *ctrl.Options) {
			if !cfg.leaderElection {
				return
			}
			o.LeaderElection = true
			o.LeaderElectionID = "profilesync-leader"
			o.LeaderElectionNamespace = landscapeNamespace
			o.LeaderElectionReleaseOnCancel = cfg.releaseLease
			lease := cfg.leaseDuration
			if lease == 0 {
				lease = 4 * time.Second
			}
			renew, retry := lease*3/4, lease/4
			o.LeaseDuration, o.RenewDeadline, o.RetryPeriod = &lease, &renew, &retry
		},
		Setup: func(ctx context.Context, mgr ctrl.Manager, _ *testenv.Env) error {
			return controllers.SetupAll(ctx, mgr, controllers.Config{
				// The operator's defaults: 4 workers, retries from 750 ms
				// doubling up to 15 minutes.
				Options: controllers.Options{
					MaxConcurrentReconciles: 4,
					RateLimiter:             runtimecontroller.GetDefaultRateLimiter(),
					StatusRecheck:           cfg.statusRecheck,
				},
				Clock:                    clk,
				StoragePath:              cacheDir,
				ClusterProfilesNamespace: landscapeNamespace,
				AllowCredentialsOverHTTP: true,
			})
		},
	})
	if err != nil {
		l.t.Fatalf("start manager: %v", err)
	}
	l.t.Cleanup(func() { _ = m.Stop() })
	return m
}

// commit writes files as the new head of the repository's main branch
// (creating the repository at the first commit) and returns its SHA.
func (l *landscape) commit(files map[string]string) string {
	l.t.Helper()
	var sha string
	var err error
	if !l.created {
		sha, err = l.git.CreateRepo(l.repo, files)
		l.created = err == nil
	} else {
		sha, err = l.git.Commit(l.repo, files, "change profiles")
	}
	if err != nil {
		l.t.Fatalf("commit: %v", err)
	}
	return sha
}

// createSync creates the landscape's ProfileSync with prune on.
func (l *landscape) createSync(interval time.Duration) *v1alpha1.ProfileSync {
	return l.createSyncOf(l.git.RepoURL(l.repo), nil, interval, 0)
}

// createSyncOf creates the landscape's ProfileSync of url with prune on, and
// ref and spec.timeout when set.
func (l *landscape) createSyncOf(url string, ref *v1alpha1.GitReference, interval, timeout time.Duration) *v1alpha1.ProfileSync {
	l.t.Helper()
	l.sync = &v1alpha1.ProfileSync{
		ObjectMeta: metav1.ObjectMeta{Name: "landscape", Namespace: landscapeNamespace},
		Spec: v1alpha1.ProfileSyncSpec{
			URL:      url,
			Ref:      ref,
			Interval: metav1.Duration{Duration: interval},
			Prune:    true,
		},
	}
	if timeout > 0 {
		l.sync.Spec.Timeout = &metav1.Duration{Duration: timeout}
	}
	if err := l.env.Client.Create(context.Background(), l.sync); err != nil {
		l.t.Fatalf("create ProfileSync: %v", err)
	}
	return l.sync
}

// current reads the ProfileSync as the API server has it now.
func (l *landscape) current(g Gomega) *v1alpha1.ProfileSync {
	var got v1alpha1.ProfileSync
	g.Expect(l.env.Client.Get(context.Background(), client.ObjectKeyFromObject(l.sync), &got)).To(Succeed())
	return &got
}

// startCounted starts a manager whose API requests are counted, waits up to
// timeout until it has applied revision, and returns the counter emptied of
// that first sync's requests: what a test counts after it is the fault's
// doing.
func (l *landscape) startCounted(revision string, timeout time.Duration) *faultTransport {
	l.t.Helper()
	counter := &faultTransport{}
	l.startManager(managerConfig{faults: counter})
	l.waitRevision(revision, timeout)
	counter.reset()
	return counter
}

// waitApplied waits until the ProfileSync is Ready with commit of the main
// branch applied.
func (l *landscape) waitApplied(commit string, timeout time.Duration) *v1alpha1.ProfileSync {
	l.t.Helper()
	got, _ := l.waitRevision("main@sha1:"+commit, timeout)
	return got
}

// waitRevision waits until the ProfileSync is Ready with revision applied
// and returns it with the time waited.
func (l *landscape) waitRevision(revision string, timeout time.Duration) (*v1alpha1.ProfileSync, time.Duration) {
	l.t.Helper()
	started := time.Now()
	var got *v1alpha1.ProfileSync
	NewWithT(l.t).Eventually(func(g Gomega) {
		got = l.current(g)
		g.Expect(got.Status.LastAppliedRevision).To(Equal(revision))
		expectReady(g, got)
	}).WithTimeout(timeout).WithPolling(50 * time.Millisecond).Should(Succeed())
	return got, time.Since(started)
}

// expectReady expects the ProfileSync's Ready condition to be True.
func expectReady(g Gomega, ps *v1alpha1.ProfileSync) {
	ready := apimeta.FindStatusCondition(ps.Status.Conditions, v1alpha1.ReadyCondition)
	g.Expect(ready).NotTo(BeNil())
	g.Expect(ready.Status).To(Equal(metav1.ConditionTrue))
}

// requestSync asks for a sync now, as `flux reconcile` does.
func (l *landscape) requestSync(token string) {
	l.t.Helper()
	patch := fmt.Sprintf(`{"metadata":{"annotations":{%q:%q}}}`, meta.ReconcileRequestAnnotation, token)
	if err := l.env.Client.Patch(context.Background(), l.sync.DeepCopy(), client.RawPatch(types.MergePatchType, []byte(patch))); err != nil {
		l.t.Fatalf("request a sync: %v", err)
	}
}

// waitSynced requests a sync and waits until it has run and succeeded.
func (l *landscape) waitSynced(token string) {
	l.t.Helper()
	l.requestSync(token)
	NewWithT(l.t).Eventually(func(g Gomega) {
		got := l.current(g)
		g.Expect(got.Status.LastHandledReconcileAt).To(Equal(token))
		expectReady(g, got)
	}).WithTimeout(30 * time.Second).WithPolling(100 * time.Millisecond).Should(Succeed())
}

// inventory is the ProfileSync's inventory as "Kind/namespace/name" keys.
func inventory(ps *v1alpha1.ProfileSync) []string {
	if ps.Status.Inventory == nil {
		return nil
	}
	var keys []string
	for _, e := range ps.Status.Inventory.Entries {
		keys = append(keys, e.Kind+"/"+e.Namespace+"/"+e.Name)
	}
	return keys
}

// onCluster lists the profiles on the cluster as "Kind/namespace/name" keys.
func (l *landscape) onCluster(g Gomega) []string {
	ctx := context.Background()
	var cps v1alpha1.CloudProfileList
	g.Expect(l.env.Client.List(ctx, &cps)).To(Succeed())
	var ncps v1alpha1.NamespacedCloudProfileList
	g.Expect(l.env.Client.List(ctx, &ncps)).To(Succeed())
	var keys []string
	for _, cp := range cps.Items {
		keys = append(keys, v1alpha1.CloudProfileKind+"//"+cp.Name)
	}
	for _, ncp := range ncps.Items {
		keys = append(keys, v1alpha1.NamespacedCloudProfileKind+"/"+ncp.Namespace+"/"+ncp.Name)
	}
	sort.Strings(keys)
	return keys
}

// warningEvents are the messages of the Warning events recorded for the
// ProfileSync, by reason, a message repeated as often as the event was.
func (l *landscape) warningEvents(g Gomega) map[string][]string {
	return l.events(g, corev1.EventTypeWarning)
}

// events are the messages of the events of eventType recorded for the
// ProfileSync, by reason, a message repeated as often as the event was.
func (l *landscape) events(g Gomega, eventType string) map[string][]string {
	events, err := testenv.Events(context.Background(), l.env.Client, testenv.EventQuery{
		Namespace: landscapeNamespace, Kind: v1alpha1.ProfileSyncKind, Name: l.sync.Name, Type: eventType,
	})
	g.Expect(err).NotTo(HaveOccurred())
	messages := map[string][]string{}
	for _, e := range events {
		messages[e.Reason] = append(messages[e.Reason], testenv.Occurrences([]corev1.Event{e})...)
	}
	return messages
}

// profilesRepo is a repository of CloudProfiles named cps (each offering
// versions, the machine image ubuntu, the machine type m5.large and the
// region eu-1) and NamespacedCloudProfiles "team-a/<name>" for each name of
// ncps, each adding a machine type to the last CloudProfile of cps.
func profilesRepo(versions []string, cps []string, ncps []string) map[string]string {
	var b strings.Builder
	for _, name := range cps {
		fmt.Fprintf(&b, "---\napiVersion: core.profilesync.io/v1alpha1\nkind: CloudProfile\nmetadata:\n  name: %s\nspec:\n  type: local\n  machineImages:\n  - name: ubuntu\n    versions: [{version: 24.4.0}]\n  machineTypes:\n  - name: m5.large\n    cpu: \"2\"\n    gpu: \"0\"\n    memory: 8Gi\n  regions:\n  - name: eu-1\n  kubernetes:\n    versions:\n", name)
		for _, v := range versions {
			fmt.Fprintf(&b, "    - version: %s\n", v)
		}
	}
	for _, name := range ncps {
		fmt.Fprintf(&b, "---\napiVersion: core.profilesync.io/v1alpha1\nkind: NamespacedCloudProfile\nmetadata:\n  name: %s\n  namespace: team-a\nspec:\n  parent:\n    kind: CloudProfile\n    name: %s\n  machineTypes:\n  - name: %s-large\n    cpu: \"16\"\n    gpu: \"0\"\n    memory: 64Gi\n", name, cps[len(cps)-1], name)
	}
	return map[string]string{"profiles.yaml": b.String()}
}

// faultTransport sits between a manager and the API server. It records
// every write and fails the requests a test picks, as an API server under
// load, a network partition or a crashed process would.
type faultTransport struct {
	mu     sync.Mutex
	fault  func(*http.Request) (*http.Response, error)
	writes []write
}

// write is one request that changes state.
type write struct {
	Method, Resource, Name string
	Subresource            string
	DryRun                 bool
	// Body is the request body of a status write of a ProfileSync.
	Body string
}

func (w write) String() string {
	s := w.Method + " " + w.Resource + "/" + w.Name
	if w.Subresource != "" {
		s += "/" + w.Subresource
	}
	if w.DryRun {
		s += " (dry run)"
	}
	return s
}

func (f *faultTransport) wrap(next http.RoundTripper) http.RoundTripper {
	return roundTripperFunc(func(req *http.Request) (*http.Response, error) {
		f.mu.Lock()
		fault := f.fault
		f.mu.Unlock()
		if fault != nil {
			if resp, err := fault(req); resp != nil || err != nil {
				return resp, err
			}
		}
		w := parseWriteWithBody(req)
		resp, err := next.RoundTrip(req)
		if err == nil && resp.StatusCode < 300 && isWrite(req) {
			f.mu.Lock()
			f.writes = append(f.writes, w)
			f.mu.Unlock()
		}
		return resp, err
	})
}

// inject makes fault decide every request from now on: a response or an
// error fails the request, (nil, nil) lets it through. nil ends the fault.
func (f *faultTransport) inject(fault func(*http.Request) (*http.Response, error)) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.fault = fault
}

// recorded returns the successful writes so far that match.
func (f *faultTransport) recorded(match func(write) bool) []write {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []write
	for _, w := range f.writes {
		if match == nil || match(w) {
			out = append(out, w)
		}
	}
	return out
}

func (f *faultTransport) reset() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.writes = nil
}

type roundTripperFunc func(*http.Request) (*http.Response, error)

func (fn roundTripperFunc) RoundTrip(req *http.Request) (*http.Response, error) { return fn(req) }

func isWrite(req *http.Request) bool {
	switch req.Method {
	case http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete:
		return true
	}
	return false
}

// parseWrite reads resource, name and subresource from an API path
// (/apis/group/version/[namespaces/ns/]resource[/name[/subresource]]).
func parseWrite(req *http.Request) write {
	parts := strings.Split(strings.Trim(req.URL.Path, "/"), "/")
	if len(parts) > 0 && parts[0] == "apis" && len(parts) >= 3 {
		parts = parts[3:]
	} else if len(parts) >= 2 { // /api/v1/...
		parts = parts[2:]
	}
	if len(parts) >= 2 && parts[0] == "namespaces" && len(parts) > 2 {
		parts = parts[2:]
	}
	w := write{Method: req.Method, DryRun: req.URL.Query().Get("dryRun") != ""}
	if len(parts) > 0 {
		w.Resource = parts[0]
	}
	if len(parts) > 1 {
		w.Name = parts[1]
	}
	if len(parts) > 2 {
		w.Subresource = parts[2]
	}
	return w
}

// parseWriteWithBody is parseWrite with, for a status write of a
// ProfileSync, its body.
func parseWriteWithBody(req *http.Request) write {
	w := parseWrite(req)
	if isWrite(req) && w.Resource == "profilesyncs" && w.Subresource == "status" && req.GetBody != nil {
		if body, err := req.GetBody(); err == nil {
			content, _ := io.ReadAll(body)
			w.Body = string(content)
		}
	}
	return w
}

// objectWrites are writes of profiles themselves, dry runs excluded.
func objectWrites(w write) bool {
	return apiWrite("cloudprofiles")(w) || apiWrite("namespacedcloudprofiles")(w)
}

// apiWrite matches the writes of a resource ("cloudprofiles"), dry runs
// excluded, of the object itself (not its status).
func apiWrite(resource string) func(write) bool {
	return func(w write) bool { return w.Resource == resource && w.Subresource == "" && !w.DryRun }
}

// blockUntilCancelled is a fault that holds the requests match picks until
// the caller gives up (the manager is stopped), and tells hit about the
// first one: a process killed in the middle of that request.
func blockUntilCancelled(match func(write) bool, hit chan<- write) func(*http.Request) (*http.Response, error) {
	var once sync.Once
	return func(req *http.Request) (*http.Response, error) {
		w := parseWriteWithBody(req)
		if !isWrite(req) || !match(w) {
			return nil, nil
		}
		once.Do(func() { hit <- w })
		<-req.Context().Done()
		return nil, req.Context().Err()
	}
}
