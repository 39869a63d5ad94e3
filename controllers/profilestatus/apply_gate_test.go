package profilestatus

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/record"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	v1alpha1 "github.com/profilesync/profilesync/api/v1alpha1"
	"github.com/profilesync/profilesync/controllers/applygate"
)

// gatedReconcile runs the CloudProfile reconciler with the gate on a fake
// cluster holding profile, and returns the client and a channel that closes
// when the reconcile returns.
func gatedReconcile(t *testing.T, gate *applygate.Gate, profile *v1alpha1.CloudProfile) (client.Client, <-chan struct{}) {
	t.Helper()
	scheme := k8sClient.Scheme()
	c := fake.NewClientBuilder().WithScheme(scheme).WithObjects(profile).WithStatusSubresource(profile).Build()
	r := &CloudProfileReconciler{ProfileStatusController{Client: c, EventRecorder: record.NewFakeRecorder(100), Clock: testClock, ApplyGate: gate}}
	done := make(chan struct{})
	go func() {
		defer close(done)
		_, err := r.Reconcile(context.Background(), ctrl.Request{NamespacedName: client.ObjectKeyFromObject(profile)})
		if err != nil {
			t.Errorf("reconcile: %v", err)
		}
	}()
	return c, done
}

func ownedProfile(sync types.NamespacedName) *v1alpha1.CloudProfile {
	profile := gep32Profile()
	profile.Labels = map[string]string{v1alpha1.OwnerNamespaceLabel: sync.Namespace, v1alpha1.OwnerNameLabel: sync.Name}
	return profile
}

func statusWritten(g Gomega, c client.Client, name string) bool {
	var cp v1alpha1.CloudProfile
	g.Expect(c.Get(context.Background(), client.ObjectKey{Name: name}, &cp)).To(Succeed())
	return cp.Status.ObservedGeneration != 0 || len(cp.Status.Conditions) > 0
}

func TestStatusWritesWaitForTheApplyOfTheirProfileSync(t *testing.T) {
	g := NewWithT(t)
	sync := types.NamespacedName{Namespace: "profiles", Name: "landscape"}
	gate := &applygate.Gate{}
	end := gate.Begin(sync)
	profile := ownedProfile(sync)
	c, done := gatedReconcile(t, gate, profile)

	g.Consistently(done, 300*time.Millisecond).ShouldNot(BeClosed(), "the status write waits while the apply is under way")
	g.Expect(statusWritten(g, c, profile.Name)).To(BeFalse())

	// The apply changes the profile meanwhile: the status is of the applied spec.
	var applied v1alpha1.CloudProfile
	g.Expect(c.Get(context.Background(), client.ObjectKeyFromObject(profile), &applied)).To(Succeed())
	applied.Spec.Kubernetes.Versions = applied.Spec.Kubernetes.Versions[1:2] // 1.27.0 alone
	g.Expect(c.Update(context.Background(), &applied)).To(Succeed())
	end()

	g.Eventually(done, 5*time.Second).Should(BeClosed())
	var written v1alpha1.CloudProfile
	g.Expect(c.Get(context.Background(), client.ObjectKeyFromObject(profile), &written)).To(Succeed())
	g.Expect(written.Status.ObservedGeneration).To(Equal(written.Generation))
	g.Expect(written.Status.Kubernetes.Versions).To(HaveLen(1), "computed from the spec as applied")
}

func TestStatusWritesOfOtherProfilesDoNotWait(t *testing.T) {
	g := NewWithT(t)
	gate := &applygate.Gate{}
	defer gate.Begin(types.NamespacedName{Namespace: "profiles", Name: "landscape"})()

	for name, profile := range map[string]*v1alpha1.CloudProfile{
		"another ProfileSync's": ownedProfile(types.NamespacedName{Namespace: "profiles", Name: "other"}),
		"no ProfileSync's":      gep32Profile(),
	} {
		c, done := gatedReconcile(t, gate, profile)
		g.Eventually(done, 5*time.Second).Should(BeClosed(), name)
		g.Expect(statusWritten(g, c, profile.Name)).To(BeTrue(), name)
	}
	var nilGate *applygate.Gate
	profile := ownedProfile(types.NamespacedName{Namespace: "profiles", Name: "landscape"})
	c, done := gatedReconcile(t, nilGate, profile)
	g.Eventually(done, 5*time.Second).Should(BeClosed(), "a nil gate holds nothing")
	g.Expect(statusWritten(g, c, profile.Name)).To(BeTrue())
}

func TestAStuckApplyHoldsAStatusWriteOnlyForTheGatesWait(t *testing.T) {
	g := NewWithT(t)
	sync := types.NamespacedName{Namespace: "profiles", Name: "landscape"}
	gate := &applygate.Gate{Wait: 200 * time.Millisecond}
	defer gate.Begin(sync)()
	profile := ownedProfile(sync)
	start := time.Now()
	c, done := gatedReconcile(t, gate, profile)
	g.Eventually(done, 5*time.Second).Should(BeClosed())
	g.Expect(time.Since(start)).To(BeNumerically(">=", 200*time.Millisecond))
	g.Expect(statusWritten(g, c, profile.Name)).To(BeTrue())
}
