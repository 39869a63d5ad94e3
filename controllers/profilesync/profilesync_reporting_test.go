package profilesync

import (
	"context"
	"testing"
	"time"

	"github.com/fluxcd/pkg/apis/meta"
	"github.com/fluxcd/pkg/runtime/conditions"
	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1alpha1 "github.com/profilesync/profilesync/api/v1alpha1"
	"github.com/profilesync/profilesync/test/testenv"
)

// TestReconcilingIsTrueWhileASyncOfAChangeRuns: a sync of a new revision
// writes Reconciling=True through the status subresource before it
// applies, naming the revision, and removes it when it has applied; the
// ProfileSync as a watch sees it shows both.
func TestReconcilingIsTrueWhileASyncOfAChangeRuns(t *testing.T) {
	g := NewWithT(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	ensureNamespace(t, clusterProfilesNamespace)
	server := startGitServer(t)
	l := applyGoodRevision(t, server, "reconciling")
	g.Expect(conditions.Has(getProfileSync(g, l.sync), v1alpha1.ReconcilingCondition)).To(BeFalse(), "removed after the first sync")

	watching, err := client.NewWithWatch(restConfig, client.Options{Scheme: testScheme})
	g.Expect(err).NotTo(HaveOccurred())
	w, err := watching.Watch(ctx, &v1alpha1.ProfileSyncList{}, client.InNamespace(l.sync.Namespace),
		client.MatchingFieldsSelector{Selector: fields.OneTermEqualSelector("metadata.name", l.sync.Name)})
	g.Expect(err).NotTo(HaveOccurred())
	defer w.Stop()

	next, err := server.Commit(l.repo, singleProfileRepo(l.profile, "1.32.0"), "a new revision")
	g.Expect(err).NotTo(HaveOccurred())
	requestSync(t, l.sync, "next")
	revision := "main@sha1:" + next
	var reconciling []string
	for {
		var got *v1alpha1.ProfileSync
		select {
		case e, open := <-w.ResultChan():
			g.Expect(open).To(BeTrue(), "the watch ended before the sync applied %s", revision)
			if e.Type != watch.Modified {
				continue
			}
			got = e.Object.(*v1alpha1.ProfileSync)
		case <-ctx.Done():
			t.Fatalf("no sync applied %s; Reconciling seen: %v", revision, reconciling)
		}
		if c := conditions.Get(got, v1alpha1.ReconcilingCondition); c != nil && c.Status == "True" {
			reconciling = append(reconciling, c.Reason+": "+c.Message)
		}
		if got.Status.LastAppliedRevision == revision {
			g.Expect(conditions.Has(got, v1alpha1.ReconcilingCondition)).To(BeFalse(), "removed at the end of the sync")
			break
		}
	}
	g.Expect(reconciling).To(ContainElement(meta.ProgressingReason + ": syncing revision " + revision))
}

// TestEveryEventOfAProfileSyncCarriesItsRevision: the events of a sync,
// Applied and HoldSet here, carry the revision the sync attempted in the
// annotation core.profilesync.io/revision.
func TestEveryEventOfAProfileSyncCarriesItsRevision(t *testing.T) {
	g := NewWithT(t)
	ensureNamespace(t, clusterProfilesNamespace)
	server := startGitServer(t)
	l := applyGoodRevision(t, server, "event-revision")
	breakGlass(t, l.profile, time.Now().Add(time.Hour).UTC().Format(time.RFC3339), "INC-32", shrinkMemory)
	requestSync(t, l.sync, "held")
	g.Eventually(func(g Gomega) {
		events, err := testenv.Events(context.Background(), k8sClient, testenv.EventQuery{Namespace: l.sync.Namespace, Kind: v1alpha1.ProfileSyncKind, Name: l.sync.Name})
		g.Expect(err).NotTo(HaveOccurred())
		reasons := map[string]string{}
		for _, e := range events {
			reasons[e.Reason] = e.Annotations[RevisionEventAnnotation]
		}
		g.Expect(reasons).To(HaveKey(v1alpha1.AppliedReason))
		g.Expect(reasons).To(HaveKey(v1alpha1.HoldSetReason))
		for reason, revision := range reasons {
			g.Expect(revision).To(Equal("main@sha1:"+l.good), reason)
		}
	}).WithTimeout(15 * time.Second).Should(Succeed())
}
