package webhooks

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	. "github.com/onsi/gomega"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	v1alpha1 "github.com/profilesync/profilesync/api/v1alpha1"
)

// syncFieldManager is profilesync.SyncFieldManager, the field manager of the
// sync's server-side applies (kept literal so that this package's tests do
// not build the controllers).
const syncFieldManager = "profilesync"

// operatorClient impersonates the operator's service account, bound to the
// manager-role that `make manifests` generates from the +kubebuilder:rbac
// markers (config/rbac/role.yaml), exactly as config/rbac binds it.
func operatorClient(t *testing.T) client.Client {
	t.Helper()
	g := NewWithT(t)
	content, err := os.ReadFile(filepath.Join("..", "config", "rbac", "role.yaml"))
	g.Expect(err).NotTo(HaveOccurred())
	var role rbacv1.ClusterRole
	g.Expect(yaml.UnmarshalStrict(content, &role)).To(Succeed())
	role.Name += "-" + uniqueName("test")
	g.Expect(adminClient.Create(context.Background(), &role)).To(Succeed())

	namespace := newNamespace(t)
	account := uniqueName("controller-manager")
	bindClusterWide(t, role.Name, rbacv1.Subject{Kind: rbacv1.ServiceAccountKind, Name: account, Namespace: namespace})
	return clientAs(t, "system:serviceaccount:"+namespace+":"+account,
		"system:serviceaccounts", "system:serviceaccounts:"+namespace)
}

// syncApply server-side applies ncp's spec the way the sync does: field
// manager profilesync, forced ownership, a dry run first.
func syncApply(ctx context.Context, c client.Client, ncp *v1alpha1.NamespacedCloudProfile) error {
	typed := &v1alpha1.NamespacedCloudProfile{Spec: ncp.Spec}
	typed.SetGroupVersionKind(v1alpha1.GroupVersion.WithKind(v1alpha1.NamespacedCloudProfileKind))
	content, err := runtime.DefaultUnstructuredConverter.ToUnstructured(typed)
	if err != nil {
		return err
	}
	delete(content, "status")
	desired := &unstructured.Unstructured{Object: content}
	unstructured.RemoveNestedField(desired.Object, "metadata")
	desired.SetName(ncp.Name)
	desired.SetNamespace(ncp.Namespace)
	for _, dryRun := range []bool{true, false} {
		opts := []client.ApplyOption{client.FieldOwner(syncFieldManager), client.ForceOwnership}
		if dryRun {
			opts = append(opts, client.DryRunAll)
		}
		if err := c.Apply(ctx, client.ApplyConfigurationFromUnstructured(desired.DeepCopy()), opts...); err != nil {
			return err
		}
	}
	return nil
}

func TestTheOperatorServiceAccountAppliesKubernetesAndMachineImageOverrides(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	namespace := newNamespace(t)
	parent := newParent(t)
	operator := operatorClient(t)

	ncp := namespacedProfile(namespace, parent.Name)
	ncp.Spec.Kubernetes = kubernetesOverride("2025-12-01T00:00:00Z")
	ncp.Spec.MachineImages = machineImagesOverride("2025-12-01T00:00:00Z")
	g.Expect(syncApply(ctx, operator, ncp)).To(Succeed())

	ncp.Spec.Kubernetes = kubernetesOverride("2026-01-01T00:00:00Z")
	g.Expect(syncApply(ctx, operator, ncp)).To(Succeed())

	applied := &v1alpha1.NamespacedCloudProfile{}
	g.Expect(adminClient.Get(ctx, client.ObjectKeyFromObject(ncp), applied)).To(Succeed())
	g.Expect(applied.Spec.Kubernetes).To(BeComparableTo(kubernetesOverride("2026-01-01T00:00:00Z")))
	g.Expect(applied.Spec.MachineImages).To(BeComparableTo(machineImagesOverride("2025-12-01T00:00:00Z")))
	var managers []string
	for _, entry := range applied.ManagedFields {
		managers = append(managers, entry.Manager)
	}
	g.Expect(managers).To(ConsistOf(syncFieldManager))
}

func TestTheOperatorServiceAccountIsStillHeldToTheMerge(t *testing.T) {
	g := NewWithT(t)
	namespace := newNamespace(t)
	operator := operatorClient(t)

	err := syncApply(context.Background(), operator, namespacedProfile(namespace, "no-such-parent"))
	g.Expect(err).To(MatchError(ContainSubstring(`spec.parent.name: Not found: "no-such-parent"`)))
}
