package webhooks

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/rest"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	v1alpha1 "github.com/profilesync/profilesync/api/v1alpha1"
	"github.com/profilesync/profilesync/test/builders"
	"github.com/profilesync/profilesync/test/testenv"
)

// The suite runs one envtest control plane with the generated
// ValidatingWebhookConfiguration (config/webhook/manifests.yaml) installed and
// a manager serving both webhooks, as --enable-admission does. The admin
// client (system:masters) sets up fixtures; tests act as other users by
// impersonation, with RBAC they grant themselves.
var (
	adminConfig *rest.Config
	adminClient client.Client
	testScheme  *runtime.Scheme
	// testNow is "now" for the CloudProfile update rule.
	testNow = time.Date(2025, 6, 1, 0, 0, 0, 0, time.UTC)
	// webhookClock is the webhooks' clock, at testNow; a test that moves it
	// (to let a hold expire) puts it back when it ends.
	webhookClock = clocktesting.NewFakeClock(testNow)
)

func TestMain(m *testing.M) {
	os.Exit(testenv.Run(m, func(env *testenv.Env) {
		adminConfig, adminClient, testScheme = env.Config, env.Client, env.Scheme
	}, testenv.WithErrorLog(), testenv.WithWebhooks(), testenv.WithManager(testenv.ManagerOptions{
		Setup: func(_ context.Context, mgr manager.Manager, _ *testenv.Env) error {
			return SetupWithManager(mgr, Options{Clock: webhookClock, MaxHold: testMaxHold})
		},
	})))
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

// newParent creates a valid CloudProfile: Kubernetes 1.30.1 (supported,
// expiring on 2025-09-01) and 1.31.0, machine image gardenlinux 1592.1.0
// (expiring on 2025-10-01), one machine type and one region.
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
					{Classification: v1alpha1.ClassificationExpired, StartTime: builders.Date("2025-09-01T00:00:00Z")},
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
						{Classification: v1alpha1.ClassificationExpired, StartTime: builders.Date("2025-10-01T00:00:00Z")},
					},
				}}},
			}},
			MachineTypes: []v1alpha1.MachineType{machineType("m5.large", "2", "8Gi")},
			Regions:      []v1alpha1.Region{{Name: "eu-1"}},
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

// kubernetesOverride moves the expiry of Kubernetes 1.30.1 to expires, an
// RFC 3339 time.
func kubernetesOverride(expires string) *v1alpha1.KubernetesSettings {
	return &v1alpha1.KubernetesSettings{Versions: []v1alpha1.ExpirableVersion{{
		Version:   "1.30.1",
		Lifecycle: []v1alpha1.LifecycleStage{{Classification: v1alpha1.ClassificationExpired, StartTime: builders.Date(expires)}},
	}}}
}

// machineImagesOverride moves the expiry of gardenlinux 1592.1.0 to
// expires, an RFC 3339 time.
func machineImagesOverride(expires string) []v1alpha1.NamespacedMachineImage {
	return []v1alpha1.NamespacedMachineImage{{
		Name: "gardenlinux",
		Versions: []v1alpha1.MachineImageVersion{{ExpirableVersion: v1alpha1.ExpirableVersion{
			Version:   "1592.1.0",
			Lifecycle: []v1alpha1.LifecycleStage{{Classification: v1alpha1.ClassificationExpired, StartTime: builders.Date(expires)}},
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
