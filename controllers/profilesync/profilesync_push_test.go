package profilesync

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/fluxcd/pkg/runtime/conditions"
	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1alpha1 "github.com/profilesync/profilesync/api/v1alpha1"
	"github.com/profilesync/profilesync/test/builders"
	"github.com/profilesync/profilesync/test/testenv"
)

// pushLandscape is a repository of three CloudProfiles, each with two
// NamespacedCloudProfiles (one in each tenant namespace) that keep its
// 1.31.0 longer; expiry is 1.30.0's expiry in the first CloudProfile.
func pushLandscape(prefix string, namespaces []string, expiry string) map[string]string {
	var docs []string
	for i := range 3 {
		name := fmt.Sprintf("%s-%d", prefix, i)
		first := "2030-01-01T00:00:00Z"
		if i == 0 {
			first = expiry
		}
		docs = append(docs, cloudProfileYAML(name, lifecycleYAML("1.30.0", first), lifecycleYAML("1.31.0", "2030-06-01T00:00:00Z"), "version: 1.32.0"))
		for _, ns := range namespaces {
			docs = append(docs, fmt.Sprintf(`apiVersion: core.profilesync.io/v1alpha1
kind: NamespacedCloudProfile
metadata:
  name: %s
  namespace: %s
spec:
  parent: {kind: CloudProfile, name: %s}
  kubernetes:
    versions:
    - {version: 1.31.0, lifecycle: [{classification: expired, startTime: "2031-01-01T00:00:00Z"}]}
`, name, ns, name))
		}
	}
	return map[string]string{"profiles.yaml": strings.Join(docs, "---\n")}
}

// objectWrites counts the writes the API server reports on the profiles
// whose name starts with prefix: each write of an object, spec or status, is
// one MODIFIED event of its watch.
type objectWrites struct {
	mu     sync.Mutex
	counts map[string]int
}

func (w *objectWrites) watch(t *testing.T, prefix string, lists ...client.ObjectList) {
	t.Helper()
	watcher, err := client.NewWithWatch(restConfig, client.Options{Scheme: testScheme})
	if err != nil {
		t.Fatalf("watch client: %v", err)
	}
	for _, list := range lists {
		// From now: the API server's events of what is written from here on.
		if err := k8sClient.List(context.Background(), list); err != nil {
			t.Fatalf("list: %v", err)
		}
		rv := list.GetResourceVersion()
		opts := &client.ListOptions{Raw: &metav1.ListOptions{ResourceVersion: rv}}
		events, err := watcher.Watch(context.Background(), list, opts)
		if err != nil {
			t.Fatalf("watch: %v", err)
		}
		t.Cleanup(events.Stop)
		go func() {
			for ev := range events.ResultChan() {
				obj, ok := ev.Object.(client.Object)
				if !ok || ev.Type != watch.Modified || !strings.HasPrefix(obj.GetName(), prefix) {
					continue
				}
				w.mu.Lock()
				w.counts[fmt.Sprintf("%T %s", obj, client.ObjectKeyFromObject(obj))]++
				w.mu.Unlock()
			}
		}()
	}
}

func (w *objectWrites) snapshot() map[string]int {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := map[string]int{}
	for k, v := range w.counts {
		out[k] = v
	}
	return out
}

// A push pays for what changed (issue 36): a commit that changes one
// CloudProfile of a landscape applies that one object, and the status
// controllers write the status of that profile and of its
// NamespacedCloudProfiles, once each, and nothing else.
func TestAPushThatChangesOneCloudProfileWritesOnlyItAndItsChildren(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	testClock.Set(t, builders.Time("2026-01-01T00:00:00Z"))
	namespaces := []string{"push-team-a", "push-team-b"}
	for _, ns := range append([]string{clusterProfilesNamespace}, namespaces...) {
		ensureNamespace(t, ns)
	}
	server := startGitServer(t)
	prefix := testenv.UniqueName("push")
	_, err := server.CreateRepo("push", pushLandscape(prefix, namespaces, "2030-01-01T00:00:00Z"))
	g.Expect(err).NotTo(HaveOccurred())
	ps := &v1alpha1.ProfileSync{
		ObjectMeta: metav1.ObjectMeta{Name: testenv.UniqueName("push"), Namespace: clusterProfilesNamespace},
		Spec:       v1alpha1.ProfileSyncSpec{URL: server.RepoURL("push"), Path: ".", Interval: metav1.Duration{Duration: time.Hour}, Prune: true},
	}
	g.Expect(k8sClient.Create(ctx, ps)).To(Succeed())
	t.Cleanup(func() {
		_ = k8sClient.Delete(ctx, ps)
		for i := range 3 {
			name := fmt.Sprintf("%s-%d", prefix, i)
			for _, ns := range namespaces {
				_ = k8sClient.Delete(ctx, &v1alpha1.NamespacedCloudProfile{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}})
			}
			_ = k8sClient.Delete(ctx, &v1alpha1.CloudProfile{ObjectMeta: metav1.ObjectMeta{Name: name}})
		}
	})

	// Every profile Ready, and the controllers done with them.
	g.Eventually(func(g Gomega) {
		got := getProfileSync(g, ps)
		g.Expect(conditions.IsReady(got)).To(BeTrue(), conditions.GetMessage(got, v1alpha1.ReadyCondition))
		for i := range 3 {
			name := fmt.Sprintf("%s-%d", prefix, i)
			g.Expect(conditions.IsReady(testenv.GetCloudProfile(g, k8sClient, name))).To(BeTrue())
			for _, ns := range namespaces {
				ncp := testenv.GetNamespacedCloudProfile(g, k8sClient, &v1alpha1.NamespacedCloudProfile{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}})
				g.Expect(conditions.IsReady(ncp)).To(BeTrue())
			}
		}
	}).WithTimeout(60 * time.Second).Should(Succeed())
	for i := range 3 {
		name := fmt.Sprintf("%s-%d", prefix, i)
		testenv.SettledResourceVersion(g, k8sClient, &v1alpha1.CloudProfile{ObjectMeta: metav1.ObjectMeta{Name: name}})
		for _, ns := range namespaces {
			testenv.SettledResourceVersion(g, k8sClient, &v1alpha1.NamespacedCloudProfile{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}})
		}
	}

	writes := &objectWrites{counts: map[string]int{}}
	writes.watch(t, prefix, &v1alpha1.CloudProfileList{}, &v1alpha1.NamespacedCloudProfileList{})
	commit, err := server.Commit("push", pushLandscape(prefix, namespaces, "2030-02-01T00:00:00Z"), "keep 1.30.0 of the first profile a month longer")
	g.Expect(err).NotTo(HaveOccurred())
	testenv.UpdateSpec(t, k8sClient, ps, func(ps *v1alpha1.ProfileSync) {
		ps.Annotations = map[string]string{"reconcile.fluxcd.io/requestedAt": "push"}
	})

	changed := fmt.Sprintf("%s-0", prefix)
	newExpiry := builders.Time("2030-02-01T00:00:00Z")
	g.Eventually(func(g Gomega) {
		got := getProfileSync(g, ps)
		g.Expect(got.Status.LastAppliedRevision).To(HaveSuffix(commit))
		cp := testenv.GetCloudProfile(g, k8sClient, changed)
		g.Expect(cp.Status.ObservedGeneration).To(Equal(cp.Generation))
		g.Expect(cp.Status.Kubernetes.Versions[0].NextTransitionTime.Time).To(BeTemporally("==", newExpiry))
		for _, ns := range namespaces {
			ncp := testenv.GetNamespacedCloudProfile(g, k8sClient, &v1alpha1.NamespacedCloudProfile{ObjectMeta: metav1.ObjectMeta{Name: changed, Namespace: ns}})
			g.Expect(startTimes(ncp.Status.CloudProfileSpec.Kubernetes.Versions[0].Lifecycle)).To(ContainElement("expired@2030-02-01T00:00:00Z"))
		}
	}).WithTimeout(30 * time.Second).Should(Succeed())
	// What else the push would write has had time to.
	time.Sleep(3 * time.Second)

	want := map[string]int{
		// The apply, and the status write.
		"*v1alpha1.CloudProfile /" + changed: 2,
	}
	for _, ns := range namespaces {
		want[fmt.Sprintf("*v1alpha1.NamespacedCloudProfile %s/%s", ns, changed)] = 1
	}
	g.Expect(writes.snapshot()).To(Equal(want), "the writes of the push, by object")
	applied, err := testenv.Events(ctx, k8sClient, testenv.EventQuery{Namespace: ps.Namespace, Kind: "ProfileSync", Name: ps.Name, Reason: v1alpha1.AppliedReason})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(testenv.Messages(applied)).To(ContainElement(ContainSubstring(commit+": 0 created, 1 configured")), "one object applied")
}

func startTimes(stages []v1alpha1.LifecycleStage) []string {
	out := make([]string, 0, len(stages))
	for _, s := range stages {
		start := "-"
		if s.StartTime != nil {
			start = s.StartTime.UTC().Format(time.RFC3339)
		}
		out = append(out, string(s.Classification)+"@"+start)
	}
	return out
}
