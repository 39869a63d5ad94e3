package faults

import (
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
)

// killMidSync has a manager apply a first revision (the CloudProfile aws),
// then commits second, requests a sync and kills the manager in the middle
// of the first request of that sync that block picks. It returns the
// second commit.
func (l *landscape) killMidSync(block func(write) bool, second map[string]string) string {
	l.t.Helper()
	first := l.commit(profilesRepo([]string{"1.33.0"}, []string{"aws"}, nil))
	l.createSync(time.Hour)
	faults := &faultTransport{}
	m := l.startManager(managerConfig{faults: faults})
	l.waitApplied(first, 30*time.Second)

	hit := make(chan write, 1)
	faults.inject(blockUntilCancelled(block, hit))
	sha := l.commit(second)
	l.requestSync("second")
	select {
	case <-hit:
	case <-time.After(30 * time.Second):
		l.t.Fatal("the sync never made the request the test waits for")
	}
	if err := m.Stop(); err != nil {
		l.t.Fatalf("stop the manager: %v", err)
	}
	return sha
}

// TestRestartBetweenStagesConvergesToTheWholeRevision: the manager is
// killed after it applied a revision's CloudProfiles and before its
// NamespacedCloudProfiles. The next manager applies the rest and records
// all of it.
func TestRestartBetweenStagesConvergesToTheWholeRevision(t *testing.T) {
	g := NewWithT(t)
	l := newLandscape(t)
	// The new parent is applied in the second stage, its child in the third.
	second := l.killMidSync(apiWrite("namespacedcloudprofiles"), profilesRepo([]string{"1.33.0"}, []string{"aws", "gcp"}, []string{"gcp-team"}))
	g.Expect(l.onCluster(g)).To(Equal([]string{"CloudProfile//aws", "CloudProfile//gcp"}), "killed after the parents' stage")
	killed := l.current(g)
	g.Expect(killed.Status.LastAppliedRevision).NotTo(Equal("main@sha1:"+second), "the status still has the first revision")
	g.Expect(inventory(killed)).To(Equal([]string{"CloudProfile//aws", "CloudProfile//gcp", "NamespacedCloudProfile/team-a/gcp-team"}),
		"and, in the inventory, what the second was about to write")

	counter := &faultTransport{}
	start := time.Now()
	l.startManager(managerConfig{faults: counter})
	applied := l.waitApplied(second, 30*time.Second)
	t.Logf("converged %s after the restart, %d object writes", time.Since(start).Round(100*time.Millisecond), len(counter.recorded(objectWrites)))
	want := []string{"CloudProfile//aws", "CloudProfile//gcp", "NamespacedCloudProfile/team-a/gcp-team"}
	g.Expect(inventory(applied)).To(Equal(want))
	g.Expect(l.onCluster(g)).To(Equal(want))
}

// TestRestartBetweenStagesThenARevertPrunesWhatWasWritten: killed in the
// same place, but the commit is reverted before a manager runs again. The
// killed sync recorded the objects it was about to write in its inventory
// before writing any of them, so the CloudProfile it wrote is the sync's
// (whatever its labels say) and is pruned.
func TestRestartBetweenStagesThenARevertPrunesWhatWasWritten(t *testing.T) {
	g := NewWithT(t)
	l := newLandscape(t)
	l.killMidSync(apiWrite("namespacedcloudprofiles"), profilesRepo([]string{"1.33.0"}, []string{"aws", "gcp"}, []string{"gcp-team"}))

	reverted := l.commit(profilesRepo([]string{"1.33.0"}, []string{"aws"}, nil))
	start := time.Now()
	l.startManager(managerConfig{})
	applied := l.waitApplied(reverted, 30*time.Second)
	t.Logf("converged %s after the restart", time.Since(start).Round(100*time.Millisecond))
	g.Expect(inventory(applied)).To(Equal([]string{"CloudProfile//aws"}))
	g.Eventually(l.onCluster).Should(Equal([]string{"CloudProfile//aws"}), "the half-applied CloudProfile is pruned")
}

// TestRestartBeforeTheStatusPatchRewritesNothing: the manager is killed
// after the whole revision is applied and before the ProfileSync's status
// says so (the status write that records lastAppliedRevision; an earlier one
// recorded only the objects about to be written in the inventory). The next
// manager finds every object as Git has it, writes none of them again, and
// records the revision.
func TestRestartBeforeTheStatusPatchRewritesNothing(t *testing.T) {
	g := NewWithT(t)
	l := newLandscape(t)
	second := l.killMidSync(func(w write) bool {
		return w.Resource == "profilesyncs" && w.Subresource == "status" && strings.Contains(w.Body, "lastAppliedRevision")
	}, profilesRepo([]string{"1.33.0", "1.34.1"}, []string{"aws", "gcp"}, []string{"gcp-team"}))
	want := []string{"CloudProfile//aws", "CloudProfile//gcp", "NamespacedCloudProfile/team-a/gcp-team"}
	g.Expect(l.onCluster(g)).To(Equal(want))

	counter := &faultTransport{}
	start := time.Now()
	l.startManager(managerConfig{faults: counter})
	applied := l.waitApplied(second, 30*time.Second)
	t.Logf("converged %s after the restart", time.Since(start).Round(100*time.Millisecond))
	g.Expect(inventory(applied)).To(Equal(want))
	g.Expect(counter.recorded(apiWrite("cloudprofiles"))).To(BeEmpty(), "unchanged CloudProfiles are not written again")
	g.Expect(counter.recorded(apiWrite("namespacedcloudprofiles"))).To(BeEmpty(), "unchanged NamespacedCloudProfiles are not written again")
}
