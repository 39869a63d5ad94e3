package cli

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"

	"github.com/go-logr/logr"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/profilesync/profilesync/internal/servingcert"
	"github.com/profilesync/profilesync/webhooks"
)

// The values of --webhook-cert-provisioning.
const (
	// certProvisioningSelf: the operator keeps the serving certificate in a
	// Secret, renews it and writes its CA into the webhook configuration.
	certProvisioningSelf = "self"
	// certProvisioningExternal: the certificate is in --webhook-cert-dir, put
	// there by someone else (cert-manager and a Secret volume).
	certProvisioningExternal = "external"
)

// certProvisioning is the flag --webhook-cert-provisioning: self or external.
type certProvisioning struct{ mode *string }

func (p certProvisioning) String() string {
	if p.mode == nil {
		return ""
	}
	return *p.mode
}

func (p certProvisioning) Set(value string) error {
	if value != certProvisioningSelf && value != certProvisioningExternal {
		return fmt.Errorf("%q is neither %q nor %q", value, certProvisioningSelf, certProvisioningExternal)
	}
	*p.mode = value
	return nil
}

func (p certProvisioning) Type() string { return certProvisioningSelf + "|" + certProvisioningExternal }

// operatorNamespace is the namespace the operator runs in, from the
// Deployment's RUNTIME_NAMESPACE (the pod's namespace), else
// profilesync-system: where its leader-election Lease, its webhook Service
// and its certificate Secret are.
func operatorNamespace() string {
	if ns := os.Getenv("RUNTIME_NAMESPACE"); ns != "" {
		return ns
	}
	return "profilesync-system"
}

// servingCertOptions are where --webhook-cert-provisioning=self keeps the
// certificate and whom it is for.
func servingCertOptions(flags *managerFlags) servingcert.Options {
	return servingcert.Options{
		Namespace:                operatorNamespace(),
		SecretName:               flags.webhookCertSecret,
		ServiceName:              flags.webhookService,
		ExtraDNSNames:            flags.webhookCertDNSNames,
		WebhookConfigurationName: flags.webhookConfiguration,
		CertDir:                  flags.webhookCertDir,
	}
}

// setupAdmission registers the admission webhooks with --enable-admission,
// and the readiness check that fails until they serve. With an external
// certificate they are registered now and served as the manager starts; with
// a certificate of the operator's own they are registered once it is in
// --webhook-cert-dir and its CA in the webhook configuration's caBundle, so
// a ready pod always answers admission with a certificate the API server
// trusts.
func setupAdmission(mgr ctrl.Manager, flags managerFlags) error {
	if !flags.enableAdmission {
		return nil
	}
	registered := make(chan struct{})
	register := func() error {
		if err := webhooks.Register(mgr, webhooks.Options{Clock: clock.RealClock{}, MaxHold: flags.maxHold}); err != nil {
			return err
		}
		close(registered)
		return nil
	}
	waiting := errors.New("the admission webhooks wait for their serving certificate")
	if flags.webhookCertProvisioning == certProvisioningSelf {
		opts := servingCertOptions(&flags)
		waiting = fmt.Errorf("the admission webhooks wait for their serving certificate (--webhook-cert-provisioning=self): "+
			"in Secret %s/%s (--webhook-cert-secret), in %s, and its CA in the caBundle of ValidatingWebhookConfiguration %s (--webhook-configuration)",
			opts.Namespace, opts.SecretName, opts.CertDir, opts.WebhookConfigurationName)
	}
	if err := mgr.AddReadyzCheck("admission-webhook", func(req *http.Request) error {
		select {
		case <-registered:
		default:
			return waiting
		}
		return mgr.GetWebhookServer().StartedChecker()(req)
	}); err != nil {
		return fmt.Errorf("add admission webhook readiness check: %w", err)
	}

	if flags.webhookCertProvisioning != certProvisioningSelf {
		return register()
	}
	certReady, err := servingcert.Provision(mgr, servingCertOptions(&flags))
	if err != nil {
		return fmt.Errorf("--webhook-cert-provisioning=self: %w", err)
	}
	return mgr.Add(afterCertificate{ready: certReady, register: register, waiting: waiting, log: mgr.GetLogger().WithName("admission")})
}

// afterCertificate registers the admission webhooks, and so starts the
// webhook server, once their serving certificate is ready. Every replica
// does, leader or not.
type afterCertificate struct {
	ready    <-chan struct{}
	register func() error
	// waiting says what it waits for, in the log (the readiness endpoint
	// withholds its checks' reasons).
	waiting error
	log     logr.Logger
}

func (afterCertificate) NeedLeaderElection() bool { return false }

func (a afterCertificate) Start(ctx context.Context) error {
	a.log.Info(a.waiting.Error())
	select {
	case <-ctx.Done():
		return nil
	case <-a.ready:
	}
	if err := a.register(); err != nil {
		return fmt.Errorf("register the admission webhooks: %w", err)
	}
	a.log.Info("the serving certificate is ready and its CA in the webhook configuration: serving admission")
	return nil
}
