package profilesync

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/fluxcd/pkg/runtime/conditions"
	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1alpha1 "github.com/profilesync/profilesync/api/v1alpha1"
	"github.com/profilesync/profilesync/test/testenv"
)

// TestGardenersExampleProfileIsSyncedAsWritten syncs Gardener's own example
// CloudProfile (example/30-cloudprofile.yaml, copied verbatim), whose
// expirationDate: 2022-11-30T01:02:03Z is written unquoted: kubectl sends that
// scalar as the same string, so the sync applies it instead of refusing it,
// and the stored time is the one written.
func TestGardenersExampleProfileIsSyncedAsWritten(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ensureNamespace(t, clusterProfilesNamespace)
	example, err := os.ReadFile(filepath.Join("..", "..", "test", "testdata", "gardener", "gardener-cloudprofile.yaml"))
	g.Expect(err).NotTo(HaveOccurred())
	server := startGitServer(t)
	commit, err := server.CreateRepo("gardener-example", map[string]string{"example/30-cloudprofile.yaml": string(example)})
	g.Expect(err).NotTo(HaveOccurred())

	sync := &v1alpha1.ProfileSync{
		ObjectMeta: metav1.ObjectMeta{Name: "gardener-example", Namespace: clusterProfilesNamespace},
		Spec: v1alpha1.ProfileSyncSpec{
			URL:      server.RepoURL("gardener-example"),
			Ref:      &v1alpha1.GitReference{Branch: "main"},
			Path:     "example",
			Interval: metav1.Duration{Duration: time.Second},
			Prune:    true,
		},
	}
	g.Expect(k8sClient.Create(ctx, sync)).To(Succeed())
	t.Cleanup(func() {
		_ = k8sClient.Delete(ctx, sync)
		_ = k8sClient.Delete(ctx, &v1alpha1.CloudProfile{ObjectMeta: metav1.ObjectMeta{Name: "cloudprofile1"}})
	})

	g.Eventually(func(g Gomega) {
		got := getProfileSync(g, sync)
		g.Expect(conditions.IsReady(got)).To(BeTrue(), conditions.GetMessage(got, v1alpha1.ReadyCondition))
		g.Expect(got.Status.LastAppliedRevision).To(Equal("main@sha1:" + commit))
		cp := testenv.GetCloudProfile(g, k8sClient, "cloudprofile1")
		var expiration *metav1.Time
		for _, v := range cp.Spec.Kubernetes.Versions {
			if v.Version == "1.27.8" {
				expiration = v.ExpirationDate
			}
		}
		g.Expect(expiration).NotTo(BeNil())
		g.Expect(expiration.UTC().Format(time.RFC3339)).To(Equal("2022-11-30T01:02:03Z"))
	}).WithTimeout(30 * time.Second).Should(Succeed())
}
