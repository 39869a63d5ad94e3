package profilesync

import (
	"testing"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/record"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	v1alpha1 "github.com/profilesync/profilesync/api/v1alpha1"
	"github.com/profilesync/profilesync/internal/gitsource"
	"github.com/profilesync/profilesync/internal/sandbox"
)

// directSyncReconciler is a ProfileSync reconciler a test calls itself on
// the suite's API server and clock, with a fake event recorder.
func directSyncReconciler(t *testing.T) (*ProfileSyncReconciler, *record.FakeRecorder) {
	t.Helper()
	return syncReconcilerOn(t, k8sClient, clusterProfilesNamespace)
}

// fakeSyncReconciler is a ProfileSync reconciler a test calls itself on a
// fake client that holds obj, whose requests go through funcs, and on the
// suite's clock; the landscape's namespace is obj's.
func fakeSyncReconciler(t *testing.T, obj *v1alpha1.ProfileSync, funcs interceptor.Funcs) (*ProfileSyncReconciler, client.Client) {
	t.Helper()
	scheme := runtime.NewScheme()
	if err := v1alpha1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	c := fake.NewClientBuilder().WithScheme(scheme).WithObjects(obj).WithStatusSubresource(obj).WithInterceptorFuncs(funcs).Build()
	r, _ := syncReconcilerOn(t, c, obj.Namespace)
	return r, c
}

// syncReconcilerOn is a ProfileSync reconciler a test calls itself on c
// and the suite's clock, with a fake event recorder.
func syncReconcilerOn(t *testing.T, c client.Client, landscapeNamespace string) (*ProfileSyncReconciler, *record.FakeRecorder) {
	t.Helper()
	fetcher, err := gitsource.New(t.TempDir(), gitsource.FetcherOptions{})
	if err != nil {
		t.Fatal(err)
	}
	builds, err := sandbox.New(sandbox.Options{})
	if err != nil {
		t.Fatal(err)
	}
	recorder := record.NewFakeRecorder(100)
	return &ProfileSyncReconciler{Client: c, SecretReader: c, EventRecorder: recorder, Fetcher: fetcher,
		Builds: builds, Clock: testClock, ClusterProfilesNamespace: landscapeNamespace}, recorder
}
