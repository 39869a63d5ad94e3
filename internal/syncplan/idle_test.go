package syncplan_test

import (
	"testing"

	. "github.com/onsi/gomega"

	v1alpha1 "github.com/profilesync/profilesync/api/v1alpha1"
	"github.com/profilesync/profilesync/internal/render/profile"
	"github.com/profilesync/profilesync/internal/syncplan"
)

// TestAnUnchangedRevisionWithoutDriftPlansNothing: the plan of an idle
// interval (the revision applied last, every object on the cluster as it
// applied it, its digest unchanged, nothing drifted) writes nothing, claims
// nothing, releases and prunes nothing and reports nothing, for a
// CloudProfile and a NamespacedCloudProfile alike. The sync executes
// nothing of it, and writes no status.
func TestAnUnchangedRevisionWithoutDriftPlansNothing(t *testing.T) {
	g := NewWithT(t)
	aws := cloudProfile("aws")
	payments := namespaced("team-a", "payments", "aws")
	for _, mode := range []v1alpha1.DriftDetectionMode{v1alpha1.DriftDetectionCorrect, v1alpha1.DriftDetectionWarn} {
		in := input(t, landscape, []profile.Object{aws, payments}, applied(t, aws, landscape, 3), applied(t, payments, landscape, 2))
		in.DriftMode = mode
		owns(&in, landscape, entry(aws), entry(payments))
		p, err := syncplan.Decide(in)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(p.Refusal).NotTo(HaveOccurred(), "mode %s", mode)
		g.Expect(p.Writes).To(BeEmpty(), "mode %s", mode)
		g.Expect(p.Claim).To(BeNil())
		g.Expect(p.Releases).To(BeEmpty())
		g.Expect(p.Prunes).To(BeEmpty())
		g.Expect(p.Drifts).To(BeEmpty())
		g.Expect(p.Events).To(BeEmpty())
		g.Expect(p.Applied).To(BeEmpty())
		g.Expect(p.Outranked).To(BeEmpty())
		g.Expect(p.LostClaims).To(BeEmpty())
		g.Expect(p.DriftedCondition()).To(BeNil())
		g.Expect(p.HeldCondition()).To(BeNil())
		g.Expect(p.Inventory).To(Equal(in.Inventory), "the inventory stays as it is")
	}
}
