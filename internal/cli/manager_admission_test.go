package cli

import (
	"testing"

	. "github.com/onsi/gomega"

	"github.com/profilesync/profilesync/internal/servingcert"
)

// TestTheOperatorsCertificateIsForItsWebhookService: with
// --webhook-cert-provisioning=self the certificate is kept in the Secret of
// config/default, in the operator's namespace (RUNTIME_NAMESPACE), for the
// webhook Service's DNS names and any more the flags add, and served from
// --webhook-cert-dir; each flag changes what it names.
func TestTheOperatorsCertificateIsForItsWebhookService(t *testing.T) {
	tests := []struct {
		name     string
		args     []string
		want     servingcert.Options
		dnsNames []string
	}{
		{
			name: "the defaults name config/default's objects",
			want: servingcert.Options{
				Namespace: "profilesync-system", SecretName: "profilesync-webhook-server-cert", ServiceName: "profilesync-webhook-service",
				WebhookConfigurationName: "profilesync-validating-webhook-configuration", CertDir: "/tmp/k8s-webhook-server/serving-certs",
			},
			dnsNames: []string{"profilesync-webhook-service.profilesync-system.svc", "profilesync-webhook-service.profilesync-system.svc.cluster.local"},
		},
		{
			name: "every flag names its own",
			args: []string{"--webhook-cert-secret=certs", "--webhook-service=hooks", "--webhook-configuration=checks",
				"--webhook-cert-dir=/run/certs", "--webhook-cert-dns-names=localhost,hooks.example.org"},
			want: servingcert.Options{
				Namespace: "profilesync-system", SecretName: "certs", ServiceName: "hooks", WebhookConfigurationName: "checks",
				CertDir: "/run/certs", ExtraDNSNames: []string{"localhost", "hooks.example.org"},
			},
			dnsNames: []string{"hooks.profilesync-system.svc", "hooks.profilesync-system.svc.cluster.local", "localhost", "hooks.example.org"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			t.Setenv("RUNTIME_NAMESPACE", "")
			flags := parseManagerFlags(t, "/", tt.args...)
			g.Expect(flags.webhookCertProvisioning).To(Equal(certProvisioningExternal), "the binary's default; config/default asks for self")
			options := servingCertOptions(flags)
			g.Expect(options).To(Equal(tt.want))
			g.Expect(options.DNSNames()).To(Equal(tt.dnsNames))
		})
	}
}

func TestTheOperatorsCertificateIsInItsOwnNamespace(t *testing.T) {
	g := NewWithT(t)
	t.Setenv("RUNTIME_NAMESPACE", "operators")
	options := servingCertOptions(parseManagerFlags(t, "/", "--webhook-cert-provisioning=self"))
	g.Expect(options.Namespace).To(Equal("operators"))
	g.Expect(options.DNSNames()[0]).To(Equal("profilesync-webhook-service.operators.svc"))
}
