package profilesync

import (
	"context"
	"testing"
	"time"

	"github.com/fluxcd/pkg/runtime/conditions"
	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1alpha1 "github.com/profilesync/profilesync/api/v1alpha1"
)

// TestARefusedRevisionReportsDecodingAndRuleProblemsInOneRound: a
// CloudProfile with an unknown field does not hide the rule another breaks,
// and its NamespacedCloudProfile names it as an invalid parent, not as a
// missing one, in the same message.
func TestARefusedRevisionReportsDecodingAndRuleProblemsInOneRound(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	for _, ns := range []string{clusterProfilesNamespace, "team-round"} {
		ensureNamespace(t, ns)
	}
	profileOf := func(name, extra string) string {
		return "apiVersion: core.profilesync.io/v1alpha1\nkind: CloudProfile\nmetadata:\n  name: " + name + "\nspec:\n  type: local\n" + extra +
			"  machineImages: [{name: local, versions: [{version: 1.0.0}]}]\n  machineTypes: [{name: local, cpu: \"1\", gpu: \"0\", memory: 1Gi}]\n" +
			"  regions: [{name: local}]\n  kubernetes:\n    versions:\n    - version: 1.31.0\n"
	}
	files := map[string]string{
		"profiles/typo.yaml":     profileOf("round-typo", "  machineTypez: []\n"),
		"profiles/expiring.yaml": profileOf("round-expiring", "") + "      expirationDate: \"2030-01-01T00:00:00Z\"\n",
		"profiles/team.yaml": "apiVersion: core.profilesync.io/v1alpha1\nkind: NamespacedCloudProfile\nmetadata:\n  name: round\n  namespace: team-round\n" +
			"spec:\n  parent: {kind: CloudProfile, name: round-typo}\n",
	}
	server := startGitServer(t)
	_, err := server.CreateRepo("one-round", files)
	g.Expect(err).NotTo(HaveOccurred())
	sync := &v1alpha1.ProfileSync{
		ObjectMeta: metav1.ObjectMeta{Name: "one-round", Namespace: clusterProfilesNamespace},
		Spec: v1alpha1.ProfileSyncSpec{
			URL:      server.RepoURL("one-round"),
			Ref:      &v1alpha1.GitReference{Branch: "main"},
			Path:     "profiles",
			Interval: metav1.Duration{Duration: time.Second},
		},
	}
	g.Expect(k8sClient.Create(ctx, sync)).To(Succeed())
	t.Cleanup(func() { _ = k8sClient.Delete(ctx, sync) })

	g.Eventually(func(g Gomega) {
		got := getProfileSync(g, sync)
		g.Expect(conditions.GetReason(got, v1alpha1.ReadyCondition)).To(Equal(v1alpha1.ValidationFailedReason))
		message := conditions.GetMessage(got, v1alpha1.ReadyCondition)
		g.Expect(message).To(ContainSubstring("CloudProfile/round-typo: spec.machineTypez: unknown field"))
		g.Expect(message).To(ContainSubstring("CloudProfile/round-expiring: spec.kubernetes.versions[0] (1.31.0).expirationDate: Forbidden"))
		g.Expect(message).To(ContainSubstring(`NamespacedCloudProfile/team-round/round: spec.parent.name: Invalid value: "round-typo": the parent CloudProfile is invalid`))
	}).WithTimeout(30 * time.Second).Should(Succeed())
}
