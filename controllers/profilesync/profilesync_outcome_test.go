package profilesync

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/fluxcd/pkg/runtime/conditions"
	"github.com/go-logr/logr/funcr"
	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	v1alpha1 "github.com/profilesync/profilesync/api/v1alpha1"
)

// TestAnUnexpectedErrorLeavesNoOldReadyInPlace syncs a good revision, then
// makes the cluster unlistable: the next sync is Ready=False with the
// reason SyncFailed, not the old Ready=True, and is retried with backoff.
// Each sync logs one line, a suspended one too.
func TestAnUnexpectedErrorLeavesNoOldReadyInPlace(t *testing.T) {
	g := NewWithT(t)
	var logged []string
	ctx := ctrl.LoggerInto(context.Background(), funcr.New(func(prefix, args string) { logged = append(logged, prefix+" "+args) }, funcr.Options{}))
	server := startGitServer(t)
	commit, err := server.CreateRepo("unexpected", singleProfileRepo("unexpected", "1.31.0"))
	g.Expect(err).NotTo(HaveOccurred())

	obj := &v1alpha1.ProfileSync{
		ObjectMeta: metav1.ObjectMeta{Name: "landscape", Namespace: "landscape"},
		Spec:       v1alpha1.ProfileSyncSpec{URL: server.RepoURL("unexpected"), Interval: metav1.Duration{Duration: time.Hour}},
	}
	listFails := false
	r, c := fakeSyncReconciler(t, obj, interceptor.Funcs{List: func(ctx context.Context, c client.WithWatch, list client.ObjectList, opts ...client.ListOption) error {
		if listFails {
			return errors.New("the cache is gone")
		}
		return c.List(ctx, list, opts...)
	}})
	request := ctrl.Request{NamespacedName: client.ObjectKeyFromObject(obj)}
	got := func() *v1alpha1.ProfileSync {
		var current v1alpha1.ProfileSync
		g.Expect(c.Get(ctx, request.NamespacedName, &current)).To(Succeed())
		return &current
	}

	_, err = r.Reconcile(ctx, request)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(conditions.IsReady(got())).To(BeTrue())
	g.Expect(got().Status.LastAppliedRevision).To(Equal("main@sha1:" + commit))
	g.Expect(logged).To(HaveLen(1), "one line per sync")
	g.Expect(logged[0]).To(And(ContainSubstring(`"msg"="sync applied"`), ContainSubstring(`"revision"="main@sha1:`+commit+`"`),
		ContainSubstring(`"result"="Applied"`), ContainSubstring(`"duration"=`)))

	listFails = true
	_, err = r.Reconcile(ctx, request)
	g.Expect(err).To(MatchError(ContainSubstring("the cache is gone")), "returned, so it is retried with backoff")
	failed := got()
	g.Expect(conditions.IsReady(failed)).To(BeFalse())
	g.Expect(conditions.GetReason(failed, v1alpha1.ReadyCondition)).To(Equal(v1alpha1.SyncFailedReason))
	g.Expect(conditions.GetMessage(failed, v1alpha1.ReadyCondition)).To(ContainSubstring("the cache is gone"))
	g.Expect(conditions.IsStalled(failed)).To(BeFalse())
	g.Expect(logged).To(HaveLen(2))
	g.Expect(logged[1]).To(And(ContainSubstring(`"msg"="sync failed"`), ContainSubstring(`"result"="SyncFailed"`), ContainSubstring("the cache is gone")))

	failed.Spec.Suspend = true
	g.Expect(c.Update(ctx, failed)).To(Succeed())
	_, err = r.Reconcile(ctx, request)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(logged).To(HaveLen(3))
	g.Expect(logged[2]).To(And(ContainSubstring(`"msg"="sync suspended"`), ContainSubstring(`"revision"="main@sha1:`+commit+`"`),
		ContainSubstring(`"result"="Suspended"`)))
}

// TestTheDocsListEveryFailureReason keeps docs/gitops.md's conditions and
// docs/metrics.md's refused-revision reasons in step with failureKinds.
func TestTheDocsListEveryFailureReason(t *testing.T) {
	g := NewWithT(t)
	read := func(name string) string {
		content, err := os.ReadFile(filepath.Join("..", "..", "docs", name))
		g.Expect(err).NotTo(HaveOccurred())
		return string(content)
	}
	gitops, metrics := read("gitops.md"), read("metrics.md")
	var refusedLine string
	for _, line := range strings.Split(metrics, "\n") {
		if strings.Contains(line, "`profilesync_sync_revisions_refused_total`") {
			refusedLine = line
		}
	}
	g.Expect(refusedLine).NotTo(BeEmpty())
	for _, reason := range RefusalReasons {
		g.Expect(gitops).To(ContainSubstring("| `"+reason+"` |"), "docs/gitops.md has a row for %s", reason)
		g.Expect(refusedLine).To(ContainSubstring("`"+reason+"`"), "docs/metrics.md lists %s", reason)
	}
}
