package syncplan_test

import (
	"testing"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1alpha1 "github.com/profilesync/profilesync/api/v1alpha1"
	"github.com/profilesync/profilesync/internal/render/profile"
	"github.com/profilesync/profilesync/internal/syncplan"
)

// atVersion sets a live object's resourceVersion.
func atVersion(rv string) func(metav1.Object) {
	return func(o metav1.Object) { o.SetResourceVersion(rv) }
}

// handEdited changes a live CloudProfile's spec as kubectl edit would.
func handEdited(o metav1.Object) {
	o.(*v1alpha1.CloudProfile).Spec.MachineTypes[0].CPU.Set(64)
}

// TestAPlanComparesOnlyWhatChangedSinceTheLastComparison: the plan remembers
// the objects it found up to date with the live resourceVersion and the
// digest it compared (Plan.UpToDate), and the next plan, given them
// (Input.UpToDate), does not compare those objects again while both stand.
// A hand edit changes the resourceVersion and is found; a change in Git
// changes the digest and is written; a live object without a
// resourceVersion is always compared.
func TestAPlanComparesOnlyWhatChangedSinceTheLastComparison(t *testing.T) {
	g := NewWithT(t)
	aws := cloudProfile("aws")
	payments := namespaced("team-a", "payments", "aws")
	first := input(t, landscape, []profile.Object{aws, payments},
		applied(t, aws, landscape, 3, atVersion("10")), applied(t, payments, landscape, 2, atVersion("20")))
	owns(&first, landscape, entry(aws), entry(payments))
	remembered, err := syncplan.Decide(first)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(remembered.Writes).To(BeEmpty())
	g.Expect(remembered.UpToDate).To(Equal(syncplan.UpToDate{
		entry(aws):      {ResourceVersion: "10", Digest: digestOf(t, aws)},
		entry(payments): {ResourceVersion: "20", Digest: digestOf(t, payments)},
	}))

	for _, tc := range []struct {
		name    string
		git     profile.Object
		live    metav1.Object
		written []string
		drifted []string
	}{{
		// Only a plan that skips the comparison misses this edit, which
		// the API server never makes without a new resourceVersion: the
		// case shows the comparison is not made.
		name: "an object at the resourceVersion and digest compared last is not compared again",
		git:  aws, live: applied(t, aws, landscape, 3, atVersion("10"), handEdited),
	}, {
		name: "a hand edit, at a new resourceVersion, is compared and put back",
		git:  aws, live: applied(t, aws, landscape, 4, atVersion("11"), handEdited),
		written: []string{aws.Ref()},
	}, {
		name: "a change in Git, a new digest, is written",
		git: cloudProfile("aws", func(spec *v1alpha1.CloudProfileSpec) {
			spec.MachineTypes = append(spec.MachineTypes, spec.MachineTypes[0])
			spec.MachineTypes[len(spec.MachineTypes)-1].Name = "pushed"
		}), live: applied(t, aws, landscape, 3, atVersion("10")),
		written: []string{aws.Ref()},
	}, {
		name: "a live object without a resourceVersion is compared",
		git:  aws, live: applied(t, aws, landscape, 3, atVersion(""), handEdited),
		written: []string{aws.Ref()},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			in := input(t, landscape, []profile.Object{tc.git, payments}, tc.live, applied(t, payments, landscape, 2, atVersion("20")))
			owns(&in, landscape, entry(aws), entry(payments))
			in.UpToDate = remembered.UpToDate
			p, err := syncplan.Decide(in)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(written(p)).To(Equal(tc.written))
			g.Expect(p.UpToDate).To(HaveKey(entry(payments)), "the unchanged namespaced profile stays remembered")
			if tc.written == nil {
				g.Expect(p.UpToDate).To(HaveKeyWithValue(entry(aws), syncplan.Compared{ResourceVersion: "10", Digest: digestOf(t, aws)}))
			} else {
				g.Expect(p.UpToDate).NotTo(HaveKey(entry(aws)), "what is written is compared again at the next plan")
			}
		})
	}
}
