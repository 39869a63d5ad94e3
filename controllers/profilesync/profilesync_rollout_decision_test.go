package profilesync

import (
	"context"
	"testing"
	"time"

	"github.com/fluxcd/pkg/runtime/conditions"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1alpha1 "github.com/profilesync/profilesync/api/v1alpha1"
	"github.com/profilesync/profilesync/internal/rollout"
	"github.com/profilesync/profilesync/test/testenv"
)

// TestRolloutARecordPastYear9999IsIgnoredAndStatusKeepsBeingPatched: dev
// rolls back, then records a commit as Ready in the last minutes of year
// 9999, so that prod's soak of it would end in year 10000, a time the API
// server refuses in a status. The suite's manager ignores the record (a
// warning event), and keeps patching prod's status: it sees dev running
// the commit before.
func TestRolloutARecordPastYear9999IsIgnoredAndStatusKeepsBeingPatched(t *testing.T) {
	g := NewWithT(t)
	start := time.Now().UTC().Truncate(time.Second)
	testClock.Set(t, start)
	ensureNamespace(t, clusterProfilesNamespace)
	server := startRolloutGitServer(t, true)
	repo := testenv.UniqueName("year9999")
	devProfile, prodProfile := testenv.UniqueName("year9999-dev"), testenv.UniqueName("year9999-prod")
	first, err := server.CreateRepo(repo, rolloutRepo(devProfile, prodProfile, "1.31.0"))
	g.Expect(err).NotTo(HaveOccurred())
	second, err := server.Commit(repo, rolloutRepo(devProfile, prodProfile, "1.32.0"), "1.32.0")
	g.Expect(err).NotTo(HaveOccurred())
	dev := newLandscapeRecorder(t, server.RepoURL(repo))
	dev.applied("dev", first, start.Add(-3*rolloutSoak))
	dev.applied("dev", second, start.Add(-2*rolloutSoak))
	dev.applied("dev", first, start.Add(-rolloutSoak))
	dev.push(rollout.Record{Landscape: "dev", Kind: rollout.RecordApplied, Revision: second, AppliedAt: start.Add(-time.Minute),
		ReadyAt: time.Date(9999, 12, 31, 23, 30, 0, 0, time.UTC), OperatorVersion: "test"})

	prod := createRolloutSync(t, server.RepoURL(repo), "prod", nil, prodProfile)
	waitApplied(t, prod, first)
	requestSync(t, prod, "after-year-9999")
	g.Eventually(func(g Gomega) {
		got := getProfileSync(g, prod)
		g.Expect(got.Status.LastHandledReconcileAt).To(Equal("after-year-9999"), "the status is patched")
		g.Expect(got.Status.Rollout.Waiting).NotTo(BeNil())
		g.Expect(got.Status.Rollout.Waiting.Revision).To(Equal(second))
		g.Expect(got.Status.Rollout.Waiting.EligibleAt).To(BeNil(), "dev's record of year 9999 is ignored: dev runs first")
		g.Expect(got.Status.Rollout.Waiting.Upstreams[0].Running).To(Equal(first))
		g.Expect(conditions.GetMessage(got, v1alpha1.WaitingCondition)).To(ContainSubstring("dev runs " + first[:12] + ", which does not contain it"))
	}).WithTimeout(30 * time.Second).Should(Succeed())
	g.Eventually(func(g Gomega) {
		g.Expect(eventMessages(g, prod)).To(ContainElement(And(
			ContainSubstring("record of landscape dev ignored"),
			ContainSubstring("readyAt: 9999-12-31T23:30:00Z plus the soak of 1h0m0s is after 9999-12-31T23:59:59Z"))))
	}).WithTimeout(15 * time.Second).Should(Succeed())
}

// TestRolloutWaitingNamesAnUpstreamThatRecordsNothing: dev writes no
// records, so prod applies nothing and waits; its Waiting condition names
// dev and the field that makes dev record.
func TestRolloutWaitingNamesAnUpstreamThatRecordsNothing(t *testing.T) {
	g := NewWithT(t)
	testClock.Set(t, time.Now().UTC().Truncate(time.Second))
	ensureNamespace(t, clusterProfilesNamespace)
	server := startRolloutGitServer(t, true)
	repo := testenv.UniqueName("norecords")
	devProfile, prodProfile := testenv.UniqueName("norecords-dev"), testenv.UniqueName("norecords-prod")
	first, err := server.CreateRepo(repo, rolloutRepo(devProfile, prodProfile, "1.31.0"))
	g.Expect(err).NotTo(HaveOccurred())

	prod := createRolloutSync(t, server.RepoURL(repo), "prod", nil, prodProfile)
	g.Eventually(func(g Gomega) {
		got := getProfileSync(g, prod)
		g.Expect(conditions.GetReason(got, v1alpha1.WaitingCondition)).To(Equal(v1alpha1.WaitingForUpstreamReason))
		g.Expect(conditions.GetMessage(got, v1alpha1.WaitingCondition)).To(Equal("landscape prod waits for " + first + ": " +
			"dev has recorded no applied revision under refs/profilesync/landscapes/dev: the ProfileSync of landscape dev must record it " +
			"(spec.rollout.record, on unless set to false) with credentials that may push; its Recorded condition says why a push failed; " +
			"it has no eligibility time until every upstream landscape holds it"))
		g.Expect(got.Status.LastAppliedRevision).To(BeEmpty())
	}).WithTimeout(30 * time.Second).Should(Succeed())
}

// eventMessages lists the messages of the events the suite's manager
// recorded for obj in the API server.
func eventMessages(g Gomega, obj *v1alpha1.ProfileSync) []string {
	var events corev1.EventList
	g.Expect(k8sClient.List(context.Background(), &events, client.InNamespace(obj.Namespace))).To(Succeed())
	var messages []string
	for _, e := range events.Items {
		if e.InvolvedObject.Name == obj.Name {
			messages = append(messages, e.Message)
		}
	}
	return messages
}
