// Package servingcert provisions and rotates the admission webhook's serving
// certificate inside the operator, so the webhook needs no cert-manager
// (--webhook-cert-provisioning=self). open-policy-agent/cert-controller, the
// rotator of Gatekeeper and Kueue, keeps a CA and a server certificate in a
// Secret of the operator's namespace, renews them before they expire and
// writes the CA into the caBundle of the ValidatingWebhookConfiguration; this
// package adds the copy of the Secret's certificate into the webhook server's
// certificate directory, so the server serves it without waiting for the
// kubelet to refresh a Secret volume, and tells the manager when both are done.
package servingcert

import (
	"context"
	"errors"
	"fmt"

	"github.com/go-logr/logr"
	"github.com/open-policy-agent/cert-controller/pkg/rotator"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/types"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"
)

// The rotator reads and updates the one Secret and watches the Secrets of
// the operator's namespace (its cache lists them all: a list can name one
// object only with a field selector, which cert-controller does not set); it
// patches the caBundle of the one webhook configuration and watches the
// webhook configurations. The Secret is shipped empty with config/default, so
// the operator creates none. kustomize renames the resourceNames and the
// namespace with config/default's prefix and namespace.
//
// +kubebuilder:rbac:groups="",namespace=system,resources=secrets,verbs=list;watch
// +kubebuilder:rbac:groups="",namespace=system,resources=secrets,resourceNames=webhook-server-cert,verbs=get;update
// +kubebuilder:rbac:groups=admissionregistration.k8s.io,resources=validatingwebhookconfigurations,verbs=list;watch
// +kubebuilder:rbac:groups=admissionregistration.k8s.io,resources=validatingwebhookconfigurations,resourceNames=validating-webhook-configuration,verbs=get;update

// CertFile and KeyFile are the names of the certificate and its key in the
// Secret and in the certificate directory (controller-runtime's defaults).
const (
	CertFile = "tls.crt"
	KeyFile  = "tls.key"
)

// Options say which objects hold the certificate and where it is served.
type Options struct {
	// Namespace holds the Secret and the webhook Service: the operator's own.
	Namespace string
	// SecretName is the Secret the certificate and its CA are kept in; it
	// must exist (config/default ships it empty).
	SecretName string
	// ServiceName is the webhook Service the API server calls: the
	// certificate is for SERVICE.NAMESPACE.svc and SERVICE.NAMESPACE.svc.cluster.local.
	ServiceName string
	// ExtraDNSNames are more names the certificate is for, such as the host
	// of a webhook URL (clientConfig.url) that does not go through the Service.
	ExtraDNSNames []string
	// WebhookConfigurationName is the ValidatingWebhookConfiguration whose
	// webhooks get the CA as their caBundle.
	WebhookConfigurationName string
	// CertDir is the webhook server's certificate directory, which gets the
	// Secret's tls.crt and tls.key.
	CertDir string
}

// DNSNames are the names the serving certificate is valid for: the
// Service's, then the extra ones.
func (o Options) DNSNames() []string {
	service := o.ServiceName + "." + o.Namespace + ".svc"
	return append([]string{service, service + ".cluster.local"}, o.ExtraDNSNames...)
}

func (o Options) validate() error {
	var problems []error
	for _, field := range []struct{ name, value string }{
		{"namespace", o.Namespace}, {"Secret name", o.SecretName}, {"Service name", o.ServiceName},
		{"webhook configuration name", o.WebhookConfigurationName}, {"certificate directory", o.CertDir},
	} {
		if field.value == "" {
			problems = append(problems, fmt.Errorf("the %s of the webhook's serving certificate is empty", field.name))
		}
	}
	return errors.Join(problems...)
}

// Provision adds the rotator and the copy into CertDir to the manager. The
// returned channel is closed once the certificate is in CertDir and its CA in
// the caBundle of every webhook of the configuration: start serving
// admission then, not before. Every replica runs both, leader or not, as
// every replica serves admission.
func Provision(mgr manager.Manager, opts Options) (<-chan struct{}, error) {
	if err := opts.validate(); err != nil {
		return nil, err
	}
	ready := make(chan struct{})
	names := opts.DNSNames()
	certRotator := &rotator.CertRotator{
		SecretKey:      types.NamespacedName{Namespace: opts.Namespace, Name: opts.SecretName},
		CertDir:        opts.CertDir,
		CAName:         "profilesync-webhook-ca",
		CAOrganization: "profilesync",
		DNSName:        names[0],
		ExtraDNSNames:  names[1:],
		IsReady:        ready,
		Webhooks:       []rotator.WebhookInfo{{Name: opts.WebhookConfigurationName, Type: rotator.Validating}},
		FieldOwner:     "profilesync-cert-rotator",
		// The caBundle is written only once the certificate is in CertDir.
		EnableReadinessCheck:  true,
		RequireLeaderElection: false,
		ControllerName:        "webhook-cert-rotator",
	}
	if err := rotator.AddRotator(mgr, certRotator); err != nil {
		return nil, fmt.Errorf("add the rotator of the webhook's serving certificate (Secret %s/%s): %w", opts.Namespace, opts.SecretName, err)
	}
	secretCache, err := cache.New(mgr.GetConfig(), cache.Options{
		Scheme: mgr.GetScheme(),
		Mapper: mgr.GetRESTMapper(),
		ByObject: map[client.Object]cache.ByObject{&corev1.Secret{}: {
			Namespaces: map[string]cache.Config{opts.Namespace: {}},
			Field:      fields.OneTermEqualSelector("metadata.name", opts.SecretName),
		}},
	})
	if err != nil {
		return nil, fmt.Errorf("create the cache of Secret %s/%s: %w", opts.Namespace, opts.SecretName, err)
	}
	copier := &certCopier{cache: secretCache, dir: opts.CertDir, log: mgr.GetLogger().WithName("webhook-cert")}
	if err := mgr.Add(copier); err != nil {
		return nil, fmt.Errorf("add the copy of Secret %s/%s to %s: %w", opts.Namespace, opts.SecretName, opts.CertDir, err)
	}
	return ready, nil
}

// certCopier writes the certificate of the watched Secret into the webhook
// server's certificate directory whenever it changes (the rotator's first
// certificate and every renewal); controller-runtime's certificate watcher
// reloads it from there.
type certCopier struct {
	cache cache.Cache
	dir   string
	log   logr.Logger
}

// NeedLeaderElection is false: every replica serves admission.
func (c *certCopier) NeedLeaderElection() bool { return false }

func (c *certCopier) Start(ctx context.Context) error {
	informer, err := c.cache.GetInformer(ctx, &corev1.Secret{})
	if err != nil {
		return fmt.Errorf("watch the webhook's certificate Secret: %w", err)
	}
	copyFrom := func(obj any) {
		secret, ok := obj.(*corev1.Secret)
		if !ok {
			return
		}
		written, err := WriteCertFiles(c.dir, secret.Data)
		if err != nil {
			c.log.Error(err, "copy the webhook's serving certificate", "secret", client.ObjectKeyFromObject(secret), "dir", c.dir)
			return
		}
		if written {
			c.log.Info("webhook serving certificate written", "secret", client.ObjectKeyFromObject(secret), "dir", c.dir)
		}
	}
	if _, err := informer.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		AddFunc:    copyFrom,
		UpdateFunc: func(_, obj any) { copyFrom(obj) },
	}); err != nil {
		return fmt.Errorf("watch the webhook's certificate Secret: %w", err)
	}
	return c.cache.Start(ctx)
}
