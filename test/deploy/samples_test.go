package deploy

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/profilesync/profilesync/api/v1alpha1"
	"github.com/profilesync/profilesync/test/gitserver"
)

// samplesReconciledTimeout bounds the first status of every sample: a
// fetch from the loopback Git server and a build in the sandbox.
const samplesReconciledTimeout = 2 * time.Minute

// tenantRepository is what a project keeps in its own Git for the tenant
// sample (config/samples/tenant_profilesync.yaml, which syncs the
// repository's root): a NamespacedCloudProfile of its namespace adding a
// machine type to the sample CloudProfile, which project-admin-role allows
// without GEP-25's custom verbs.
var tenantRepository = map[string]string{
	"kustomization.yaml": "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources:\n- namespacedcloudprofile.yaml\n",
	"namespacedcloudprofile.yaml": `apiVersion: core.profilesync.io/v1alpha1
kind: NamespacedCloudProfile
metadata:
  name: local-project-a
  namespace: project-a
spec:
  parent:
    kind: CloudProfile
    name: local
  machineTypes:
  - name: m5.2xlarge
    cpu: "8"
    gpu: "0"
    memory: 32Gi
`,
}

// exampleRepositoryNamespaces are the namespaces the example repository's
// NamespacedCloudProfiles live in; a cluster has its projects' namespaces
// before a landscape syncs their profiles.
var exampleRepositoryNamespaces = []string{"team-payments"}

// theSamplesWorkAsShipped applies every object of `kustomize build
// config/samples` by server-side apply, as `kubectl apply --server-side -k
// config/samples` does, through the admission of the operator running from
// config/default, and checks that each works as shipped. The samples'
// repositories (git.example.com) do not exist, so the loopback Git server
// serves them and only spec.url is substituted: the landscape's sample syncs
// examples/profiles-repo (overlays/dev, its spec.path), the tenant's sample a
// project's repository (tenantRepository). Every profile gets its status,
// and both ProfileSyncs apply their revision: neither the tenancy rule (a
// landscape's ProfileSync outside the operator's namespace is a tenant's,
// refused every CloudProfile) nor the identity of the tenant's
// ServiceAccount refuses them.
func theSamplesWorkAsShipped(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	objects := buildConfig(t, "samples")

	server := gitserver.StartForTest(t, gitserver.Options{})
	example, err := gitserver.ReadTree(filepath.Join("..", "..", "examples", "profiles-repo"))
	g.Expect(err).NotTo(HaveOccurred())
	repositories := map[string]map[string]string{
		"https://git.example.com/platform/profiles.git":  example,
		"https://git.example.com/project-a/profiles.git": tenantRepository,
	}
	served := map[string]string{}
	for url, files := range repositories {
		name := strings.ReplaceAll(strings.TrimSuffix(strings.TrimPrefix(url, "https://git.example.com/"), ".git"), "/", "-")
		_, err := server.CreateRepo(name, files)
		g.Expect(err).NotTo(HaveOccurred(), "serve %s", url)
		served[url] = server.RepoURL(name)
	}
	for _, name := range exampleRepositoryNamespaces {
		namespace := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}
		g.Expect(client.IgnoreAlreadyExists(k8sClient.Create(ctx, namespace))).To(Succeed())
	}

	// Namespaces first, as kubectl orders them; without force: a user's
	// first apply conflicts with no one.
	var namespaces, rest []*unstructured.Unstructured
	for _, obj := range objects {
		if obj.GetKind() == "Namespace" {
			namespaces = append(namespaces, obj)
		} else {
			rest = append(rest, obj)
		}
	}
	var profileSyncs, profiles, versionUpdates []*unstructured.Unstructured
	kinds := map[string]int{}
	for _, obj := range append(namespaces, rest...) {
		obj = obj.DeepCopy()
		kinds[obj.GetKind()]++
		switch obj.GetKind() {
		case "ProfileSync":
			url, _, _ := unstructured.NestedString(obj.Object, "spec", "url")
			g.Expect(served).To(HaveKey(url), "ProfileSync %s/%s syncs a repository the test does not serve", obj.GetNamespace(), obj.GetName())
			g.Expect(unstructured.SetNestedField(obj.Object, served[url], "spec", "url")).To(Succeed())
			profileSyncs = append(profileSyncs, obj)
		case "CloudProfile", "NamespacedCloudProfile":
			profiles = append(profiles, obj)
		case v1alpha1.VersionUpdateKind:
			versionUpdates = append(versionUpdates, obj)
		}
		g.Expect(k8sClient.Apply(ctx, client.ApplyConfigurationFromUnstructured(obj.DeepCopy()), fieldOwner)).
			To(Succeed(), "apply %s %s/%s", obj.GetKind(), obj.GetNamespace(), obj.GetName())
		if obj.GetKind() != "Namespace" {
			t.Cleanup(func() { _ = k8sClient.Delete(context.Background(), obj.DeepCopy()) })
		}
	}
	// One sample of every kind, and the tenant's with its identity.
	g.Expect(kinds).To(Equal(map[string]int{
		"Namespace": 1, "ServiceAccount": 1, "RoleBinding": 1,
		"CloudProfile": 1, "NamespacedCloudProfile": 1, "ProfileSync": 2, v1alpha1.VersionUpdateKind: 1,
	}))

	for _, obj := range profiles {
		g.Eventually(func(g Gomega) {
			ready := readyOf(ctx, g, obj)
			g.Expect(ready.status).To(Equal("True"), "%s", ready)
			g.Expect(ready.reason).To(Equal(v1alpha1.SucceededReason), "%s", ready)
		}).WithTimeout(samplesReconciledTimeout).Should(Succeed(), "%s %s/%s gets its status", obj.GetKind(), obj.GetNamespace(), obj.GetName())
	}
	for _, obj := range profileSyncs {
		g.Eventually(func(g Gomega) {
			ready := readyOf(ctx, g, obj)
			if ready.reason == v1alpha1.AccessDeniedReason {
				// A refusal is stalled: the sync will not retry it.
				StopTrying("refused as shipped: " + ready.String()).Now()
			}
			g.Expect(ready.status).To(Equal("True"), "%s", ready)
			g.Expect(ready.reason).To(Equal(v1alpha1.SucceededReason), "%s", ready)
		}).WithTimeout(samplesReconciledTimeout).Should(Succeed(), "ProfileSync %s/%s applies its revision", obj.GetNamespace(), obj.GetName())
	}

	// The VersionUpdate reaches its ProfileSync's repository with the
	// ProfileSync's Secret and reads the tree of the branch it follows, as
	// the operator's RBAC lets it; the example repository declares no
	// sources of new versions, which it says.
	for _, obj := range versionUpdates {
		g.Eventually(func(g Gomega) {
			ready := readyOf(ctx, g, obj)
			g.Expect(ready.status).To(Equal("False"), "%s", ready)
			g.Expect(ready.reason).To(Equal(v1alpha1.ProposeFailedReason), "%s", ready)
			g.Expect(ready.msg).To(ContainSubstring("no profilesync-versions.yaml at the repository root"), "%s", ready)
		}).WithTimeout(samplesReconciledTimeout).Should(Succeed(), "VersionUpdate %s/%s checks its ProfileSync's repository", obj.GetNamespace(), obj.GetName())
	}

	// What they applied is there: the landscape's CloudProfile, and the
	// tenant's NamespacedCloudProfile, written as the project's
	// ServiceAccount, with its status.
	landscapeProfile := &unstructured.Unstructured{}
	landscapeProfile.SetAPIVersion(v1alpha1.GroupVersion.String())
	landscapeProfile.SetKind("CloudProfile")
	landscapeProfile.SetName("aws")
	tenantProfile := &unstructured.Unstructured{}
	tenantProfile.SetAPIVersion(v1alpha1.GroupVersion.String())
	tenantProfile.SetKind("NamespacedCloudProfile")
	tenantProfile.SetNamespace("project-a")
	tenantProfile.SetName("local-project-a")
	for _, obj := range []*unstructured.Unstructured{landscapeProfile, tenantProfile} {
		t.Cleanup(func() { _ = k8sClient.Delete(context.Background(), obj.DeepCopy()) })
		g.Eventually(func(g Gomega) {
			ready := readyOf(ctx, g, obj)
			g.Expect(ready.status).To(Equal("True"), "%s", ready)
		}).WithTimeout(samplesReconciledTimeout).Should(Succeed(), "%s %s/%s was synced and gets its status", obj.GetKind(), obj.GetNamespace(), obj.GetName())
	}
}

// readyCondition is an object's Ready condition, and whether its status
// observed the object's generation.
type readyCondition struct {
	kind, key            string
	status, reason, msg  string
	generation, observed int64
}

func (c readyCondition) String() string {
	return fmt.Sprintf("%s %s: Ready=%s reason %q (generation %d, observed %d): %s", c.kind, c.key, c.status, c.reason, c.generation, c.observed, c.msg)
}

// readyOf reads obj from the API server and returns its Ready condition; it
// fails g until the status observed the current generation.
func readyOf(ctx context.Context, g Gomega, obj *unstructured.Unstructured) readyCondition {
	live := &unstructured.Unstructured{}
	live.SetGroupVersionKind(obj.GroupVersionKind())
	g.Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(obj), live)).To(Succeed())
	c := readyCondition{kind: obj.GetKind(), key: client.ObjectKeyFromObject(obj).String(), generation: live.GetGeneration()}
	c.observed, _, _ = unstructured.NestedInt64(live.Object, "status", "observedGeneration")
	conditions, _, _ := unstructured.NestedSlice(live.Object, "status", "conditions")
	for _, condition := range conditions {
		m, _ := condition.(map[string]any)
		if m["type"] == v1alpha1.ReadyCondition {
			c.status, _ = m["status"].(string)
			c.reason, _ = m["reason"].(string)
			c.msg, _ = m["message"].(string)
		}
	}
	g.Expect(c.observed).To(Equal(c.generation), "%s", c)
	return c
}
