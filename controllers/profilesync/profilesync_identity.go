package profilesync

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	"k8s.io/utils/lru"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1alpha1 "github.com/profilesync/profilesync/api/v1alpha1"
)

// The sync writes as a ProfileSync's ServiceAccount by impersonating it, and
// makes sure first that the ServiceAccount exists: RBAC grants a
// ServiceAccount's permissions by name, so a deleted ServiceAccount whose
// RoleBindings stay could otherwise still write.
//
// +kubebuilder:rbac:groups="",resources=serviceaccounts,verbs=get;impersonate

// maxServiceAccountClients bounds the clients ServiceAccountClients keeps.
// A client is small (the manager's REST mapper and connections are shared);
// one for a ServiceAccount beyond the bound is rebuilt when it is next used.
const maxServiceAccountClients = 256

// ServiceAccountClients makes and keeps, per ServiceAccount, a client that
// impersonates it, so a ProfileSync's writes are judged by RBAC and the
// admission webhooks as that ServiceAccount's own. Flux's
// runtime/client.Impersonator does the same for a single reconcile, but
// builds a new client, REST mapper and status poller from the process's
// kubeconfig every time; a sync writes at every revision of every
// ProfileSync, so the clients here are made from the manager's REST config
// and kept.
type ServiceAccountClients struct {
	config  *rest.Config
	options client.Options
	// reader looks ServiceAccounts up on the API server: the cache would
	// watch every ServiceAccount of the cluster for a read made only before
	// a write.
	reader  client.Reader
	clients *lru.Cache
	// newClient is client.New; tests count the clients made.
	newClient func(*rest.Config, client.Options) (client.Client, error)
}

// NewServiceAccountClients returns clients that impersonate ServiceAccounts
// on copies of config (the manager's REST config), with scheme and mapper;
// reader looks ServiceAccounts up, uncached (the manager's API reader).
func NewServiceAccountClients(config *rest.Config, scheme *runtime.Scheme, mapper meta.RESTMapper, reader client.Reader) *ServiceAccountClients {
	return &ServiceAccountClients{
		config:    config,
		options:   client.Options{Scheme: scheme, Mapper: mapper},
		reader:    reader,
		clients:   lru.New(maxServiceAccountClients),
		newClient: client.New,
	}
}

// ClientFor returns the client that impersonates the ServiceAccount key, made
// once per ServiceAccount. It fails with the API server's NotFound when the
// ServiceAccount does not exist.
func (s *ServiceAccountClients) ClientFor(ctx context.Context, key client.ObjectKey) (client.Client, error) {
	if err := s.reader.Get(ctx, key, &corev1.ServiceAccount{}); err != nil {
		return nil, err
	}
	if c, ok := s.clients.Get(key); ok {
		return c.(client.Client), nil
	}
	config := rest.CopyConfig(s.config)
	// The API server adds the ServiceAccount's groups (system:serviceaccounts
	// and system:serviceaccounts:<namespace>) when none are given.
	config.Impersonate = rest.ImpersonationConfig{UserName: serviceAccountUsername(key)}
	c, err := s.newClient(config, s.options)
	if err != nil {
		return nil, fmt.Errorf("create client impersonating ServiceAccount %s: %w", key, err)
	}
	// Two syncs of one ServiceAccount at once may both make a client; either
	// does.
	s.clients.Add(key, c)
	return c, nil
}

// serviceAccountUsername is the username the API server gives the
// ServiceAccount key.
func serviceAccountUsername(key client.ObjectKey) string {
	return "system:serviceaccount:" + key.Namespace + ":" + key.Name
}

// writeIdentity is who a sync writes as: the operator, or a ServiceAccount it
// impersonates.
type writeIdentity struct {
	client.Writer
	// serviceAccount is the impersonated ServiceAccount ("namespace/name"),
	// empty for the operator.
	serviceAccount string
}

// writeServiceAccount is the ServiceAccount whose identity the writes of obj
// take, and where its name comes from, for messages: spec.serviceAccountName,
// else, outside the cluster-profiles namespace, the default ServiceAccount.
// Empty means the operator's own identity.
func (r *ProfileSyncReconciler) writeServiceAccount(obj *v1alpha1.ProfileSync) (name, source string) {
	if obj.Spec.ServiceAccountName != "" {
		return obj.Spec.ServiceAccountName, "spec.serviceAccountName"
	}
	if r.DefaultServiceAccount != "" && obj.Namespace != r.ClusterProfilesNamespace {
		return r.DefaultServiceAccount, "the operator's --default-service-account"
	}
	return "", ""
}

// writerFor is the identity obj's writes are made with. A ServiceAccount that
// does not exist stops the sync (AccessDenied) until it is created or the
// spec changes.
func (r *ProfileSyncReconciler) writerFor(ctx context.Context, obj *v1alpha1.ProfileSync) (writeIdentity, error) {
	name, source := r.writeServiceAccount(obj)
	if name == "" {
		return writeIdentity{Writer: r.Client}, nil
	}
	key := client.ObjectKey{Namespace: obj.Namespace, Name: name}
	if r.ServiceAccounts == nil {
		return writeIdentity{}, fmt.Errorf("write as ServiceAccount %s (%s): impersonation is not set up", key, source)
	}
	c, err := r.ServiceAccounts.ClientFor(ctx, key)
	switch {
	case apierrors.IsNotFound(err):
		return writeIdentity{}, accessDenied(fmt.Errorf("ServiceAccount %s (%s) not found: the sync writes as it, so nothing was written", key, source))
	case err != nil:
		return writeIdentity{}, applyFailed(fmt.Errorf("look up ServiceAccount %s (%s): %w", key, source, err))
	}
	return writeIdentity{Writer: c, serviceAccount: key.String()}, nil
}
