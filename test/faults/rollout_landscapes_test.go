package faults

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"

	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1alpha1 "github.com/profilesync/profilesync/api/v1alpha1"
	"github.com/profilesync/profilesync/internal/gitsource"
	"github.com/profilesync/profilesync/internal/rollout"
	"github.com/profilesync/profilesync/test/gitserver"
)

// rolloutLandscapesRepo is a repository of two landscapes, dev and prod,
// each a directory holding the CloudProfile aws with versions, and the
// rollout file that puts prod after dev with soak.
func rolloutLandscapesRepo(versions []string, soak time.Duration) map[string]string {
	profiles := profilesRepo(versions, []string{"aws"}, nil)["profiles.yaml"]
	return map[string]string{
		"dev/profiles.yaml":  profiles,
		"prod/profiles.yaml": profiles,
		rollout.FileName: "apiVersion: " + rollout.APIVersion + "\nkind: " + rollout.Kind + "\nlandscapes:\n" +
			"- {name: dev, path: dev}\n" +
			"- {name: prod, path: prod, after: [dev], soak: " + soak.String() + "}\n",
	}
}

// profilesOfBothLandscapes are dev's and prod's profiles of
// rolloutLandscapesRepo, offering versions, without the rollout file: a
// commit on top of the first.
func profilesOfBothLandscapes(versions ...string) map[string]string {
	profiles := profilesRepo(versions, []string{"aws"}, nil)["profiles.yaml"]
	return map[string]string{"dev/profiles.yaml": profiles, "prod/profiles.yaml": profiles}
}

// twoLandscapes is dev and prod of rolloutLandscapesRepo run as landscapes
// are run: two control planes, each with its own manager, that share
// nothing but the Git repository, where dev's records tell prod what dev
// holds, and the injected clock. Both record what they apply.
type twoLandscapes struct {
	t         *testing.T
	soak      time.Duration
	start     time.Time
	clock     *clocktesting.FakeClock
	dev, prod *landscape
	// devPushes sits between dev and the Git server, so that a test can
	// refuse dev's record pushes while its fetches go through.
	devPushes *pushOutage
	// first is the repository's first commit, offering 1.33.0, which dev
	// has applied and recorded at start.
	first string
}

// startTwoLandscapes starts dev and prod with the clock at start and waits
// until dev has applied and recorded the first commit.
func startTwoLandscapes(t *testing.T, soak time.Duration) *twoLandscapes {
	t.Helper()
	start := time.Now().UTC().Truncate(time.Second)
	w := &twoLandscapes{t: t, soak: soak, start: start, clock: clocktesting.NewFakeClock(start)}
	git, err := gitserver.New(t.TempDir(), gitserver.Options{AllowPush: true})
	if err != nil {
		t.Fatalf("start Git server: %v", err)
	}
	t.Cleanup(func() { _ = git.Close() })

	w.dev, w.prod = newLandscape(t), newLandscape(t)
	w.dev.git, w.prod.git = git, git
	w.first = w.dev.commit(rolloutLandscapesRepo([]string{"1.33.0"}, soak))
	w.prod.created = true
	w.devPushes = newPushOutage(t, git.URL())
	w.dev.createSyncOf(w.devPushes.server.URL+"/"+w.dev.repo, nil, time.Hour, 0)
	w.prod.createSync(time.Hour)
	for _, l := range []struct {
		landscape *landscape
		path      string
	}{{w.dev, "dev"}, {w.prod, "prod"}} {
		l.landscape.updateSpec(func(s *v1alpha1.ProfileSync) {
			s.Spec.Path = l.path
			s.Spec.Rollout = &v1alpha1.ProfileSyncRollout{Record: ptr.To(true)}
		})
		l.landscape.startManager(managerConfig{clock: w.clock})
	}
	w.dev.waitApplied(w.first, 30*time.Second)
	w.recorded(w.dev, w.first, rollout.RecordApplied)
	return w
}

// commit writes dev's and prod's profiles, offering versions, as the new
// head of the branch and returns its SHA.
func (w *twoLandscapes) commit(versions ...string) string {
	w.t.Helper()
	return w.dev.commit(profilesOfBothLandscapes(versions...))
}

// recorded waits until l's status says it pushed a record of kind for
// revision.
func (w *twoLandscapes) recorded(l *landscape, revision string, kind rollout.RecordKind) {
	w.t.Helper()
	NewWithT(w.t).Eventually(func(g Gomega) {
		got := l.current(g)
		g.Expect(got.Status.Rollout).NotTo(BeNil())
		g.Expect(got.Status.Rollout.RecordedRevision).To(Equal(revision))
		g.Expect(got.Status.Rollout.RecordedKind).To(Equal(string(kind)))
	}).WithTimeout(30 * time.Second).WithPolling(50 * time.Millisecond).Should(Succeed())
}

// syncProdAt requests a sync of prod with the clock at now, waits until it
// ran, and returns prod.
func (w *twoLandscapes) syncProdAt(now time.Time, token string) *v1alpha1.ProfileSync {
	w.t.Helper()
	w.clock.SetTime(now)
	w.prod.requestSync(token)
	var got *v1alpha1.ProfileSync
	NewWithT(w.t).Eventually(func(g Gomega) {
		got = w.prod.current(g)
		g.Expect(got.Status.LastHandledReconcileAt).To(Equal(token))
	}).WithTimeout(30 * time.Second).WithPolling(50 * time.Millisecond).Should(Succeed())
	return got
}

// updateSpec changes the landscape's ProfileSync as kubectl edit does,
// reading it again on a conflict with the controller's status writes.
func (l *landscape) updateSpec(mutate func(*v1alpha1.ProfileSync)) {
	l.t.Helper()
	ctx := context.Background()
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		if err := l.env.Client.Get(ctx, client.ObjectKeyFromObject(l.sync), l.sync); err != nil {
			return err
		}
		mutate(l.sync)
		return l.env.Client.Update(ctx, l.sync)
	})
	if err != nil {
		l.t.Fatalf("update ProfileSync: %v", err)
	}
}

// TestLandscapesOnTwoControlPlanesRollOutInOrder: dev applies each commit
// at once; on the injected clock, prod takes a commit exactly when dev has
// held it for the soak, and never one that dev refused.
func TestLandscapesOnTwoControlPlanesRollOutInOrder(t *testing.T) {
	g := NewWithT(t)
	const soak = time.Hour
	w := startTwoLandscapes(t, soak)
	start, first, dev, prod := w.start, w.first, w.dev, w.prod

	got := w.syncProdAt(start, "at-start")
	g.Expect(got.Status.LastAppliedRevision).To(BeEmpty(), "prod takes nothing before dev has held it for the soak")
	g.Expect(got.Status.Rollout.Waiting).NotTo(BeNil())
	g.Expect(got.Status.Rollout.Waiting.Revision).To(Equal(first))
	g.Expect(got.Status.Rollout.Waiting.EligibleAt.Time).To(BeTemporally("==", start.Add(soak)))
	g.Expect(prod.onCluster(g)).To(BeEmpty())

	got = w.syncProdAt(start.Add(soak-time.Second), "a-second-early")
	g.Expect(got.Status.LastAppliedRevision).To(BeEmpty(), "a second before the soak ends")

	w.clock.SetTime(start.Add(soak))
	prod.requestSync("soak-over")
	got = prod.waitApplied(first, 30*time.Second)
	g.Expect(got.Status.Rollout.AppliedAt.Time).To(BeTemporally("==", start.Add(soak)))
	g.Expect(inventory(got)).To(Equal([]string{"CloudProfile//aws"}))
	w.recorded(prod, first, rollout.RecordApplied)

	// A commit dev refuses is recorded as refused, and prod never takes it,
	// however long it waits.
	refused := w.commit("1.33")
	dev.requestSync("broken")
	w.recorded(dev, refused, rollout.RecordRefused)
	got = w.syncProdAt(start.Add(100*soak), "much-later")
	g.Expect(got.Status.LastAppliedRevision).To(Equal("main@sha1:"+first), "prod keeps what it runs")
	g.Expect(got.Status.Rollout.Waiting).NotTo(BeNil())
	g.Expect(got.Status.Rollout.Waiting.Revision).To(Equal(refused))
	g.Expect(got.Status.Rollout.Waiting.EligibleAt).To(BeNil(), "a refused commit never becomes eligible")
	waiting := apimeta.FindStatusCondition(got.Status.Conditions, v1alpha1.WaitingCondition)
	g.Expect(waiting).NotTo(BeNil())
	g.Expect(waiting.Status).To(Equal(metav1.ConditionTrue))
	g.Expect(strings.Contains(waiting.Message, "dev refused it")).To(BeTrue(), waiting.Message)
}

// TestLandscapesOnTwoControlPlanesRollBackFailToRecordHotfixAndHold runs
// the rest of the rollout on two control planes, one step after another on
// the injected clock: dev's operator rolls dev back and prod's soak starts
// again; dev's record push fails, which shows on dev and blocks nothing;
// prod takes a hotfix at once, and a hold keeps it where it is.
func TestLandscapesOnTwoControlPlanesRollBackFailToRecordHotfixAndHold(t *testing.T) {
	const soak = time.Hour
	w := startTwoLandscapes(t, soak)
	dev, prod := w.dev, w.prod
	rolledOut := w.start.Add(soak)
	w.clock.SetTime(rolledOut)
	prod.requestSync("first")
	prod.waitApplied(w.first, 30*time.Second)
	second := w.commit("1.33.0", "1.34.0")
	dev.requestSync("second")
	w.recorded(dev, second, rollout.RecordApplied)

	// takenAgain is when dev takes second again after its rollback.
	takenAgain := rolledOut.Add(soak + 10*time.Minute)
	t.Run("a rollback in dev restarts prod's soak", func(t *testing.T) {
		g := NewWithT(t)
		got := w.syncProdAt(rolledOut.Add(soak/2), "second-waits")
		g.Expect(got.Status.Rollout.Waiting.EligibleAt.Time).To(BeTemporally("==", rolledOut.Add(soak)))

		// dev's operator pins dev to the revision before, as one rolls a
		// landscape back.
		dev.updateSpec(func(s *v1alpha1.ProfileSync) { s.Spec.Ref = &v1alpha1.GitReference{Commit: w.first} })
		w.recorded(dev, w.first, rollout.RecordApplied)
		got = w.syncProdAt(rolledOut.Add(soak), "the-first-soak-ends")
		g.Expect(got.Status.LastAppliedRevision).To(Equal("main@sha1:"+w.first), "dev rolled back: second does not qualify")
		g.Expect(got.Status.Rollout.Waiting.Revision).To(Equal(second))
		g.Expect(got.Status.Rollout.Waiting.EligibleAt).To(BeNil())
		g.Expect(got.Status.Rollout.Waiting.Upstreams[0].Running).To(Equal(w.first))

		w.clock.SetTime(takenAgain)
		dev.updateSpec(func(s *v1alpha1.ProfileSync) { s.Spec.Ref = nil })
		w.recorded(dev, second, rollout.RecordApplied)
		got = w.syncProdAt(takenAgain.Add(soak-time.Second), "a-second-before-the-second-soak-ends")
		g.Expect(got.Status.LastAppliedRevision).To(Equal("main@sha1:" + w.first))
		g.Expect(got.Status.Rollout.Waiting.Upstreams[0].Since.Time).To(BeTemporally("==", takenAgain), "the soak runs from dev's second hold")
		g.Expect(got.Status.Rollout.Waiting.EligibleAt.Time).To(BeTemporally("==", takenAgain.Add(soak)))

		w.clock.SetTime(takenAgain.Add(soak))
		prod.requestSync("the-second-soak-ends")
		prod.waitApplied(second, 30*time.Second)
		g.Expect(prod.kubernetesVersions(g, "aws")).To(Equal([]string{"1.33.0", "1.34.0"}))
	})

	down := takenAgain.Add(soak + 10*time.Minute)
	var third string
	t.Run("a failed record push shows on dev and does not block its apply", func(t *testing.T) {
		g := NewWithT(t)
		w.clock.SetTime(down)
		w.devPushes.down.Store(true)
		third = w.commit("1.33.0", "1.34.0", "1.35.0")
		dev.requestSync("third-while-pushes-fail")
		g.Eventually(func(g Gomega) {
			got := dev.current(g)
			g.Expect(got.Status.LastAppliedRevision).To(Equal("main@sha1:" + third))
			expectReady(g, got)
			recorded := apimeta.FindStatusCondition(got.Status.Conditions, v1alpha1.RecordedCondition)
			g.Expect(recorded).NotTo(BeNil())
			g.Expect(recorded.Status).To(Equal(metav1.ConditionFalse))
			g.Expect(recorded.Reason).To(Equal(v1alpha1.RecordFailedReason))
			g.Expect(recorded.Message).To(ContainSubstring("the applied record of " + third + " for landscape dev was not pushed"))
		}).WithTimeout(30 * time.Second).WithPolling(50 * time.Millisecond).Should(Succeed())
		g.Expect(dev.kubernetesVersions(g, "aws")).To(Equal([]string{"1.33.0", "1.34.0", "1.35.0"}))

		// Without the record, prod sees dev at second: a lost record delays
		// the rollout, it never speeds it up.
		got := w.syncProdAt(down.Add(2*soak), "third-unrecorded")
		g.Expect(got.Status.LastAppliedRevision).To(Equal("main@sha1:" + second))
		g.Expect(got.Status.Rollout.Waiting.Revision).To(Equal(third))
		g.Expect(got.Status.Rollout.Waiting.Upstreams[0].Running).To(Equal(second))
		g.Expect(got.Status.Rollout.Waiting.EligibleAt).To(BeNil())

		w.devPushes.down.Store(false)
		dev.requestSync("pushes-accepted")
		w.recorded(dev, third, rollout.RecordApplied)
		got = w.syncProdAt(down.Add(2*soak), "third-recorded")
		g.Expect(got.Status.Rollout.Waiting.EligibleAt.Time).To(BeTemporally("==", down.Add(3*soak)), "the soak runs from the record pushed late")
	})

	hotfixed := down.Add(2*soak + time.Minute)
	var hotfix string
	t.Run("a hotfix on prod is applied at once and recorded as a hotfix", func(t *testing.T) {
		g := NewWithT(t)
		w.clock.SetTime(hotfixed)
		hotfix = w.commit("1.33.0", "1.34.0", "1.35.1")
		prod.updateSpec(func(s *v1alpha1.ProfileSync) { s.Spec.Rollout.Hotfix = hotfix })
		got := prod.waitApplied(hotfix, 30*time.Second)
		g.Expect(got.Status.Rollout.AppliedAt.Time).To(BeTemporally("==", hotfixed), "dev neither runs it nor held third for the soak")
		g.Expect(prod.kubernetesVersions(g, "aws")).To(Equal([]string{"1.33.0", "1.34.0", "1.35.1"}))
		w.recorded(prod, hotfix, rollout.RecordHotfix)
		g.Eventually(func(g Gomega) []string { return prod.events(g, corev1.EventTypeNormal)[v1alpha1.HotfixReason] }).
			WithTimeout(10 * time.Second).Should(ConsistOf(ContainSubstring("took hotfix " + hotfix)))

		landscapes, err := gitsource.OpenLandscapes(filepath.Join(prod.git.Root(), prod.repo+".git"), gitsource.ObjectLimitsFor(0))
		g.Expect(err).NotTo(HaveOccurred())
		defer func() { _ = landscapes.Close() }()
		history, err := landscapes.Records("prod", gitsource.RecordLimits{})
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(history.Records).NotTo(BeEmpty())
		g.Expect(history.Records[0].Kind).To(Equal(rollout.RecordHotfix))
		g.Expect(history.Records[0].Revision).To(Equal(hotfix))
	})

	t.Run("a hold keeps prod where it is while dev moves on and the soak passes", func(t *testing.T) {
		g := NewWithT(t)
		prod.updateSpec(func(s *v1alpha1.ProfileSync) {
			s.Spec.Rollout.Hotfix = ""
			s.Spec.Rollout.Hold = true
		})
		// Every sync from here on sees the hold: the one that saw its
		// generation read the spec from the cache every later one reads.
		g.Eventually(func(g Gomega) {
			got := prod.current(g)
			g.Expect(got.Status.ObservedGeneration).To(Equal(got.Generation))
		}).WithTimeout(30 * time.Second).WithPolling(50 * time.Millisecond).Should(Succeed())
		newest := w.commit("1.33.0", "1.34.0", "1.35.1", "1.36.0")
		dev.requestSync("newest")
		w.recorded(dev, newest, rollout.RecordApplied)

		got := w.syncProdAt(hotfixed.Add(2*soak), "held")
		g.Expect(got.Status.LastAppliedRevision).To(Equal("main@sha1:"+hotfix), "held, though dev held the newest for the soak")
		expectReady(g, got)
		held := apimeta.FindStatusCondition(got.Status.Conditions, v1alpha1.WaitingCondition)
		g.Expect(held).NotTo(BeNil())
		g.Expect(held.Reason).To(Equal(v1alpha1.RolloutHeldReason))
		g.Expect(got.Status.Rollout.Waiting.Revision).To(Equal(newest))
		g.Expect(got.Status.Rollout.Waiting.Upstreams[0].Since.Time).To(BeTemporally("==", hotfixed))
		g.Eventually(func(g Gomega) []string { return prod.events(g, corev1.EventTypeNormal)[v1alpha1.RolloutHeldReason] }).
			WithTimeout(10 * time.Second).Should(ContainElement(ContainSubstring(newest + " waits")))
		g.Expect(prod.kubernetesVersions(g, "aws")).To(Equal([]string{"1.33.0", "1.34.0", "1.35.1"}))

		prod.updateSpec(func(s *v1alpha1.ProfileSync) { s.Spec.Rollout.Hold = false })
		prod.waitApplied(newest, 30*time.Second)
		g.Eventually(func(g Gomega) []string { return prod.events(g, corev1.EventTypeNormal)[v1alpha1.PromotedReason] }).
			WithTimeout(10 * time.Second).Should(ContainElement(ContainSubstring("promoted " + newest)))
	})
}
