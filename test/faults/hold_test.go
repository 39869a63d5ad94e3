package faults

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/fluxcd/pkg/runtime/conditions"
	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1alpha1 "github.com/profilesync/profilesync/api/v1alpha1"
	"github.com/profilesync/profilesync/test/testenv"
)

// TestRestartDuringAHoldKeepsTheHold: an engineer holds a hand edit of the
// CloudProfile aws, the manager restarts, and a new revision arrives. The
// new manager knows nothing of the hold but what the object and the
// ProfileSync's status say: it applies the revision to gcp, leaves aws as
// edited, and does not report the hold as new. It also waits only on the
// field the engineer edited, as recorded in the status, not on the version
// the revision added: the revision that brings the edit into Git releases
// the hold.
func TestRestartDuringAHoldKeepsTheHold(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	l := newLandscape(t)
	first := l.commit(profilesRepo([]string{"1.33.0"}, []string{"aws", "gcp"}, nil))
	l.createSync(time.Hour)
	m := l.startManager(managerConfig{})
	l.waitApplied(first, 30*time.Second)

	// The edit and the hold in one write, read again on a conflict as
	// kubectl edit does: the status controller may write in between.
	var aws v1alpha1.CloudProfile
	g.Expect(retry.RetryOnConflict(retry.DefaultRetry, func() error {
		if err := l.env.Client.Get(ctx, client.ObjectKey{Name: "aws"}, &aws); err != nil {
			return err
		}
		aws.Spec.MachineTypes[0].Memory = resource.MustParse("1Gi")
		aws.Annotations[v1alpha1.HoldUntilAnnotation] = time.Now().Add(time.Hour).UTC().Format(time.RFC3339)
		aws.Annotations[v1alpha1.HoldReasonAnnotation] = "m5.large lost memory"
		return l.env.Client.Update(ctx, &aws)
	})).To(Succeed())
	l.waitSynced("held")
	g.Expect(l.current(g).Status.Holds).To(HaveLen(1))

	if err := m.Stop(); err != nil {
		t.Fatalf("stop the manager: %v", err)
	}
	second := l.commit(profilesRepo([]string{"1.33.0", "1.34.0"}, []string{"aws", "gcp"}, nil))
	l.startManager(managerConfig{})
	applied := l.waitApplied(second, 30*time.Second)

	g.Expect(applied.Status.Holds).To(HaveLen(1))
	g.Expect(applied.Status.Holds[0].Name).To(Equal("aws"))
	g.Expect(conditions.IsTrue(applied, v1alpha1.HeldCondition)).To(BeTrue())
	g.Expect(conditions.GetMessage(applied, v1alpha1.HeldCondition)).To(ContainSubstring("CloudProfile/aws held until"))
	var gcp v1alpha1.CloudProfile
	g.Expect(l.env.Client.Get(ctx, client.ObjectKey{Name: "gcp"}, &gcp)).To(Succeed())
	g.Expect(gcp.Spec.Kubernetes.Versions).To(HaveLen(2), "the rest of the revision applies")
	g.Expect(l.env.Client.Get(ctx, client.ObjectKey{Name: "aws"}, &aws)).To(Succeed())
	g.Expect(aws.Spec.MachineTypes[0].Memory.String()).To(Equal("1Gi"), "the held edit survives the restart")
	g.Expect(aws.Spec.Kubernetes.Versions).To(HaveLen(1), "and the held object takes no new revision")

	holdsSet, err := testenv.Events(ctx, l.env.Client, testenv.EventQuery{Namespace: landscapeNamespace, Reason: v1alpha1.HoldSetReason})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(testenv.Occurrences(holdsSet)).To(HaveLen(1), "the new manager read the hold from the status, not as a new one")
	g.Expect(applied.Status.Holds[0].DriftedFields).To(Equal([]string{"spec.machineTypes[0] (m5.large).memory"}))

	fix := l.commit(emergencyInGit())
	l.requestSync("fixed")
	released := l.waitApplied(fix, 30*time.Second)
	g.Expect(released.Status.Holds).To(BeEmpty())
	g.Expect(l.env.Client.Get(ctx, client.ObjectKey{Name: "aws"}, &aws)).To(Succeed())
	g.Expect(aws.Spec.Kubernetes.Versions).To(HaveLen(2), "released, aws takes the version it was held from")
	g.Expect(aws.Annotations).NotTo(HaveKey(v1alpha1.HoldUntilAnnotation))
}

// emergencyInGit is the second revision of the hold tests (1.34.0 beside
// 1.33.0 on aws and gcp) with aws's machine type at the emergency's memory
// (1Gi): the pull request that brings the held edit into Git.
func emergencyInGit() map[string]string {
	files := profilesRepo([]string{"1.33.0", "1.34.0"}, []string{"aws", "gcp"}, nil)
	// aws comes first: its machine type takes the emergency's memory.
	files["profiles.yaml"] = strings.Replace(files["profiles.yaml"], "memory: 8Gi", "memory: 1Gi", 1)
	return files
}
