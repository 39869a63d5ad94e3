package deploy

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/profilesync/profilesync/test/testenv"
)

const (
	webhookConfigurationName = "profilesync-validating-webhook-configuration"
	webhookCertSecretName    = "profilesync-webhook-server-cert"
	// operatorReadyTimeout bounds the operator's start, its certificate
	// included; it is ready in a few seconds.
	operatorReadyTimeout = 90 * time.Second
)

// buildOperator builds the operator's binary from this checkout.
func buildOperator(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "profilesync")
	build := exec.Command("go", "build", "-o", bin, ".")
	build.Dir = filepath.Join("..", "..")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

// freeAddress is a loopback address with a port that was free a moment ago.
func freeAddress(t *testing.T) string {
	t.Helper()
	address, err := testenv.FreeLoopbackAddress()
	if err != nil {
		t.Fatal(err)
	}
	return address
}

// serviceAccountKubeconfig writes a kubeconfig for the test API server that
// acts as the operator's ServiceAccount (impersonated by the test's
// administrator), so the operator has exactly the RBAC config/default grants.
func serviceAccountKubeconfig(t *testing.T) string {
	t.Helper()
	config := clientcmdapi.NewConfig()
	config.Clusters["envtest"] = &clientcmdapi.Cluster{
		Server:                   restConfig.Host,
		CertificateAuthorityData: restConfig.CAData,
	}
	config.AuthInfos["operator"] = &clientcmdapi.AuthInfo{
		ClientCertificateData: restConfig.CertData,
		ClientKeyData:         restConfig.KeyData,
		Token:                 restConfig.BearerToken,
		Impersonate:           "system:serviceaccount:" + operatorNamespace + ":" + serviceAccountName,
		ImpersonateGroups:     []string{"system:serviceaccounts", "system:serviceaccounts:" + operatorNamespace, "system:authenticated"},
	}
	config.Contexts["operator"] = &clientcmdapi.Context{Cluster: "envtest", AuthInfo: "operator"}
	config.CurrentContext = "operator"
	path := filepath.Join(t.TempDir(), "kubeconfig")
	if err := clientcmd.WriteToFile(*config, path); err != nil {
		t.Fatalf("write kubeconfig: %v", err)
	}
	return path
}

// withLocalFlags returns the Deployment's arguments with the flags of local
// replaced (or added): addresses and directories that work outside a pod.
func withLocalFlags(args []string, local map[string]string) []string {
	var out []string
	replaced := map[string]bool{}
	for _, arg := range args {
		name, _, _ := strings.Cut(strings.TrimPrefix(arg, "--"), "=")
		if value, ok := local[name]; ok {
			out = append(out, "--"+name+"="+value)
			replaced[name] = true
			continue
		}
		out = append(out, arg)
	}
	for name, value := range local {
		if !replaced[name] {
			out = append(out, "--"+name+"="+value)
		}
	}
	return out
}

// containerEnv is the container's environment as the kubelet would give it:
// values, and the pod's namespace for a fieldRef to metadata.namespace.
func containerEnv(t *testing.T, deployment *appsv1.Deployment, container corev1.Container) []string {
	t.Helper()
	var env []string
	for _, e := range container.Env {
		switch {
		case e.ValueFrom == nil:
			env = append(env, e.Name+"="+e.Value)
		case e.ValueFrom.FieldRef != nil && e.ValueFrom.FieldRef.FieldPath == "metadata.namespace":
			env = append(env, e.Name+"="+deployment.Namespace)
		default:
			t.Fatalf("the test does not know how to set %s of the manager's container", e.Name)
		}
	}
	return env
}

// operatorProcess is the operator binary, running.
type operatorProcess struct {
	cmd *exec.Cmd
	log *lockedBuffer
	// exited is closed when the process has ended, with err its end.
	exited chan struct{}
	err    error
}

// lockedBuffer is the operator's output, written by exec's copying
// goroutine while the test reads it.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// logTail is the end of the operator's log, for failure messages.
func (p *operatorProcess) logTail() string {
	log := p.log.String()
	if len(log) > 6000 {
		log = "…" + log[len(log)-6000:]
	}
	return log
}

// startOperator runs bin with the Deployment's arguments, environment and
// memory limit (as --memory-budget: no cgroup here), adapted to a process
// on this machine: the API server through kubeconfig, every endpoint on
// 127.0.0.1, the webhook's certificate for localhost too (the test API
// server calls it by URL, not through the Service), and directories of its
// own. It is stopped (SIGTERM, as the kubelet does) when the test ends.
func startOperator(t *testing.T, bin string, deployment *appsv1.Deployment, local map[string]string) *operatorProcess {
	t.Helper()
	container := deployment.Spec.Template.Spec.Containers[0]
	args := withLocalFlags(container.Args, local)
	cmd := exec.Command(bin, args...)
	cmd.Env = append(containerEnv(t, deployment, container),
		"KUBECONFIG="+serviceAccountKubeconfig(t), "HOME="+t.TempDir(), "PATH="+os.Getenv("PATH"), "TMPDIR="+t.TempDir())
	p := &operatorProcess{cmd: cmd, log: &lockedBuffer{}, exited: make(chan struct{})}
	cmd.Stdout, cmd.Stderr = p.log, p.log
	if err := cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", bin, err)
	}
	t.Logf("started the operator: %s", strings.Join(args, " "))
	go func() {
		p.err = cmd.Wait()
		close(p.exited)
	}()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-p.exited:
		case <-time.After(30 * time.Second):
			_ = cmd.Process.Kill()
			<-p.exited
		}
		if t.Failed() {
			t.Logf("the operator's log:\n%s", p.logTail())
		}
	})
	return p
}

// readyz asks the operator's readiness endpoint; nil is ready.
func readyz(healthAddr string) error {
	probe := &http.Client{Timeout: 2 * time.Second}
	resp, err := probe.Get("http://" + healthAddr + "/readyz?verbose")
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("/readyz: %s: %s", resp.Status, body)
	}
	return nil
}

// servedCertificate is the certificate the webhook server at address
// presents for localhost, verified against caBundle.
func servedCertificate(address string, caBundle []byte) (*x509.Certificate, error) {
	roots := x509.NewCertPool()
	if !roots.AppendCertsFromPEM(caBundle) {
		return nil, fmt.Errorf("the caBundle holds no PEM certificate")
	}
	conn, err := tls.DialWithDialer(&net.Dialer{Timeout: 2 * time.Second}, "tcp", address,
		&tls.Config{ServerName: "localhost", RootCAs: roots, MinVersion: tls.VersionTLS12})
	if err != nil {
		return nil, err
	}
	defer conn.Close()
	return conn.ConnectionState().PeerCertificates[0], nil
}

// installDefault applies every object of config/default for real, as
// `kubectl apply --server-side -k config/default` does, except that each
// webhook of the ValidatingWebhookConfiguration calls webhookURL instead of
// the Service (the test API server cannot reach a Service). skip leaves
// objects out, by kind. Everything but the Namespace and the CRDs is deleted
// when the test ends, so the other tests see only their own objects.
func installDefault(t *testing.T, objects []*unstructured.Unstructured, webhookURL string, skip ...string) {
	t.Helper()
	g := NewWithT(t)
	ctx := context.Background()
	installPrerequisites(t, objects)
	for _, obj := range objects {
		if obj.GetKind() == "Namespace" || obj.GetKind() == "CustomResourceDefinition" || slices.Contains(skip, obj.GetKind()) {
			continue
		}
		if obj.GetKind() == "ValidatingWebhookConfiguration" {
			obj = webhooksByURL(t, obj, webhookURL)
		}
		g.Expect(apply(ctx, k8sClient, obj)).To(Succeed(), "apply %s %s", obj.GetKind(), obj.GetName())
		t.Cleanup(func() {
			_ = k8sClient.Delete(context.Background(), obj.DeepCopy())
		})
	}
}

// webhooksByURL is the rendered ValidatingWebhookConfiguration with every
// webhook's clientConfig.service replaced by the URL base + its path.
func webhooksByURL(t *testing.T, rendered *unstructured.Unstructured, base string) *unstructured.Unstructured {
	t.Helper()
	obj := rendered.DeepCopy()
	hooks, _, err := unstructured.NestedSlice(obj.Object, "webhooks")
	if err != nil || len(hooks) == 0 {
		t.Fatalf("the ValidatingWebhookConfiguration has no webhooks: %v", err)
	}
	for i, hook := range hooks {
		h := hook.(map[string]any)
		path, _, _ := unstructured.NestedString(h, "clientConfig", "service", "path")
		if path == "" {
			t.Fatalf("webhook %v calls no Service path", h["name"])
		}
		g := NewWithT(t)
		g.Expect(unstructured.SetNestedMap(h, map[string]any{"url": base + path}, "clientConfig")).To(Succeed())
		hooks[i] = h
	}
	if err := unstructured.SetNestedSlice(obj.Object, hooks, "webhooks"); err != nil {
		t.Fatal(err)
	}
	return obj
}

// caBundles are the caBundles of the configuration's webhooks, by name.
func caBundles(ctx context.Context, g Gomega) map[string][]byte {
	var configuration admissionregistrationv1.ValidatingWebhookConfiguration
	g.Expect(k8sClient.Get(ctx, client.ObjectKey{Name: webhookConfigurationName}, &configuration)).To(Succeed())
	bundles := map[string][]byte{}
	for _, hook := range configuration.Webhooks {
		bundles[hook.Name] = hook.ClientConfig.CABundle
	}
	return bundles
}

// TestTheShippedOperatorServesAdmissionWithItsOwnCertificate is the install
// of config/default on a cluster without cert-manager: every object applied
// by server-side apply, and the operator binary built from this checkout and
// started with the Deployment's own arguments (addresses and directories
// made local, see startOperator) as its ServiceAccount. It makes its serving
// certificate, keeps it in the shipped Secret, writes the CA into the
// webhook configuration and only then reports ready; the API server then
// reaches the webhook with that certificate and refuses a bad
// NamespacedCloudProfile through it. Applying config/default again keeps the
// certificate and the caBundle. Its subtest "samples" applies config/samples
// through this operator (theSamplesWorkAsShipped).
func TestTheShippedOperatorServesAdmissionWithItsOwnCertificate(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	objects := buildDefault(t)
	deployment := decode[appsv1.Deployment](t, findObject(t, objects, "Deployment", deploymentName))
	g.Expect(deployment.Spec.Template.Spec.Containers[0].Args).To(ContainElements(
		"--enable-admission", "--webhook-cert-provisioning=self"))
	memoryLimit := deployment.Spec.Template.Spec.Containers[0].Resources.Limits.Memory()
	g.Expect(memoryLimit.IsZero()).To(BeFalse())

	webhookAddr, healthAddr := freeAddress(t), freeAddress(t)
	_, webhookPort, _ := net.SplitHostPort(webhookAddr)
	installDefault(t, objects, "https://localhost:"+webhookPort)
	var shipped corev1.Secret
	g.Expect(k8sClient.Get(ctx, client.ObjectKey{Namespace: operatorNamespace, Name: webhookCertSecretName}, &shipped)).To(Succeed())
	g.Expect(shipped.Data).To(BeEmpty(), "config/default ships the Secret empty")
	g.Expect(caBundles(ctx, g)).To(HaveEach(BeEmpty()), "config/default ships no caBundle")

	certDir := filepath.Join(t.TempDir(), "serving-certs")
	operator := startOperator(t, buildOperator(t), deployment, map[string]string{
		"storage-path":           t.TempDir(),
		"metrics-addr":           freeAddress(t),
		"health-addr":            healthAddr,
		"webhook-bind-address":   "127.0.0.1",
		"webhook-port":           webhookPort,
		"webhook-cert-dir":       certDir,
		"webhook-cert-dns-names": "localhost",
		"memory-budget":          memoryLimit.String(),
	})

	// Ready, and at the first moment it is, the caBundle of every webhook
	// is the CA of the certificate it serves.
	started := time.Now()
	deadline := started.Add(operatorReadyTimeout)
	sawWaiting := false
	for {
		err := readyz(healthAddr)
		if err == nil {
			break
		}
		if strings.Contains(err.Error(), "[-]admission-webhook failed") {
			sawWaiting = true
		}
		select {
		case <-operator.exited:
			t.Fatalf("the operator exited before it was ready: %v\n%s", operator.err, operator.logTail())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("the operator is not ready after %s: %v\n%s", operatorReadyTimeout, readyz(healthAddr), operator.logTail())
		}
		time.Sleep(50 * time.Millisecond)
	}
	bundles := caBundles(ctx, g)
	t.Logf("ready %s after the start", time.Since(started).Round(time.Millisecond))
	g.Expect(sawWaiting).To(BeTrue(), "/readyz answered not ready while the admission webhook waited for its certificate")
	g.Expect(bundles).To(HaveLen(2))
	var secret corev1.Secret
	g.Expect(k8sClient.Get(ctx, client.ObjectKey{Namespace: operatorNamespace, Name: webhookCertSecretName}, &secret)).To(Succeed())
	g.Expect(secret.Data).To(HaveKey("tls.crt"))
	g.Expect(secret.Data).To(HaveKey("ca.crt"))
	for name, bundle := range bundles {
		g.Expect(bundle).To(Equal(secret.Data["ca.crt"]), "webhook %s trusts the CA in the Secret", name)
		served, err := servedCertificate(webhookAddr, bundle)
		g.Expect(err).NotTo(HaveOccurred(), "the webhook server's certificate verifies against the caBundle of %s for localhost", name)
		block, _ := pem.Decode(secret.Data["tls.crt"])
		g.Expect(block).NotTo(BeNil())
		g.Expect(served.Raw).To(Equal(block.Bytes), "the webhook serves the certificate kept in the Secret")
		g.Expect(served.DNSNames).To(ContainElements(
			"profilesync-webhook-service.profilesync-system.svc",
			"profilesync-webhook-service.profilesync-system.svc.cluster.local",
			"localhost"))
	}

	// The API server calls the webhook, which refuses a namespaced profile
	// whose parent does not exist.
	namespace := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "project-webhook"}}
	g.Expect(client.IgnoreAlreadyExists(k8sClient.Create(ctx, namespace))).To(Succeed())
	bad := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "core.profilesync.io/v1alpha1",
		"kind":       "NamespacedCloudProfile",
		"metadata":   map[string]any{"name": "team-a", "namespace": namespace.Name},
		"spec":       map[string]any{"parent": map[string]any{"kind": "CloudProfile", "name": "aws"}},
	}}
	err := k8sClient.Create(ctx, bad)
	g.Expect(err).To(MatchError(And(
		ContainSubstring(`admission webhook "vnamespacedcloudprofile.core.profilesync.io" denied the request`),
		ContainSubstring(`spec.parent.name: Not found: "aws": no CloudProfile of that name in the cluster`))))

	// A webhook configuration created after the operator (another order of
	// apply, or deleted and applied again) gets the CA at once.
	rendered := webhooksByURL(t, onlyObject(t, objects, "ValidatingWebhookConfiguration"), "https://localhost:"+webhookPort)
	g.Expect(k8sClient.Delete(ctx, rendered.DeepCopy())).To(Succeed())
	g.Expect(apply(ctx, k8sClient, rendered)).To(Succeed())
	g.Eventually(func(g Gomega) map[string][]byte { return caBundles(ctx, g) }).WithTimeout(30 * time.Second).Should(Equal(bundles))

	// Applying config/default again (make deploy: kubectl apply
	// --server-side, without --force-conflicts) keeps the certificate and
	// the caBundle, and conflicts with nothing the operator wrote: the
	// shipped objects name neither.
	reapply := func(obj *unstructured.Unstructured) error {
		return k8sClient.Apply(ctx, client.ApplyConfigurationFromUnstructured(obj.DeepCopy()), fieldOwner)
	}
	for _, obj := range objects {
		switch obj.GetKind() {
		case "Secret":
			g.Expect(reapply(obj)).To(Succeed())
		case "ValidatingWebhookConfiguration":
			g.Expect(reapply(webhooksByURL(t, obj, "https://localhost:"+webhookPort))).To(Succeed())
		}
	}
	var again corev1.Secret
	g.Expect(k8sClient.Get(ctx, client.ObjectKey{Namespace: operatorNamespace, Name: webhookCertSecretName}, &again)).To(Succeed())
	g.Expect(again.Data).To(Equal(secret.Data))
	g.Expect(caBundles(ctx, g)).To(Equal(bundles))
	g.Expect(readyz(healthAddr)).To(Succeed())

	// The samples, applied through this operator's admission, work as
	// shipped; starting the operator costs seconds, so they share it.
	t.Run("samples", theSamplesWorkAsShipped)

	// config/default grants the operator everything it did here.
	log := operator.log.String()
	g.Expect(log).To(ContainSubstring("the admission webhooks wait for their serving certificate (--webhook-cert-provisioning=self)"))
	g.Expect(log).To(ContainSubstring("serving admission"))
	g.Expect(strings.ToLower(log)).NotTo(ContainSubstring("forbidden"), "the operator was refused something:\n%s", log)
}
