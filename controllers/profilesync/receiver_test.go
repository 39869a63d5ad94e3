package profilesync

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/fluxcd/pkg/apis/meta"
	"github.com/fluxcd/pkg/runtime/conditions"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1alpha1 "github.com/profilesync/profilesync/api/v1alpha1"
	"github.com/profilesync/profilesync/internal/receiver"
	"github.com/profilesync/profilesync/test/builders"
	"github.com/profilesync/profilesync/test/gitserver"
	"github.com/profilesync/profilesync/test/metricstest"
	"github.com/profilesync/profilesync/test/testenv"
)

// webhookToken is the shared secret of the tests' webhooks.
const webhookToken = "s3cr3t-webhook-token"

// pushBody is what a Git host posts; the receiver only signs it.
const pushBody = `{"ref":"refs/heads/main","after":"0000000000000000000000000000000000000000"}`

func hmacHex(token, body string) string {
	mac := hmac.New(sha256.New, []byte(token))
	mac.Write([]byte(body))
	return "sha256=" + hex.EncodeToString(mac.Sum(nil))
}

// singleProfileFiles is a repository with one CloudProfile named name; the
// version string lets a commit change it.
func singleProfileFiles(name, version string) map[string]string {
	return map[string]string{
		"kustomization.yaml": "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources:\n- profile.yaml\n",
		"profile.yaml": fmt.Sprintf(`apiVersion: core.profilesync.io/v1alpha1
kind: CloudProfile
metadata:
  name: %s
spec:
  type: local
`+builders.RequiredListsYAML+`  kubernetes:
    versions:
    - version: %s
      lifecycle:
      - classification: supported
`, name, version),
	}
}

// webhookSync creates a Git repository with one CloudProfile and a
// ProfileSync of it that polls only every hour, so any sync within the test
// was triggered; with secretName it has spec.webhook. It waits for the first
// sync.
func webhookSync(t *testing.T, server *gitserver.Server, secretName string) *v1alpha1.ProfileSync {
	t.Helper()
	g := NewWithT(t)
	ctx := context.Background()
	ensureNamespace(t, clusterProfilesNamespace)
	name := testenv.UniqueName("hook")
	first, err := server.CreateRepo(name, singleProfileFiles(name, "1.30.0"))
	g.Expect(err).NotTo(HaveOccurred())
	sync := &v1alpha1.ProfileSync{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: clusterProfilesNamespace},
		Spec: v1alpha1.ProfileSyncSpec{
			URL:      server.RepoURL(name),
			Interval: metav1.Duration{Duration: time.Hour},
		},
	}
	if secretName != "" {
		sync.Spec.Webhook = &v1alpha1.ProfileSyncWebhook{SecretRef: meta.LocalObjectReference{Name: secretName}}
	}
	g.Expect(k8sClient.Create(ctx, sync)).To(Succeed())
	t.Cleanup(func() {
		_ = k8sClient.Delete(ctx, sync)
		_ = k8sClient.Delete(ctx, &v1alpha1.CloudProfile{ObjectMeta: metav1.ObjectMeta{Name: name}})
	})
	g.Eventually(func(g Gomega) {
		got := getProfileSync(g, sync)
		g.Expect(conditions.IsReady(got)).To(BeTrue(), conditions.GetMessage(got, v1alpha1.ReadyCondition))
		g.Expect(got.Status.LastAppliedRevision).To(Equal("main@sha1:" + first))
	}).WithTimeout(30 * time.Second).Should(Succeed())
	if secretName != "" {
		// The receivers read the hook's token off the request path, within
		// a RefreshInterval of the ProfileSync's creation; no answer may
		// tell when (that is the point), so the test waits.
		time.Sleep(3 * receiver.RefreshInterval)
	}
	return sync
}

// startFollower starts a push receiver as on a replica that never became
// leader (its controllers do not run, so it has no trigger channel), with
// api as its client and Secret reader, and returns its base URL. It serves
// once it has read the hooks' tokens.
func startFollower(t *testing.T, api client.Client) string {
	t.Helper()
	follower := &receiver.Receiver{Addr: "127.0.0.1:0", Client: api, SecretReader: api, Elected: make(chan struct{})}
	if err := follower.Listen(); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	stopped := make(chan error, 1)
	go func() { stopped <- follower.Start(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-stopped; err != nil {
			t.Errorf("follower: %v", err)
		}
	})
	return "http://" + follower.ListenAddr().String()
}

func createWebhookSecret(t *testing.T, data map[string][]byte) string {
	t.Helper()
	ctx := context.Background()
	secret := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: testenv.UniqueName("hook-token"), Namespace: clusterProfilesNamespace},
		Data:       data,
	}
	ensureNamespace(t, clusterProfilesNamespace)
	if err := k8sClient.Create(ctx, secret); err != nil {
		t.Fatalf("create webhook Secret: %v", err)
	}
	t.Cleanup(func() { _ = k8sClient.Delete(ctx, secret) })
	return secret.Name
}

// postHook sends one request to the hook of namespace/name at base and
// returns the status code and body.
func postHook(t *testing.T, base, method, namespace, name string, header map[string]string, body string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(method, base+receiver.PathPrefix+namespace+"/"+name, strings.NewReader(body))
	if err != nil {
		t.Fatalf("build request: %v", err)
	}
	for k, v := range header {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s hook: %v", method, err)
	}
	defer resp.Body.Close()
	got, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("read response: %v", err)
	}
	return resp.StatusCode, string(got)
}

func TestAPushHookOfEachSenderSyncsAtOnce(t *testing.T) {
	server := startGitServer(t)
	secret := createWebhookSecret(t, map[string][]byte{receiver.TokenKey: []byte(webhookToken)})
	sync := webhookSync(t, server, secret)
	for i, sender := range []struct {
		name   string
		header map[string]string
	}{
		{"GitHub's X-Hub-Signature-256", map[string]string{receiver.GitHubSignatureHeader: hmacHex(webhookToken, pushBody), "X-GitHub-Event": "push"}},
		{"GitLab's X-Gitlab-Token", map[string]string{receiver.GitLabTokenHeader: webhookToken, "X-Gitlab-Event": "Push Hook"}},
		{"the generic X-Signature", map[string]string{receiver.SignatureHeader: hmacHex(webhookToken, pushBody)}},
	} {
		t.Run(sender.name, func(t *testing.T) {
			g := NewWithT(t)
			commit, err := server.Commit(sync.Name, singleProfileFiles(sync.Name, fmt.Sprintf("1.30.%d", i+1)), "new patch")
			g.Expect(err).NotTo(HaveOccurred())
			status, body := postHook(t, receiverURL, http.MethodPost, sync.Namespace, sync.Name, sender.header, pushBody)
			g.Expect(status).To(Equal(http.StatusAccepted), body)
			// The interval is an hour: only the hook can have started this sync.
			g.Eventually(func(g Gomega) {
				g.Expect(getProfileSync(g, sync).Status.LastAppliedRevision).To(Equal("main@sha1:" + commit))
				g.Expect(testenv.GetCloudProfile(g, k8sClient, sync.Name).Spec.Kubernetes.Versions[0].Version).To(Equal(fmt.Sprintf("1.30.%d", i+1)))
			}).WithTimeout(10 * time.Second).WithPolling(100 * time.Millisecond).Should(Succeed())
		})
	}
}

func TestRefusedHooksSayOnlyTheirStatusAndTriggerNothing(t *testing.T) {
	server := startGitServer(t)
	secret := createWebhookSecret(t, map[string][]byte{receiver.TokenKey: []byte(webhookToken)})
	withHook := webhookSync(t, server, secret)
	withoutHook := webhookSync(t, server, "")
	missingSecret := webhookSync(t, server, "no-such-secret")
	emptyToken := webhookSync(t, server, createWebhookSecret(t, map[string][]byte{"other": []byte("x")}))
	signed := map[string]string{receiver.GitHubSignatureHeader: hmacHex(webhookToken, pushBody)}

	// A commit the refused hooks must not bring to the cluster.
	g := NewWithT(t)
	applied := getProfileSync(g, withHook).Status.LastAppliedRevision
	_, err := server.Commit(withHook.Name, singleProfileFiles(withHook.Name, "1.31.0"), "not to be synced")
	g.Expect(err).NotTo(HaveOccurred())

	for _, tc := range []struct {
		name, method, namespace, objectName string
		header                              map[string]string
		body                                string
		want                                int
	}{
		{"an unknown ProfileSync is not found", http.MethodPost, clusterProfilesNamespace, "no-such-sync", signed, pushBody, http.StatusNotFound},
		{"an unknown namespace is not found", http.MethodPost, "no-such-namespace", withHook.Name, signed, pushBody, http.StatusNotFound},
		{"a ProfileSync without spec.webhook is not found either", http.MethodPost, withoutHook.Namespace, withoutHook.Name, signed, pushBody, http.StatusNotFound},
		{"a ProfileSync whose Secret is missing is not found either", http.MethodPost, missingSecret.Namespace, missingSecret.Name, signed, pushBody, http.StatusNotFound},
		{"a ProfileSync whose Secret has no token is not found either", http.MethodPost, emptyToken.Namespace, emptyToken.Name, signed, pushBody, http.StatusNotFound},
		{"a wrong GitHub signature is not found either", http.MethodPost, withHook.Namespace, withHook.Name, map[string]string{receiver.GitHubSignatureHeader: hmacHex("wrong", pushBody)}, pushBody, http.StatusNotFound},
		{"a signature of another body is not found either", http.MethodPost, withHook.Namespace, withHook.Name, signed, pushBody + " ", http.StatusNotFound},
		{"a wrong GitLab token is not found either", http.MethodPost, withHook.Namespace, withHook.Name, map[string]string{receiver.GitLabTokenHeader: webhookToken + "x"}, pushBody, http.StatusNotFound},
		{"a generic signature without its sha256= prefix is not found either", http.MethodPost, withHook.Namespace, withHook.Name, map[string]string{receiver.SignatureHeader: strings.TrimPrefix(hmacHex(webhookToken, pushBody), "sha256=")}, pushBody, http.StatusNotFound},
		{"a valid signature next to a wrong one is not found either", http.MethodPost, withHook.Namespace, withHook.Name, map[string]string{receiver.GitHubSignatureHeader: hmacHex(webhookToken, pushBody), receiver.GitLabTokenHeader: "wrong"}, pushBody, http.StatusNotFound},
		{"a request without any signature is not found either", http.MethodPost, withHook.Namespace, withHook.Name, nil, pushBody, http.StatusNotFound},
		{"a GET is not allowed", http.MethodGet, withHook.Namespace, withHook.Name, signed, "", http.StatusMethodNotAllowed},
		{"a body over 1 MiB is too large, even signed", http.MethodPost, withHook.Namespace, withHook.Name,
			map[string]string{receiver.GitHubSignatureHeader: hmacHex(webhookToken, strings.Repeat("x", receiver.DefaultMaxBodyBytes+1))},
			strings.Repeat("x", receiver.DefaultMaxBodyBytes+1), http.StatusRequestEntityTooLarge},
		{"a path with more segments is not found", http.MethodPost, withHook.Namespace, withHook.Name + "/extra", signed, pushBody, http.StatusNotFound},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			status, body := postHook(t, receiverURL, tc.method, tc.namespace, tc.objectName, tc.header, tc.body)
			g.Expect(status).To(Equal(tc.want))
			// Nothing but the status text: no object, Secret or reason.
			g.Expect(strings.TrimSpace(body)).To(Equal(http.StatusText(tc.want)))
		})
	}

	t.Run("none of them synced the new commit", func(t *testing.T) {
		g := NewWithT(t)
		g.Consistently(func(g Gomega) {
			got := getProfileSync(g, withHook)
			g.Expect(got.Status.LastAppliedRevision).To(Equal(applied))
			g.Expect(got.Annotations).NotTo(HaveKey(meta.ReconcileRequestAnnotation))
		}).WithTimeout(3 * time.Second).WithPolling(250 * time.Millisecond).Should(Succeed())
	})
}

func TestAHookOnAReplicaThatDoesNotLeadRequestsTheSyncThroughTheAnnotation(t *testing.T) {
	g := NewWithT(t)
	server := startGitServer(t)
	secret := createWebhookSecret(t, map[string][]byte{receiver.TokenKey: []byte(webhookToken)})
	sync := webhookSync(t, server, secret)
	// A second receiver, as on a replica that never became leader: its
	// controllers do not run, so it must not use a trigger channel.
	followerURL := startFollower(t, k8sClient)

	commit, err := server.Commit(sync.Name, singleProfileFiles(sync.Name, "1.32.0"), "new minor")
	g.Expect(err).NotTo(HaveOccurred())
	status, body := postHook(t, followerURL, http.MethodPost, sync.Namespace, sync.Name,
		map[string]string{receiver.SignatureHeader: hmacHex(webhookToken, pushBody)}, pushBody)
	g.Expect(status).To(Equal(http.StatusAccepted), body)
	g.Eventually(func(g Gomega) {
		got := getProfileSync(g, sync)
		g.Expect(got.Annotations).To(HaveKey(meta.ReconcileRequestAnnotation))
		g.Expect(got.Status.LastAppliedRevision).To(Equal("main@sha1:" + commit))
		g.Expect(got.Status.LastHandledReconcileAt).To(Equal(got.Annotations[meta.ReconcileRequestAnnotation]))
	}).WithTimeout(10 * time.Second).WithPolling(100 * time.Millisecond).Should(Succeed())
}

// TestASyncOfAnUnchangedRevisionWritesNothing pins the idle behaviour: with
// no new commit, each interval lists the remote's refs and renders, but
// neither the ProfileSync nor the profiles it applied are written.
func TestASyncOfAnUnchangedRevisionWritesNothing(t *testing.T) {
	g := NewWithT(t)
	server := startGitServer(t)
	sync := webhookSync(t, server, "")
	testenv.UpdateSpec(t, k8sClient, sync.DeepCopy(), func(s *v1alpha1.ProfileSync) { s.Spec.Interval.Duration = 200 * time.Millisecond })
	profile := &v1alpha1.CloudProfile{ObjectMeta: metav1.ObjectMeta{Name: sync.Name}}
	syncVersion := testenv.SettledResourceVersion(g, k8sClient, sync.DeepCopy())
	profileVersion := testenv.SettledResourceVersion(g, k8sClient, profile.DeepCopy())

	eventsBefore := eventCount(g, sync.Name)
	polls := server.Requests().RefAdvertisements
	time.Sleep(2 * time.Second)
	g.Expect(server.Requests().RefAdvertisements-polls).To(BeNumerically(">=", 4), "the sync ran every interval")
	g.Expect(getProfileSync(g, sync).ResourceVersion).To(Equal(syncVersion))
	g.Expect(testenv.GetCloudProfile(g, k8sClient, sync.Name).ResourceVersion).To(Equal(profileVersion))
	g.Expect(eventCount(g, sync.Name)).To(Equal(eventsBefore), "no event recorded while idle")
}

// eventCount is how many times an event about an object named name was
// recorded, counting repeats of one event.
func eventCount(g Gomega, name string) int32 {
	events, err := testenv.Events(context.Background(), k8sClient, testenv.EventQuery{Name: name})
	g.Expect(err).NotTo(HaveOccurred())
	return int32(len(testenv.Occurrences(events)))
}

// receiverCount is the suite receiver's counter name (with labels, if any),
// 0 before it first counted.
func receiverCount(g Gomega, name string, labels map[string]string) float64 {
	var total float64
	for _, v := range metricstest.Series(g, testMetrics, name, labels) {
		total += v
	}
	return total
}

// postHooks sends n requests from a few clients at once; each request is
// the one hook(i) returns. It returns the statuses and how long it took.
func postHooks(t *testing.T, base string, n int, hook func(i int) (name string, header map[string]string)) (map[int]int, time.Duration) {
	t.Helper()
	const senders = 8
	statuses := make(chan int, n)
	done := make(chan struct{}, senders)
	start := time.Now()
	for s := range senders {
		go func() {
			defer func() { done <- struct{}{} }()
			for i := s; i < n; i += senders {
				name, header := hook(i)
				status, _ := postHook(t, base, http.MethodPost, clusterProfilesNamespace, name, header, pushBody)
				statuses <- status
			}
		}()
	}
	for range senders {
		<-done
	}
	elapsed := time.Since(start)
	close(statuses)
	counts := map[int]int{}
	for status := range statuses {
		counts[status]++
	}
	return counts, elapsed
}

// forgedHook is the i-th of requests without the token: a wrong signature, no
// signature, a wrong GitLab token, to hooked; signed right, to a ProfileSync
// without a hook and to one that does not exist.
func forgedHook(hooked, unhooked string) func(i int) (string, map[string]string) {
	forged := []struct {
		name   string
		header map[string]string
	}{
		{hooked, map[string]string{receiver.GitHubSignatureHeader: hmacHex("guessed", pushBody)}},
		{hooked, nil},
		{hooked, map[string]string{receiver.GitLabTokenHeader: "guessed"}},
		{unhooked, map[string]string{receiver.GitHubSignatureHeader: hmacHex(webhookToken, pushBody)}},
		{"no-such-sync", map[string]string{receiver.GitHubSignatureHeader: hmacHex(webhookToken, pushBody)}},
	}
	return func(i int) (string, map[string]string) {
		hook := forged[i%len(forged)]
		return hook.name, hook.header
	}
}

// maxTriggers is the most syncs spaced triggers may start over elapsed:
// one at once, one at the end of each spacing, one pending at the end.
func maxTriggers(elapsed time.Duration) int64 {
	return 2 + int64(elapsed/receiver.DefaultTriggerSpacing)
}

// TestForgedHooksReadNoSecretAndSyncNothing: forged requests, for a
// ProfileSync with a hook and one without, cost no Secret read: the
// receiver reads the hook's Secret on its own, once per TTL.
func TestForgedHooksReadNoSecretAndSyncNothing(t *testing.T) {
	g := NewWithT(t)
	server := startGitServer(t)
	secret := createWebhookSecret(t, map[string][]byte{receiver.TokenKey: []byte(webhookToken)})
	hooked := webhookSync(t, server, secret)
	unhooked := webhookSync(t, server, "")
	readsBefore := receiverCount(g, "profilesync_receiver_secret_reads_total", nil)
	refusedBefore := receiverCount(g, "profilesync_receiver_requests_total", map[string]string{"result": "refused"})
	listingsBefore := server.Requests().RefAdvertisements

	statuses, elapsed := postHooks(t, receiverURL, 2000, forgedHook(hooked.Name, unhooked.Name))
	g.Expect(statuses).To(Equal(map[int]int{http.StatusNotFound: 2000}))
	reads := receiverCount(g, "profilesync_receiver_secret_reads_total", nil) - readsBefore
	t.Logf("2,000 forged requests in %s: %v Secret reads", elapsed, reads)
	g.Expect(reads).To(BeNumerically("<=", 1+int(elapsed/receiver.DefaultTokenTTL)), "at most the receiver's own read of the Secret per TTL, in %s", elapsed)
	g.Expect(receiverCount(g, "profilesync_receiver_requests_total", map[string]string{"result": "refused"}) - refusedBefore).To(Equal(2000.0))
	g.Consistently(func() int64 { return server.Requests().RefAdvertisements - listingsBefore }).
		WithTimeout(time.Second).Should(BeZero(), "no sync")
}

func TestAReplayedHookSyncsOncePerSpacing(t *testing.T) {
	g := NewWithT(t)
	server := startGitServer(t)
	secret := createWebhookSecret(t, map[string][]byte{receiver.TokenKey: []byte(webhookToken)})
	hooked := webhookSync(t, server, secret)
	listingsBefore := server.Requests().RefAdvertisements
	signed := map[string]string{receiver.GitHubSignatureHeader: hmacHex(webhookToken, pushBody)}

	statuses, elapsed := postHooks(t, receiverURL, 500, func(int) (string, map[string]string) { return hooked.Name, signed })
	g.Expect(statuses).To(Equal(map[int]int{http.StatusAccepted: 500}))
	// Every sync of the unchanged revision lists the refs once.
	time.Sleep(2 * receiver.DefaultTriggerSpacing)
	listings := server.Requests().RefAdvertisements - listingsBefore
	t.Logf("500 replays in %s: %d syncs", elapsed, listings)
	g.Expect(listings).To(BeNumerically(">=", 1))
	g.Expect(listings).To(BeNumerically("<=", maxTriggers(elapsed)), "syncs of 500 replays in %s", elapsed)
	g.Expect(receiverCount(g, "profilesync_receiver_requests_total", map[string]string{"result": "coalesced"})).
		To(BeNumerically(">=", 500-maxTriggers(elapsed)))
}

// countingClient counts the Secret reads and the patches made through it.
type countingClient struct {
	client.Client
	secretReads, patches atomic.Int64
}

func (c *countingClient) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	if _, ok := obj.(*corev1.Secret); ok {
		c.secretReads.Add(1)
	}
	return c.Client.Get(ctx, key, obj, opts...)
}

func (c *countingClient) Patch(ctx context.Context, obj client.Object, patch client.Patch, opts ...client.PatchOption) error {
	c.patches.Add(1)
	return c.Client.Patch(ctx, obj, patch, opts...)
}

func TestHooksOnAReplicaThatDoesNotLeadCostNoSecretReadAndAPatchPerSpacing(t *testing.T) {
	g := NewWithT(t)
	server := startGitServer(t)
	secret := createWebhookSecret(t, map[string][]byte{receiver.TokenKey: []byte(webhookToken)})
	hooked := webhookSync(t, server, secret)
	unhooked := webhookSync(t, server, "")
	api := &countingClient{Client: k8sClient}
	followerURL := startFollower(t, api)
	listingsBefore := server.Requests().RefAdvertisements

	statuses, elapsed := postHooks(t, followerURL, 2000, forgedHook(hooked.Name, unhooked.Name))
	g.Expect(statuses).To(Equal(map[int]int{http.StatusNotFound: 2000}))
	g.Expect(api.secretReads.Load()).To(BeNumerically("<=", 1+int(elapsed/receiver.DefaultTokenTTL)))
	g.Expect(api.patches.Load()).To(BeZero())

	signed := map[string]string{receiver.SignatureHeader: hmacHex(webhookToken, pushBody)}
	statuses, elapsed = postHooks(t, followerURL, 500, func(int) (string, map[string]string) { return hooked.Name, signed })
	g.Expect(statuses).To(Equal(map[int]int{http.StatusAccepted: 500}))
	time.Sleep(2 * receiver.DefaultTriggerSpacing)
	patches := api.patches.Load()
	g.Expect(patches).To(BeNumerically(">=", 1))
	g.Expect(patches).To(BeNumerically("<=", maxTriggers(elapsed)), "annotation patches of 500 replays in %s", elapsed)
	g.Expect(server.Requests().RefAdvertisements-listingsBefore).To(BeNumerically("<=", patches), "one sync per patch at most")
	g.Expect(api.secretReads.Load()).To(BeNumerically("<=", 1+int(elapsed/receiver.DefaultTokenTTL)+1))
}

// TestTheFirstUnsignedHookToEachProfileSyncAnswersInTheSameTime: the first
// unsigned request to each of many ProfileSyncs with a hook answers in the
// time one to a ProfileSync without a hook does, on the suite's manager: the
// receiver read their Secrets before any request came, so the time of an
// answer does not tell which ProfileSyncs have a hook. (Reading the Secret
// on the first request per Secret made the hooked answers several times
// slower, and the two sets apart.) The bounds are loose for loaded machines.
func TestTheFirstUnsignedHookToEachProfileSyncAnswersInTheSameTime(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ensureNamespace(t, clusterProfilesNamespace)
	const n = 30
	// Suspended, they never sync: only the receiver looks at them.
	create := func(name, secret string) {
		sync := &v1alpha1.ProfileSync{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: clusterProfilesNamespace},
			Spec: v1alpha1.ProfileSyncSpec{URL: "https://git.example.com/unreachable.git", Suspend: true,
				Interval: metav1.Duration{Duration: time.Hour}},
		}
		if secret != "" {
			sync.Spec.Webhook = &v1alpha1.ProfileSyncWebhook{SecretRef: meta.LocalObjectReference{Name: secret}}
		}
		g.Expect(k8sClient.Create(ctx, sync)).To(Succeed())
		t.Cleanup(func() { _ = k8sClient.Delete(ctx, sync) })
	}
	hooked, unhooked := make([]string, n), make([]string, n)
	for i := range n {
		hooked[i], unhooked[i] = testenv.UniqueName("timed-hooked"), testenv.UniqueName("timed-unhooked")
		create(hooked[i], createWebhookSecret(t, map[string][]byte{receiver.TokenKey: []byte(webhookToken)}))
		create(unhooked[i], "")
	}
	time.Sleep(3 * receiver.RefreshInterval)

	unsigned := map[string]string{receiver.GitHubSignatureHeader: hmacHex("guessed", pushBody)}
	timed := func(name string) time.Duration {
		start := time.Now()
		status, _ := postHook(t, receiverURL, http.MethodPost, clusterProfilesNamespace, name, unsigned, pushBody)
		took := time.Since(start)
		g.Expect(status).To(Equal(http.StatusNotFound))
		return took
	}
	var hookedTimes, unhookedTimes []time.Duration
	for i := range n {
		hookedTimes = append(hookedTimes, timed(hooked[i]))
		unhookedTimes = append(unhookedTimes, timed(unhooked[i]))
	}
	slices.Sort(hookedTimes)
	slices.Sort(unhookedTimes)
	t.Logf("first unsigned request to each of %d ProfileSyncs: with a hook median %v (%v–%v), without %v (%v–%v)", n,
		hookedTimes[n/2], hookedTimes[0], hookedTimes[n-1], unhookedTimes[n/2], unhookedTimes[0], unhookedTimes[n-1])
	const slack = 300 * time.Microsecond
	g.Expect(hookedTimes[n/2]).To(BeNumerically("<=", 2*unhookedTimes[n/2]+slack), "medians")
	g.Expect(unhookedTimes[n/2]).To(BeNumerically("<=", 2*hookedTimes[n/2]+slack), "medians")
	g.Expect(hookedTimes[0]).To(BeNumerically("<=", unhookedTimes[n-1]), "the two sets overlap")
	g.Expect(unhookedTimes[0]).To(BeNumerically("<=", hookedTimes[n-1]), "the two sets overlap")
}
