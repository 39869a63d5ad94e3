package receiver

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/fluxcd/pkg/apis/meta"
	. "github.com/onsi/gomega"
	"github.com/prometheus/client_golang/prometheus/testutil"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	"sigs.k8s.io/controller-runtime/pkg/event"

	v1alpha1 "github.com/profilesync/profilesync/api/v1alpha1"
)

const namespace = "landscape"

// hookFixture is a receiver on a fake clock in front of a fake API server
// with three ProfileSyncs: "hooked" (its Secret "hook-token" holds
// webhookToken), "unhooked" (no spec.webhook) and "secretless" (its Secret
// "no-such-secret" does not exist). It counts the API server's Secret reads
// and ProfileSync patches.
type hookFixture struct {
	receiver    *Receiver
	client      client.Client
	clock       *clocktesting.FakeClock
	triggers    chan event.GenericEvent
	secretReads atomic.Int64
	patches     atomic.Int64
	// readErr, when set, is what every Secret read returns.
	readErr atomic.Pointer[error]
}

// newHookFixture starts the fixture; leader says whether the receiver leads
// (triggers through the channel) or not (patches the annotation).
func newHookFixture(t *testing.T, leader bool) *hookFixture {
	t.Helper()
	scheme := runtime.NewScheme()
	if err := corev1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	if err := v1alpha1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	f := &hookFixture{
		clock:    clocktesting.NewFakeClock(time.Date(2030, 1, 1, 12, 0, 0, 0, time.UTC)),
		triggers: make(chan event.GenericEvent, 1000),
	}
	withHook := func(name, secret string) *v1alpha1.ProfileSync {
		obj := &v1alpha1.ProfileSync{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name}}
		if secret != "" {
			obj.Spec.Webhook = &v1alpha1.ProfileSyncWebhook{SecretRef: meta.LocalObjectReference{Name: secret}}
		}
		return obj
	}
	f.client = fake.NewClientBuilder().WithScheme(scheme).
		WithObjects(
			withHook("hooked", "hook-token"),
			withHook("unhooked", ""),
			withHook("secretless", "no-such-secret"),
			&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: "hook-token"},
				Data: map[string][]byte{TokenKey: []byte(webhookToken)}},
		).
		WithInterceptorFuncs(interceptor.Funcs{
			Get: func(ctx context.Context, c client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
				if _, ok := obj.(*corev1.Secret); ok {
					f.secretReads.Add(1)
					if err := f.readErr.Load(); err != nil {
						return *err
					}
				}
				return c.Get(ctx, key, obj, opts...)
			},
			Patch: func(ctx context.Context, c client.WithWatch, obj client.Object, patch client.Patch, opts ...client.PatchOption) error {
				f.patches.Add(1)
				return c.Patch(ctx, obj, patch, opts...)
			},
		}).Build()
	f.receiver = &Receiver{
		Client:       f.client,
		SecretReader: f.client,
		Clock:        f.clock,
		Metrics:      NewMetrics(),
	}
	if leader {
		f.receiver.Trigger = f.triggers
	} else {
		f.receiver.Elected = make(chan struct{})
	}
	f.refresh()
	return f
}

// refresh reads the webhook Secrets that are new or due, as the receiver
// does every RefreshInterval once started.
func (f *hookFixture) refresh() {
	f.receiver.refreshTokens(context.Background())
}

// post sends one request to the hook of name and returns the status.
func (f *hookFixture) post(name string, header map[string]string) int {
	req := httptest.NewRequest(http.MethodPost, PathPrefix+namespace+"/"+name, strings.NewReader(pushBody))
	for k, v := range header {
		req.Header.Set(k, v)
	}
	rec := httptest.NewRecorder()
	f.receiver.ServeHTTP(rec, req)
	return rec.Code
}

func (f *hookFixture) requests(result string) int {
	return int(testutil.ToFloat64(f.receiver.Metrics.requests.WithLabelValues(result)))
}

func signedWith(token string) map[string]string {
	return map[string]string{GitHubSignatureHeader: hmacHex(token, pushBody)}
}

func TestEveryRequestThatDoesNotProveTheTokenGetsTheSameAnswer(t *testing.T) {
	f := newHookFixture(t, true)
	for _, tc := range []struct {
		name, path string
		header     map[string]string
	}{
		{"an unknown ProfileSync", PathPrefix + namespace + "/no-such-sync", signedWith(webhookToken)},
		{"an unknown namespace", PathPrefix + "no-such-namespace/hooked", signedWith(webhookToken)},
		{"a ProfileSync without spec.webhook", PathPrefix + namespace + "/unhooked", signedWith(webhookToken)},
		{"a ProfileSync whose Secret is missing", PathPrefix + namespace + "/secretless", signedWith(webhookToken)},
		{"a request without any signature", PathPrefix + namespace + "/hooked", nil},
		{"a signature with another token", PathPrefix + namespace + "/hooked", signedWith("wrong")},
		{"a wrong GitLab token", PathPrefix + namespace + "/hooked", map[string]string{GitLabTokenHeader: "wrong"}},
		{"a path that is no hook", "/hooks/" + namespace + "/hooked", signedWith(webhookToken)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			req := httptest.NewRequest(http.MethodPost, tc.path, strings.NewReader(pushBody))
			for k, v := range tc.header {
				req.Header.Set(k, v)
			}
			rec := httptest.NewRecorder()
			f.receiver.ServeHTTP(rec, req)
			g.Expect(rec.Code).To(Equal(http.StatusNotFound))
			g.Expect(strings.TrimSpace(rec.Body.String())).To(Equal(http.StatusText(http.StatusNotFound)))
		})
	}
	g := NewWithT(t)
	g.Expect(f.requests(resultRefused)).To(Equal(8))
	g.Expect(f.triggers).To(BeEmpty())
}

func TestSecretsAreReadOncePerTTLAndNeverByARequest(t *testing.T) {
	g := NewWithT(t)
	f := newHookFixture(t, true)
	// The fixture's refresh read "hook-token" and the missing
	// "no-such-secret", once each.
	g.Expect(f.secretReads.Load()).To(Equal(int64(2)))
	g.Expect(testutil.ToFloat64(f.receiver.Metrics.secretReads)).To(Equal(2.0))
	forged := []struct {
		name   string
		header map[string]string
	}{
		{"hooked", signedWith("guessed")},
		{"hooked", nil},
		{"hooked", map[string]string{GitLabTokenHeader: "guessed"}},
		{"secretless", signedWith("guessed")},
		{"unhooked", signedWith("guessed")},
		{"no-such-sync", signedWith("guessed")},
	}
	for i := range 2000 {
		hook := forged[i%len(forged)]
		g.Expect(f.post(hook.name, hook.header)).To(Equal(http.StatusNotFound))
	}
	g.Expect(f.secretReads.Load()).To(Equal(int64(2)), "no request reads a Secret")

	f.clock.Step(DefaultTokenTTL - time.Millisecond)
	f.refresh()
	g.Expect(f.secretReads.Load()).To(Equal(int64(2)), "still within the TTL")
	f.clock.Step(time.Millisecond)
	f.refresh()
	f.refresh()
	g.Expect(f.secretReads.Load()).To(Equal(int64(4)), "one read of each Secret per TTL")
	g.Expect(f.triggers).To(BeEmpty())
}

func TestConcurrentRequestsReadNoSecret(t *testing.T) {
	g := NewWithT(t)
	f := newHookFixture(t, true)
	before := f.secretReads.Load()
	var wg sync.WaitGroup
	for i := range 200 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			f.post([]string{"hooked", "unhooked", "secretless"}[i%3], signedWith("guessed"))
		}()
	}
	wg.Wait()
	g.Expect(f.secretReads.Load()).To(Equal(before))
}

// TestAHookedAndAnUnhookedProfileSyncCostTheSame: a caller without the token
// cannot tell a ProfileSync with a hook from one without by the work its
// request causes or the time it takes. Neither reads a Secret, and their
// answer times overlap with close medians. The timing bounds are loose (the
// suite runs on loaded machines); the count of reads is exact.
func TestAHookedAndAnUnhookedProfileSyncCostTheSame(t *testing.T) {
	g := NewWithT(t)
	f := newHookFixture(t, true)
	// A fresh TTL: the first request after it is where reading on the
	// request path showed.
	f.clock.Step(DefaultTokenTTL)
	before := f.secretReads.Load()
	const n = 400
	took := map[string][]time.Duration{}
	for i := range 2 * n {
		name := []string{"hooked", "unhooked"}[i%2]
		start := time.Now()
		g.Expect(f.post(name, signedWith("guessed"))).To(Equal(http.StatusNotFound))
		took[name] = append(took[name], time.Since(start))
	}
	g.Expect(f.secretReads.Load()).To(Equal(before), "no request reads a Secret, with a hook or without")

	hooked, unhooked := sortedDurations(took["hooked"]), sortedDurations(took["unhooked"])
	t.Logf("answer times, hooked: median %v (%v–%v); unhooked: median %v (%v–%v)",
		hooked[n/2], hooked[0], hooked[n-1], unhooked[n/2], unhooked[0], unhooked[n-1])
	const slack = 200 * time.Microsecond
	g.Expect(hooked[n/2]).To(BeNumerically("<=", 3*unhooked[n/2]+slack), "medians: hooked %v, unhooked %v", hooked[n/2], unhooked[n/2])
	g.Expect(unhooked[n/2]).To(BeNumerically("<=", 3*hooked[n/2]+slack), "medians: hooked %v, unhooked %v", hooked[n/2], unhooked[n/2])
	g.Expect(hooked[0]).To(BeNumerically("<=", unhooked[n-1]), "the two sets overlap")
	g.Expect(unhooked[0]).To(BeNumerically("<=", hooked[n-1]), "the two sets overlap")
}

func sortedDurations(d []time.Duration) []time.Duration {
	sorted := slices.Clone(d)
	slices.Sort(sorted)
	return sorted
}

func TestARotatedTokenTakesEffectWithinTheTTL(t *testing.T) {
	g := NewWithT(t)
	f := newHookFixture(t, true)
	g.Expect(f.post("hooked", signedWith(webhookToken))).To(Equal(http.StatusAccepted))

	secret := &corev1.Secret{}
	g.Expect(f.client.Get(context.Background(), types.NamespacedName{Namespace: namespace, Name: "hook-token"}, secret)).To(Succeed())
	secret.Data[TokenKey] = []byte("rotated-token")
	g.Expect(f.client.Update(context.Background(), secret)).To(Succeed())

	f.clock.Step(DefaultTokenTTL / 2)
	f.refresh()
	g.Expect(f.post("hooked", signedWith("rotated-token"))).To(Equal(http.StatusNotFound), "the old token is kept")
	g.Expect(f.post("hooked", signedWith(webhookToken))).To(Equal(http.StatusAccepted))

	f.clock.Step(DefaultTokenTTL / 2)
	f.refresh()
	g.Expect(f.post("hooked", signedWith("rotated-token"))).To(Equal(http.StatusAccepted))
	g.Expect(f.post("hooked", signedWith(webhookToken))).To(Equal(http.StatusNotFound))
}

func TestASecretCreatedAfterAHookTakesEffectWithinTheTTL(t *testing.T) {
	g := NewWithT(t)
	f := newHookFixture(t, true)
	g.Expect(f.post("secretless", signedWith(webhookToken))).To(Equal(http.StatusNotFound))
	g.Expect(f.client.Create(context.Background(), &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: "no-such-secret"},
		Data:       map[string][]byte{TokenKey: []byte(webhookToken)},
	})).To(Succeed())
	f.refresh()
	g.Expect(f.post("secretless", signedWith(webhookToken))).To(Equal(http.StatusNotFound), "the missing Secret is remembered")
	f.clock.Step(DefaultTokenTTL)
	f.refresh()
	g.Expect(f.post("secretless", signedWith(webhookToken))).To(Equal(http.StatusAccepted))
}

func TestANewHookIsReadAtTheNextRefresh(t *testing.T) {
	g := NewWithT(t)
	f := newHookFixture(t, true)
	late := &v1alpha1.ProfileSync{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: "late"}}
	late.Spec.Webhook = &v1alpha1.ProfileSyncWebhook{SecretRef: meta.LocalObjectReference{Name: "hook-token-late"}}
	g.Expect(f.client.Create(context.Background(), late)).To(Succeed())
	g.Expect(f.client.Create(context.Background(), &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: "hook-token-late"},
		Data:       map[string][]byte{TokenKey: []byte(webhookToken)},
	})).To(Succeed())
	g.Expect(f.post("late", signedWith(webhookToken))).To(Equal(http.StatusNotFound), "not read yet")
	f.refresh()
	g.Expect(f.post("late", signedWith(webhookToken))).To(Equal(http.StatusAccepted))
}

func TestAFailedSecretReadIsRetriedAfterASecond(t *testing.T) {
	g := NewWithT(t)
	f := newHookFixture(t, true)
	outage := errors.New("connection refused")
	f.readErr.Store(&outage)
	f.clock.Step(DefaultTokenTTL)
	f.refresh()
	g.Expect(f.post("hooked", signedWith(webhookToken))).To(Equal(http.StatusAccepted), "the token read before the outage is kept")
	g.Expect(f.post("secretless", signedWith(webhookToken))).To(Equal(http.StatusNotFound), "so is a missing Secret")

	other := &v1alpha1.ProfileSync{ObjectMeta: metav1.ObjectMeta{Namespace: "elsewhere", Name: "late"}}
	other.Spec.Webhook = &v1alpha1.ProfileSyncWebhook{SecretRef: meta.LocalObjectReference{Name: "hook-token"}}
	g.Expect(f.client.Create(context.Background(), other)).To(Succeed())
	f.refresh()
	reads := f.secretReads.Load()
	req := httptest.NewRequest(http.MethodPost, PathPrefix+"elsewhere/late", strings.NewReader(pushBody))
	req.Header.Set(GitHubSignatureHeader, hmacHex(webhookToken, pushBody))
	rec := httptest.NewRecorder()
	f.receiver.ServeHTTP(rec, req)
	g.Expect(rec.Code).To(Equal(http.StatusServiceUnavailable), "a Secret never read yet for the outage")
	g.Expect(f.requests(resultFailed)).To(Equal(1))
	f.refresh()
	g.Expect(f.secretReads.Load()).To(Equal(reads), "retried only after a second")

	f.readErr.Store(nil)
	f.clock.Step(tokenRetryDelay)
	f.refresh()
	g.Expect(f.secretReads.Load()).To(Equal(reads+3), "the three failed reads are retried")
	g.Expect(f.post("hooked", signedWith(webhookToken))).To(Equal(http.StatusAccepted))
	rec = httptest.NewRecorder()
	f.receiver.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, PathPrefix+"elsewhere/late", strings.NewReader(pushBody)))
	g.Expect(rec.Code).To(Equal(http.StatusNotFound), "read now: unsigned requests are refused like any other")
}

func TestTheTokenStoreHoldsABoundedNumberOfSecrets(t *testing.T) {
	g := NewWithT(t)
	f := newHookFixture(t, true)
	for i := range 20 {
		obj := &v1alpha1.ProfileSync{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: fmt.Sprintf("sync-%d", i)}}
		obj.Spec.Webhook = &v1alpha1.ProfileSyncWebhook{SecretRef: meta.LocalObjectReference{Name: fmt.Sprintf("secret-%d", i)}}
		g.Expect(f.client.Create(context.Background(), obj)).To(Succeed())
	}
	store := newTokenStore(f.client, f.client, f.clock, DefaultTokenTTL, nil)
	store.limit = 10
	g.Expect(store.refresh(context.Background())).To(Succeed())
	g.Expect(store.entries).To(HaveLen(10))
}

func TestAReplayedRequestLeavesAtMostOneSyncPending(t *testing.T) {
	g := NewWithT(t)
	f := newHookFixture(t, true)
	for range 500 {
		g.Expect(f.post("hooked", signedWith(webhookToken))).To(Equal(http.StatusAccepted))
	}
	g.Expect(f.triggers).To(HaveLen(1), "the first request triggers at once")
	g.Expect(f.requests(resultTriggered)).To(Equal(1))
	g.Expect(f.requests(resultDeferred)).To(Equal(1))
	g.Expect(f.requests(resultCoalesced)).To(Equal(498))

	f.clock.Step(DefaultTriggerSpacing)
	g.Eventually(f.triggers).Should(HaveLen(2), "the deferred trigger at the end of the spacing")
	g.Consistently(f.triggers).WithTimeout(200 * time.Millisecond).Should(HaveLen(2))
	g.Expect(f.secretReads.Load()).To(Equal(int64(2)), "the fixture's refresh only")
}

func TestReplaysOverSecondsTriggerOncePerSpacing(t *testing.T) {
	g := NewWithT(t)
	f := newHookFixture(t, true)
	// 500 replays over 4 s: triggers at 0 s, then at the end of each
	// spacing, 1 s to 4 s.
	for range 500 {
		g.Expect(f.post("hooked", signedWith(webhookToken))).To(Equal(http.StatusAccepted))
		f.clock.Step(8 * time.Millisecond)
	}
	f.clock.Step(DefaultTriggerSpacing)
	g.Eventually(f.triggers).Should(HaveLen(5))
	g.Consistently(f.triggers).WithTimeout(200 * time.Millisecond).Should(HaveLen(5))
}

func TestAPushAfterTheSpacingTriggersAtOnce(t *testing.T) {
	g := NewWithT(t)
	f := newHookFixture(t, true)
	g.Expect(f.post("hooked", signedWith(webhookToken))).To(Equal(http.StatusAccepted))
	f.clock.Step(DefaultTriggerSpacing)
	g.Expect(f.post("hooked", signedWith(webhookToken))).To(Equal(http.StatusAccepted))
	g.Expect(f.triggers).To(HaveLen(2))
	g.Expect(f.requests(resultTriggered)).To(Equal(2))
	g.Expect(f.clock.HasWaiters()).To(BeFalse(), "nothing deferred")
}

func TestReplaysOnAReplicaThatDoesNotLeadPatchOncePerSpacing(t *testing.T) {
	g := NewWithT(t)
	f := newHookFixture(t, false)
	for range 500 {
		g.Expect(f.post("hooked", signedWith(webhookToken))).To(Equal(http.StatusAccepted))
	}
	g.Expect(f.patches.Load()).To(Equal(int64(1)))
	f.clock.Step(DefaultTriggerSpacing)
	g.Eventually(f.patches.Load).Should(Equal(int64(2)))
	g.Consistently(f.patches.Load).WithTimeout(200 * time.Millisecond).Should(Equal(int64(2)))

	var got v1alpha1.ProfileSync
	g.Expect(f.client.Get(context.Background(), types.NamespacedName{Namespace: namespace, Name: "hooked"}, &got)).To(Succeed())
	g.Expect(got.Annotations).To(HaveKeyWithValue(meta.ReconcileRequestAnnotation, f.clock.Now().UTC().Format(time.RFC3339Nano)))
}

func TestATriggerThatFailedDoesNotHoldTheNextOneBack(t *testing.T) {
	g := NewWithT(t)
	f := newHookFixture(t, true)
	// No one takes from the channel: the hand-over times out.
	blocked := make(chan event.GenericEvent)
	f.receiver.Trigger = blocked
	answered := make(chan int, 1)
	go func() { answered <- f.post("hooked", signedWith(webhookToken)) }()
	g.Eventually(f.clock.HasWaiters).Should(BeTrue())
	f.clock.Step(triggerTimeout)
	g.Eventually(answered).Should(Receive(Equal(http.StatusServiceUnavailable)))

	go func() { answered <- f.post("hooked", signedWith(webhookToken)) }()
	g.Eventually(blocked).Should(Receive(), "triggered at once, not deferred")
	g.Eventually(answered).Should(Receive(Equal(http.StatusAccepted)))
	g.Expect(f.requests(resultDeferred)).To(Equal(0))
}

func TestStartCancelsTheDeferredTriggersWhenItStops(t *testing.T) {
	g := NewWithT(t)
	f := newHookFixture(t, true)
	f.receiver.Addr = "127.0.0.1:0"
	ctx, cancel := context.WithCancel(context.Background())
	started := make(chan error, 1)
	go func() { started <- f.receiver.Start(ctx) }()
	g.Eventually(f.receiver.ListenAddr).ShouldNot(BeNil())
	g.Expect(f.post("hooked", signedWith(webhookToken))).To(Equal(http.StatusAccepted))
	g.Expect(f.post("hooked", signedWith(webhookToken))).To(Equal(http.StatusAccepted))
	g.Expect(f.requests(resultDeferred)).To(Equal(1))
	cancel()
	g.Eventually(started).WithTimeout(10 * time.Second).Should(Receive(BeNil()))
	f.clock.Step(DefaultTriggerSpacing)
	g.Consistently(f.triggers).WithTimeout(200 * time.Millisecond).Should(HaveLen(1))
}

func TestStartServesOnceItHasReadTheTokens(t *testing.T) {
	g := NewWithT(t)
	f := newHookFixture(t, true)
	// A hook the fixture's refresh did not see: only Start's own read of
	// the tokens, before it serves, can know it (the fake clock never
	// reaches the next refresh).
	late := &v1alpha1.ProfileSync{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: "late"}}
	late.Spec.Webhook = &v1alpha1.ProfileSyncWebhook{SecretRef: meta.LocalObjectReference{Name: "late-token"}}
	g.Expect(f.client.Create(context.Background(), late)).To(Succeed())
	g.Expect(f.client.Create(context.Background(), &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: "late-token"},
		Data:       map[string][]byte{TokenKey: []byte(webhookToken)},
	})).To(Succeed())
	f.receiver.Addr = "127.0.0.1:0"
	ctx, cancel := context.WithCancel(context.Background())
	started := make(chan error, 1)
	go func() { started <- f.receiver.Start(ctx) }()
	defer func() {
		cancel()
		g.Eventually(started).WithTimeout(10 * time.Second).Should(Receive(BeNil()))
	}()
	g.Eventually(f.receiver.ListenAddr).ShouldNot(BeNil())
	req, err := http.NewRequest(http.MethodPost, "http://"+f.receiver.ListenAddr().String()+PathPrefix+namespace+"/late", strings.NewReader(pushBody))
	g.Expect(err).NotTo(HaveOccurred())
	req.Header.Set(GitHubSignatureHeader, hmacHex(webhookToken, pushBody))
	resp, err := http.DefaultClient.Do(req)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(resp.Body.Close()).To(Succeed())
	g.Expect(resp.StatusCode).To(Equal(http.StatusAccepted))
}
