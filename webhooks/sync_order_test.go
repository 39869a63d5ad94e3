package webhooks

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/fluxcd/pkg/runtime/conditions"
	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/record"
	clocktesting "k8s.io/utils/clock/testing"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1alpha1 "github.com/profilesync/profilesync/api/v1alpha1"
	"github.com/profilesync/profilesync/controllers/profilesync"
	"github.com/profilesync/profilesync/internal/gitsource"
	"github.com/profilesync/profilesync/internal/sandbox"
	"github.com/profilesync/profilesync/test/gitserver"
)

// syncRevision is a repository with one CloudProfile and one namespaced
// profile of it; withOverride says whether the namespaced profile extends
// the parent's 1.30.1, and withOldVersion whether the parent has 1.30.1.
func syncRevision(parent, namespace, child string, withOldVersion, withOverride bool) map[string]string {
	oldVersion, override := "", ""
	if withOldVersion {
		oldVersion = `
    - version: 1.30.1
      lifecycle:
      - classification: supported
      - classification: expired
        startTime: "2025-09-01T00:00:00Z"`
	}
	if withOverride {
		override = `
  kubernetes:
    versions:
    - version: 1.30.1
      lifecycle:
      - classification: expired
        startTime: "2025-12-01T00:00:00Z"`
	}
	return map[string]string{"profiles.yaml": fmt.Sprintf(`apiVersion: core.profilesync.io/v1alpha1
kind: CloudProfile
metadata:
  name: %[1]s
spec:
  type: local
  machineImages:
  - name: ubuntu
    versions: [{version: 24.4.0}]
  machineTypes:
  - {name: m5.large, cpu: "2", gpu: "0", memory: 8Gi}
  regions:
  - name: eu-1
  kubernetes:
    versions:%[4]s
    - version: 1.31.0
---
apiVersion: core.profilesync.io/v1alpha1
kind: NamespacedCloudProfile
metadata:
  name: %[3]s
  namespace: %[2]s
spec:
  parent:
    kind: CloudProfile
    name: %[1]s%[5]s
  machineTypes:
  - name: m5.4xlarge
    cpu: "16"
    gpu: "0"
    memory: 64Gi
`, parent, namespace, child, oldVersion, override)}
}

// TestSyncAppliesRevisionsThatOnlyTheWholeSetMakesValid runs the sync as the
// operator's service account against the admission webhooks, for the two
// revisions whose objects are valid together but not in every order: a new
// parent with a namespaced profile extending it, and a parent dropping a
// version together with the override of it.
func TestSyncAppliesRevisionsThatOnlyTheWholeSetMakesValid(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	namespace := newNamespace(t)
	parent, child := uniqueName("parent"), uniqueName("team")
	t.Cleanup(func() {
		_ = adminClient.Delete(ctx, &v1alpha1.NamespacedCloudProfile{ObjectMeta: metav1.ObjectMeta{Name: child, Namespace: namespace}})
		_ = adminClient.Delete(ctx, &v1alpha1.CloudProfile{ObjectMeta: metav1.ObjectMeta{Name: parent}})
	})

	server, err := gitserver.New(t.TempDir(), gitserver.Options{})
	g.Expect(err).NotTo(HaveOccurred())
	t.Cleanup(func() { _ = server.Close() })
	_, err = server.CreateRepo("profiles", syncRevision(parent, namespace, child, true, true))
	g.Expect(err).NotTo(HaveOccurred())

	fetcher, err := gitsource.New(t.TempDir(), gitsource.FetcherOptions{})
	g.Expect(err).NotTo(HaveOccurred())
	builds, err := sandbox.New(sandbox.Options{})
	g.Expect(err).NotTo(HaveOccurred())
	operator := operatorClient(t)
	reconciler := &profilesync.ProfileSyncReconciler{
		Builds:                   builds,
		Client:                   operator,
		SecretReader:             operator,
		EventRecorder:            record.NewFakeRecorder(100),
		Fetcher:                  fetcher,
		Clock:                    clocktesting.NewFakePassiveClock(testNow),
		ClusterProfilesNamespace: namespace,
	}
	sync := &v1alpha1.ProfileSync{
		ObjectMeta: metav1.ObjectMeta{Name: "landscape", Namespace: namespace},
		Spec: v1alpha1.ProfileSyncSpec{
			URL:      server.RepoURL("profiles"),
			Interval: metav1.Duration{Duration: time.Hour},
			Prune:    true,
		},
	}
	g.Expect(adminClient.Create(ctx, sync)).To(Succeed())
	syncOnce := func(g Gomega) *v1alpha1.ProfileSync {
		_, err := reconciler.Reconcile(ctx, ctrl.Request{NamespacedName: client.ObjectKeyFromObject(sync)})
		g.Expect(err).NotTo(HaveOccurred())
		var got v1alpha1.ProfileSync
		g.Expect(adminClient.Get(ctx, client.ObjectKeyFromObject(sync), &got)).To(Succeed())
		g.Expect(conditions.IsReady(&got)).To(BeTrue(), conditions.GetMessage(&got, v1alpha1.ReadyCondition))
		return &got
	}

	syncOnce(g)
	var ncp v1alpha1.NamespacedCloudProfile
	g.Expect(adminClient.Get(ctx, client.ObjectKey{Namespace: namespace, Name: child}, &ncp)).To(Succeed())
	g.Expect(ncp.Spec.Kubernetes).NotTo(BeNil())

	_, err = server.Commit("profiles", syncRevision(parent, namespace, child, false, false), "drop 1.30.1 and its extension")
	g.Expect(err).NotTo(HaveOccurred())
	syncOnce(g)
	var cp v1alpha1.CloudProfile
	g.Expect(adminClient.Get(ctx, client.ObjectKey{Name: parent}, &cp)).To(Succeed())
	g.Expect(cp.Spec.Kubernetes.Versions).To(HaveLen(1))
	g.Expect(adminClient.Get(ctx, client.ObjectKey{Namespace: namespace, Name: child}, &ncp)).To(Succeed())
	g.Expect(ncp.Spec.Kubernetes).To(BeNil())
}
