package profilesync

import (
	"fmt"
	"testing"
	"time"

	"github.com/fluxcd/pkg/runtime/conditions"
	. "github.com/onsi/gomega"

	v1alpha1 "github.com/profilesync/profilesync/api/v1alpha1"
	"github.com/profilesync/profilesync/test/testenv"
)

// withMaxNodes is a CloudProfile's YAML with spec.limits.maxNodesTotal.
func withMaxNodes(doc string, maxNodes int) string {
	return doc + fmt.Sprintf("  limits:\n    maxNodesTotal: %d\n", maxNodes)
}

// TestARefusedRevisionEndsNoHold: the sync plans, then writes. A revision
// that Git caught up with a held object in, but that the update rules
// refuse (it lowers another profile's maxNodesTotal), writes nothing: not
// the end of the hold either, which stands, and says that it ends with the
// next revision applied. That revision releases it.
func TestARefusedRevisionEndsNoHold(t *testing.T) {
	g := NewWithT(t)
	ensureNamespace(t, clusterProfilesNamespace)
	server := startGitServer(t)
	held, other, repo := testenv.UniqueName("refused-held"), testenv.UniqueName("refused-other"), testenv.UniqueName("refused-hold")
	profiles := func(expiry string, maxNodes int) map[string]string {
		return map[string]string{"profiles.yaml": cloudProfileYAML(held, lifecycleYAML("1.31.0", expiry), "version: 1.32.0") + "---\n" +
			withMaxNodes(cloudProfileYAML(other, "version: 1.31.0"), maxNodes)}
	}
	first, err := server.CreateRepo(repo, profiles("2030-01-01T00:00:00Z", 100))
	g.Expect(err).NotTo(HaveOccurred())
	sync := createLandscapeSync(t, repo, server.RepoURL(repo), "", held, other)
	waitApplied(t, sync, first)
	until := time.Now().Add(2 * time.Hour).UTC().Truncate(time.Second)
	breakGlass(t, held, until.Format(time.RFC3339), "INC-12", expireIn2021)
	requestSync(t, sync, "held")
	g.Eventually(func(g Gomega) {
		holds := getProfileSync(g, sync).Status.Holds
		g.Expect(holds).To(HaveLen(1))
		g.Expect(holds[0].DriftedFields).NotTo(BeEmpty())
	}).WithTimeout(15 * time.Second).Should(Succeed())

	refused, err := server.Commit(repo, profiles("2021-01-01T00:00:00Z", 10), "expire 1.31.0 as the emergency did, and lower maxNodesTotal")
	g.Expect(err).NotTo(HaveOccurred())
	requestSync(t, sync, "refused")
	g.Eventually(func(g Gomega) {
		got := getProfileSync(g, sync)
		g.Expect(got.Status.LastHandledReconcileAt).To(Equal("refused"))
		g.Expect(got.Status.LastAttemptedRevision).To(Equal("main@sha1:" + refused))
		g.Expect(conditions.GetReason(got, v1alpha1.ReadyCondition)).To(Equal(v1alpha1.ValidationFailedReason))
		g.Expect(conditions.GetMessage(got, v1alpha1.ReadyCondition)).To(ContainSubstring("maxNodesTotal"))
	}).WithTimeout(15 * time.Second).Should(Succeed())
	cp := testenv.GetCloudProfile(g, k8sClient, held)
	g.Expect(cp.Annotations).To(HaveKeyWithValue(v1alpha1.HoldUntilAnnotation, until.Format(time.RFC3339)), "a refused revision ends no hold")
	g.Expect(cp.Annotations).To(HaveKeyWithValue(v1alpha1.HoldReasonAnnotation, "INC-12"))
	got := getProfileSync(g, sync)
	g.Expect(got.Status.Holds).To(HaveLen(1), "the hold stands")
	g.Expect(conditions.GetMessage(got, v1alpha1.HeldCondition)).To(ContainSubstring("Git has caught up: the hold is released when a revision is applied"))
	g.Expect(syncEvents(g, sync, v1alpha1.HoldReleasedReason)).To(BeEmpty())
	g.Expect(testenv.GetCloudProfile(g, k8sClient, other).Spec.Limits.MaxNodesTotal).To(HaveValue(Equal(int32(100))), "nothing written")
	g.Eventually(func(g Gomega) {
		g.Expect(heldUntilColumn(g, held)).To(Equal(until.Format(time.RFC3339)), "kubectl get shows the hold that stands")
	}).WithTimeout(10 * time.Second).Should(Succeed())

	fixed, err := server.Commit(repo, profiles("2021-01-01T00:00:00Z", 100), "keep maxNodesTotal")
	g.Expect(err).NotTo(HaveOccurred())
	requestSync(t, sync, "fixed")
	waitApplied(t, sync, fixed)
	g.Expect(getProfileSync(g, sync).Status.Holds).To(BeEmpty())
	g.Expect(testenv.GetCloudProfile(g, k8sClient, held).Annotations).NotTo(HaveKey(v1alpha1.HoldUntilAnnotation))
	g.Eventually(func(g Gomega) {
		g.Expect(heldUntilColumn(g, held)).To(BeEmpty())
	}).WithTimeout(10 * time.Second).Should(Succeed())
	g.Eventually(func(g Gomega) {
		g.Expect(syncEvents(g, sync, v1alpha1.HoldReleasedReason)).To(ConsistOf(ContainSubstring("CloudProfile/" + held + ": Git caught up")))
	}).WithTimeout(10 * time.Second).Should(Succeed())
}
