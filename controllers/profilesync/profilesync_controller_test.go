package profilesync

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/fluxcd/pkg/apis/meta"
	"github.com/fluxcd/pkg/runtime/conditions"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1alpha1 "github.com/profilesync/profilesync/api/v1alpha1"
	"github.com/profilesync/profilesync/controllers/statuspatch"
	"github.com/profilesync/profilesync/test/builders"
	"github.com/profilesync/profilesync/test/gitserver"
	"github.com/profilesync/profilesync/test/testenv"
)

// fixtureFiles reads the fixture profile repository as path → content.
func fixtureFiles(t *testing.T) map[string]string {
	t.Helper()
	files, err := gitserver.ReadTree(filepath.Join("..", "..", "test", "testdata", "profiles-repo"))
	if err != nil {
		t.Fatalf("read fixture repository: %v", err)
	}
	return files
}

func startGitServer(t *testing.T) *gitserver.Server {
	t.Helper()
	return gitserver.StartForTest(t, gitserver.Options{})
}

func ensureNamespace(t *testing.T, name string) {
	t.Helper()
	err := k8sClient.Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatalf("create namespace %s: %v", name, err)
	}
}

func getProfileSync(g Gomega, obj *v1alpha1.ProfileSync) *v1alpha1.ProfileSync {
	var got v1alpha1.ProfileSync
	g.Expect(k8sClient.Get(context.Background(), client.ObjectKeyFromObject(obj), &got)).To(Succeed())
	return &got
}

func replaceInFile(t *testing.T, files map[string]string, file, old, replacement string) map[string]string {
	t.Helper()
	if !strings.Contains(files[file], old) {
		t.Fatalf("%s does not contain %q", file, old)
	}
	return map[string]string{file: strings.Replace(files[file], old, replacement, 1)}
}

// TestProfileSyncEndToEnd walks a landscape through the life of a profile
// repository: first sync, a change, a broken commit, its fix, a removal with
// prune, a refused removal of a parent in use, and a hand edit.
func TestProfileSyncEndToEnd(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	for _, ns := range []string{clusterProfilesNamespace, "team-a", "team-b"} {
		ensureNamespace(t, ns)
	}
	server := startGitServer(t)
	files := fixtureFiles(t)
	firstCommit, err := server.CreateRepo("profiles", files)
	g.Expect(err).NotTo(HaveOccurred())

	sync := &v1alpha1.ProfileSync{
		ObjectMeta: metav1.ObjectMeta{Name: "dev", Namespace: clusterProfilesNamespace},
		Spec: v1alpha1.ProfileSyncSpec{
			URL:      server.RepoURL("profiles"),
			Ref:      &v1alpha1.GitReference{Branch: "main"},
			Path:     "overlays/dev",
			Interval: metav1.Duration{Duration: time.Second},
			Prune:    true,
		},
	}
	g.Expect(k8sClient.Create(ctx, sync)).To(Succeed())
	t.Cleanup(func() {
		_ = k8sClient.Delete(ctx, sync)
		for _, name := range []string{"aws", "openstack"} {
			_ = k8sClient.Delete(ctx, &v1alpha1.CloudProfile{ObjectMeta: metav1.ObjectMeta{Name: name}})
		}
	})
	aws := &v1alpha1.CloudProfile{ObjectMeta: metav1.ObjectMeta{Name: "aws"}}
	teamA := &v1alpha1.NamespacedCloudProfile{ObjectMeta: metav1.ObjectMeta{Name: "aws-team-a", Namespace: "team-a"}}
	teamB := &v1alpha1.NamespacedCloudProfile{ObjectMeta: metav1.ObjectMeta{Name: "openstack-team-b", Namespace: "team-b"}}

	t.Run("the first sync applies the overlay and the profiles get their status", func(t *testing.T) {
		g := NewWithT(t)
		g.Eventually(func(g Gomega) {
			got := getProfileSync(g, sync)
			g.Expect(conditions.IsReady(got)).To(BeTrue(), conditions.GetMessage(got, v1alpha1.ReadyCondition))
			g.Expect(got.Status.LastAppliedRevision).To(Equal("main@sha1:" + firstCommit))
			g.Expect(got.Status.LastAttemptedRevision).To(Equal(got.Status.LastAppliedRevision))
			g.Expect(got.Status.Inventory.Entries).To(ConsistOf(
				v1alpha1.InventoryEntry{Kind: "CloudProfile", Name: "aws"},
				v1alpha1.InventoryEntry{Kind: "CloudProfile", Name: "openstack"},
				v1alpha1.InventoryEntry{Kind: "NamespacedCloudProfile", Namespace: "team-a", Name: "aws-team-a"},
				v1alpha1.InventoryEntry{Kind: "NamespacedCloudProfile", Namespace: "team-b", Name: "openstack-team-b"},
			))
			cp := testenv.GetCloudProfile(g, k8sClient, "aws")
			g.Expect(conditions.IsReady(cp)).To(BeTrue())
			// The dev overlay adds 1.34.0.
			g.Expect(builders.KubernetesClassifications(cp.Status.ProfileVersionsStatus)).To(HaveKey("1.34.0"))
			g.Expect(cp.Labels).To(HaveKeyWithValue(v1alpha1.OwnerNameLabel, "dev"))
			g.Expect(conditions.IsReady(testenv.GetNamespacedCloudProfile(g, k8sClient, teamA))).To(BeTrue())
			g.Expect(conditions.IsReady(testenv.GetNamespacedCloudProfile(g, k8sClient, teamB))).To(BeTrue())
		}).WithTimeout(30 * time.Second).Should(Succeed())
	})

	t.Run("the sync owns spec and labels, the status controllers own status", func(t *testing.T) {
		g := NewWithT(t)
		cp := testenv.GetCloudProfile(g, k8sClient, "aws")
		var syncEntries int
		for _, entry := range cp.ManagedFields {
			fields := entry.FieldsV1.GetRawString()
			switch entry.Manager {
			case SyncFieldManager:
				syncEntries++
				g.Expect(entry.Operation).To(Equal(metav1.ManagedFieldsOperationApply))
				g.Expect(fields).To(ContainSubstring(`"f:spec"`))
				g.Expect(fields).NotTo(ContainSubstring(`"f:status"`))
			case statuspatch.FieldManager:
				g.Expect(fields).NotTo(ContainSubstring(`"f:spec"`))
			}
		}
		g.Expect(syncEntries).To(Equal(1))
	})

	t.Run("a pushed change of a start time is applied within an interval", func(t *testing.T) {
		g := NewWithT(t)
		change := replaceInFile(t, files, "base/cloudprofiles.yaml", `startTime: "2025-02-01T00:00:00Z"`, `startTime: "2025-02-15T00:00:00Z"`)
		commit, err := server.Commit("profiles", change, "postpone deprecation of 1.30.10")
		g.Expect(err).NotTo(HaveOccurred())
		files["base/cloudprofiles.yaml"] = change["base/cloudprofiles.yaml"]
		g.Eventually(func(g Gomega) {
			got := getProfileSync(g, sync)
			g.Expect(got.Status.LastAppliedRevision).To(Equal("main@sha1:" + commit))
			cp := testenv.GetCloudProfile(g, k8sClient, "aws")
			g.Expect(cp.Spec.Kubernetes.Versions[0].Lifecycle[1].StartTime.Time).To(BeTemporally("==", builders.Time("2025-02-15T00:00:00Z")))
		}).WithTimeout(15 * time.Second).Should(Succeed())
	})

	t.Run("an invalid lifecycle is refused, naming file and field, and the cluster keeps the previous revision", func(t *testing.T) {
		g := NewWithT(t)
		applied := getProfileSync(g, sync).Status.LastAppliedRevision
		before := testenv.GetCloudProfile(g, k8sClient, "aws").Spec
		// Deprecation after expiry: the start times decrease.
		broken := replaceInFile(t, files, "base/cloudprofiles.yaml", `startTime: "2025-02-15T00:00:00Z"`, `startTime: "2025-12-15T00:00:00Z"`)
		commit, err := server.Commit("profiles", broken, "break 1.30.10")
		g.Expect(err).NotTo(HaveOccurred())
		g.Eventually(func(g Gomega) {
			got := getProfileSync(g, sync)
			g.Expect(got.Status.LastAttemptedRevision).To(Equal("main@sha1:" + commit))
			g.Expect(conditions.IsFalse(got, v1alpha1.ReadyCondition)).To(BeTrue())
			g.Expect(conditions.GetReason(got, v1alpha1.ReadyCondition)).To(Equal(v1alpha1.ValidationFailedReason))
			g.Expect(conditions.IsTrue(got, v1alpha1.ValidationFailedCondition)).To(BeTrue())
			g.Expect(conditions.IsStalled(got)).To(BeTrue())
			msg := conditions.GetMessage(got, v1alpha1.ReadyCondition)
			g.Expect(msg).To(ContainSubstring("base/cloudprofiles.yaml"))
			g.Expect(msg).To(ContainSubstring("spec.kubernetes.versions[0] (1.30.10).lifecycle[2].startTime"))
			g.Expect(got.Status.LastAppliedRevision).To(Equal(applied))
		}).WithTimeout(15 * time.Second).Should(Succeed())
		g.Expect(testenv.GetCloudProfile(g, k8sClient, "aws").Spec).To(Equal(before))
	})

	t.Run("a fix recovers", func(t *testing.T) {
		g := NewWithT(t)
		commit, err := server.Commit("profiles", map[string]string{"base/cloudprofiles.yaml": files["base/cloudprofiles.yaml"]}, "fix 1.30.10")
		g.Expect(err).NotTo(HaveOccurred())
		g.Eventually(func(g Gomega) {
			got := getProfileSync(g, sync)
			g.Expect(conditions.IsReady(got)).To(BeTrue())
			g.Expect(got.Status.LastAppliedRevision).To(Equal("main@sha1:" + commit))
			g.Expect(conditions.Has(got, v1alpha1.StalledCondition)).To(BeFalse())
			g.Expect(conditions.Has(got, v1alpha1.ValidationFailedCondition)).To(BeFalse())
		}).WithTimeout(15 * time.Second).Should(Succeed())
	})

	t.Run("a hand edit of a spec field is put back", func(t *testing.T) {
		g := NewWithT(t)
		testenv.UpdateSpec(t, k8sClient, aws.DeepCopy(), func(cp *v1alpha1.CloudProfile) {
			cp.Spec.MachineTypes[0].Memory.Set(1 << 30)
		})
		g.Eventually(func(g Gomega) {
			cp := testenv.GetCloudProfile(g, k8sClient, "aws")
			g.Expect(cp.Spec.MachineTypes[0].Memory.String()).To(Equal("8Gi"))
		}).WithTimeout(15 * time.Second).Should(Succeed())
		g.Eventually(func(g Gomega) {
			drift, err := testenv.Events(context.Background(), k8sClient,
				testenv.EventQuery{Namespace: clusterProfilesNamespace, Reason: v1alpha1.DriftCorrectedReason})
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(testenv.Messages(drift)).To(ContainElement(ContainSubstring("CloudProfile/aws: spec.machineTypes[0] (m5.large).memory changed on the cluster")))
		}).WithTimeout(10 * time.Second).Should(Succeed())
	})

	t.Run("removing a parent that a namespaced profile still uses is refused, naming it", func(t *testing.T) {
		g := NewWithT(t)
		withoutAWS := strings.SplitN(files["base/cloudprofiles.yaml"], "\n---\n", 2)[1]
		commit, err := server.Commit("profiles", map[string]string{"base/cloudprofiles.yaml": withoutAWS}, "drop aws")
		g.Expect(err).NotTo(HaveOccurred())
		g.Eventually(func(g Gomega) {
			got := getProfileSync(g, sync)
			g.Expect(got.Status.LastAttemptedRevision).To(Equal("main@sha1:" + commit))
			g.Expect(conditions.GetReason(got, v1alpha1.ReadyCondition)).To(Equal(v1alpha1.ValidationFailedReason))
			g.Expect(conditions.GetMessage(got, v1alpha1.ReadyCondition)).To(ContainSubstring("NamespacedCloudProfile/team-a/aws-team-a"))
		}).WithTimeout(15 * time.Second).Should(Succeed())
		testenv.GetCloudProfile(g, k8sClient, "aws") // still there
	})

	t.Run("a profile removed from Git is pruned", func(t *testing.T) {
		g := NewWithT(t)
		withoutTeamB := strings.SplitN(files["base/namespacedcloudprofiles.yaml"], "\n---\n", 2)[0]
		commit, err := server.Commit("profiles", map[string]string{
			"base/cloudprofiles.yaml":           files["base/cloudprofiles.yaml"],
			"base/namespacedcloudprofiles.yaml": withoutTeamB,
		}, "team b moves away")
		g.Expect(err).NotTo(HaveOccurred())
		g.Eventually(func(g Gomega) {
			got := getProfileSync(g, sync)
			g.Expect(conditions.IsReady(got)).To(BeTrue())
			g.Expect(got.Status.LastAppliedRevision).To(Equal("main@sha1:" + commit))
			err := k8sClient.Get(context.Background(), client.ObjectKeyFromObject(teamB), &v1alpha1.NamespacedCloudProfile{})
			g.Expect(apierrors.IsNotFound(err)).To(BeTrue())
			g.Expect(got.Status.Inventory.Entries).To(HaveLen(3))
		}).WithTimeout(15 * time.Second).Should(Succeed())
	})
}

func TestTenantProfileSyncMayNotWriteCloudProfiles(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ensureNamespace(t, "team-c")
	server := startGitServer(t)
	_, err := server.CreateRepo("tenant", map[string]string{
		"profiles.yaml": `apiVersion: core.profilesync.io/v1alpha1
kind: CloudProfile
metadata:
  name: tenant-owned
spec:
  type: local
` + builders.RequiredListsYAML + `  kubernetes:
    versions:
    - version: 1.31.0
`,
	})
	g.Expect(err).NotTo(HaveOccurred())
	sync := &v1alpha1.ProfileSync{
		ObjectMeta: metav1.ObjectMeta{Name: "tenant", Namespace: "team-c"},
		Spec: v1alpha1.ProfileSyncSpec{
			URL:      server.RepoURL("tenant"),
			Interval: metav1.Duration{Duration: time.Minute},
		},
	}
	g.Expect(k8sClient.Create(ctx, sync)).To(Succeed())
	t.Cleanup(func() { _ = k8sClient.Delete(ctx, sync) })

	g.Eventually(func(g Gomega) {
		got := getProfileSync(g, sync)
		g.Expect(conditions.GetReason(got, v1alpha1.ReadyCondition)).To(Equal(v1alpha1.AccessDeniedReason))
		g.Expect(conditions.IsStalled(got)).To(BeTrue())
		g.Expect(conditions.GetMessage(got, v1alpha1.ReadyCondition)).To(ContainSubstring("CloudProfile/tenant-owned"))
	}).WithTimeout(15 * time.Second).Should(Succeed())
	err = k8sClient.Get(ctx, client.ObjectKey{Name: "tenant-owned"}, &v1alpha1.CloudProfile{})
	g.Expect(apierrors.IsNotFound(err)).To(BeTrue())
}

func singleProfileRepo(name, version string) map[string]string {
	return map[string]string{"profiles.yaml": `apiVersion: core.profilesync.io/v1alpha1
kind: CloudProfile
metadata:
  name: ` + name + `
spec:
  type: local
` + builders.RequiredListsYAML + `  kubernetes:
    versions:
    - version: ` + version + `
`}
}

// TestProfileSyncSuspendReconcileNowAndFetchFailures covers the controls a
// platform team uses around a sync: suspend, reconcile now, and what an
// unreachable repository does.
func TestProfileSyncSuspendReconcileNowAndFetchFailures(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ensureNamespace(t, clusterProfilesNamespace)
	server := startGitServer(t)
	profile := testenv.UniqueName("controls")
	_, err := server.CreateRepo("controls", singleProfileRepo(profile, "1.31.0"))
	g.Expect(err).NotTo(HaveOccurred())
	sync := &v1alpha1.ProfileSync{
		ObjectMeta: metav1.ObjectMeta{Name: testenv.UniqueName("controls"), Namespace: clusterProfilesNamespace},
		Spec: v1alpha1.ProfileSyncSpec{
			URL: server.RepoURL("controls"),
			// Long enough that only a request or a spec change syncs again.
			Interval: metav1.Duration{Duration: time.Hour},
		},
	}
	g.Expect(k8sClient.Create(ctx, sync)).To(Succeed())
	t.Cleanup(func() {
		_ = k8sClient.Delete(ctx, sync)
		_ = k8sClient.Delete(ctx, &v1alpha1.CloudProfile{ObjectMeta: metav1.ObjectMeta{Name: profile}})
	})
	g.Eventually(func(g Gomega) {
		g.Expect(conditions.IsReady(getProfileSync(g, sync))).To(BeTrue())
	}).WithTimeout(15 * time.Second).Should(Succeed())

	t.Run("a reconcile request syncs a new commit at once and is recorded", func(t *testing.T) {
		g := NewWithT(t)
		commit, err := server.Commit("controls", singleProfileRepo(profile, "1.31.1"), "patch release")
		g.Expect(err).NotTo(HaveOccurred())
		testenv.UpdateSpec(t, k8sClient, sync.DeepCopy(), func(ps *v1alpha1.ProfileSync) {
			ps.Annotations = map[string]string{"reconcile.fluxcd.io/requestedAt": "now-1"}
		})
		g.Eventually(func(g Gomega) {
			got := getProfileSync(g, sync)
			g.Expect(got.Status.LastHandledReconcileAt).To(Equal("now-1"))
			g.Expect(got.Status.LastAppliedRevision).To(Equal("main@sha1:" + commit))
		}).WithTimeout(15 * time.Second).Should(Succeed())
	})

	t.Run("a suspended sync applies nothing and says so", func(t *testing.T) {
		g := NewWithT(t)
		testenv.UpdateSpec(t, k8sClient, sync.DeepCopy(), func(ps *v1alpha1.ProfileSync) { ps.Spec.Suspend = true })
		g.Eventually(func(g Gomega) {
			g.Expect(conditions.GetReason(getProfileSync(g, sync), v1alpha1.ReadyCondition)).To(Equal(v1alpha1.SuspendedReason))
		}).WithTimeout(15 * time.Second).Should(Succeed())
		_, err := server.Commit("controls", singleProfileRepo(profile, "1.31.2"), "another patch release")
		g.Expect(err).NotTo(HaveOccurred())
		testenv.UpdateSpec(t, k8sClient, sync.DeepCopy(), func(ps *v1alpha1.ProfileSync) {
			ps.Annotations = map[string]string{"reconcile.fluxcd.io/requestedAt": "now-2"}
		})
		g.Eventually(func(g Gomega) {
			g.Expect(getProfileSync(g, sync).Status.LastHandledReconcileAt).To(Equal("now-2"))
		}).WithTimeout(15 * time.Second).Should(Succeed())
		g.Expect(testenv.GetCloudProfile(g, k8sClient, profile).Spec.Kubernetes.Versions[0].Version).To(Equal("1.31.1"))

		testenv.UpdateSpec(t, k8sClient, sync.DeepCopy(), func(ps *v1alpha1.ProfileSync) { ps.Spec.Suspend = false })
		g.Eventually(func(g Gomega) {
			g.Expect(testenv.GetCloudProfile(g, k8sClient, profile).Spec.Kubernetes.Versions[0].Version).To(Equal("1.31.2"))
			g.Expect(conditions.IsReady(getProfileSync(g, sync))).To(BeTrue())
		}).WithTimeout(15 * time.Second).Should(Succeed())
	})

	t.Run("an unreachable repository is FetchFailed, retried, and the profiles stay", func(t *testing.T) {
		g := NewWithT(t)
		applied := getProfileSync(g, sync).Status.LastAppliedRevision
		g.Expect(server.Close()).To(Succeed())
		testenv.UpdateSpec(t, k8sClient, sync.DeepCopy(), func(ps *v1alpha1.ProfileSync) {
			ps.Annotations = map[string]string{"reconcile.fluxcd.io/requestedAt": "now-3"}
		})
		g.Eventually(func(g Gomega) {
			got := getProfileSync(g, sync)
			g.Expect(conditions.GetReason(got, v1alpha1.ReadyCondition)).To(Equal(v1alpha1.FetchFailedReason))
			g.Expect(conditions.IsTrue(got, v1alpha1.FetchFailedCondition)).To(BeTrue())
			// Transient: retried with backoff, not stalled.
			g.Expect(conditions.Has(got, v1alpha1.StalledCondition)).To(BeFalse())
			g.Expect(conditions.GetMessage(got, v1alpha1.ReadyCondition)).To(ContainSubstring(server.RepoURL("controls")))
			g.Expect(got.Status.LastAppliedRevision).To(Equal(applied))
		}).WithTimeout(15 * time.Second).Should(Succeed())
		g.Expect(testenv.GetCloudProfile(g, k8sClient, profile).Spec.Kubernetes.Versions[0].Version).To(Equal("1.31.2"))
	})
}

func TestProfileSyncAuthenticatesWithItsSecret(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ensureNamespace(t, clusterProfilesNamespace)
	server, err := gitserver.New(t.TempDir(), gitserver.Options{Username: "landscape", Password: "s3cret-token"})
	g.Expect(err).NotTo(HaveOccurred())
	t.Cleanup(func() { _ = server.Close() })
	profile := testenv.UniqueName("private")
	_, err = server.CreateRepo("private", singleProfileRepo(profile, "1.31.0"))
	g.Expect(err).NotTo(HaveOccurred())

	secret := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: testenv.UniqueName("git"), Namespace: clusterProfilesNamespace},
		Data:       map[string][]byte{"username": []byte("landscape"), "password": []byte("wrong")},
	}
	g.Expect(k8sClient.Create(ctx, secret)).To(Succeed())
	sync := &v1alpha1.ProfileSync{
		ObjectMeta: metav1.ObjectMeta{Name: testenv.UniqueName("private"), Namespace: clusterProfilesNamespace},
		Spec: v1alpha1.ProfileSyncSpec{
			URL:       server.RepoURL("private"),
			Interval:  metav1.Duration{Duration: time.Hour},
			SecretRef: &meta.LocalObjectReference{Name: secret.Name},
		},
	}
	g.Expect(k8sClient.Create(ctx, sync)).To(Succeed())
	t.Cleanup(func() {
		_ = k8sClient.Delete(ctx, sync)
		_ = k8sClient.Delete(ctx, &v1alpha1.CloudProfile{ObjectMeta: metav1.ObjectMeta{Name: profile}})
	})

	g.Eventually(func(g Gomega) {
		got := getProfileSync(g, sync)
		g.Expect(conditions.GetReason(got, v1alpha1.ReadyCondition)).To(Equal(v1alpha1.FetchFailedReason))
		g.Expect(conditions.GetMessage(got, v1alpha1.ReadyCondition)).NotTo(ContainSubstring("wrong"))
	}).WithTimeout(15 * time.Second).Should(Succeed())

	secret.Data["password"] = []byte("s3cret-token")
	g.Expect(k8sClient.Update(ctx, secret)).To(Succeed())
	testenv.UpdateSpec(t, k8sClient, sync.DeepCopy(), func(ps *v1alpha1.ProfileSync) {
		ps.Annotations = map[string]string{"reconcile.fluxcd.io/requestedAt": "fixed-secret"}
	})
	g.Eventually(func(g Gomega) {
		g.Expect(conditions.IsReady(getProfileSync(g, sync))).To(BeTrue())
		testenv.GetCloudProfile(g, k8sClient, profile)
	}).WithTimeout(15 * time.Second).Should(Succeed())
}

// profileOfSize is a valid CloudProfile whose providerConfig carries a
// string of size bytes. Over profile.MaxStoredSize the sync refuses it before
// any write, as the API server would.
func profileOfSize(name string, size int) string {
	return "apiVersion: core.profilesync.io/v1alpha1\nkind: CloudProfile\nmetadata:\n  name: " + name +
		"\nspec:\n  type: local\n" + builders.RequiredListsYAML + "  kubernetes:\n    versions:\n    - version: 1.31.0\n  providerConfig:\n    blob: " +
		strings.Repeat("x", size) + "\n"
}

// tooLargeForTheAPIServer is over the API server's request limit (3 MiB)
// and under the build's maximum file size (4 MiB).
const tooLargeForTheAPIServer = 3<<20 + 256<<10

func TestARevisionTheAPIServerRefusesWritesNothing(t *testing.T) {
	ensureNamespace(t, clusterProfilesNamespace)
	for _, row := range []struct {
		name  string
		files func(good, bad string) map[string]string
	}{
		{
			name: "two objects, one refused: the dry run stops the revision before the other is written",
			files: func(good, bad string) map[string]string {
				return map[string]string{"a.yaml": profileOfSize(good, 10), "b.yaml": profileOfSize(bad, tooLargeForTheAPIServer)}
			},
		},
		{
			name: "a single refused object: no dry run needed, and nothing is written either",
			files: func(_, bad string) map[string]string {
				return map[string]string{"b.yaml": profileOfSize(bad, tooLargeForTheAPIServer)}
			},
		},
	} {
		t.Run(row.name, func(t *testing.T) {
			g := NewWithT(t)
			ctx := context.Background()
			server := startGitServer(t)
			good, bad := testenv.UniqueName("good"), testenv.UniqueName("bad")
			_, err := server.CreateRepo("refused", row.files(good, bad))
			g.Expect(err).NotTo(HaveOccurred())
			sync := &v1alpha1.ProfileSync{
				ObjectMeta: metav1.ObjectMeta{Name: testenv.UniqueName("refused"), Namespace: clusterProfilesNamespace},
				Spec:       v1alpha1.ProfileSyncSpec{URL: server.RepoURL("refused"), Interval: metav1.Duration{Duration: time.Hour}},
			}
			g.Expect(k8sClient.Create(ctx, sync)).To(Succeed())
			t.Cleanup(func() { _ = k8sClient.Delete(ctx, sync) })

			g.Eventually(func(g Gomega) {
				got := getProfileSync(g, sync)
				g.Expect(conditions.GetReason(got, v1alpha1.ReadyCondition)).To(Equal(v1alpha1.ValidationFailedReason))
				g.Expect(conditions.IsStalled(got)).To(BeTrue())
				g.Expect(conditions.GetMessage(got, v1alpha1.ReadyCondition)).To(ContainSubstring("b.yaml: CloudProfile/" + bad + ": Too long: "))
			}).WithTimeout(15 * time.Second).Should(Succeed())
			for _, name := range []string{good, bad} {
				err := k8sClient.Get(ctx, client.ObjectKey{Name: name}, &v1alpha1.CloudProfile{})
				g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), name)
			}
		})
	}
}
