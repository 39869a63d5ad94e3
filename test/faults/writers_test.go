package faults

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1alpha1 "github.com/profilesync/profilesync/api/v1alpha1"
	"github.com/profilesync/profilesync/test/testenv"
)

// applyAs server-side applies fields of the CloudProfile name as manager.
func (l *landscape) applyAs(manager, name string, spec map[string]any, force bool) error {
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": v1alpha1.GroupVersion.String(),
		"kind":       v1alpha1.CloudProfileKind,
		"metadata":   map[string]any{"name": name},
		"spec":       spec,
	}}
	opts := []client.ApplyOption{client.FieldOwner(manager)}
	if force {
		opts = append(opts, client.ForceOwnership)
	}
	return l.env.Client.Apply(context.Background(), client.ApplyConfigurationFromUnstructured(u), opts...)
}

func (l *landscape) cloudProfile(g Gomega, name string) *v1alpha1.CloudProfile {
	var cp v1alpha1.CloudProfile
	g.Expect(l.env.Client.Get(context.Background(), client.ObjectKey{Name: name}, &cp)).To(Succeed())
	return &cp
}

// driftEvents are the messages of the DriftCorrected events so far.
func (l *landscape) driftEvents(g Gomega) []string {
	events, err := testenv.Events(context.Background(), l.env.Client,
		testenv.EventQuery{Namespace: landscapeNamespace, Reason: v1alpha1.DriftCorrectedReason})
	g.Expect(err).NotTo(HaveOccurred())
	return testenv.Messages(events)
}

// TestCompetingWritersGitOwnsWhatItSets: colleagues change profiles by
// hand. What Git sets comes back at the next sync, and the event names the
// field; what Git does not set is theirs and stays; a deleted profile is
// recreated.
func TestCompetingWritersGitOwnsWhatItSets(t *testing.T) {
	ctx := context.Background()
	l := newLandscape(t)
	first := l.commit(profilesRepo([]string{"1.33.0"}, []string{"aws"}, nil))
	l.createSync(time.Hour)
	writes := &faultTransport{}
	l.startManager(managerConfig{faults: writes})
	l.waitApplied(first, 30*time.Second)
	const memoryPath = "spec.machineTypes[0] (m5.large).memory"
	memory := func(g Gomega) string { return l.cloudProfile(g, "aws").Spec.MachineTypes[0].Memory.String() }
	handEdit := map[string]any{"machineTypes": []any{map[string]any{"name": "m5.large", "memory": "16Gi"}}}

	t.Run("another field manager's apply without --force-conflicts is refused", func(t *testing.T) {
		g := NewWithT(t)
		err := l.applyAs("alice", "aws", handEdit, false)
		g.Expect(apierrors.IsConflict(err)).To(BeTrue(), "a conflict naming profilesync, got %v", err)
		g.Expect(err.Error()).To(ContainSubstring(`conflict with "profilesync"`))
		g.Expect(memory(g)).To(Equal("8Gi"))
	})

	t.Run("with --force-conflicts it lands, and the next sync takes it back", func(t *testing.T) {
		g := NewWithT(t)
		g.Expect(l.applyAs("alice", "aws", handEdit, true)).To(Succeed())
		g.Expect(memory(g)).To(Equal("16Gi"))
		l.waitSynced("after-force")
		g.Expect(memory(g)).To(Equal("8Gi"))
		g.Eventually(l.driftEvents).Should(ContainElement(ContainSubstring("CloudProfile/aws: " + memoryPath + " changed on the cluster")))
	})

	t.Run("kubectl edit of a Git field is put back", func(t *testing.T) {
		g := NewWithT(t)
		cp := l.cloudProfile(g, "aws")
		cp.Spec.MachineTypes[0].Memory = resource.MustParse("32Gi")
		g.Expect(l.env.Client.Update(ctx, cp, client.FieldOwner("kubectl-edit"))).To(Succeed())
		l.waitSynced("after-edit")
		g.Expect(memory(g)).To(Equal("8Gi"))
	})

	t.Run("fields, labels and annotations Git does not set are left alone", func(t *testing.T) {
		g := NewWithT(t)
		g.Expect(l.applyAs("alice", "aws", map[string]any{
			"machineTypes": []any{map[string]any{"name": "alice.xlarge", "cpu": "4", "gpu": "0", "memory": "16Gi"}},
		}, false)).To(Succeed())
		patch := client.MergeFrom(l.cloudProfile(g, "aws"))
		cp := l.cloudProfile(g, "aws")
		cp.Labels["team"] = "platform"
		cp.Annotations["note"] = "by hand"
		g.Expect(l.env.Client.Patch(ctx, cp, patch, client.FieldOwner("kubectl-label"))).To(Succeed())
		eventsBefore := len(l.driftEvents(g))
		writes.reset()

		l.waitSynced("after-additions")
		cp = l.cloudProfile(g, "aws")
		g.Expect(cp.Spec.MachineTypes).To(HaveLen(2))
		g.Expect(cp.Labels).To(HaveKeyWithValue("team", "platform"))
		g.Expect(cp.Annotations).To(HaveKeyWithValue("note", "by hand"))
		g.Expect(writes.recorded(apiWrite("cloudprofiles"))).To(BeEmpty(), "nothing of Git changed: no write")
		g.Expect(l.driftEvents(g)).To(HaveLen(eventsBefore), "and no drift reported")
	})

	t.Run("a deleted profile is recreated at the next sync", func(t *testing.T) {
		g := NewWithT(t)
		g.Expect(l.env.Client.Delete(ctx, &v1alpha1.CloudProfile{ObjectMeta: metav1.ObjectMeta{Name: "aws"}})).To(Succeed())
		g.Eventually(func() bool {
			err := l.env.Client.Get(ctx, client.ObjectKey{Name: "aws"}, &v1alpha1.CloudProfile{})
			return apierrors.IsNotFound(err)
		}).Should(BeTrue())
		l.waitSynced("after-delete")
		g.Expect(memory(g)).To(Equal("8Gi"))
		g.Expect(inventory(l.current(g))).To(Equal([]string{"CloudProfile//aws"}))
	})
}
