package deploy

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

const (
	metricsServiceName    = "profilesync-controller-manager-metrics-service"
	metricsAuthRoleName   = "profilesync-metrics-auth-role"
	metricsReaderRoleName = "profilesync-metrics-reader"
)

// boundClusterRole says whether a ClusterRoleBinding of the build binds
// subject to the ClusterRole role.
func boundClusterRole(t *testing.T, objects []*unstructured.Unstructured, role string, subject rbacv1.Subject) bool {
	t.Helper()
	for _, obj := range objects {
		if obj.GetKind() != "ClusterRoleBinding" {
			continue
		}
		binding := decode[rbacv1.ClusterRoleBinding](t, obj)
		if binding.RoleRef == (rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role}) &&
			slices.Contains(binding.Subjects, subject) {
			return true
		}
	}
	return false
}

// The metrics endpoint is HTTPS behind controller-runtime's authentication
// and authorization filter (the manager's --metrics-secure default): the
// Deployment does not turn it off, the manager may ask the API server about
// its scrapers, and a scraper bound to the reader role may GET /metrics
// while others may not.
func TestMetricsAreServedSecurely(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	objects := buildDefault(t)
	deployment := decode[appsv1.Deployment](t, findObject(t, objects, "Deployment", deploymentName))
	manager := deployment.Spec.Template.Spec.Containers[0]
	g.Expect(manager.Args).To(ContainElement("--metrics-addr=:8443"))
	for _, arg := range manager.Args {
		g.Expect(arg).NotTo(HavePrefix("--metrics-secure"), "the default, HTTPS with authorization, stays")
	}

	authRole := decode[rbacv1.ClusterRole](t, findObject(t, objects, "ClusterRole", metricsAuthRoleName))
	g.Expect(authRole.Rules).To(ConsistOf(
		rbacv1.PolicyRule{APIGroups: []string{"authentication.k8s.io"}, Resources: []string{"tokenreviews"}, Verbs: []string{"create"}},
		rbacv1.PolicyRule{APIGroups: []string{"authorization.k8s.io"}, Resources: []string{"subjectaccessreviews"}, Verbs: []string{"create"}},
	))
	operator := rbacv1.Subject{Kind: "ServiceAccount", Name: serviceAccountName, Namespace: operatorNamespace}
	g.Expect(boundClusterRole(t, objects, metricsAuthRoleName, operator)).To(BeTrue(),
		"a ClusterRoleBinding binds %s to %s", serviceAccountName, metricsAuthRoleName)

	reader := decode[rbacv1.ClusterRole](t, findObject(t, objects, "ClusterRole", metricsReaderRoleName))
	g.Expect(reader.Rules).To(ConsistOf(rbacv1.PolicyRule{NonResourceURLs: []string{"/metrics"}, Verbs: []string{"get"}}))
	g.Expect(boundClusterRole(t, objects, metricsReaderRoleName, operator)).To(BeFalse(), "the reader role is for scrapers, bound by the user")

	// The reader role, bound as its comment says, lets Prometheus scrape.
	installPrerequisites(t, objects)
	g.Expect(apply(ctx, k8sClient, findObject(t, objects, "ClusterRole", metricsReaderRoleName))).To(Succeed())
	binding := &rbacv1.ClusterRoleBinding{
		TypeMeta:   metav1.TypeMeta{APIVersion: "rbac.authorization.k8s.io/v1", Kind: "ClusterRoleBinding"},
		ObjectMeta: metav1.ObjectMeta{Name: "prometheus-reads-profilesync"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: metricsReaderRoleName},
		Subjects:   []rbacv1.Subject{{Kind: "ServiceAccount", Name: "prometheus", Namespace: "monitoring"}},
	}
	g.Expect(k8sClient.Create(ctx, binding)).To(Succeed())
	t.Cleanup(func() { _ = k8sClient.Delete(ctx, binding) })
	mayScrape := func(user string) func() (bool, error) {
		return func() (bool, error) {
			review := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
				User:                  user,
				Groups:                []string{"system:authenticated"},
				NonResourceAttributes: &authorizationv1.NonResourceAttributes{Path: "/metrics", Verb: "get"},
			}}
			if err := k8sClient.Create(ctx, review); err != nil {
				return false, err
			}
			return review.Status.Allowed, nil
		}
	}
	g.Eventually(mayScrape("system:serviceaccount:monitoring:prometheus")).Should(BeTrue())
	g.Expect(mayScrape("system:serviceaccount:monitoring:someone-else")()).To(BeFalse())
}

// config/prometheus scrapes the metrics Service of config/default over
// HTTPS with a bearer token, and holds the alerts and the Grafana dashboard
// (a ConfigMap that Grafana's sidecar picks up by its label). The API server of
// the tests has no Prometheus Operator CRDs, so the objects are checked as
// built, not applied; controllers/profilesync/observability_test.go checks the expressions.
func TestPrometheusConfigScrapesTheMetricsService(t *testing.T) {
	g := NewWithT(t)
	service := decode[corev1.Service](t, findObject(t, buildDefault(t), "Service", metricsServiceName))
	objects := buildConfig(t, "prometheus")
	var kinds []string
	for _, obj := range objects {
		kinds = append(kinds, obj.GetObjectKind().GroupVersionKind().GroupKind().String())
		g.Expect(obj.GetNamespace()).To(Equal(operatorNamespace))
		g.Expect(obj.GetName()).To(HavePrefix("profilesync-"))
	}
	g.Expect(kinds).To(ConsistOf("ServiceMonitor.monitoring.coreos.com", "PrometheusRule.monitoring.coreos.com", "ConfigMap"))

	dashboard := decode[corev1.ConfigMap](t, onlyObject(t, objects, "ConfigMap"))
	g.Expect(dashboard.Labels).To(HaveKeyWithValue("grafana_dashboard", "1"))
	shipped, err := os.ReadFile(filepath.Join("..", "..", "config", "prometheus", "grafana-dashboard.json"))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(dashboard.Data).To(Equal(map[string]string{"profilesync.json": string(shipped)}), "the ConfigMap carries the dashboard as shipped")

	monitor := onlyObject(t, objects, "ServiceMonitor")
	selector, _, _ := unstructured.NestedStringMap(monitor.Object, "spec", "selector", "matchLabels")
	g.Expect(selector).NotTo(BeEmpty())
	for k, v := range selector {
		g.Expect(service.Labels).To(HaveKeyWithValue(k, v), "the ServiceMonitor selects the metrics Service")
	}
	endpoints, _, _ := unstructured.NestedSlice(monitor.Object, "spec", "endpoints")
	g.Expect(endpoints).To(HaveLen(1))
	endpoint := endpoints[0].(map[string]any)
	g.Expect(endpoint).To(HaveKeyWithValue("port", service.Spec.Ports[0].Name))
	g.Expect(endpoint).To(HaveKeyWithValue("scheme", "https"))
	g.Expect(endpoint).To(HaveKeyWithValue("path", "/metrics"))
	g.Expect(endpoint).To(HaveKeyWithValue("bearerTokenFile", "/var/run/secrets/kubernetes.io/serviceaccount/token"))

	rule := onlyObject(t, objects, "PrometheusRule")
	groups, _, _ := unstructured.NestedSlice(rule.Object, "spec", "groups")
	g.Expect(groups).NotTo(BeEmpty())
	for _, group := range groups {
		rules, _, _ := unstructured.NestedSlice(group.(map[string]any), "rules")
		for _, r := range rules {
			expr, _, _ := unstructured.NestedString(r.(map[string]any), "expr")
			g.Expect(strings.Contains(expr, "profilesync_")).To(BeTrue(), "%v reads the operator's metrics", r)
		}
	}
}
