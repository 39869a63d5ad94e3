package webhooks

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/zap/zapcore"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	clocktesting "k8s.io/utils/clock/testing"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/controller-runtime/pkg/webhook"

	v1alpha1 "github.com/profilesync/profilesync/api/v1alpha1"
)

// The suite runs one envtest control plane with the generated
// ValidatingWebhookConfiguration (config/webhook/manifests.yaml) installed and
// a manager serving both webhooks, as --enable-admission does. The admin
// client (system:masters) sets up fixtures; tests act as other users by
// impersonation, with RBAC they grant themselves.
var (
	testEnv     *envtest.Environment
	adminConfig *rest.Config
	adminClient client.Client
	testScheme  = runtime.NewScheme()
	// testNow is "now" for the CloudProfile update rule.
	testNow = time.Date(2025, 6, 1, 0, 0, 0, 0, time.UTC)
)

func TestMain(m *testing.M) {
	os.Exit(runSuite(m))
}

func runSuite(m *testing.M) int {
	if os.Getenv("KUBEBUILDER_ASSETS") == "" {
		fmt.Fprintln(os.Stderr, "KUBEBUILDER_ASSETS is not set: run the tests with 'make test', which builds kube-apiserver and etcd into bin/")
		return 1
	}
	ctrl.SetLogger(zap.New(zap.WriteTo(os.Stderr), zap.UseDevMode(false), zap.Level(zapcore.ErrorLevel)))
	for _, add := range []func(*runtime.Scheme) error{clientgoscheme.AddToScheme, v1alpha1.AddToScheme} {
		if err := add(testScheme); err != nil {
			fmt.Fprintf(os.Stderr, "build scheme: %v\n", err)
			return 1
		}
	}

	testEnv = &envtest.Environment{
		CRDDirectoryPaths:     []string{filepath.Join("..", "config", "crd", "bases")},
		ErrorIfCRDPathMissing: true,
		WebhookInstallOptions: envtest.WebhookInstallOptions{
			Paths: []string{filepath.Join("..", "config", "webhook", "manifests.yaml")},
		},
	}
	var err error
	adminConfig, err = testEnv.Start()
	if err != nil {
		fmt.Fprintf(os.Stderr, "start envtest: %v\n", err)
		return 1
	}
	defer func() {
		if err := testEnv.Stop(); err != nil {
			fmt.Fprintf(os.Stderr, "stop envtest: %v\n", err)
		}
	}()
	adminClient, err = client.New(adminConfig, client.Options{Scheme: testScheme})
	if err != nil {
		fmt.Fprintf(os.Stderr, "create client: %v\n", err)
		return 1
	}

	install := &testEnv.WebhookInstallOptions
	mgr, err := ctrl.NewManager(adminConfig, ctrl.Options{
		Scheme:  testScheme,
		Metrics: metricsserver.Options{BindAddress: "0"},
		WebhookServer: webhook.NewServer(webhook.Options{
			Host:    install.LocalServingHost,
			Port:    install.LocalServingPort,
			CertDir: install.LocalServingCertDir,
		}),
	})
	if err != nil {
		fmt.Fprintf(os.Stderr, "create manager: %v\n", err)
		return 1
	}
	if err := SetupWithManager(mgr, clocktesting.NewFakePassiveClock(testNow)); err != nil {
		fmt.Fprintf(os.Stderr, "set up webhooks: %v\n", err)
		return 1
	}
	ctx, cancel := context.WithCancel(context.Background())
	managerDone := make(chan error, 1)
	go func() { managerDone <- mgr.Start(ctx) }()
	if err := waitForWebhookServer(install); err != nil {
		fmt.Fprintf(os.Stderr, "webhook server: %v\n", err)
		cancel()
		return 1
	}

	code := m.Run()
	cancel()
	if err := <-managerDone; err != nil {
		fmt.Fprintf(os.Stderr, "manager: %v\n", err)
		return 1
	}
	return code
}

// waitForWebhookServer waits until the webhook server accepts TLS connections.
func waitForWebhookServer(install *envtest.WebhookInstallOptions) error {
	address := net.JoinHostPort(install.LocalServingHost, strconv.Itoa(install.LocalServingPort))
	deadline := time.Now().Add(30 * time.Second)
	for {
		conn, err := tls.DialWithDialer(&net.Dialer{Timeout: time.Second}, "tcp", address, &tls.Config{InsecureSkipVerify: true}) //nolint:gosec // only checks that it listens
		if err == nil {
			return conn.Close()
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("not serving on %s: %w", address, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

var nameCounter atomic.Int64

// uniqueName keeps tests independent on the shared API server.
func uniqueName(prefix string) string {
	return fmt.Sprintf("%s-%d", prefix, nameCounter.Add(1))
}

// newNamespace creates a namespace for one test.
func newNamespace(t *testing.T) string {
	t.Helper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: uniqueName("project")}}
	if err := adminClient.Create(context.Background(), ns); err != nil {
		t.Fatalf("create namespace: %v", err)
	}
	return ns.Name
}

// clientAs is a client that impersonates user with groups.
func clientAs(t *testing.T, user string, groups ...string) client.Client {
	t.Helper()
	config := rest.CopyConfig(adminConfig)
	config.Impersonate = rest.ImpersonationConfig{UserName: user, Groups: groups}
	c, err := client.New(config, client.Options{Scheme: testScheme})
	if err != nil {
		t.Fatalf("create client for %s: %v", user, err)
	}
	return c
}

// createClusterRoles creates the ClusterRoles of a YAML file of config/rbac,
// under their own names plus suffix (the tests share one API server), and
// returns the names they were created under, in file order.
func createClusterRoles(t *testing.T, file, suffix string) []string {
	t.Helper()
	f, err := os.Open(filepath.Join("..", "config", "rbac", file))
	if err != nil {
		t.Fatalf("open %s: %v", file, err)
	}
	defer f.Close()
	decoder := utilyaml.NewYAMLOrJSONDecoder(f, 4096)
	var names []string
	for {
		var role rbacv1.ClusterRole
		if err := decoder.Decode(&role); err != nil {
			if errors.Is(err, io.EOF) {
				break
			}
			t.Fatalf("decode %s: %v", file, err)
		}
		if role.Kind != "ClusterRole" {
			t.Fatalf("%s: want only ClusterRoles, found %s %s", file, role.Kind, role.Name)
		}
		role.Name += suffix
		if err := adminClient.Create(context.Background(), &role); err != nil {
			t.Fatalf("create ClusterRole %s: %v", role.Name, err)
		}
		names = append(names, role.Name)
	}
	return names
}

// bindInNamespace grants user the ClusterRole role in namespace.
func bindInNamespace(t *testing.T, namespace, role string, subject rbacv1.Subject) {
	t.Helper()
	binding := &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: uniqueName("binding"), Namespace: namespace},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role},
		Subjects:   []rbacv1.Subject{subject},
	}
	if err := adminClient.Create(context.Background(), binding); err != nil {
		t.Fatalf("bind %s in %s: %v", role, namespace, err)
	}
}

// bindClusterWide grants user the ClusterRole role in every namespace.
func bindClusterWide(t *testing.T, role string, subject rbacv1.Subject) {
	t.Helper()
	binding := &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: uniqueName("binding")},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role},
		Subjects:   []rbacv1.Subject{subject},
	}
	if err := adminClient.Create(context.Background(), binding); err != nil {
		t.Fatalf("bind %s: %v", role, err)
	}
}

func userSubject(name string) rbacv1.Subject {
	return rbacv1.Subject{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: name}
}

// at parses a date of the fixtures.
func at(date string) *metav1.Time {
	t, err := time.Parse(time.DateOnly, date)
	if err != nil {
		panic(err)
	}
	return &metav1.Time{Time: t}
}

// newParent creates a valid CloudProfile: Kubernetes 1.30.1 (supported,
// expiring on 2025-09-01) and 1.31.0, machine image gardenlinux 1592.1.0
// (expiring on 2025-10-01) and one machine type.
func newParent(t *testing.T) *v1alpha1.CloudProfile {
	t.Helper()
	major := v1alpha1.UpdateStrategyMajor
	cp := &v1alpha1.CloudProfile{
		ObjectMeta: metav1.ObjectMeta{Name: uniqueName("parent")},
		Spec: v1alpha1.CloudProfileSpec{
			Type: "local",
			Kubernetes: v1alpha1.KubernetesSettings{Versions: []v1alpha1.ExpirableVersion{
				{Version: "1.30.1", Lifecycle: []v1alpha1.LifecycleStage{
					{Classification: v1alpha1.ClassificationSupported},
					{Classification: v1alpha1.ClassificationExpired, StartTime: at("2025-09-01")},
				}},
				{Version: "1.31.0"},
			}},
			MachineImages: []v1alpha1.MachineImage{{
				Name:           "gardenlinux",
				UpdateStrategy: &major,
				Versions: []v1alpha1.MachineImageVersion{{ExpirableVersion: v1alpha1.ExpirableVersion{
					Version: "1592.1.0",
					Lifecycle: []v1alpha1.LifecycleStage{
						{Classification: v1alpha1.ClassificationSupported},
						{Classification: v1alpha1.ClassificationExpired, StartTime: at("2025-10-01")},
					},
				}}},
			}},
			MachineTypes: []v1alpha1.MachineType{machineType("m5.large", "2", "8Gi")},
		},
	}
	if err := adminClient.Create(context.Background(), cp); err != nil {
		t.Fatalf("create CloudProfile %s: %v", cp.Name, err)
	}
	return cp
}

func machineType(name, cpu, memory string) v1alpha1.MachineType {
	return v1alpha1.MachineType{Name: name, CPU: resource.MustParse(cpu), GPU: resource.MustParse("0"), Memory: resource.MustParse(memory)}
}

// kubernetesOverride moves the expiry of Kubernetes 1.30.1 to date.
func kubernetesOverride(date string) *v1alpha1.KubernetesSettings {
	return &v1alpha1.KubernetesSettings{Versions: []v1alpha1.ExpirableVersion{{
		Version:   "1.30.1",
		Lifecycle: []v1alpha1.LifecycleStage{{Classification: v1alpha1.ClassificationExpired, StartTime: at(date)}},
	}}}
}

// machineImagesOverride moves the expiry of gardenlinux 1592.1.0 to date.
func machineImagesOverride(date string) []v1alpha1.NamespacedMachineImage {
	return []v1alpha1.NamespacedMachineImage{{
		Name: "gardenlinux",
		Versions: []v1alpha1.MachineImageVersion{{ExpirableVersion: v1alpha1.ExpirableVersion{
			Version:   "1592.1.0",
			Lifecycle: []v1alpha1.LifecycleStage{{Classification: v1alpha1.ClassificationExpired, StartTime: at(date)}},
		}}},
	}}
}

// namespacedProfile is a NamespacedCloudProfile of parent in namespace that
// adds one machine type; tests add overrides.
func namespacedProfile(namespace, parent string) *v1alpha1.NamespacedCloudProfile {
	return &v1alpha1.NamespacedCloudProfile{
		ObjectMeta: metav1.ObjectMeta{Name: uniqueName("team"), Namespace: namespace},
		Spec: v1alpha1.NamespacedCloudProfileSpec{
			Parent:       v1alpha1.CloudProfileReference{Kind: v1alpha1.CloudProfileKind, Name: parent},
			MachineTypes: []v1alpha1.MachineType{machineType("m5.4xlarge", "16", "64Gi")},
		},
	}
}
