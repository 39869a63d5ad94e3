package faults

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1alpha1 "github.com/profilesync/profilesync/api/v1alpha1"
	"github.com/profilesync/profilesync/test/testenv"
)

// steppingClock is a wall clock that runs with real time from where a
// test puts it and that the test can step, forward or back, as NTP, a
// resumed virtual machine or an operator fixing a wrong clock does.
// controller-runtime's timers keep running on the monotonic clock.
type steppingClock struct {
	mu     sync.Mutex
	offset time.Duration
}

// newSteppingClock starts at start.
func newSteppingClock(start time.Time) *steppingClock {
	return &steppingClock{offset: time.Until(start)}
}

func (c *steppingClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return time.Now().Add(c.offset)
}

func (c *steppingClock) Since(t time.Time) time.Duration { return c.Now().Sub(t) }

// step moves the clock by d at once.
func (c *steppingClock) step(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.offset += d
}

// lifecycleRepo is a repository with the CloudProfile "aws" and, in
// team-a, the NamespacedCloudProfile "aws-team" under it, whose
// Kubernetes versions have the lifecycles given as YAML lists of stages
// (version → stages).
func lifecycleRepo(versions map[string]string) map[string]string {
	names := make([]string, 0, len(versions))
	for v := range versions {
		names = append(names, v)
	}
	sort.Strings(names)
	var b strings.Builder
	b.WriteString("apiVersion: core.profilesync.io/v1alpha1\nkind: CloudProfile\nmetadata:\n  name: aws\nspec:\n  type: local\n" +
		"  machineImages:\n  - name: ubuntu\n    versions: [{version: 24.4.0}]\n" +
		"  machineTypes:\n  - {name: m5.large, cpu: \"2\", gpu: \"0\", memory: 8Gi}\n" +
		"  regions:\n  - name: eu-1\n" +
		"  kubernetes:\n    versions:\n")
	for _, v := range names {
		fmt.Fprintf(&b, "    - version: %s\n      lifecycle:\n", v)
		for _, stage := range strings.Split(versions[v], ";") {
			classification, start, _ := strings.Cut(stage, "@")
			fmt.Fprintf(&b, "      - classification: %s\n", classification)
			if start != "" {
				fmt.Fprintf(&b, "        startTime: %q\n", start)
			}
		}
	}
	b.WriteString("---\napiVersion: core.profilesync.io/v1alpha1\nkind: NamespacedCloudProfile\nmetadata:\n  name: aws-team\n  namespace: team-a\nspec:\n  parent:\n    kind: CloudProfile\n    name: aws\n  machineTypes:\n  - name: large\n    cpu: \"16\"\n    gpu: \"0\"\n    memory: 64Gi\n")
	return map[string]string{"profiles.yaml": b.String()}
}

// at formats t for a lifecycle stage.
func at(t time.Time) string { return t.UTC().Format(time.RFC3339) }

// profileClassifications are the Kubernetes classifications of the
// CloudProfile aws and of the NamespacedCloudProfile team-a/aws-team on
// the cluster, "1.30.0=supported" each, in version order.
func (l *landscape) profileClassifications(g Gomega) (parent, child []string) {
	ctx := context.Background()
	var cp v1alpha1.CloudProfile
	g.Expect(l.env.Client.Get(ctx, client.ObjectKey{Name: "aws"}, &cp)).To(Succeed())
	var ncp v1alpha1.NamespacedCloudProfile
	g.Expect(l.env.Client.Get(ctx, client.ObjectKey{Namespace: "team-a", Name: "aws-team"}, &ncp)).To(Succeed())
	list := func(s v1alpha1.ProfileVersionsStatus) []string {
		var out []string
		if s.Kubernetes != nil {
			for _, v := range s.Kubernetes.Versions {
				out = append(out, v.Version+"="+string(v.Classification))
			}
		}
		sort.Strings(out)
		return out
	}
	return list(cp.Status.ProfileVersionsStatus), list(ncp.Status.ProfileVersionsStatus)
}

// classificationEvents are the messages of the ClassificationChanged
// events of the profile kind/name, once per occurrence.
func (l *landscape) classificationEvents(g Gomega, kind, name string) []string {
	events, err := testenv.Events(context.Background(), l.env.Client,
		testenv.EventQuery{Kind: kind, Name: name, Reason: v1alpha1.ClassificationChangedReason})
	g.Expect(err).NotTo(HaveOccurred())
	out := testenv.Occurrences(events)
	sort.Strings(out)
	return out
}

// statusWrites counts the status writes of the profile controllers.
func statusWrites(f *faultTransport) map[string]int {
	counts := map[string]int{}
	for _, w := range f.recorded(nil) {
		if (w.Resource == "cloudprofiles" || w.Resource == "namespacedcloudprofiles") && w.Subresource == "status" {
			counts[w.Resource]++
		}
	}
	return counts
}

// startClockLandscape starts a landscape whose manager runs on a
// steppingClock with a 1s status recheck. The clock reads start once the
// control plane runs; repo(start) is committed and synced, and the test
// waits for the profiles' first status.
func startClockLandscape(t *testing.T, start time.Time, repo func(t0 time.Time) map[string]string) (*landscape, *faultTransport, *testenv.Manager, *steppingClock) {
	l := newLandscape(t)
	clk := newSteppingClock(start)
	head := l.commit(repo(start))
	l.createSync(time.Hour)
	counter := &faultTransport{}
	m := l.startManager(managerConfig{faults: counter, clock: clk, statusRecheck: time.Second})
	l.waitApplied(head, 20*time.Second)
	NewWithT(t).Eventually(func(g Gomega) {
		parent, child := l.profileClassifications(g)
		g.Expect(parent).NotTo(BeEmpty())
		g.Expect(child).NotTo(BeEmpty())
	}).WithTimeout(10 * time.Second).Should(Succeed())
	return l, counter, m, clk
}

// TestClockJumpsForwardPastSeveralTransitions: the wall clock steps three
// hours ahead, past four transitions of two versions. Within the recheck
// (1s here) both profiles show the classifications of the new now, in one
// status write each, with one event for every version whose classification
// changed; a version that skipped a stage reports the change it made.
func TestClockJumpsForwardPastSeveralTransitions(t *testing.T) {
	g := NewWithT(t)
	l, counter, _, clk := startClockLandscape(t, time.Now().Add(-time.Hour), func(t0 time.Time) map[string]string {
		return lifecycleRepo(map[string]string{
			"1.30.0": "supported;deprecated@" + at(t0.Add(time.Hour)) + ";expired@" + at(t0.Add(2*time.Hour)),
			"1.31.0": "preview;supported@" + at(t0.Add(90*time.Minute)),
			"1.32.0": "preview;supported@" + at(t0.Add(150*time.Minute)),
			"1.33.0": "preview",
		})
	})
	parent, child := l.profileClassifications(g)
	before := []string{"1.30.0=supported", "1.31.0=preview", "1.32.0=preview", "1.33.0=preview"}
	g.Expect(parent).To(Equal(before))
	g.Expect(child).To(Equal(before))
	counter.reset()

	clk.step(3 * time.Hour)
	stepped := time.Now()
	after := []string{"1.30.0=expired", "1.31.0=supported", "1.32.0=supported", "1.33.0=preview"}
	g.Eventually(func(g Gomega) {
		parent, child := l.profileClassifications(g)
		g.Expect(parent).To(Equal(after))
		g.Expect(child).To(Equal(after))
	}).WithTimeout(5 * time.Second).WithPolling(50 * time.Millisecond).Should(Succeed())
	caughtUp := time.Since(stepped)

	want := []string{"1.30.0: supported → expired", "1.31.0: preview → supported", "1.32.0: preview → supported"}
	g.Eventually(func(g Gomega) []string {
		return l.classificationEvents(g, v1alpha1.CloudProfileKind, "aws")
	}).WithTimeout(5 * time.Second).Should(Equal(want))
	g.Eventually(func(g Gomega) []string {
		return l.classificationEvents(g, v1alpha1.NamespacedCloudProfileKind, "aws-team")
	}).WithTimeout(5 * time.Second).Should(Equal(want))
	var cp v1alpha1.CloudProfile
	g.Expect(l.env.Client.Get(context.Background(), client.ObjectKey{Name: "aws"}, &cp)).To(Succeed())
	g.Expect(cp.Status.NextTransitionTime).To(BeNil(), "every transition has passed")
	ready := apimeta.FindStatusCondition(cp.Status.Conditions, v1alpha1.ReadyCondition)
	// The fifth version is the machine image's, supported since always.
	g.Expect(ready.Message).To(Equal("5 versions: 3 supported, 1 preview, 1 expired; no transition scheduled"))
	// Caught up in one write per profile; nothing polls afterwards.
	g.Consistently(func() map[string]int { return statusWrites(counter) }).WithTimeout(3 * time.Second).
		Should(Equal(map[string]int{"cloudprofiles": 1, "namespacedcloudprofiles": 1}))
	figures(t, "clock +3h past 4 transitions, recheck 1s: caught up in %s, status writes %v, events %d per profile",
		caughtUp.Round(10*time.Millisecond), statusWrites(counter), len(want))
}

// TestClockJumpsBackwardsWithoutFlapping: a version turns deprecated, then
// the wall clock steps back five seconds, before the deprecation. The
// status stays deprecated (no write, no event: no flapping back and forth
// across the transition), and the expiry waits for the wall clock to reach
// it, five seconds later than before the step.
func TestClockJumpsBackwardsWithoutFlapping(t *testing.T) {
	g := NewWithT(t)
	var deprecation, expiry time.Time
	// The profiles are applied in the first seconds; the stages start
	// after that.
	l, counter, _, clk := startClockLandscape(t, time.Now().Add(-24*time.Hour), func(t0 time.Time) map[string]string {
		deprecation, expiry = t0.Add(5*time.Second).Truncate(time.Second), t0.Add(11*time.Second).Truncate(time.Second)
		return lifecycleRepo(map[string]string{
			"1.30.0": "supported;deprecated@" + at(deprecation) + ";expired@" + at(expiry),
			"1.31.0": "supported",
		})
	})
	deprecated := []string{"1.30.0=deprecated", "1.31.0=supported"}
	g.Eventually(func(g Gomega) {
		parent, child := l.profileClassifications(g)
		g.Expect(parent).To(Equal(deprecated))
		g.Expect(child).To(Equal(deprecated))
	}).WithTimeout(15 * time.Second).WithPolling(50 * time.Millisecond).Should(Succeed())
	counter.reset()

	clk.step(-5 * time.Second)
	steppedAt := time.Now()
	steppedTo := clk.Now()
	g.Expect(steppedTo).To(BeTemporally("<", deprecation), "the step goes back before the deprecation")
	// Three rechecks: none finds a status overdue (the wall clock is
	// behind), so nothing is computed, let alone written.
	g.Consistently(func(g Gomega) {
		parent, child := l.profileClassifications(g)
		g.Expect(parent).To(Equal(deprecated))
		g.Expect(child).To(Equal(deprecated))
	}).WithTimeout(3 * time.Second).WithPolling(100 * time.Millisecond).Should(Succeed())
	g.Expect(statusWrites(counter)).To(BeEmpty(), "no write while the clock is behind the status")

	// The expiry comes when the wall clock reaches it, not when the timer
	// set before the step would have fired.
	untilExpiry := expiry.Sub(steppedTo)
	expired := []string{"1.30.0=expired", "1.31.0=supported"}
	g.Eventually(func(g Gomega) {
		parent, child := l.profileClassifications(g)
		g.Expect(parent).To(Equal(expired))
		g.Expect(child).To(Equal(expired))
	}).WithTimeout(untilExpiry + 5*time.Second).WithPolling(50 * time.Millisecond).Should(Succeed())
	late := time.Since(steppedAt) - untilExpiry
	g.Expect(late).To(BeNumerically(">", -500*time.Millisecond), "not before the wall clock reaches the expiry")
	g.Expect(late).To(BeNumerically("<", 2*time.Second), "within the recheck of it")

	// The expiry is an event; nothing ever went back to supported. (Whether
	// the deprecation is an event of its own depends on whether the first
	// status was computed before it, which a loaded machine decides.)
	for kind, name := range map[string]string{v1alpha1.CloudProfileKind: "aws", v1alpha1.NamespacedCloudProfileKind: "aws-team"} {
		g.Eventually(func(g Gomega) []string {
			return l.classificationEvents(g, kind, name)
		}).WithTimeout(5*time.Second).Should(ContainElement("1.30.0: deprecated → expired"), kind)
		g.Expect(l.classificationEvents(g, kind, name)).NotTo(ContainElement(HaveSuffix("→ supported")), "%s flapped back", kind)
	}
	g.Expect(statusWrites(counter)).To(Equal(map[string]int{"cloudprofiles": 1, "namespacedcloudprofiles": 1}), "only the expiry is written")
	figures(t, "clock -5s behind a shown deprecation, recheck 1s: status writes while behind 0, expiry shown %s after the wall clock reached it, status writes %v",
		late.Round(10*time.Millisecond), statusWrites(counter))
}

// TestClockManagerStartedLongAfterATransition: no manager runs while a
// version passes two stages (a manager stopped for a year, say). The next
// manager's first reconcile shows the status of its now, with one event per
// changed version, and writes no profile spec.
func TestClockManagerStartedLongAfterATransition(t *testing.T) {
	g := NewWithT(t)
	var t0 time.Time
	l, _, m, _ := startClockLandscape(t, time.Now().Add(-48*time.Hour), func(start time.Time) map[string]string {
		t0 = start
		return lifecycleRepo(map[string]string{
			"1.30.0": "supported;deprecated@" + at(t0.Add(time.Hour)) + ";expired@" + at(t0.Add(2*time.Hour)),
			"1.31.0": "preview;supported@" + at(t0.Add(time.Hour)),
		})
	})
	parent, _ := l.profileClassifications(g)
	g.Expect(parent).To(Equal([]string{"1.30.0=supported", "1.31.0=preview"}))
	g.Expect(m.Stop()).To(Succeed())

	late := newSteppingClock(t0.Add(365 * 24 * time.Hour))
	counter := &faultTransport{}
	started := time.Now()
	l.startManager(managerConfig{faults: counter, clock: late, statusRecheck: time.Second})
	want := []string{"1.30.0=expired", "1.31.0=supported"}
	g.Eventually(func(g Gomega) {
		parent, child := l.profileClassifications(g)
		g.Expect(parent).To(Equal(want))
		g.Expect(child).To(Equal(want))
	}).WithTimeout(15 * time.Second).WithPolling(50 * time.Millisecond).Should(Succeed())
	correct := time.Since(started)
	events := []string{"1.30.0: supported → expired", "1.31.0: preview → supported"}
	g.Eventually(func(g Gomega) []string {
		return l.classificationEvents(g, v1alpha1.CloudProfileKind, "aws")
	}).WithTimeout(5 * time.Second).Should(Equal(events))
	g.Eventually(func(g Gomega) []string {
		return l.classificationEvents(g, v1alpha1.NamespacedCloudProfileKind, "aws-team")
	}).WithTimeout(5 * time.Second).Should(Equal(events))
	g.Expect(profileWriteCounts(counter)).To(BeEmpty(), "the sync finds the profiles as Git has them")
	figures(t, "manager started 1 year after two transitions: status correct %s after the manager started, status writes %v, profile writes %v",
		correct.Round(10*time.Millisecond), statusWrites(counter), profileWriteCounts(counter))
}
