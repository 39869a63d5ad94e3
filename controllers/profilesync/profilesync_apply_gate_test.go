package profilesync

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	v1alpha1 "github.com/profilesync/profilesync/api/v1alpha1"
	"github.com/profilesync/profilesync/controllers/applygate"
)

// TestANewRevisionHoldsItsProfilesStatusWritesFromItsBuildUntilItsApplyEnds
// samples the apply gate where a sync reads the live profiles (after the
// build, before the plan) and where it applies: a new revision holds its
// profiles' status writes at both, an unchanged revision only while it
// applies, a revision that fails validation holds them while it
// builds and validates, and every sync lets them go when it returns.
func TestANewRevisionHoldsItsProfilesStatusWritesFromItsBuildUntilItsApplyEnds(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	server := startGitServer(t)
	_, err := server.CreateRepo("gated", singleProfileRepo("gated", "1.31.0"))
	g.Expect(err).NotTo(HaveOccurred())

	obj := &v1alpha1.ProfileSync{
		ObjectMeta: metav1.ObjectMeta{Name: "landscape", Namespace: "landscape"},
		Spec:       v1alpha1.ProfileSyncSpec{URL: server.RepoURL("gated"), Interval: metav1.Duration{Duration: time.Hour}},
	}
	self := client.ObjectKeyFromObject(obj)
	gate := &applygate.Gate{}
	var heldWhileValidating, heldWhileApplying []bool
	r, c := fakeSyncReconciler(t, obj, interceptor.Funcs{
		List: func(ctx context.Context, c client.WithWatch, list client.ObjectList, opts ...client.ListOption) error {
			if _, ok := list.(*v1alpha1.CloudProfileList); ok {
				heldWhileValidating = append(heldWhileValidating, gate.Holds(self))
			}
			return c.List(ctx, list, opts...)
		},
		Apply: func(ctx context.Context, c client.WithWatch, config runtime.ApplyConfiguration, opts ...client.ApplyOption) error {
			heldWhileApplying = append(heldWhileApplying, gate.Holds(self))
			return c.Apply(ctx, config, opts...)
		},
	})
	r.ApplyGate = gate
	request := ctrl.Request{NamespacedName: self}
	sync := func() {
		t.Helper()
		heldWhileValidating, heldWhileApplying = nil, nil
		_, _ = r.Reconcile(ctx, request)
		g.Expect(gate.Holds(self)).To(BeFalse(), "a sync that returned holds nothing")
	}

	// The first revision: held from its build through its apply.
	sync()
	g.Expect(heldWhileValidating).To(Equal([]bool{true}), "held while the new revision validates")
	g.Expect(heldWhileApplying).NotTo(BeEmpty())
	g.Expect(heldWhileApplying).To(HaveEach(BeTrue()), "held while it applies")

	// The same revision again: not held while it validates; held while it
	// applies, if it does (the fake client's objects differ from the API
	// server's, so it puts the profile back).
	sync()
	g.Expect(heldWhileValidating).To(Equal([]bool{false}), "an unchanged revision does not hold the status writes before it applies")
	g.Expect(heldWhileApplying).To(HaveEach(BeTrue()))

	// A revision that does not validate: held while it builds and
	// validates, let go when it is refused.
	_, err = server.Commit("gated", singleProfileRepo("gated", "v1.32"), "a version that is not MAJOR.MINOR.PATCH")
	g.Expect(err).NotTo(HaveOccurred())
	sync()
	g.Expect(heldWhileValidating).To(Equal([]bool{true}))
	g.Expect(heldWhileApplying).To(BeEmpty(), "nothing of a refused revision is applied")
	var current v1alpha1.ProfileSync
	g.Expect(c.Get(ctx, self, &current)).To(Succeed())
	g.Expect(current.Status.LastAttemptedRevision).NotTo(Equal(current.Status.LastAppliedRevision), "the revision was refused")
}
