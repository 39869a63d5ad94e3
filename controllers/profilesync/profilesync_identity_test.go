package profilesync

import (
	"context"
	"errors"
	"fmt"
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/record"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	v1alpha1 "github.com/profilesync/profilesync/api/v1alpha1"
	"github.com/profilesync/profilesync/internal/render/profile"
)

// identityScheme has ServiceAccounts and the profiles.
func identityScheme(t *testing.T) *runtime.Scheme {
	t.Helper()
	scheme := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{corev1.AddToScheme, v1alpha1.AddToScheme} {
		if err := add(scheme); err != nil {
			t.Fatal(err)
		}
	}
	return scheme
}

func serviceAccount(namespace, name string) *corev1.ServiceAccount {
	return &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name}}
}

// countedClients are ServiceAccountClients over a fake API server holding
// accounts, whose clients are fakes; made records the REST config of every
// client made.
func countedClients(t *testing.T, accounts ...client.Object) (clients *ServiceAccountClients, made *[]*rest.Config, base *rest.Config) {
	t.Helper()
	scheme := identityScheme(t)
	reader := fake.NewClientBuilder().WithScheme(scheme).WithObjects(accounts...).Build()
	base = &rest.Config{Host: "https://api.example"}
	clients = NewServiceAccountClients(base, scheme, nil, reader)
	made = &[]*rest.Config{}
	clients.newClient = func(config *rest.Config, _ client.Options) (client.Client, error) {
		*made = append(*made, config)
		return fake.NewClientBuilder().WithScheme(scheme).Build(), nil
	}
	return clients, made, base
}

func TestServiceAccountClientsMakeOneImpersonatingClientPerServiceAccount(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	clients, made, base := countedClients(t, serviceAccount("team-a", "sync"), serviceAccount("team-b", "sync"))

	first, err := clients.ClientFor(ctx, client.ObjectKey{Namespace: "team-a", Name: "sync"})
	g.Expect(err).NotTo(HaveOccurred())
	again, err := clients.ClientFor(ctx, client.ObjectKey{Namespace: "team-a", Name: "sync"})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(again).To(BeIdenticalTo(first), "the client is kept, not rebuilt at every sync")
	other, err := clients.ClientFor(ctx, client.ObjectKey{Namespace: "team-b", Name: "sync"})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(other).NotTo(BeIdenticalTo(first), "the same name in another namespace is another ServiceAccount")

	g.Expect(*made).To(HaveLen(2))
	g.Expect((*made)[0].Impersonate).To(Equal(rest.ImpersonationConfig{UserName: "system:serviceaccount:team-a:sync"}))
	g.Expect((*made)[1].Impersonate).To(Equal(rest.ImpersonationConfig{UserName: "system:serviceaccount:team-b:sync"}))
	g.Expect((*made)[0].Host).To(Equal(base.Host), "a copy of the manager's config")
	g.Expect(base.Impersonate).To(BeZero(), "the manager's own config is left as it is")
}

func TestServiceAccountClientsKeepABoundedNumberOfClients(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	var accounts []client.Object
	for i := range maxServiceAccountClients + 1 {
		accounts = append(accounts, serviceAccount(fmt.Sprintf("team-%d", i), "sync"))
	}
	clients, made, _ := countedClients(t, accounts...)
	for _, account := range accounts {
		_, err := clients.ClientFor(ctx, client.ObjectKeyFromObject(account))
		g.Expect(err).NotTo(HaveOccurred())
	}
	g.Expect(*made).To(HaveLen(maxServiceAccountClients + 1))
	g.Expect(clients.clients.Len()).To(Equal(maxServiceAccountClients))

	_, err := clients.ClientFor(ctx, client.ObjectKeyFromObject(accounts[len(accounts)-1]))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(*made).To(HaveLen(maxServiceAccountClients+1), "the most recently used client is kept")
	_, err = clients.ClientFor(ctx, client.ObjectKeyFromObject(accounts[0]))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(*made).To(HaveLen(maxServiceAccountClients+2), "the least recently used one was dropped and is made again")
}

func TestServiceAccountClientsRefuseAServiceAccountThatDoesNotExist(t *testing.T) {
	g := NewWithT(t)
	clients, made, _ := countedClients(t)
	_, err := clients.ClientFor(context.Background(), client.ObjectKey{Namespace: "team-a", Name: "sync"})
	g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "%v", err)
	g.Expect(*made).To(BeEmpty())
}

func TestProfileSyncReconciler_writeServiceAccount(t *testing.T) {
	const operatorNamespace = "profilesync-system"
	tests := []struct {
		name             string
		clusterNamespace string
		defaultAccount   string
		namespace        string
		specAccount      string
		want, wantSource string
	}{
		{name: "a tenant without either writes as the operator", clusterNamespace: operatorNamespace, namespace: "team-a"},
		{name: "a tenant's own ServiceAccount", clusterNamespace: operatorNamespace, namespace: "team-a", specAccount: "sync",
			want: "sync", wantSource: "spec.serviceAccountName"},
		{name: "a tenant's own ServiceAccount wins over the default", clusterNamespace: operatorNamespace, defaultAccount: "default", namespace: "team-a", specAccount: "sync",
			want: "sync", wantSource: "spec.serviceAccountName"},
		{name: "a tenant without one writes as the default", clusterNamespace: operatorNamespace, defaultAccount: "default", namespace: "team-a",
			want: "default", wantSource: "the operator's --default-service-account"},
		{name: "a landscape ProfileSync without one writes as the operator, whatever the default", clusterNamespace: operatorNamespace, defaultAccount: "default", namespace: operatorNamespace},
		{name: "a landscape ProfileSync may name one", clusterNamespace: operatorNamespace, defaultAccount: "default", namespace: operatorNamespace, specAccount: "landscape",
			want: "landscape", wantSource: "spec.serviceAccountName"},
		{name: "without a landscape namespace every ProfileSync is a tenant", defaultAccount: "default", namespace: operatorNamespace,
			want: "default", wantSource: "the operator's --default-service-account"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			r := &ProfileSyncReconciler{ClusterProfilesNamespace: tt.clusterNamespace, DefaultServiceAccount: tt.defaultAccount}
			obj := stepSync(tt.namespace)
			obj.Spec.ServiceAccountName = tt.specAccount
			name, source := r.writeServiceAccount(obj)
			g.Expect(name).To(Equal(tt.want))
			g.Expect(source).To(Equal(tt.wantSource))
		})
	}
}

func TestProfileSyncReconciler_writerFor(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	clients, _, _ := countedClients(t, serviceAccount("team-a", "sync"))
	operator := fake.NewClientBuilder().WithScheme(identityScheme(t)).Build()
	r := &ProfileSyncReconciler{Client: operator, ClusterProfilesNamespace: "profilesync-system", DefaultServiceAccount: "default", ServiceAccounts: clients}

	landscape, err := r.writerFor(ctx, stepSync("profilesync-system"))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(landscape.serviceAccount).To(BeEmpty())
	g.Expect(landscape.Writer).To(BeIdenticalTo(operator))

	tenant := stepSync("team-a")
	tenant.Spec.ServiceAccountName = "sync"
	named, err := r.writerFor(ctx, tenant)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(named.serviceAccount).To(Equal("team-a/sync"))
	g.Expect(named.Writer).NotTo(BeIdenticalTo(operator))

	_, err = r.writerFor(ctx, stepSync("team-a"))
	var failed *syncError
	g.Expect(errors.As(err, &failed)).To(BeTrue(), "%v", err)
	g.Expect(failed.reason).To(Equal(v1alpha1.AccessDeniedReason))
	g.Expect(failed.stalled).To(BeTrue(), "waits for the ServiceAccount or a spec change, not retried hot")
	g.Expect(failed.Error()).To(Equal("ServiceAccount team-a/default (the operator's --default-service-account) not found: the sync writes as it, so nothing was written"))
}

// TestAnImpersonatedWriteTheAPIServerForbidsIsAccessDenied: the refusals of
// a ServiceAccount's writes name it; an admission webhook's refusal of a
// delete (a profile still in use) stays a retried failure.
func TestAnImpersonatedWriteTheAPIServerForbidsIsAccessDenied(t *testing.T) {
	resource := schema.GroupResource{Group: v1alpha1.GroupVersion.Group, Resource: "namespacedcloudprofiles"}
	rbacDenied := apierrors.NewForbidden(resource, "team", errors.New(`User "system:serviceaccount:team-a:sync" cannot patch resource "namespacedcloudprofiles" in API group "core.profilesync.io" in the namespace "team-a"`))
	g := NewWithT(t)
	ctx := context.Background()
	scheme := identityScheme(t)
	denying := fake.NewClientBuilder().WithScheme(scheme).WithInterceptorFuncs(interceptor.Funcs{
		Apply: func(context.Context, client.WithWatch, runtime.ApplyConfiguration, ...client.ApplyOption) error {
			return rbacDenied
		},
	}).Build()
	r := &ProfileSyncReconciler{Client: denying}
	item := planItem{object: gitObject(stepNamespaced("team-a", "team", "aws"))}
	desired, err := applyObject(item.object, ownerLabels(stepSync("team-a")))
	g.Expect(err).NotTo(HaveOccurred())

	err = r.write(ctx, writeIdentity{Writer: denying, serviceAccount: "team-a/sync"}, applyChange{item: item, desired: desired})
	var failed *syncError
	g.Expect(errors.As(err, &failed)).To(BeTrue())
	g.Expect(failed.reason).To(Equal(v1alpha1.AccessDeniedReason))
	g.Expect(failed.stalled).To(BeTrue())
	g.Expect(err.Error()).To(HavePrefix("profiles.yaml: NamespacedCloudProfile/team-a/team: ServiceAccount team-a/sync may not write it: "))
	g.Expect(err.Error()).To(ContainSubstring("cannot patch resource"))

	err = r.write(ctx, writeIdentity{Writer: denying}, applyChange{item: item, desired: desired})
	g.Expect(errors.As(err, &failed)).To(BeTrue())
	g.Expect(failed.reason).To(Equal(v1alpha1.ValidationFailedReason), "the operator's own refusals are reported as before")

	inUse := apierrors.NewForbidden(schema.GroupResource{Group: v1alpha1.GroupVersion.Group, Resource: "cloudprofiles"}, "aws",
		errors.New(`admission webhook "vcloudprofile.core.profilesync.io" denied the request: spec: Forbidden: in use`))
	for _, tt := range []struct {
		name       string
		err        error
		wantReason string
	}{
		{name: "RBAC", err: rbacDenied, wantReason: v1alpha1.AccessDeniedReason},
		{name: "admission webhook", err: inUse, wantReason: v1alpha1.ApplyFailedReason},
	} {
		t.Run("prune refused by "+tt.name, func(t *testing.T) {
			g := NewWithT(t)
			owner := stepSync("profilesync-system")
			owner.Spec.Prune = true
			owner.Spec.ServiceAccountName = "landscape"
			owner.Status.Inventory = &v1alpha1.ProfileSyncInventory{Entries: []v1alpha1.InventoryEntry{{Kind: v1alpha1.CloudProfileKind, Name: "aws"}}}
			cluster := fake.NewClientBuilder().WithScheme(scheme).WithObjects(owned(stepCloudProfile("aws"), "profilesync-system")).Build()
			clients, _, _ := countedClients(t, serviceAccount("profilesync-system", "landscape"))
			clients.newClient = func(*rest.Config, client.Options) (client.Client, error) {
				return fake.NewClientBuilder().WithScheme(scheme).WithInterceptorFuncs(interceptor.Funcs{
					Delete: func(context.Context, client.WithWatch, client.Object, ...client.DeleteOption) error { return tt.err },
				}).Build(), nil
			}
			r := &ProfileSyncReconciler{Client: cluster, EventRecorder: record.NewFakeRecorder(10), ServiceAccounts: clients}
			err := r.prune(ctx, owner, newApplyPlan(owner, []profile.Object{}, nil, liveOf(), nil))
			var failed *syncError
			g.Expect(errors.As(err, &failed)).To(BeTrue(), "%v", err)
			g.Expect(failed.reason).To(Equal(tt.wantReason))
			g.Expect(err.Error()).To(ContainSubstring("prune CloudProfile"))
			if tt.wantReason == v1alpha1.AccessDeniedReason {
				g.Expect(err.Error()).To(ContainSubstring("ServiceAccount profilesync-system/landscape may not delete it"))
			}
		})
	}
}
