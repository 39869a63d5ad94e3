package faults

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	v1alpha1 "github.com/profilesync/profilesync/api/v1alpha1"
	"github.com/profilesync/profilesync/internal/gitsource"
	"github.com/profilesync/profilesync/internal/rollout"
	"github.com/profilesync/profilesync/test/gitserver"
)

// pushOutage is a reverse proxy in front of a Git server that answers every
// push (git-receive-pack, its ref listing included) 503 while down is set,
// and forwards every read: the server is down exactly for the record push,
// after the fetch of the sync went through.
type pushOutage struct {
	server *httptest.Server
	down   atomic.Bool
	// refused counts the push requests answered 503.
	refused atomic.Int64
}

func newPushOutage(t *testing.T, target string) *pushOutage {
	t.Helper()
	targetURL, err := url.Parse(target)
	if err != nil {
		t.Fatal(err)
	}
	p := &pushOutage{}
	proxy := httputil.NewSingleHostReverseProxy(targetURL)
	p.server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if p.down.Load() && (strings.HasSuffix(r.URL.Path, "/git-receive-pack") || r.URL.Query().Get("service") == "git-receive-pack") {
			p.refused.Add(1)
			http.Error(w, "injected: the Git server is down", http.StatusServiceUnavailable)
			return
		}
		proxy.ServeHTTP(w, r)
	}))
	t.Cleanup(p.server.Close)
	return p
}

// TestRecordPushWhileTheGitServerIsDownIsRetriedAndNeverBlocks: the Git
// server is down when the landscape pushes the record of a revision it
// applied. The revision stays applied and Ready, Recorded is False with
// reason RecordFailed (one warning event), and once the server is back the
// record is pushed by the backoff's retry, without anyone asking and
// without writing a profile again.
func TestRecordPushWhileTheGitServerIsDownIsRetriedAndNeverBlocks(t *testing.T) {
	g := NewWithT(t)
	l := newLandscape(t)
	pushable, err := gitserver.New(t.TempDir(), gitserver.Options{AllowPush: true})
	g.Expect(err).NotTo(HaveOccurred())
	t.Cleanup(func() { _ = pushable.Close() })
	l.git = pushable
	files := profilesRepo([]string{"1.33.0"}, []string{"aws"}, nil)
	files[rollout.FileName] = "apiVersion: " + rollout.APIVersion + "\nkind: " + rollout.Kind + "\nlandscapes:\n- {name: dev, path: .}\n"
	head := l.commit(files)
	outage := newPushOutage(t, l.git.URL())
	outage.down.Store(true)
	l.createSyncOf(outage.server.URL+"/"+l.repo, nil, time.Hour, 0)
	l.sync.Spec.Rollout = &v1alpha1.ProfileSyncRollout{Record: ptr.To(true)}
	g.Expect(l.env.Client.Update(context.Background(), l.sync)).To(Succeed())
	counter := &faultTransport{}
	l.startManager(managerConfig{faults: counter})

	applied, _ := l.waitRevision("main@sha1:"+head, 20*time.Second)
	g.Expect(inventory(applied)).To(Equal([]string{"CloudProfile//aws"}))
	var failed *v1alpha1.ProfileSync
	g.Eventually(func(g Gomega) {
		failed = l.current(g)
		recorded := apimeta.FindStatusCondition(failed.Status.Conditions, v1alpha1.RecordedCondition)
		g.Expect(recorded).NotTo(BeNil())
		g.Expect(recorded.Status).To(Equal(metav1.ConditionFalse))
		g.Expect(recorded.Reason).To(Equal(v1alpha1.RecordFailedReason))
		g.Expect(recorded.Message).To(ContainSubstring("the applied record of " + head + " for landscape dev was not pushed"))
	}).WithTimeout(20 * time.Second).WithPolling(50 * time.Millisecond).Should(Succeed())
	expectReady(g, failed)
	g.Expect(failed.Status.LastAppliedRevision).To(Equal("main@sha1:"+head), "the apply stands")
	// Down for a while, so the backoff has retried into the outage.
	time.Sleep(8 * time.Second)
	g.Expect(outage.refused.Load()).To(BeNumerically(">=", 2), "the push is retried while the server is down")
	counter.reset()

	outage.down.Store(false)
	started := time.Now()
	g.Eventually(func(g Gomega) {
		got := l.current(g)
		recorded := apimeta.FindStatusCondition(got.Status.Conditions, v1alpha1.RecordedCondition)
		g.Expect(recorded).NotTo(BeNil())
		g.Expect(recorded.Status).To(Equal(metav1.ConditionTrue))
		g.Expect(got.Status.Rollout.RecordedRevision).To(Equal(head))
		expectReady(g, got)
	}).WithTimeout(60 * time.Second).WithPolling(100 * time.Millisecond).Should(Succeed())
	recordedAfter := time.Since(started)

	landscapes, err := gitsource.OpenLandscapes(filepath.Join(l.git.Root(), l.repo+".git"), gitsource.ObjectLimitsFor(0))
	g.Expect(err).NotTo(HaveOccurred())
	defer func() { _ = landscapes.Close() }()
	history, err := landscapes.Records("dev", gitsource.RecordLimits{})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(history.Records).To(HaveLen(1), "one record, pushed once the server was back")
	g.Expect(history.Records[0].Revision).To(Equal(head))
	g.Expect(history.Records[0].Kind).To(Equal(rollout.RecordApplied))
	g.Expect(profileWriteCounts(counter)).To(BeEmpty(), "the retries write no profile")
	g.Expect(l.warningEvents(g)[v1alpha1.RecordFailedReason]).To(HaveLen(1), "one event for the outage, however often it was retried")
	figures(t, "pushes refused during the outage %d, recorded %s after the server came back", outage.refused.Load(), recordedAfter.Round(10*time.Millisecond))
}
