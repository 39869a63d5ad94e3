package faults

import (
	"testing"
	"time"

	. "github.com/onsi/gomega"

	"github.com/profilesync/profilesync/test/testenv"
)

// profileWrites are a manager's writes of profiles and ProfileSyncs, and
// of their status: everything but Leases and Events.
func profileWrites(w write) bool {
	switch w.Resource {
	case "cloudprofiles", "namespacedcloudprofiles", "profilesyncs":
		return !w.DryRun
	}
	return false
}

// waitElected waits until m leads and returns how long that took.
func waitElected(t *testing.T, m *testenv.Manager, timeout time.Duration) time.Duration {
	t.Helper()
	start := time.Now()
	select {
	case <-m.Elected():
		return time.Since(start)
	case <-time.After(timeout):
		t.Fatalf("not elected within %s", timeout)
		return 0
	}
}

// TestLeaderElectionOneWriterAndHandovers: replicas with leader election.
// Only the leader writes. When it is killed, a standby takes over once the
// lease has run out; when it is stopped (SIGTERM, a rolling update), it
// releases the lease and a standby takes over at its next retry. The new
// leader finds nothing to write until Git changes, and then writes only
// what changed.
func TestLeaderElectionOneWriterAndHandovers(t *testing.T) {
	const (
		lease = 4 * time.Second
		retry = lease / 4 // as startManager sets it
		// client-go's elector retries every retry period with up to 1.2 of
		// jitter, and counts the lease from when it saw the last renewal.
		jitteredRetry = retry * 22 / 10
		// scheduling is the slack for a loaded machine: the stopped
		// manager's goroutines and the other packages' tests share the
		// cores (7.4 s was seen on 2 cores under a full make test).
		scheduling = 2 * time.Second
	)
	g := NewWithT(t)
	l := newLandscape(t)
	first := l.commit(profilesRepo([]string{"1.33.0"}, []string{"aws", "gcp"}, []string{"gcp-a"}))
	killedWrites, secondWrites, thirdWrites := &faultTransport{}, &faultTransport{}, &faultTransport{}
	killed := l.startManager(managerConfig{faults: killedWrites, leaderElection: true, leaseDuration: lease})
	waitElected(t, killed, 2*lease)
	second := l.startManager(managerConfig{faults: secondWrites, leaderElection: true, leaseDuration: lease, releaseLease: true})
	l.createSync(time.Hour)
	l.waitApplied(first, 30*time.Second)

	// Wait out a few lease renewals: the standby must stay passive.
	time.Sleep(lease)
	g.Expect(killedWrites.recorded(profileWrites)).NotTo(BeEmpty())
	g.Expect(secondWrites.recorded(profileWrites)).To(BeEmpty(), "the standby writes nothing")
	select {
	case <-second.Elected():
		t.Fatal("both replicas lead")
	default:
	}

	g.Expect(killed.Stop()).To(Succeed())
	handover := waitElected(t, second, 3*lease)
	t.Logf("killed leader: handover after %s (lease %s)", handover.Round(100*time.Millisecond), lease)
	g.Expect(handover).To(BeNumerically("<=", lease+jitteredRetry+scheduling), "within the lease and a retry")

	// The new leader syncs at once (it has never synced this ProfileSync)
	// and finds everything as Git has it.
	l.requestSync("after-handover")
	g.Eventually(func(g Gomega) {
		g.Expect(l.current(g).Status.LastHandledReconcileAt).To(Equal("after-handover"))
	}).WithTimeout(30 * time.Second).Should(Succeed())
	time.Sleep(time.Second) // let the status controllers have their say
	g.Expect(secondWrites.recorded(apiWrite("cloudprofiles"))).To(BeEmpty(), "unchanged CloudProfiles are not rewritten")
	g.Expect(secondWrites.recorded(apiWrite("namespacedcloudprofiles"))).To(BeEmpty(), "unchanged NamespacedCloudProfiles are not rewritten")

	third := l.startManager(managerConfig{faults: thirdWrites, leaderElection: true, leaseDuration: lease, releaseLease: true})
	g.Expect(second.Stop()).To(Succeed())
	handover = waitElected(t, third, 3*lease)
	t.Logf("stopped leader: handover after %s", handover.Round(100*time.Millisecond))
	g.Expect(handover).To(BeNumerically("<=", jitteredRetry+time.Second), "a released lease is taken at the next retry")

	changed := l.commit(profilesRepo([]string{"1.33.0", "1.34.1"}, []string{"aws", "gcp"}, []string{"gcp-a"}))
	l.requestSync("changed")
	l.waitApplied(changed, 30*time.Second)
	written := map[string]int{}
	for _, w := range thirdWrites.recorded(objectWrites) {
		written[w.Resource+"/"+w.Name]++
	}
	g.Expect(written).To(Equal(map[string]int{"cloudprofiles/aws": 1, "cloudprofiles/gcp": 1}), "only what the commit changed is written, once")
}
