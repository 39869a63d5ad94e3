package cli

import (
	"context"
	"crypto/tls"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/yaml"

	"github.com/profilesync/profilesync/test/testenv"
)

func TestMetricsFlags(t *testing.T) {
	g := NewWithT(t)
	flags, status, _, stderr := runWithManager(t, nil, "manager")
	g.Expect(status).To(Equal(exitOK), stderr)
	g.Expect(flags.metricsAddr).To(Equal(":8443"))
	g.Expect(flags.metricsSecure).To(BeTrue(), "secure by default")
	opts, err := metricsServerOptions(flags)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(opts.SecureServing).To(BeTrue())
	g.Expect(opts.FilterProvider).NotTo(BeNil())
	g.Expect(opts.CertDir).To(BeEmpty(), "a self-signed certificate")

	flags, status, _, stderr = runWithManager(t, nil, "manager", "--metrics-secure=false", "--metrics-addr=127.0.0.1:8080")
	g.Expect(status).To(Equal(exitOK), stderr)
	opts, err = metricsServerOptions(flags)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(opts.BindAddress).To(Equal("127.0.0.1:8080"))
	g.Expect(opts.SecureServing).To(BeFalse())
	g.Expect(opts.FilterProvider).To(BeNil())

	certDir := t.TempDir()
	_, err = metricsServerOptions(&managerFlags{metricsSecure: true, metricsCertDir: certDir})
	g.Expect(err).To(MatchError(ContainSubstring("--metrics-cert-dir")), "a certificate directory without the certificate")
	for _, name := range []string{"tls.crt", "tls.key"} {
		g.Expect(os.WriteFile(filepath.Join(certDir, name), []byte("x"), 0o600)).To(Succeed())
	}
	opts, err = metricsServerOptions(&managerFlags{metricsSecure: true, metricsCertDir: certDir})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(opts.CertDir).To(Equal(certDir))
	_, err = metricsServerOptions(&managerFlags{metricsCertDir: certDir})
	g.Expect(err).To(MatchError("--metrics-cert-dir needs --metrics-secure"))
}

// startMetricsManager starts a manager on env whose metrics server has the
// options the flags give, and returns the address it serves on.
func startMetricsManager(t *testing.T, env *testenv.Env, flags *managerFlags) string {
	t.Helper()
	address, err := testenv.FreeLoopbackAddress()
	if err != nil {
		t.Fatal(err)
	}
	flags.metricsAddr = address
	opts, err := metricsServerOptions(flags)
	if err != nil {
		t.Fatal(err)
	}
	mgr, err := ctrl.NewManager(env.Config, ctrl.Options{Scheme: env.Scheme, Metrics: opts, HealthProbeBindAddress: "0"})
	if err != nil {
		t.Fatalf("create manager: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("manager: %v", err)
		}
	})
	return address
}

// scraper GETs /metrics the way Prometheus does, with an optional bearer
// token. It offers HTTP/2, which the server declines.
type scraper struct {
	client *http.Client
	url    string
}

func newScraper(url string) *scraper {
	return &scraper{url: url, client: &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{
		// The manager's certificate is self-signed, as in config/prometheus.
		TLSClientConfig:   &tls.Config{InsecureSkipVerify: true}, //nolint:gosec // see above
		ForceAttemptHTTP2: true,
	}}}
}

func (s *scraper) get(g Gomega, token string) (int, string, string) {
	req, err := http.NewRequest(http.MethodGet, s.url, nil)
	g.Expect(err).NotTo(HaveOccurred())
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := s.client.Do(req)
	g.Expect(err).NotTo(HaveOccurred())
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	g.Expect(err).NotTo(HaveOccurred())
	return resp.StatusCode, resp.Proto, string(body)
}

// TestSecureMetricsServeOnlyAuthorizedScrapers runs a manager with the
// metrics server of the default flags against a real API server: a scrape
// without a token is refused, one with the token of a ServiceAccount
// without the reader role is forbidden, and one bound to
// config/rbac/metrics_reader_role.yaml gets the metrics. With
// --metrics-secure=false anyone gets them over plain HTTP.
func TestSecureMetricsServeOnlyAuthorizedScrapers(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	env := testenv.StartForTest(t, testenv.WithScheme(newScheme()))
	clientset, err := kubernetes.NewForConfig(env.Config)
	g.Expect(err).NotTo(HaveOccurred())

	// Prometheus's ServiceAccount, bound to the reader role of config/rbac,
	// and another one.
	data, err := os.ReadFile(filepath.Join("..", "..", "config", "rbac", "metrics_reader_role.yaml"))
	g.Expect(err).NotTo(HaveOccurred())
	var reader rbacv1.ClusterRole
	g.Expect(yaml.UnmarshalStrict(data, &reader)).To(Succeed())
	g.Expect(env.Client.Create(ctx, &reader)).To(Succeed())
	g.Expect(env.Client.Create(ctx, &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "prometheus-reads-metrics"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: reader.Name},
		Subjects:   []rbacv1.Subject{{Kind: "ServiceAccount", Name: "prometheus", Namespace: "default"}},
	})).To(Succeed())
	tokens := map[string]string{}
	for _, name := range []string{"prometheus", "stranger"} {
		g.Expect(env.Client.Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"}})).To(Succeed())
		token, err := clientset.CoreV1().ServiceAccounts("default").CreateToken(ctx, name,
			&authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To[int64](600)}}, metav1.CreateOptions{})
		g.Expect(err).NotTo(HaveOccurred())
		tokens[name] = token.Status.Token
	}
	// The manager caches a denial for a while: scrape once the RBAC
	// authorizer knows the binding.
	g.Eventually(func(g Gomega) {
		review := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
			User:                  "system:serviceaccount:default:prometheus",
			NonResourceAttributes: &authorizationv1.NonResourceAttributes{Path: "/metrics", Verb: "get"},
		}}
		g.Expect(env.Client.Create(ctx, review)).To(Succeed())
		g.Expect(review.Status.Allowed).To(BeTrue())
	}).WithTimeout(10 * time.Second).Should(Succeed())

	t.Run("secure, the default", func(t *testing.T) {
		g := NewWithT(t)
		flags, _, _, _ := runWithManager(t, nil, "manager")
		scrape := newScraper("https://" + startMetricsManager(t, env, flags) + "/metrics")
		g.Eventually(func(g Gomega) {
			status, _, _ := scrape.get(g, "")
			g.Expect(status).To(Equal(http.StatusUnauthorized))
		}).WithTimeout(10 * time.Second).Should(Succeed())
		status, _, _ := scrape.get(g, tokens["stranger"])
		g.Expect(status).To(Equal(http.StatusForbidden))
		status, proto, body := scrape.get(g, tokens["prometheus"])
		g.Expect(status).To(Equal(http.StatusOK), body)
		g.Expect(body).To(ContainSubstring("# TYPE "))
		g.Expect(proto).To(Equal("HTTP/1.1"), "HTTP/2 is off")
		// controller-runtime's filter answers a token the API server
		// rejects with 500 (its authenticator reports an error, not a
		// "no"); either way, no metrics.
		status, _, body = scrape.get(g, "not-a-token")
		g.Expect(status).To(BeNumerically(">=", 400))
		g.Expect(body).NotTo(ContainSubstring("# TYPE "))
	})

	t.Run("plain, with --metrics-secure=false", func(t *testing.T) {
		g := NewWithT(t)
		flags, _, _, _ := runWithManager(t, nil, "manager", "--metrics-secure=false")
		scrape := newScraper("http://" + startMetricsManager(t, env, flags) + "/metrics")
		g.Eventually(func(g Gomega) {
			status, _, body := scrape.get(g, "")
			g.Expect(status).To(Equal(http.StatusOK))
			g.Expect(body).To(ContainSubstring("# TYPE "))
		}).WithTimeout(10 * time.Second).Should(Succeed())
	})
}
