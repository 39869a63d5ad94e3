package profilesync

import (
	"context"
	"testing"
	"time"

	"github.com/fluxcd/pkg/runtime/conditions"
	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1alpha1 "github.com/profilesync/profilesync/api/v1alpha1"
	"github.com/profilesync/profilesync/test/testenv"
)

// TestAProfileGardenerAcceptsIsSyncedWhereTheAPIsDiffer syncs a profile
// Gardener accepts but a plain reading of our CRD would not: a provider type
// and an access restriction written twice (Gardener keeps those lists atomic,
// ours declares them a set and a list keyed by name, whose repeats the API
// server refuses), an empty provider type and restriction name (Gardener
// checks neither list) and an image listing 24.4 next to 24.4.0 (Gardener compares
// versions as written). The sync applies it, each repeat as one entry, and
// the empty entries as written, and both image versions as written.
func TestAProfileGardenerAcceptsIsSyncedWhereTheAPIsDiffer(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ensureNamespace(t, clusterProfilesNamespace)
	const profile = `apiVersion: core.gardener.cloud/v1beta1
kind: CloudProfile
metadata:
  name: gardener-agreement
spec:
  type: local
  kubernetes:
    versions:
    - version: 1.31.0
  machineImages:
  - name: ubuntu
    updateStrategy: major
    versions:
    - version: "24.4"
      architectures: [amd64]
      cri: [{name: containerd}]
    - version: 24.4.0
      architectures: [amd64]
      cri: [{name: containerd}]
  machineTypes:
  - {name: m5.large, cpu: "2", gpu: "0", memory: 8Gi, architecture: amd64}
  seedSelector:
    providerTypes: [local, aws, local, ""]
  regions:
  - name: eu-1
    accessRestrictions:
    - name: eu-access-only
    - name: eu-access-only
    - name: ""
`
	server := startGitServer(t)
	commit, err := server.CreateRepo("gardener-agreement", map[string]string{"profiles/cloudprofile.yaml": profile})
	g.Expect(err).NotTo(HaveOccurred())
	sync := &v1alpha1.ProfileSync{
		ObjectMeta: metav1.ObjectMeta{Name: "gardener-agreement", Namespace: clusterProfilesNamespace},
		Spec: v1alpha1.ProfileSyncSpec{
			URL:      server.RepoURL("gardener-agreement"),
			Ref:      &v1alpha1.GitReference{Branch: "main"},
			Path:     "profiles",
			Interval: metav1.Duration{Duration: time.Second},
			Prune:    true,
		},
	}
	g.Expect(k8sClient.Create(ctx, sync)).To(Succeed())
	t.Cleanup(func() {
		_ = k8sClient.Delete(ctx, sync)
		_ = k8sClient.Delete(ctx, &v1alpha1.CloudProfile{ObjectMeta: metav1.ObjectMeta{Name: "gardener-agreement"}})
	})

	g.Eventually(func(g Gomega) {
		got := getProfileSync(g, sync)
		g.Expect(conditions.IsReady(got)).To(BeTrue(), conditions.GetMessage(got, v1alpha1.ReadyCondition))
		g.Expect(got.Status.LastAppliedRevision).To(Equal("main@sha1:" + commit))
		cp := testenv.GetCloudProfile(g, k8sClient, "gardener-agreement")
		g.Expect(cp.Spec.SeedSelector.ProviderTypes).To(Equal([]string{"local", "aws", ""}))
		g.Expect(cp.Spec.Regions[0].AccessRestrictions).To(Equal([]v1alpha1.AccessRestriction{{Name: "eu-access-only"}, {Name: ""}}))
		var versions []string
		for _, v := range cp.Spec.MachineImages[0].Versions {
			versions = append(versions, v.Version)
		}
		g.Expect(versions).To(Equal([]string{"24.4", "24.4.0"}))
	}).WithTimeout(30 * time.Second).Should(Succeed())
}
