package faults

import (
	"context"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	admissionv1 "k8s.io/api/admissionregistration/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	v1alpha1 "github.com/profilesync/profilesync/api/v1alpha1"
	"github.com/profilesync/profilesync/test/testenv"
	"github.com/profilesync/profilesync/webhooks"
)

// webhookOutage is how long the webhook server stays away.
const webhookOutage = 5 * time.Second

// startWebhooks serves the admission webhooks from a manager of their own,
// on the address the installed webhook configuration points at: stopping it
// is the webhook Deployment going away while the controllers keep running,
// and starting another is it coming back.
func (l *landscape) startWebhooks() *testenv.Manager {
	l.t.Helper()
	m, err := l.env.StartManager(testenv.ManagerOptions{
		Webhooks: true,
		Setup: func(_ context.Context, mgr manager.Manager, _ *testenv.Env) error {
			return webhooks.SetupWithManager(mgr, webhooks.Options{Clock: clock.RealClock{}})
		},
	})
	if err != nil {
		l.t.Fatalf("start webhook server: %v", err)
	}
	l.t.Cleanup(func() { _ = m.Stop() })
	return m
}

// TestAdmissionWebhookUnavailableKeepsTheLastRevisionAndRecovers: with the
// admission webhooks installed (failurePolicy Fail, as config/webhook has
// them) and their server gone, the API server refuses every write the
// webhooks guard. The sync reports ApplyFailed naming the webhook, writes
// nothing of the new revision, keeps retrying with backoff (not Stalled: the
// revision is fine), and applies it at the first retry after the webhook
// server is back.
func TestAdmissionWebhookUnavailableKeepsTheLastRevisionAndRecovers(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	l := newLandscape(t, testenv.WithWebhooks())

	var hooks admissionv1.ValidatingWebhookConfiguration
	g.Expect(l.env.Client.Get(ctx, client.ObjectKey{Name: "validating-webhook-configuration"}, &hooks)).To(Succeed())
	g.Expect(hooks.Webhooks).To(HaveLen(2))
	for _, h := range hooks.Webhooks {
		g.Expect(h.FailurePolicy).To(HaveValue(Equal(admissionv1.Fail)), "webhook %s fails closed", h.Name)
	}

	server := l.startWebhooks()
	first := l.commit(profilesRepo([]string{"1.33.0"}, []string{"aws"}, []string{"aws-team"}))
	l.createSync(time.Hour)
	faults := &faultTransport{}
	l.startManager(managerConfig{faults: faults})
	before := l.waitApplied(first, 30*time.Second)
	wantBefore := []string{"CloudProfile//aws", "NamespacedCloudProfile/team-a/aws-team"}
	g.Expect(inventory(before)).To(Equal(wantBefore))

	g.Expect(server.Stop()).To(Succeed())
	faults.reset()
	// Every failed sync of the new revision sends gcp, the first object of
	// its stage, in the stage's dry run, where it stops; the API server's 500
	// for the webhook is repeated at once up to four times (retryTransient).
	// Count the requests.
	var syncs atomic.Int32
	faults.inject(func(req *http.Request) (*http.Response, error) {
		if w := parseWrite(req); isWrite(req) && w.Resource == "cloudprofiles" && w.Name == "gcp" && w.Subresource == "" {
			syncs.Add(1)
		}
		return nil, nil
	})

	// The revision creates gcp and updates aws, both through the
	// CloudProfile webhook: the dry run of their stage fails on gcp, the
	// first, so aws is not written either.
	second := l.commit(profilesRepo([]string{"1.33.0", "1.34.1"}, []string{"gcp", "aws"}, []string{"aws-team"}))
	requested := time.Now()
	l.requestSync("second")

	g.Eventually(func(g Gomega) {
		got := l.current(g)
		g.Expect(got.Status.LastAttemptedRevision).To(Equal("main@sha1:" + second))
		failed := apimeta.FindStatusCondition(got.Status.Conditions, v1alpha1.ApplyFailedCondition)
		g.Expect(failed).NotTo(BeNil())
		g.Expect(failed.Status).To(Equal(metav1.ConditionTrue))
		g.Expect(failed.Message).To(ContainSubstring(`apply CloudProfile/gcp: `))
		g.Expect(failed.Message).To(ContainSubstring(`admission webhook "vcloudprofile.core.profilesync.io" could not be called`))
		ready := apimeta.FindStatusCondition(got.Status.Conditions, v1alpha1.ReadyCondition)
		g.Expect(ready).NotTo(BeNil())
		g.Expect(ready.Status).To(Equal(metav1.ConditionFalse))
		g.Expect(ready.Reason).To(Equal(v1alpha1.ApplyFailedReason))
		g.Expect(apimeta.FindStatusCondition(got.Status.Conditions, v1alpha1.StalledCondition)).To(BeNil(), "a webhook that cannot be called may come back: retry")
		g.Expect(got.Status.LastAppliedRevision).To(Equal("main@sha1:" + first))
		g.Expect(inventory(got)).To(Equal(wantBefore))
	}).WithTimeout(20 * time.Second).WithPolling(50 * time.Millisecond).Should(Succeed())
	reported := time.Since(requested)

	// While the webhook is away the sync retries with backoff, and the last
	// revision stays as it was: nothing of the new one is written.
	time.Sleep(webhookOutage - time.Since(requested))
	g.Expect(l.onCluster(g)).To(Equal(wantBefore), "nothing of the new revision is written")
	var aws v1alpha1.CloudProfile
	g.Expect(l.env.Client.Get(ctx, client.ObjectKey{Name: "aws"}, &aws)).To(Succeed())
	g.Expect(aws.Spec.Kubernetes.Versions).To(HaveLen(1), "aws keeps the first revision")
	g.Expect(faults.recorded(apiWrite("cloudprofiles"))).To(BeEmpty())
	g.Expect(faults.recorded(apiWrite("namespacedcloudprofiles"))).To(BeEmpty())
	failedSyncs := syncs.Load()
	g.Expect(failedSyncs).To(BeNumerically(">=", 2), "retried")
	// The controller's backoff (750 ms doubling) allows about five syncs
	// in the outage, four requests each; a hot loop would send hundreds.
	g.Expect(failedSyncs).To(BeNumerically("<=", 24), "with backoff, not in a hot loop")
	g.Expect(inventory(l.current(g))).To(Equal(wantBefore))

	l.startWebhooks()
	returned := time.Now()
	applied := l.waitApplied(second, 30*time.Second)
	recovered := time.Since(returned)
	want := []string{"CloudProfile//aws", "CloudProfile//gcp", "NamespacedCloudProfile/team-a/aws-team"}
	g.Expect(inventory(applied)).To(Equal(want))
	g.Expect(l.onCluster(g)).To(Equal(want))
	g.Expect(apimeta.FindStatusCondition(applied.Status.Conditions, v1alpha1.ApplyFailedCondition)).To(BeNil())
	g.Expect(faults.recorded(apiWrite("cloudprofiles"))).To(HaveLen(2), "aws updated and gcp created, once each")
	g.Expect(faults.recorded(apiWrite("namespacedcloudprofiles"))).To(BeEmpty(), "aws-team is unchanged")
	events := l.warningEvents(g)
	g.Expect(events).To(HaveKey(v1alpha1.ApplyFailedReason))
	g.Expect(events[v1alpha1.ApplyFailedReason]).To(HaveLen(1), "one event for the failure, however often it was retried")
	eventObjects, err := testenv.Events(ctx, l.env.Client, testenv.EventQuery{Namespace: landscapeNamespace, Reason: v1alpha1.ApplyFailedReason})
	g.Expect(err).NotTo(HaveOccurred())
	statusPatches := faults.recorded(func(w write) bool { return w.Resource == "profilesyncs" && w.Subresource == "status" })
	t.Logf("webhook away for %v: ApplyFailed after %v, %d requests of failed syncs, %d ApplyFailed events in %d Event objects, %d ProfileSync status patches; applied %v after it returned with %d CloudProfile writes",
		webhookOutage, reported.Round(time.Millisecond), failedSyncs, len(events[v1alpha1.ApplyFailedReason]), len(eventObjects), len(statusPatches),
		recovered.Round(time.Millisecond), len(faults.recorded(apiWrite("cloudprofiles"))))
}
