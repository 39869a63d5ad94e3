package faults

import (
	"context"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clocktesting "k8s.io/utils/clock/testing"

	v1alpha1 "github.com/profilesync/profilesync/api/v1alpha1"
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

// TestLandscapesOnTwoControlPlanesRollOutInOrder runs dev and prod as
// landscapes are run: two control planes, each with its own manager, that
// share nothing but the Git repository, where dev's records tell prod what
// dev holds. On the injected clock, prod takes a commit exactly when dev
// has held it for the soak, and never one that dev refused.
func TestLandscapesOnTwoControlPlanesRollOutInOrder(t *testing.T) {
	g := NewWithT(t)
	const soak = time.Hour
	start := time.Now().UTC().Truncate(time.Second)
	clk := clocktesting.NewFakeClock(start)
	git, err := gitserver.New(t.TempDir(), gitserver.Options{AllowPush: true})
	g.Expect(err).NotTo(HaveOccurred())
	t.Cleanup(func() { _ = git.Close() })

	dev, prod := newLandscape(t), newLandscape(t)
	dev.git, prod.git = git, git
	first := dev.commit(rolloutLandscapesRepo([]string{"1.33.0"}, soak))
	prod.created = true
	for _, l := range []struct {
		landscape *landscape
		path      string
	}{{dev, "dev"}, {prod, "prod"}} {
		l.landscape.createSync(time.Hour)
		l.landscape.sync.Spec.Path = l.path
		l.landscape.sync.Spec.Rollout = &v1alpha1.ProfileSyncRollout{Record: true}
		g.Expect(l.landscape.env.Client.Update(context.Background(), l.landscape.sync)).To(Succeed())
		l.landscape.startManager(managerConfig{clock: clk})
	}

	recorded := func(l *landscape, revision string, kind rollout.RecordKind) {
		t.Helper()
		NewWithT(t).Eventually(func(g Gomega) {
			got := l.current(g)
			g.Expect(got.Status.Rollout).NotTo(BeNil())
			g.Expect(got.Status.Rollout.RecordedRevision).To(Equal(revision))
			g.Expect(got.Status.Rollout.RecordedKind).To(Equal(string(kind)))
		}).WithTimeout(30 * time.Second).WithPolling(50 * time.Millisecond).Should(Succeed())
	}
	// waitingAt requests a sync of prod with the clock at now and waits
	// until it ran, then returns prod.
	syncAt := func(now time.Time, token string) *v1alpha1.ProfileSync {
		t.Helper()
		clk.SetTime(now)
		prod.requestSync(token)
		var got *v1alpha1.ProfileSync
		NewWithT(t).Eventually(func(g Gomega) {
			got = prod.current(g)
			g.Expect(got.Status.LastHandledReconcileAt).To(Equal(token))
		}).WithTimeout(30 * time.Second).WithPolling(50 * time.Millisecond).Should(Succeed())
		return got
	}

	// dev has no upstream: it applies at once and records what it applied.
	dev.waitApplied(first, 30*time.Second)
	recorded(dev, first, rollout.RecordApplied)

	got := syncAt(start, "at-start")
	g.Expect(got.Status.LastAppliedRevision).To(BeEmpty(), "prod takes nothing before dev has held it for the soak")
	g.Expect(got.Status.Rollout.Waiting).NotTo(BeNil())
	g.Expect(got.Status.Rollout.Waiting.Revision).To(Equal(first))
	g.Expect(got.Status.Rollout.Waiting.EligibleAt.Time).To(BeTemporally("==", start.Add(soak)))
	g.Expect(prod.onCluster(g)).To(BeEmpty())

	got = syncAt(start.Add(soak-time.Second), "a-second-early")
	g.Expect(got.Status.LastAppliedRevision).To(BeEmpty(), "a second before the soak ends")

	clk.SetTime(start.Add(soak))
	prod.requestSync("soak-over")
	got = prod.waitApplied(first, 30*time.Second)
	g.Expect(got.Status.Rollout.AppliedAt.Time).To(BeTemporally("==", start.Add(soak)))
	g.Expect(inventory(got)).To(Equal([]string{"CloudProfile//aws"}))
	recorded(prod, first, rollout.RecordApplied)

	// A commit dev refuses is recorded as refused, and prod never takes it,
	// however long it waits.
	broken := rolloutLandscapesRepo([]string{"1.33"}, soak)
	refused := dev.commit(map[string]string{"dev/profiles.yaml": broken["dev/profiles.yaml"], "prod/profiles.yaml": broken["prod/profiles.yaml"]})
	dev.requestSync("broken")
	recorded(dev, refused, rollout.RecordRefused)
	got = syncAt(start.Add(100*soak), "much-later")
	g.Expect(got.Status.LastAppliedRevision).To(Equal("main@sha1:"+first), "prod keeps what it runs")
	g.Expect(got.Status.Rollout.Waiting).NotTo(BeNil())
	g.Expect(got.Status.Rollout.Waiting.Revision).To(Equal(refused))
	g.Expect(got.Status.Rollout.Waiting.EligibleAt).To(BeNil(), "a refused commit never becomes eligible")
	waiting := apimeta.FindStatusCondition(got.Status.Conditions, v1alpha1.WaitingCondition)
	g.Expect(waiting).NotTo(BeNil())
	g.Expect(waiting.Status).To(Equal(metav1.ConditionTrue))
	g.Expect(strings.Contains(waiting.Message, "dev refused it")).To(BeTrue(), waiting.Message)
}
