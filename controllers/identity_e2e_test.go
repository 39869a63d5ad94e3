package controllers_test

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/fluxcd/pkg/apis/meta"
	"github.com/fluxcd/pkg/runtime/conditions"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/apimachinery/pkg/types"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/yaml"

	v1alpha1 "github.com/profilesync/profilesync/api/v1alpha1"
	"github.com/profilesync/profilesync/controllers"
	"github.com/profilesync/profilesync/test/builders"
	"github.com/profilesync/profilesync/test/gitserver"
	"github.com/profilesync/profilesync/test/testenv"
	"github.com/profilesync/profilesync/webhooks"
)

// identityDefaultServiceAccount is --default-service-account of the
// manager of TestAProfileSyncWritesWithTheIdentityOfItsOwners, the name of
// the ServiceAccount of config/samples/tenant_profilesync.yaml.
const identityDefaultServiceAccount = "profiles-sync"

// identityEnv is a control plane of its own, with the admission webhooks
// served (the suite's runs none) by a manager that also runs every
// controller with --default-service-account.
type identityEnv struct {
	t      *testing.T
	client client.Client
	git    *gitserver.Server
}

func startIdentityEnv(t *testing.T) *identityEnv {
	t.Helper()
	env := testenv.StartForTest(t, testenv.WithWebhooks(), testenv.WithManager(testenv.ManagerOptions{
		Setup: func(ctx context.Context, mgr manager.Manager, env *testenv.Env) error {
			if err := webhooks.SetupWithManager(mgr, webhooks.Options{Clock: clock.RealClock{}}); err != nil {
				return err
			}
			cacheDir, err := env.TempDir("profilesync-cache-")
			if err != nil {
				return err
			}
			return controllers.SetupAll(ctx, mgr, controllers.Config{
				Options:                  controllers.Options{MaxConcurrentReconciles: 2},
				Clock:                    clock.RealClock{},
				StoragePath:              cacheDir,
				ClusterProfilesNamespace: testenv.OperatorNamespace,
				DefaultServiceAccount:    identityDefaultServiceAccount,
				AllowCredentialsOverHTTP: true,
			})
		},
	}))
	return &identityEnv{t: t, client: env.Client, git: gitserver.StartForTest(t, gitserver.Options{})}
}

func (e *identityEnv) create(obj client.Object) {
	e.t.Helper()
	if err := e.client.Create(context.Background(), obj); err != nil {
		e.t.Fatalf("create %T %s: %v", obj, obj.GetName(), err)
	}
}

func (e *identityEnv) namespace(name string) string {
	e.create(&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}})
	return name
}

// sampleRBAC creates, in namespace, the ServiceAccount and RoleBinding of
// config/samples/tenant_profilesync.yaml; the first call creates the
// ClusterRole they bind, project-admin-role of config/rbac, under the name
// config/default gives it.
func (e *identityEnv) sampleRBAC(namespace string) {
	e.t.Helper()
	role := &rbacv1.ClusterRole{}
	if err := e.client.Get(context.Background(), client.ObjectKey{Name: "profilesync-project-admin-role"}, role); apierrors.IsNotFound(err) {
		for _, obj := range decodeYAMLFile(e.t, filepath.Join("..", "config", "rbac", "role_project_admin.yaml")) {
			if obj.GetName() == "project-admin-role" {
				obj.SetName("profilesync-project-admin-role")
				e.create(obj)
			}
		}
	}
	for _, obj := range decodeYAMLFile(e.t, filepath.Join("..", "config", "samples", "tenant_profilesync.yaml")) {
		switch typed := obj.(type) {
		case *corev1.ServiceAccount:
			typed.Namespace = namespace
			e.create(typed)
		case *rbacv1.RoleBinding:
			typed.Namespace = namespace
			typed.Subjects[0].Namespace = namespace
			e.create(typed)
		}
	}
}

// grant gives the ServiceAccount namespace/account the verbs on
// namespacedcloudprofiles in namespace.
func (e *identityEnv) grant(namespace, account string, verbs ...string) {
	role := &rbacv1.Role{
		ObjectMeta: metav1.ObjectMeta{Name: testenv.UniqueName("profiles"), Namespace: namespace},
		Rules: []rbacv1.PolicyRule{{
			APIGroups: []string{v1alpha1.GroupVersion.Group}, Resources: []string{"namespacedcloudprofiles"}, Verbs: verbs,
		}},
	}
	e.create(role)
	e.create(&rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: role.Name, Namespace: namespace},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: role.Name},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: account, Namespace: namespace}},
	})
}

// profileSync creates a ProfileSync of the repository repo in namespace,
// writing as account (empty: none named).
func (e *identityEnv) profileSync(namespace, repo, account string) *v1alpha1.ProfileSync {
	sync := &v1alpha1.ProfileSync{
		ObjectMeta: metav1.ObjectMeta{Name: testenv.UniqueName("sync"), Namespace: namespace},
		Spec: v1alpha1.ProfileSyncSpec{
			URL:                e.git.RepoURL(repo),
			Interval:           metav1.Duration{Duration: time.Hour},
			ServiceAccountName: account,
		},
	}
	e.create(sync)
	return sync
}

// requestSync syncs sync now.
func (e *identityEnv) requestSync(sync *v1alpha1.ProfileSync) {
	e.t.Helper()
	patch := fmt.Sprintf(`{"metadata":{"annotations":{%q:%q}}}`, meta.ReconcileRequestAnnotation, testenv.UniqueName("now"))
	if err := e.client.Patch(context.Background(), sync.DeepCopy(), client.RawPatch(types.MergePatchType, []byte(patch))); err != nil {
		e.t.Fatalf("request a sync of %s: %v", sync.Name, err)
	}
}

// waitReady waits until sync has applied commit.
func (e *identityEnv) waitReady(sync *v1alpha1.ProfileSync, commit string) {
	e.t.Helper()
	NewWithT(e.t).Eventually(func(g Gomega) {
		got := e.get(g, sync)
		g.Expect(conditions.IsReady(got)).To(BeTrue(), conditions.GetMessage(got, v1alpha1.ReadyCondition))
		g.Expect(got.Status.LastAppliedRevision).To(Equal("main@sha1:" + commit))
	}).WithTimeout(20 * time.Second).Should(Succeed())
}

// waitRefused waits until sync is stalled, refused with reason and a
// message that contains each of want, and returns the message.
func (e *identityEnv) waitRefused(sync *v1alpha1.ProfileSync, commit, reason string, want ...string) string {
	e.t.Helper()
	var message string
	NewWithT(e.t).Eventually(func(g Gomega) {
		got := e.get(g, sync)
		g.Expect(got.Status.LastAttemptedRevision).To(Equal("main@sha1:" + commit))
		message = conditions.GetMessage(got, v1alpha1.ReadyCondition)
		g.Expect(conditions.GetReason(got, v1alpha1.ReadyCondition)).To(Equal(reason), message)
		g.Expect(conditions.IsStalled(got)).To(BeTrue(), "refused until Git or the RBAC changes, not retried hot")
		for _, w := range want {
			g.Expect(message).To(ContainSubstring(w))
		}
	}).WithTimeout(20 * time.Second).Should(Succeed())
	return message
}

func (e *identityEnv) get(g Gomega, sync *v1alpha1.ProfileSync) *v1alpha1.ProfileSync {
	var got v1alpha1.ProfileSync
	g.Expect(e.client.Get(context.Background(), client.ObjectKeyFromObject(sync), &got)).To(Succeed())
	return &got
}

func (e *identityEnv) namespaced(namespace, name string) (*v1alpha1.NamespacedCloudProfile, error) {
	var ncp v1alpha1.NamespacedCloudProfile
	err := e.client.Get(context.Background(), client.ObjectKey{Namespace: namespace, Name: name}, &ncp)
	return &ncp, err
}

// decodeYAMLFile decodes every object of a YAML file of the repository.
func decodeYAMLFile(t *testing.T, file string) []client.Object {
	t.Helper()
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	scheme, err := testenv.NewScheme()
	if err != nil {
		t.Fatalf("scheme: %v", err)
	}
	decoder := serializer.NewCodecFactory(scheme).UniversalDeserializer()
	reader := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
	var objects []client.Object
	for {
		doc, err := reader.Read()
		if errors.Is(err, io.EOF) {
			return objects
		}
		if err != nil {
			t.Fatalf("%s: %v", file, err)
		}
		obj, _, err := decoder.Decode(doc, nil, nil)
		if err != nil {
			t.Fatalf("%s: %v", file, err)
		}
		objects = append(objects, obj.(client.Object))
	}
}

// parentProfile is a CloudProfile with Kubernetes 1.30.1 and 1.31.0.
func parentProfile(name string) string {
	return `apiVersion: core.profilesync.io/v1alpha1
kind: CloudProfile
metadata:
  name: ` + name + `
spec:
  type: local
` + builders.RequiredListsYAML + `  kubernetes:
    versions:
    - version: 1.30.1
      lifecycle:
      - classification: supported
      - classification: expired
        startTime: "2025-09-01T00:00:00Z"
    - version: 1.31.0
`
}

// tenantProfile is a NamespacedCloudProfile of parent that adds a machine
// type and, with expiry, moves the expiry of Kubernetes 1.30.1 there: a
// change of spec.kubernetes, which needs the custom verb
// modify-spec-kubernetes.
func tenantProfile(namespace, name, parent, expiry string) string {
	var override string
	if expiry != "" {
		override = `
  kubernetes:
    versions:
    - version: 1.30.1
      lifecycle:
      - classification: expired
        startTime: "` + expiry + `"`
	}
	return fmt.Sprintf(`apiVersion: core.profilesync.io/v1alpha1
kind: NamespacedCloudProfile
metadata:
  name: %s
  namespace: %s
spec:
  parent:
    kind: CloudProfile
    name: %s%s
  machineTypes:
  - name: m5.4xlarge
    cpu: "16"
    gpu: "0"
    memory: 64Gi
`, name, namespace, parent, override)
}

// TestAProfileSyncWritesWithTheIdentityOfItsOwners runs the sync against
// RBAC and the admission webhooks: a tenant's change synced from Git is
// judged as the same change made with kubectl by the tenant's
// ServiceAccount, and the landscape's ProfileSync still writes as the
// operator.
func TestAProfileSyncWritesWithTheIdentityOfItsOwners(t *testing.T) {
	e := startIdentityEnv(t)
	e.namespace(testenv.OperatorNamespace)

	// The landscape's ProfileSync names no ServiceAccount and is not a
	// tenant: it writes the parent as the operator, whatever
	// --default-service-account says.
	const parent = "local"
	commit, err := e.git.CreateRepo("landscape", map[string]string{"profiles.yaml": parentProfile(parent)})
	NewWithT(t).Expect(err).NotTo(HaveOccurred())
	e.waitReady(e.profileSync(testenv.OperatorNamespace, "landscape", ""), commit)

	t.Run("a tenant's ServiceAccount without modify-spec-kubernetes may not override spec.kubernetes, and may with it", func(t *testing.T) {
		g := NewWithT(t)
		ns := e.namespace("project-verb")
		e.sampleRBAC(ns)
		commit, err := e.git.CreateRepo(ns, map[string]string{"profiles.yaml": tenantProfile(ns, "team", parent, "")})
		g.Expect(err).NotTo(HaveOccurred())
		sync := e.profileSync(ns, ns, "profiles-sync")
		e.waitReady(sync, commit)

		commit, err = e.git.Commit(ns, map[string]string{"profiles.yaml": tenantProfile(ns, "team", parent, "2025-12-01T00:00:00Z")}, "extend 1.30.1")
		g.Expect(err).NotTo(HaveOccurred())
		e.requestSync(sync)
		e.waitRefused(sync, commit, v1alpha1.AccessDeniedReason,
			"NamespacedCloudProfile/"+ns+"/team: ServiceAccount "+ns+"/profiles-sync may not write it",
			`user "system:serviceaccount:`+ns+`:profiles-sync" may not change spec.kubernetes`,
			`the verb "modify-spec-kubernetes"`)
		ncp, err := e.namespaced(ns, "team")
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(ncp.Spec.Kubernetes).To(BeNil(), "nothing of the refused revision is written")

		e.grant(ns, "profiles-sync", "modify-spec-kubernetes")
		e.requestSync(sync)
		e.waitReady(sync, commit)
		ncp, err = e.namespaced(ns, "team")
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(ncp.Spec.Kubernetes).NotTo(BeNil())
		g.Expect(ncp.Spec.Kubernetes.Versions[0].Lifecycle[0].StartTime.UTC()).To(Equal(time.Date(2025, 12, 1, 0, 0, 0, 0, time.UTC)))
	})

	t.Run("a ServiceAccount without patch is refused, named with the verb", func(t *testing.T) {
		g := NewWithT(t)
		ns := e.namespace("project-readonly")
		e.create(&corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "reader", Namespace: ns}})
		e.grant(ns, "reader", "get", "list", "watch")
		commit, err := e.git.CreateRepo(ns, map[string]string{"profiles.yaml": tenantProfile(ns, "team", parent, "")})
		g.Expect(err).NotTo(HaveOccurred())
		e.waitRefused(e.profileSync(ns, ns, "reader"), commit, v1alpha1.AccessDeniedReason,
			"NamespacedCloudProfile/"+ns+"/team: ServiceAccount "+ns+"/reader may not write it",
			`User "system:serviceaccount:`+ns+`:reader" cannot patch resource "namespacedcloudprofiles"`)
		_, err = e.namespaced(ns, "team")
		g.Expect(apierrors.IsNotFound(err)).To(BeTrue())
	})

	t.Run("a ServiceAccount that does not exist is refused", func(t *testing.T) {
		g := NewWithT(t)
		ns := e.namespace("project-missing")
		commit, err := e.git.CreateRepo(ns, map[string]string{"profiles.yaml": tenantProfile(ns, "team", parent, "")})
		g.Expect(err).NotTo(HaveOccurred())
		e.waitRefused(e.profileSync(ns, ns, "absent"), commit, v1alpha1.AccessDeniedReason,
			"ServiceAccount "+ns+"/absent (spec.serviceAccountName) not found")
		_, err = e.namespaced(ns, "team")
		g.Expect(apierrors.IsNotFound(err)).To(BeTrue())
	})

	t.Run("a tenant's ProfileSync without serviceAccountName writes as the default ServiceAccount", func(t *testing.T) {
		g := NewWithT(t)
		ns := e.namespace("project-default")
		e.sampleRBAC(ns)
		commit, err := e.git.CreateRepo(ns, map[string]string{"profiles.yaml": tenantProfile(ns, "team", parent, "2025-12-01T00:00:00Z")})
		g.Expect(err).NotTo(HaveOccurred())
		e.waitRefused(e.profileSync(ns, ns, ""), commit, v1alpha1.AccessDeniedReason,
			"ServiceAccount "+ns+"/"+identityDefaultServiceAccount+" may not write it",
			`user "system:serviceaccount:`+ns+`:`+identityDefaultServiceAccount+`" may not change spec.kubernetes`)
		_, err = e.namespaced(ns, "team")
		g.Expect(apierrors.IsNotFound(err)).To(BeTrue())

		bare := e.namespace("project-no-default")
		commit, err = e.git.CreateRepo(bare, map[string]string{"profiles.yaml": tenantProfile(bare, "team", parent, "")})
		g.Expect(err).NotTo(HaveOccurred())
		e.waitRefused(e.profileSync(bare, bare, ""), commit, v1alpha1.AccessDeniedReason,
			"ServiceAccount "+bare+"/"+identityDefaultServiceAccount+" (the operator's --default-service-account) not found")
		_, err = e.namespaced(bare, "team")
		g.Expect(apierrors.IsNotFound(err)).To(BeTrue())
	})
}

// The sample's RoleBinding must bind the ClusterRole config/default makes of
// project-admin-role: its name prefix is profilesync-.
func TestTheTenantSampleBindsTheProjectAdminRole(t *testing.T) {
	g := NewWithT(t)
	data, err := os.ReadFile(filepath.Join("..", "config", "default", "kustomization.yaml"))
	g.Expect(err).NotTo(HaveOccurred())
	var kustomization struct {
		NamePrefix string `json:"namePrefix"`
	}
	g.Expect(yaml.Unmarshal(data, &kustomization)).To(Succeed())
	var bound []string
	for _, obj := range decodeYAMLFile(t, filepath.Join("..", "config", "samples", "tenant_profilesync.yaml")) {
		switch typed := obj.(type) {
		case *rbacv1.RoleBinding:
			bound = append(bound, typed.RoleRef.Name)
		case *v1alpha1.ProfileSync:
			g.Expect(typed.Spec.ServiceAccountName).To(Equal(identityDefaultServiceAccount))
		}
	}
	g.Expect(bound).To(ConsistOf(kustomization.NamePrefix + "project-admin-role"))
}
