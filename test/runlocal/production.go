package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1alpha1 "github.com/profilesync/profilesync/api/v1alpha1"
	"github.com/profilesync/profilesync/webhooks"
)

// tenantWrite is the write of the tenancy tour: a tenant ServiceAccount that
// may update its namespace's NamespacedCloudProfiles, but holds no
// modify-spec-kubernetes, extends its hold on 1.32.9 by two months. The
// admission webhook refuses it, as in production (docs/admission.md).
var tenantWrite = struct{ namespace, serviceAccount, profile, patch string }{
	namespace:      "team-payments",
	serviceAccount: "tenant",
	profile:        "aws-payments",
	patch:          `{"spec":{"kubernetes":{"versions":[{"version":"1.32.9","lifecycle":[{"classification":"expired","startTime":"2027-04-15T00:00:00Z"}]}]}}}`,
}

// showAdmission shows the admission webhooks at work in the landscape: the
// tenant's write is refused, and the refusal printed as kubectl prints it.
// A write the webhooks admit fails the tour: run-local would then allow what
// production refuses.
func (l *landscape) showAdmission(ctx context.Context, out io.Writer) error {
	ns, sa := tenantWrite.namespace, tenantWrite.serviceAccount
	if err := l.createIgnoringExisting(ctx,
		&corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: sa}},
		&rbacv1.Role{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: tenantRole},
			Rules: []rbacv1.PolicyRule{{
				APIGroups: []string{v1alpha1.GroupVersion.Group},
				Resources: []string{"namespacedcloudprofiles"},
				Verbs:     []string{"get", "list", "watch", "create", "update", "patch"},
			}},
		},
		&rbacv1.RoleBinding{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: tenantRole},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: tenantRole},
			Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: ns, Name: sa}},
		},
	); err != nil {
		return err
	}
	user := "system:serviceaccount:" + ns + ":" + sa
	tenantConfig := rest.CopyConfig(l.config)
	tenantConfig.Impersonate = rest.ImpersonationConfig{UserName: user,
		Groups: []string{"system:serviceaccounts", "system:serviceaccounts:" + ns, "system:authenticated"}}
	tenant, err := client.New(tenantConfig, client.Options{Scheme: l.client.Scheme()})
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "\n=== Admission in %s: a tenant without %s may not override spec.kubernetes ===\n", l.name, webhooks.VerbModifySpecKubernetes)
	fmt.Fprintf(out, "$ kubectl --as=%s -n %s patch namespacedcloudprofile %s --type=merge -p '%s'\n", user, ns, tenantWrite.profile, tenantWrite.patch)
	ncp := &v1alpha1.NamespacedCloudProfile{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: tenantWrite.profile}}
	err = tenant.Patch(ctx, ncp, client.RawPatch("application/merge-patch+json", []byte(tenantWrite.patch)))
	if err == nil {
		return fmt.Errorf("the admission webhooks admitted %s's write of spec.kubernetes of NamespacedCloudProfile %s/%s without %s",
			user, ns, tenantWrite.profile, webhooks.VerbModifySpecKubernetes)
	}
	if !apierrors.IsForbidden(err) {
		return fmt.Errorf("the tenant's write: %w", err)
	}
	fmt.Fprintf(out, "Error from server (Forbidden): %v\n", err)
	return nil
}

// metricsReader is the ServiceAccount run-local scrapes the metrics as:
// bound to a ClusterRole like config/rbac/metrics_reader_role.yaml, which
// the secure metrics endpoint asks the API server about (SubjectAccessReview).
const metricsReader = "metrics-reader"

// metricsReaderRole is the ClusterRole, and its binding, that let
// metricsReader GET /metrics.
const metricsReaderRole = "profilesync-metrics-reader"

// tenantRole is the Role, and its binding, that let the tenant edit its
// namespace's NamespacedCloudProfiles, without a custom verb.
const tenantRole = "profile-editor"

// showMetrics writes a token of a ServiceAccount allowed to GET /metrics to
// the work directory and prints how to scrape the landscape's metrics with
// it, as a Prometheus in the cluster would.
func (l *landscape) showMetrics(ctx context.Context, out io.Writer, workDir string) error {
	if err := l.createIgnoringExisting(ctx,
		&corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: operatorNamespace, Name: metricsReader}},
		&rbacv1.ClusterRole{
			ObjectMeta: metav1.ObjectMeta{Name: metricsReaderRole},
			Rules:      []rbacv1.PolicyRule{{NonResourceURLs: []string{"/metrics"}, Verbs: []string{"get"}}},
		},
		&rbacv1.ClusterRoleBinding{
			ObjectMeta: metav1.ObjectMeta{Name: metricsReaderRole},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: metricsReaderRole},
			Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: operatorNamespace, Name: metricsReader}},
		},
	); err != nil {
		return err
	}
	clientset, err := kubernetes.NewForConfig(l.config)
	if err != nil {
		return err
	}
	token, err := clientset.CoreV1().ServiceAccounts(operatorNamespace).CreateToken(ctx, metricsReader,
		&authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To(int64((24 * time.Hour).Seconds()))}},
		metav1.CreateOptions{})
	if err != nil {
		return fmt.Errorf("request a token of ServiceAccount %s/%s: %w", operatorNamespace, metricsReader, err)
	}
	tokenFile := filepath.Join(workDir, l.name+"-metrics.token")
	if err := os.WriteFile(tokenFile, []byte(token.Status.Token), 0o600); err != nil {
		return err
	}
	fmt.Fprintf(out, "Metrics of %s (HTTPS, self-signed; for an authorized token, as in the cluster):\n  curl -sk -H \"Authorization: Bearer $(cat %s)\" %s\n",
		l.name, tokenFile, l.metricsURL)
	return nil
}

// createIgnoringExisting creates objects, leaving those that exist.
func (l *landscape) createIgnoringExisting(ctx context.Context, objects ...client.Object) error {
	for _, o := range objects {
		if err := l.client.Create(ctx, o); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("create %T %s: %w", o, client.ObjectKeyFromObject(o), err)
		}
	}
	return nil
}
