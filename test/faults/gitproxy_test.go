package faults

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1alpha1 "github.com/profilesync/profilesync/api/v1alpha1"
	"github.com/profilesync/profilesync/test/gitserver"
)

// gitProxy puts a FaultProxy in front of the landscape's Git server; the
// ProfileSync of createSyncThrough fetches through it.
func (l *landscape) gitProxy() *gitserver.FaultProxy {
	l.t.Helper()
	proxy, err := gitserver.NewFaultProxy(l.git.URL())
	if err != nil {
		l.t.Fatalf("start Git fault proxy: %v", err)
	}
	l.t.Cleanup(func() { _ = proxy.Close() })
	return proxy
}

// setMode switches the proxy's fault.
func setMode(t *testing.T, proxy *gitserver.FaultProxy, mode gitserver.FaultMode) {
	t.Helper()
	if err := proxy.SetMode(mode); err != nil {
		t.Fatalf("switch the Git proxy to %s: %v", mode, err)
	}
}

// createSyncThrough creates the landscape's ProfileSync (prune on) for the
// repository behind proxy, with ref (nil: the remote's HEAD), interval and
// timeout (zero: the default).
func (l *landscape) createSyncThrough(proxy *gitserver.FaultProxy, ref *v1alpha1.GitReference, interval, timeout time.Duration) {
	l.createSyncOf(proxy.RepoURL(l.repo), ref, interval, timeout)
}

// waitFetchFailed waits until the ProfileSync reports FetchFailed (and
// Ready=False) with a message containing each of words, and returns it
// with the time waited.
func (l *landscape) waitFetchFailed(timeout time.Duration, words ...string) (*v1alpha1.ProfileSync, time.Duration) {
	l.t.Helper()
	started := time.Now()
	var got *v1alpha1.ProfileSync
	NewWithT(l.t).Eventually(func(g Gomega) {
		got = l.current(g)
		failed := apimeta.FindStatusCondition(got.Status.Conditions, v1alpha1.FetchFailedCondition)
		g.Expect(failed).NotTo(BeNil(), "conditions: %v", got.Status.Conditions)
		g.Expect(failed.Status).To(Equal(metav1.ConditionTrue))
		for _, w := range words {
			g.Expect(failed.Message).To(ContainSubstring(w))
		}
		ready := apimeta.FindStatusCondition(got.Status.Conditions, v1alpha1.ReadyCondition)
		g.Expect(ready).NotTo(BeNil())
		g.Expect(ready.Status).To(Equal(metav1.ConditionFalse))
		g.Expect(ready.Reason).To(Equal(v1alpha1.FetchFailedReason))
	}).WithTimeout(timeout).WithPolling(50 * time.Millisecond).Should(Succeed())
	return got, time.Since(started)
}

// kubernetesVersions is what the CloudProfile name offers on the cluster:
// which revision's content is there.
func (l *landscape) kubernetesVersions(g Gomega, name string) []string {
	var cp v1alpha1.CloudProfile
	g.Expect(l.env.Client.Get(context.Background(), client.ObjectKey{Name: name}, &cp)).To(Succeed())
	var versions []string
	for _, v := range cp.Spec.Kubernetes.Versions {
		versions = append(versions, v.Version)
	}
	return versions
}

// profileWriteCounts counts the writes of profiles (not their status, not dry
// runs) a manager made, by method, like "PATCH cloudprofiles".
func profileWriteCounts(f *faultTransport) map[string]int {
	counts := map[string]int{}
	for _, w := range f.recorded(objectWrites) {
		counts[w.Method+" "+w.Resource]++
	}
	return counts
}

// figures logs a test's measurements, the numbers docs/reliability.md
// quotes, on one line that `go test -v` shows.
func figures(t *testing.T, format string, args ...any) {
	t.Helper()
	t.Logf("figures: "+format, args...)
}
