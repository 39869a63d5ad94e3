package deploy

import (
	"context"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"
)

const (
	// operatorNamespace and the names below are what config/default makes of
	// config/manager and config/rbac (namespace and name prefix).
	operatorNamespace  = "profilesync-system"
	deploymentName     = "profilesync-controller-manager"
	serviceAccountName = "profilesync-controller-manager"
	managerRoleName    = "profilesync-manager-role"
	fieldOwner         = client.FieldOwner("profilesync-deploy-test")
)

// certManagerKinds are the kinds of config/certmanager (the admission
// webhook's serving certificate from cert-manager), which only
// config/default-certmanager installs. Their CRDs come with cert-manager,
// which the test API server does not have, so it cannot accept them, not
// even in a dry run. TestEveryRenderedObjectIsAcceptedByTheAPIServer checks
// that config/default has none, and that the API server really does not know
// them.
var certManagerKinds = []schema.GroupKind{
	{Group: "cert-manager.io", Kind: "Certificate"},
	{Group: "cert-manager.io", Kind: "Issuer"},
}

// buildDefault runs kustomize on config/default from disk, as
// `kustomize build config/default` does.
func buildDefault(t *testing.T) []*unstructured.Unstructured {
	t.Helper()
	return buildConfig(t, "default")
}

// buildConfig runs kustomize on config/DIR from disk.
func buildConfig(t *testing.T, dir string) []*unstructured.Unstructured {
	t.Helper()
	resources, err := krusty.MakeKustomizer(krusty.MakeDefaultOptions()).
		Run(filesys.MakeFsOnDisk(), filepath.Join("..", "..", "config", dir))
	if err != nil {
		t.Fatalf("kustomize build config/%s: %v", dir, err)
	}
	var objects []*unstructured.Unstructured
	for _, r := range resources.Resources() {
		// Through JSON, so numbers are int64 or float64 as in any object read
		// from the API server.
		data, err := r.MarshalJSON()
		if err != nil {
			t.Fatalf("encode %s: %v", r.CurId(), err)
		}
		obj := &unstructured.Unstructured{}
		if err := obj.UnmarshalJSON(data); err != nil {
			t.Fatalf("decode %s: %v", r.CurId(), err)
		}
		objects = append(objects, obj)
	}
	if len(objects) == 0 {
		t.Fatalf("kustomize build config/%s produced no objects", dir)
	}
	return objects
}

// findObject returns the one object of the build with this kind and name.
func findObject(t *testing.T, objects []*unstructured.Unstructured, kind, name string) *unstructured.Unstructured {
	t.Helper()
	var found []*unstructured.Unstructured
	for _, obj := range objects {
		if obj.GetKind() == kind && obj.GetName() == name {
			found = append(found, obj)
		}
	}
	if len(found) != 1 {
		t.Fatalf("the build has %d objects %s %s, want 1", len(found), kind, name)
	}
	return found[0]
}

// onlyObject returns the one object of the build with this kind.
func onlyObject(t *testing.T, objects []*unstructured.Unstructured, kind string) *unstructured.Unstructured {
	t.Helper()
	var found []*unstructured.Unstructured
	for _, obj := range objects {
		if obj.GetKind() == kind {
			found = append(found, obj)
		}
	}
	if len(found) != 1 {
		t.Fatalf("the build has %d objects of kind %s, want 1", len(found), kind)
	}
	return found[0]
}

// decode converts an object of the build into its typed form.
func decode[T any](t *testing.T, obj *unstructured.Unstructured) *T {
	t.Helper()
	typed := new(T)
	if err := runtime.DefaultUnstructuredConverter.FromUnstructuredWithValidation(obj.Object, typed, true); err != nil {
		t.Fatalf("decode %s %s: %v", obj.GetKind(), obj.GetName(), err)
	}
	return typed
}

func apply(ctx context.Context, c client.Client, obj *unstructured.Unstructured, opts ...client.ApplyOption) error {
	opts = append([]client.ApplyOption{fieldOwner, client.ForceOwnership}, opts...)
	return c.Apply(ctx, client.ApplyConfigurationFromUnstructured(obj.DeepCopy()), opts...)
}

// installPrerequisites applies, for real, the objects every other object
// of the build depends on: the Namespace (a dry run in a namespace that does
// not exist fails) and the CRDs.
func installPrerequisites(t *testing.T, objects []*unstructured.Unstructured) {
	t.Helper()
	g := NewWithT(t)
	ctx := context.Background()
	for _, obj := range objects {
		if obj.GetKind() == "Namespace" || obj.GetKind() == "CustomResourceDefinition" {
			g.Expect(apply(ctx, k8sClient, obj)).To(Succeed(), "apply %s %s", obj.GetKind(), obj.GetName())
		}
	}
}

// TestEveryRenderedObjectIsAcceptedByTheAPIServer: the API server accepts,
// by server-side apply (a dry run), every object config/default renders, so
// it installs on a cluster without cert-manager; config/default-certmanager
// adds only cert-manager's kinds, which a cluster without cert-manager refuses.
func TestEveryRenderedObjectIsAcceptedByTheAPIServer(t *testing.T) {
	for _, tt := range []struct {
		name, dir string
		// needsCertManager are the kinds the API server cannot know.
		needsCertManager []schema.GroupKind
	}{
		{"config/default needs nothing but Kubernetes", "default", nil},
		{"config/default-certmanager needs cert-manager for its certificate only", "default-certmanager", certManagerKinds},
	} {
		t.Run(tt.name, func(t *testing.T) {
			acceptedByTheAPIServer(t, buildConfig(t, tt.dir), tt.needsCertManager)
		})
	}
}

func acceptedByTheAPIServer(t *testing.T, objects []*unstructured.Unstructured, needsCertManager []schema.GroupKind) {
	g := NewWithT(t)
	ctx := context.Background()
	installPrerequisites(t, objects)
	c, warnings := clientWithWarnings(t)

	built := map[schema.GroupKind]bool{}
	accepted := map[schema.GroupKind]bool{}
	var skipped []schema.GroupKind
	for _, obj := range objects {
		gk := obj.GroupVersionKind().GroupKind()
		built[gk] = true
		if slices.Contains(needsCertManager, gk) {
			err := apply(ctx, c, obj, client.DryRunAll)
			g.Expect(meta.IsNoMatchError(err)).To(BeTrue(),
				"%s %s is skipped because the API server has no cert-manager CRDs, but applying it returned %v", gk, obj.GetName(), err)
			if !slices.Contains(skipped, gk) {
				skipped = append(skipped, gk)
			}
			continue
		}
		g.Expect(apply(ctx, c, obj, client.DryRunAll)).To(Succeed(), "server-side dry-run apply of %s %s", gk, obj.GetName())
		g.Expect(warnings.take()).To(BeEmpty(), "API server warnings for %s %s", gk, obj.GetName())
		accepted[gk] = true
	}

	// Every kind of the build was accepted, except exactly the cert-manager kinds.
	if len(needsCertManager) == 0 {
		g.Expect(skipped).To(BeEmpty())
	} else {
		g.Expect(skipped).To(ConsistOf(needsCertManager))
	}
	for gk := range built {
		if !slices.Contains(needsCertManager, gk) {
			g.Expect(accepted).To(HaveKey(gk))
		}
	}
	for _, kind := range []string{"Namespace", "CustomResourceDefinition", "ServiceAccount", "ClusterRole",
		"ClusterRoleBinding", "Role", "RoleBinding", "Service", "Deployment", "ValidatingWebhookConfiguration"} {
		g.Expect(slices.ContainsFunc(objects, func(o *unstructured.Unstructured) bool { return o.GetKind() == kind })).
			To(BeTrue(), "the build has a %s", kind)
	}

	// The operator's role and the sample roles for people, under the names
	// their comments tell users to bind.
	for _, name := range []string{managerRoleName, "profilesync-project-admin-role",
		"profilesync-cloudprofile-viewer-role", "profilesync-landscape-operator-role", "profilesync-on-call-role"} {
		findObject(t, objects, "ClusterRole", name)
	}

	// A dry run writes nothing.
	err := k8sClient.Get(ctx, client.ObjectKey{Namespace: operatorNamespace, Name: deploymentName}, &appsv1.Deployment{})
	g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "the Deployment was created by a dry run: %v", err)
}

// The operator's namespace enforces the restricted Pod Security Standard, and
// the API server warns when a Deployment's pod template would break it, so
// the absence of warnings in TestDefaultIsAcceptedByTheAPIServer means the
// manager's pod complies. This checks that the warning really comes.
func TestOperatorNamespaceWarnsAboutPrivilegedPods(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	objects := buildDefault(t)
	installPrerequisites(t, objects)
	c, warnings := clientWithWarnings(t)

	privileged := findObject(t, objects, "Deployment", deploymentName).DeepCopy()
	containers, _, err := unstructured.NestedSlice(privileged.Object, "spec", "template", "spec", "containers")
	g.Expect(err).NotTo(HaveOccurred())
	container := containers[0].(map[string]any)
	g.Expect(unstructured.SetNestedField(container, true, "securityContext", "allowPrivilegeEscalation")).To(Succeed())
	g.Expect(unstructured.SetNestedSlice(privileged.Object, containers, "spec", "template", "spec", "containers")).To(Succeed())

	g.Expect(apply(ctx, c, privileged, client.DryRunAll)).To(Succeed())
	g.Expect(warnings.take()).To(ContainElement(And(ContainSubstring("restricted"), ContainSubstring("allowPrivilegeEscalation"))))
}

func TestDeploymentIsHardened(t *testing.T) {
	g := NewWithT(t)
	objects := buildDefault(t)
	deployment := decode[appsv1.Deployment](t, findObject(t, objects, "Deployment", deploymentName))
	g.Expect(deployment.Namespace).To(Equal(operatorNamespace))
	pod := deployment.Spec.Template.Spec
	g.Expect(pod.Containers).To(HaveLen(1))
	manager := pod.Containers[0]
	g.Expect(manager.Image).To(Equal("ghcr.io/profilesync/profilesync:latest"))

	// Non-root, read-only, no privileges.
	g.Expect(pod.SecurityContext).NotTo(BeNil())
	g.Expect(pod.SecurityContext.RunAsNonRoot).To(HaveValue(BeTrue()))
	g.Expect(pod.SecurityContext.SeccompProfile).To(HaveValue(HaveField("Type", corev1.SeccompProfileTypeRuntimeDefault)))
	sc := manager.SecurityContext
	g.Expect(sc).NotTo(BeNil())
	g.Expect(sc.RunAsNonRoot).To(HaveValue(BeTrue()))
	g.Expect(sc.ReadOnlyRootFilesystem).To(HaveValue(BeTrue()))
	g.Expect(sc.AllowPrivilegeEscalation).To(HaveValue(BeFalse()))
	g.Expect(sc.Capabilities).To(HaveValue(HaveField("Drop", ConsistOf(corev1.Capability("ALL")))))
	g.Expect(sc.Capabilities.Add).To(BeEmpty())
	g.Expect(sc.Privileged).To(Or(BeNil(), HaveValue(BeFalse())))

	// Resources.
	for _, name := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
		g.Expect(manager.Resources.Requests).To(HaveKey(name))
		g.Expect(manager.Resources.Limits).To(HaveKey(name))
		request := manager.Resources.Requests[name]
		g.Expect(request.Cmp(manager.Resources.Limits[name])).To(BeNumerically("<=", 0), "the %s request is within the limit", name)
	}

	// Flags: leader election on, the Git cache and the endpoints the probes
	// and the metrics Service use.
	g.Expect(manager.Args).To(ContainElements("--enable-leader-election", "--storage-path=/data",
		"--metrics-addr=:8443", "--health-addr=:9440"))
	g.Expect(manager.Env).To(ContainElement(And(
		HaveField("Name", "RUNTIME_NAMESPACE"),
		HaveField("ValueFrom.FieldRef.FieldPath", "metadata.namespace"))))

	// Probes on the health endpoint.
	ports := map[string]int32{}
	for _, p := range manager.Ports {
		ports[p.Name] = p.ContainerPort
	}
	probePort := func(probe *corev1.Probe) int32 {
		g.Expect(probe).NotTo(BeNil())
		g.Expect(probe.HTTPGet).NotTo(BeNil())
		if probe.HTTPGet.Port.Type == intstr.String {
			g.Expect(ports).To(HaveKey(probe.HTTPGet.Port.StrVal))
			return ports[probe.HTTPGet.Port.StrVal]
		}
		return probe.HTTPGet.Port.IntVal
	}
	g.Expect(probePort(manager.LivenessProbe)).To(BeEquivalentTo(9440))
	g.Expect(manager.LivenessProbe.HTTPGet.Path).To(Equal("/healthz"))
	g.Expect(probePort(manager.ReadinessProbe)).To(BeEquivalentTo(9440))
	g.Expect(manager.ReadinessProbe.HTTPGet.Path).To(Equal("/readyz"))

	// The only writable places are emptyDirs: the Git cache and /tmp.
	volumes := map[string]corev1.Volume{}
	for _, v := range pod.Volumes {
		volumes[v.Name] = v
	}
	mounts := map[string]string{}
	for _, m := range manager.VolumeMounts {
		mounts[m.MountPath] = m.Name
	}
	for _, path := range []string{"/data", "/tmp"} {
		g.Expect(mounts).To(HaveKey(path))
		g.Expect(volumes[mounts[path]].EmptyDir).NotTo(BeNil(), "the volume at %s is an emptyDir", path)
	}
}

// TestTheShippedDeploymentLocksTenantsDown: config/default runs the
// manager with --default-service-account=default, so a tenant's ProfileSync
// that names no ServiceAccount writes as its namespace's default
// ServiceAccount (which holds nothing unless a platform grants it), never as
// the operator (docs/gitops.md#tenancy).
func TestTheShippedDeploymentLocksTenantsDown(t *testing.T) {
	g := NewWithT(t)
	deployment := decode[appsv1.Deployment](t, findObject(t, buildDefault(t), "Deployment", deploymentName))
	g.Expect(deployment.Spec.Template.Spec.Containers).To(HaveLen(1))
	args := deployment.Spec.Template.Spec.Containers[0].Args
	g.Expect(args).To(ContainElement("--default-service-account=default"))
	given := 0
	for _, arg := range args {
		if strings.HasPrefix(arg, "--default-service-account") {
			given++
		}
	}
	g.Expect(given).To(Equal(1), "the flag is given once: a second one would override it")
}

func TestMetricsServiceSelectsTheManager(t *testing.T) {
	g := NewWithT(t)
	objects := buildDefault(t)
	deployment := decode[appsv1.Deployment](t, findObject(t, objects, "Deployment", deploymentName))
	service := decode[corev1.Service](t, findObject(t, objects, "Service", "profilesync-controller-manager-metrics-service"))

	g.Expect(service.Namespace).To(Equal(operatorNamespace))
	g.Expect(service.Spec.Selector).NotTo(BeEmpty())
	for k, v := range service.Spec.Selector {
		g.Expect(deployment.Spec.Template.Labels).To(HaveKeyWithValue(k, v))
	}
	g.Expect(service.Spec.Ports).To(ConsistOf(And(HaveField("Name", "https"), HaveField("Port", BeEquivalentTo(8443)),
		HaveField("TargetPort", intstr.FromString("metrics")))))
	g.Expect(deployment.Spec.Template.Spec.Containers[0].Ports).To(ContainElement(And(
		HaveField("Name", "metrics"), HaveField("ContainerPort", BeEquivalentTo(8443)))))
}

// webhookWiring checks what both installs share: the manager serves
// admission on 9443, the webhook Service selects it, and every webhook calls
// that Service. It returns the manager's container and the Service.
func webhookWiring(t *testing.T, objects []*unstructured.Unstructured) (corev1.Container, *corev1.Service) {
	t.Helper()
	g := NewWithT(t)
	deployment := decode[appsv1.Deployment](t, findObject(t, objects, "Deployment", deploymentName))
	manager := deployment.Spec.Template.Spec.Containers[0]
	service := decode[corev1.Service](t, findObject(t, objects, "Service", "profilesync-webhook-service"))
	webhooks := onlyObject(t, objects, "ValidatingWebhookConfiguration")

	g.Expect(manager.Args).To(ContainElement("--enable-admission"))
	g.Expect(manager.Ports).To(ContainElement(HaveField("ContainerPort", BeEquivalentTo(9443))))
	g.Expect(service.Spec.Ports).To(ConsistOf(HaveField("TargetPort", intstr.FromInt32(9443))))
	for k, v := range service.Spec.Selector {
		g.Expect(deployment.Spec.Template.Labels).To(HaveKeyWithValue(k, v))
	}
	hooks, _, _ := unstructured.NestedSlice(webhooks.Object, "webhooks")
	g.Expect(hooks).NotTo(BeEmpty())
	for _, hook := range hooks {
		ref, _, _ := unstructured.NestedStringMap(hook.(map[string]any), "clientConfig", "service")
		g.Expect(ref).To(HaveKeyWithValue("name", service.Name))
		g.Expect(ref).To(HaveKeyWithValue("namespace", service.Namespace))
	}
	return manager, service
}

// provisioningFlags are the manager's --webhook-cert-provisioning arguments.
func provisioningFlags(manager corev1.Container) []string {
	var flags []string
	for _, arg := range manager.Args {
		if strings.HasPrefix(arg, "--webhook-cert-provisioning") {
			flags = append(flags, arg)
		}
	}
	return flags
}

// The admission webhook of config/default: the manager makes its own
// serving certificate, in the shipped empty Secret, and writes it into its
// certificate directory, which must be writable (the /tmp emptyDir, no
// Secret volume); no cert-manager annotation. The operator binary's run
// against these objects is TestTheShippedOperatorServesAdmissionWithItsOwnCertificate.
func TestAdmissionWebhookIsWired(t *testing.T) {
	g := NewWithT(t)
	objects := buildDefault(t)
	manager, _ := webhookWiring(t, objects)
	g.Expect(provisioningFlags(manager)).To(ConsistOf("--webhook-cert-provisioning=self"))

	secret := findObject(t, objects, "Secret", webhookCertSecretName)
	g.Expect(secret.GetNamespace()).To(Equal(operatorNamespace))
	g.Expect(secret.Object).NotTo(HaveKey("data"), "shipped empty: applying it again keeps the operator's certificate")
	g.Expect(secret.Object).NotTo(HaveKey("stringData"))

	// The default --webhook-cert-dir is under the /tmp emptyDir, writable.
	for _, m := range manager.VolumeMounts {
		g.Expect(m.MountPath).NotTo(HavePrefix("/tmp/k8s-webhook-server"), "nothing is mounted over the certificate directory")
	}
	g.Expect(manager.VolumeMounts).To(ContainElement(HaveField("MountPath", "/tmp")))
	g.Expect(onlyObject(t, objects, "ValidatingWebhookConfiguration").GetAnnotations()).
		NotTo(HaveKey("cert-manager.io/inject-ca-from"))
}

// The admission webhook of config/default-certmanager: the manager serves
// the certificate cert-manager issues for the webhook Service, mounted from
// its Secret, and cert-manager injects that certificate's CA into the
// ValidatingWebhookConfiguration.
func TestCertManagerOverlayIsWired(t *testing.T) {
	g := NewWithT(t)
	objects := buildConfig(t, "default-certmanager")
	manager, service := webhookWiring(t, objects)
	deployment := decode[appsv1.Deployment](t, findObject(t, objects, "Deployment", deploymentName))
	certificate := onlyObject(t, objects, "Certificate")
	webhooks := onlyObject(t, objects, "ValidatingWebhookConfiguration")
	g.Expect(provisioningFlags(manager)).To(ConsistOf("--webhook-cert-provisioning=external"))

	// The serving certificate is mounted where the webhook server reads it.
	secretName, _, _ := unstructured.NestedString(certificate.Object, "spec", "secretName")
	g.Expect(secretName).To(Equal(webhookCertSecretName))
	var certVolume string
	for _, v := range deployment.Spec.Template.Spec.Volumes {
		if v.Secret != nil && v.Secret.SecretName == secretName {
			certVolume = v.Name
		}
	}
	g.Expect(certVolume).NotTo(BeEmpty(), "a volume of Secret %s", secretName)
	g.Expect(manager.VolumeMounts).To(ContainElement(And(HaveField("Name", certVolume),
		HaveField("MountPath", "/tmp/k8s-webhook-server/serving-certs"), HaveField("ReadOnly", true))))

	// The certificate is for the webhook Service's DNS names, and its CA is
	// injected into the webhook configuration.
	dnsNames, _, _ := unstructured.NestedStringSlice(certificate.Object, "spec", "dnsNames")
	g.Expect(dnsNames).To(ConsistOf(
		service.Name+"."+service.Namespace+".svc",
		service.Name+"."+service.Namespace+".svc.cluster.local"))
	g.Expect(webhooks.GetAnnotations()).To(HaveKeyWithValue("cert-manager.io/inject-ca-from",
		certificate.GetNamespace()+"/"+certificate.GetName()))
	issuer := onlyObject(t, objects, "Issuer")
	issuerName, _, _ := unstructured.NestedString(certificate.Object, "spec", "issuerRef", "name")
	g.Expect(issuerName).To(Equal(issuer.GetName()))
	g.Expect(issuer.GetNamespace()).To(Equal(certificate.GetNamespace()))
	g.Expect(certificate.GetNamespace()).To(Equal(operatorNamespace))
}

// TestCertManagerOverlayDiffersOnlyInTheCertificate: config/default-certmanager
// is config/default with cert-manager's certificate instead of the
// operator's: it adds the Issuer and the Certificate, leaves out the Secret
// cert-manager creates and the Role on it, and changes only the Deployment
// and the webhook configuration (the annotation) of the rest.
func TestCertManagerOverlayDiffersOnlyInTheCertificate(t *testing.T) {
	g := NewWithT(t)
	id := func(o *unstructured.Unstructured) string {
		return o.GetKind() + " " + o.GetNamespace() + "/" + o.GetName()
	}
	index := func(objects []*unstructured.Unstructured) map[string]*unstructured.Unstructured {
		byID := map[string]*unstructured.Unstructured{}
		for _, o := range objects {
			byID[id(o)] = o
		}
		return byID
	}
	self, certManager := index(buildDefault(t)), index(buildConfig(t, "default-certmanager"))
	var added, left, changed []string
	for key, o := range certManager {
		if mine, ok := self[key]; !ok {
			added = append(added, key)
		} else if !equality(mine, o) {
			changed = append(changed, key)
		}
	}
	for key := range self {
		if _, ok := certManager[key]; !ok {
			left = append(left, key)
		}
	}
	g.Expect(added).To(ConsistOf("Issuer profilesync-system/profilesync-selfsigned-issuer", "Certificate profilesync-system/profilesync-serving-cert"))
	g.Expect(left).To(ConsistOf("Secret profilesync-system/"+webhookCertSecretName,
		"Role profilesync-system/profilesync-manager-role", "RoleBinding profilesync-system/profilesync-manager-rolebinding"))
	g.Expect(changed).To(ConsistOf("Deployment profilesync-system/"+deploymentName,
		"ValidatingWebhookConfiguration /profilesync-validating-webhook-configuration"))
}

func equality(a, b *unstructured.Unstructured) bool {
	return reflect.DeepEqual(a.Object, b.Object)
}

func TestServiceAccountIsBoundToManagerRole(t *testing.T) {
	g := NewWithT(t)
	objects := buildDefault(t)
	deployment := decode[appsv1.Deployment](t, findObject(t, objects, "Deployment", deploymentName))
	account := findObject(t, objects, "ServiceAccount", serviceAccountName)
	g.Expect(account.GetNamespace()).To(Equal(operatorNamespace))
	g.Expect(deployment.Spec.Template.Spec.ServiceAccountName).To(Equal(serviceAccountName))

	subject := rbacv1.Subject{Kind: "ServiceAccount", Name: serviceAccountName, Namespace: operatorNamespace}
	findObject(t, objects, "ClusterRole", managerRoleName)
	var bound bool
	for _, obj := range objects {
		if obj.GetKind() != "ClusterRoleBinding" {
			continue
		}
		binding := decode[rbacv1.ClusterRoleBinding](t, obj)
		if binding.RoleRef == (rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: managerRoleName}) &&
			slices.Contains(binding.Subjects, subject) {
			bound = true
		}
	}
	g.Expect(bound).To(BeTrue(), "a ClusterRoleBinding binds %s to ClusterRole %s", serviceAccountName, managerRoleName)
}

// The ServiceAccount's permissions, as the API server's RBAC authorizer
// decides them once the build's RBAC objects exist: what the controllers and
// leader election need, and not more.
func TestServiceAccountHasLeastPrivilege(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	objects := buildDefault(t)
	installPrerequisites(t, objects)
	rbacKinds := []string{"ServiceAccount", "ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding"}
	for _, obj := range objects {
		if slices.Contains(rbacKinds, obj.GetKind()) {
			g.Expect(apply(ctx, k8sClient, obj)).To(Succeed(), "apply %s %s", obj.GetKind(), obj.GetName())
		}
	}

	user := "system:serviceaccount:" + operatorNamespace + ":" + serviceAccountName
	allowed := func(attrs authorizationv1.ResourceAttributes) func() (bool, error) {
		return func() (bool, error) {
			review := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
				User:               user,
				Groups:             []string{"system:serviceaccounts", "system:serviceaccounts:" + operatorNamespace, "system:authenticated"},
				ResourceAttributes: &attrs,
			}}
			if err := k8sClient.Create(ctx, review); err != nil {
				return false, err
			}
			return review.Status.Allowed, nil
		}
	}
	const group = "core.profilesync.io"
	granted := []authorizationv1.ResourceAttributes{
		{Group: group, Resource: "profilesyncs", Verb: "watch"},
		{Group: group, Resource: "profilesyncs", Subresource: "status", Verb: "patch", Namespace: "landscape"},
		{Group: group, Resource: "cloudprofiles", Verb: "patch"},
		{Group: group, Resource: "cloudprofiles", Verb: "delete"},
		{Group: group, Resource: "cloudprofiles", Subresource: "status", Verb: "patch"},
		{Group: group, Resource: "namespacedcloudprofiles", Verb: "patch", Namespace: "project-a"},
		{Group: group, Resource: "namespacedcloudprofiles", Subresource: "status", Verb: "patch", Namespace: "project-a"},
		// The sync removes the annotations of a hold that ended (break glass).
		{Group: group, Resource: "cloudprofiles", Verb: "hold"},
		{Group: group, Resource: "namespacedcloudprofiles", Verb: "hold", Namespace: "project-a"},
		{Resource: "secrets", Verb: "get", Namespace: operatorNamespace},
		// The admission webhook's serving certificate (--webhook-cert-provisioning=self):
		// the rotator's cache lists and watches the Secrets of its own
		// namespace; it updates the one Secret and the one webhook configuration.
		{Resource: "secrets", Verb: "list", Namespace: operatorNamespace},
		{Resource: "secrets", Verb: "watch", Namespace: operatorNamespace},
		{Resource: "secrets", Verb: "update", Namespace: operatorNamespace, Name: webhookCertSecretName},
		{Group: "admissionregistration.k8s.io", Resource: "validatingwebhookconfigurations", Verb: "watch"},
		{Group: "admissionregistration.k8s.io", Resource: "validatingwebhookconfigurations", Verb: "update", Name: webhookConfigurationName},
		{Resource: "events", Verb: "create", Namespace: "project-a"},
		{Group: "coordination.k8s.io", Resource: "leases", Verb: "update", Namespace: operatorNamespace},
		// The secure metrics endpoint authenticates and authorizes its scrapers.
		{Group: "authentication.k8s.io", Resource: "tokenreviews", Verb: "create"},
		{Group: "authorization.k8s.io", Resource: "subjectaccessreviews", Verb: "create"},
		// A ProfileSync with spec.serviceAccountName writes as that account.
		{Resource: "serviceaccounts", Verb: "impersonate", Namespace: "project-a"},
		{Resource: "serviceaccounts", Verb: "get", Namespace: "project-a"},
	}
	denied := []authorizationv1.ResourceAttributes{
		{Group: group, Resource: "profilesyncs", Verb: "update", Namespace: operatorNamespace},
		{Group: group, Resource: "profilesyncs", Verb: "delete", Namespace: operatorNamespace},
		{Resource: "secrets", Verb: "list", Namespace: "project-a"},
		{Resource: "secrets", Verb: "update", Namespace: operatorNamespace, Name: "git-credentials"},
		{Resource: "secrets", Verb: "update", Namespace: "project-a", Name: webhookCertSecretName},
		{Resource: "secrets", Verb: "create", Namespace: operatorNamespace},
		{Resource: "secrets", Verb: "delete", Namespace: operatorNamespace, Name: webhookCertSecretName},
		{Group: "admissionregistration.k8s.io", Resource: "validatingwebhookconfigurations", Verb: "update", Name: "another-webhook"},
		{Group: "admissionregistration.k8s.io", Resource: "validatingwebhookconfigurations", Verb: "delete", Name: webhookConfigurationName},
		{Group: "admissionregistration.k8s.io", Resource: "mutatingwebhookconfigurations", Verb: "update"},
		{Resource: "configmaps", Verb: "get", Namespace: operatorNamespace},
		{Group: "coordination.k8s.io", Resource: "leases", Verb: "update", Namespace: "kube-system"},
		{Group: "apps", Resource: "deployments", Verb: "patch", Namespace: operatorNamespace},
		{Group: "rbac.authorization.k8s.io", Resource: "clusterroles", Verb: "escalate"},
		{Resource: "users", Verb: "impersonate"},
		{Resource: "groups", Verb: "impersonate"},
	}
	// The RBAC authorizer learns of new bindings through a watch, so the first
	// grants may take a moment.
	for _, attrs := range granted {
		g.Eventually(allowed(attrs)).Should(BeTrue(), "%s may %s", serviceAccountName, describe(attrs))
	}
	for _, attrs := range denied {
		g.Expect(allowed(attrs)()).To(BeFalse(), "%s may not %s", serviceAccountName, describe(attrs))
	}
}

func describe(a authorizationv1.ResourceAttributes) string {
	resource := strings.Join(slices.DeleteFunc([]string{a.Resource, a.Subresource}, func(s string) bool { return s == "" }), "/")
	if a.Group != "" {
		resource += "." + a.Group
	}
	if a.Name != "" {
		resource += " " + a.Name
	}
	if a.Namespace != "" {
		return a.Verb + " " + resource + " in " + a.Namespace
	}
	return a.Verb + " " + resource
}
