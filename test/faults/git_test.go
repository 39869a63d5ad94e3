package faults

import (
	"sync"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	apimeta "k8s.io/apimachinery/pkg/api/meta"

	v1alpha1 "github.com/profilesync/profilesync/api/v1alpha1"
	"github.com/profilesync/profilesync/test/gitserver"
)

// TestGitServerDownAtStartRecoversWhenItComesBack: the manager starts while
// the Git server refuses connections. The sync reports FetchFailed, writes
// no profile, and retries with backoff (not at spec.interval, an hour
// here); once the server is back it applies the revision without anyone
// asking.
func TestGitServerDownAtStartRecoversWhenItComesBack(t *testing.T) {
	g := NewWithT(t)
	l := newLandscape(t)
	proxy := l.gitProxy()
	head := l.commit(profilesRepo([]string{"1.33.0"}, []string{"aws"}, []string{"aws-team"}))
	setMode(t, proxy, gitserver.Down)
	l.createSyncThrough(proxy, nil, time.Hour, 0)
	counter := &faultTransport{}
	l.startManager(managerConfig{faults: counter})

	failed, _ := l.waitFetchFailed(20*time.Second, "list refs of "+proxy.RepoURL(l.repo), "connection refused")
	g.Expect(failed.Status.LastAppliedRevision).To(BeEmpty())
	g.Expect(failed.Status.Inventory).To(BeNil())
	// Down for a while, so the backoff has grown as it would in an outage.
	time.Sleep(3 * time.Second)
	g.Expect(l.onCluster(g)).To(BeEmpty())
	g.Expect(profileWriteCounts(counter)).To(BeEmpty())

	setMode(t, proxy, gitserver.Pass)
	applied, converged := l.waitRevision("main@sha1:"+head, 20*time.Second)
	want := []string{"CloudProfile//aws", "NamespacedCloudProfile/team-a/aws-team"}
	g.Expect(inventory(applied)).To(Equal(want))
	g.Expect(l.onCluster(g)).To(Equal(want))
	g.Expect(applied.Status.Conditions).NotTo(ContainElement(HaveField("Type", v1alpha1.FetchFailedCondition)), "FetchFailed is cleared")
	g.Expect(profileWriteCounts(counter)).To(Equal(map[string]int{"PATCH cloudprofiles": 1, "PATCH namespacedcloudprofiles": 1}))
	events := l.warningEvents(g)
	g.Expect(events[v1alpha1.FetchFailedReason]).To(HaveLen(1), "one event for the outage, however often it was retried")
	figures(t, "down 3s+: converged %s after the server came back, profile writes %v, FetchFailed warnings %d",
		converged.Round(10*time.Millisecond), profileWriteCounts(counter), len(events[v1alpha1.FetchFailedReason]))
}

// TestGitServerFlappingConvergesWithoutPartialRevisions: the server goes
// down and up every 300 ms while a new revision waits. Every failed fetch
// keeps the last revision whole on the cluster; the new one is applied once
// a fetch gets through, each changed profile written once.
func TestGitServerFlappingConvergesWithoutPartialRevisions(t *testing.T) {
	g := NewWithT(t)
	l := newLandscape(t)
	proxy := l.gitProxy()
	first := l.commit(profilesRepo([]string{"1.33.0"}, []string{"aws"}, nil))
	l.createSyncThrough(proxy, nil, time.Hour, 0)
	counter := l.startCounted("main@sha1:"+first, 20*time.Second)

	stop := make(chan struct{})
	var flapping sync.WaitGroup
	flapping.Add(1)
	go func() {
		defer flapping.Done()
		mode := gitserver.Down
		for {
			if err := proxy.SetMode(mode); err != nil {
				t.Errorf("flap: %v", err)
				return
			}
			select {
			case <-stop:
				return
			case <-time.After(300 * time.Millisecond):
			}
			mode = map[gitserver.FaultMode]gitserver.FaultMode{gitserver.Down: gitserver.Pass, gitserver.Pass: gitserver.Down}[mode]
		}
	}()
	defer func() { close(stop); flapping.Wait() }()

	second := l.commit(profilesRepo([]string{"1.33.0", "1.34.1"}, []string{"aws", "gcp"}, []string{"gcp-team"}))
	l.requestSync("second")
	started := time.Now()
	// Whatever the sync sees, the cluster holds one revision or the other,
	// whole: never the second's CloudProfiles with the first's status.
	firstWhole := []string{"CloudProfile//aws"}
	secondWhole := []string{"CloudProfile//aws", "CloudProfile//gcp", "NamespacedCloudProfile/team-a/gcp-team"}
	g.Eventually(func(g Gomega) {
		ps := l.current(g)
		switch ps.Status.LastAppliedRevision {
		case "main@sha1:" + first:
			g.Expect(inventory(ps)).To(Equal(firstWhole))
		case "main@sha1:" + second:
			g.Expect(inventory(ps)).To(Equal(secondWhole))
		default:
			g.Expect(ps.Status.LastAppliedRevision).To(BeElementOf("main@sha1:"+first, "main@sha1:"+second))
		}
		g.Expect(ps.Status.LastAppliedRevision).To(Equal("main@sha1:"+second), "Ready: %v", apimeta.FindStatusCondition(ps.Status.Conditions, v1alpha1.ReadyCondition))
	}).WithTimeout(25 * time.Second).WithPolling(50 * time.Millisecond).Should(Succeed())
	converged := time.Since(started)
	applied, _ := l.waitRevision("main@sha1:"+second, 5*time.Second)
	g.Expect(inventory(applied)).To(Equal(secondWhole))
	g.Expect(l.onCluster(g)).To(Equal(secondWhole))
	g.Expect(l.kubernetesVersions(g, "aws")).To(Equal([]string{"1.33.0", "1.34.1"}))
	writes := profileWriteCounts(counter)
	g.Expect(writes).To(Equal(map[string]int{"PATCH cloudprofiles": 2, "PATCH namespacedcloudprofiles": 1}), "aws changed, gcp and gcp-team are new: one write each")
	figures(t, "flapping 300ms down/300ms up: converged %s, profile writes %v, FetchFailed warnings %d",
		converged.Round(10*time.Millisecond), writes, len(l.warningEvents(g)[v1alpha1.FetchFailedReason]))
}

// TestGitServerThatNeverAnswersEndsAtTheTimeout: the server accepts the
// connection and never answers. The fetch gives up at spec.timeout (1s
// here), the sync reports FetchFailed saying so, and the last revision
// stays applied and recorded.
func TestGitServerThatNeverAnswersEndsAtTheTimeout(t *testing.T) {
	g := NewWithT(t)
	l := newLandscape(t)
	proxy := l.gitProxy()
	first := l.commit(profilesRepo([]string{"1.33.0"}, []string{"aws"}, nil))
	l.createSyncThrough(proxy, nil, time.Hour, time.Second)
	counter := l.startCounted("main@sha1:"+first, 20*time.Second)

	setMode(t, proxy, gitserver.Hang)
	second := l.commit(profilesRepo([]string{"1.33.0", "1.34.1"}, []string{"aws"}, nil))
	l.requestSync("hang")
	failed, took := l.waitFetchFailed(10*time.Second, "timed out after 1s")
	g.Expect(took).To(BeNumerically(">=", 900*time.Millisecond), "not before the timeout")
	g.Expect(failed.Status.LastAppliedRevision).To(Equal("main@sha1:" + first))
	g.Expect(inventory(failed)).To(Equal([]string{"CloudProfile//aws"}))
	g.Expect(l.kubernetesVersions(g, "aws")).To(Equal([]string{"1.33.0"}))
	g.Expect(profileWriteCounts(counter)).To(BeEmpty())
	g.Expect(proxy.Requests(gitserver.Hang)).To(BeNumerically(">=", 1))

	setMode(t, proxy, gitserver.Pass)
	_, converged := l.waitRevision("main@sha1:"+second, 20*time.Second)
	g.Expect(l.kubernetesVersions(g, "aws")).To(Equal([]string{"1.33.0", "1.34.1"}))
	figures(t, "hang with spec.timeout=1s: FetchFailed after %s, converged %s after the server answered, profile writes %v",
		took.Round(10*time.Millisecond), converged.Round(10*time.Millisecond), profileWriteCounts(counter))
}

// TestGitForcePushAppliesTheRewrittenHead: the branch is force-pushed to a
// commit that does not descend from the applied one. The sync applies the
// new head, as it would any other.
func TestGitForcePushAppliesTheRewrittenHead(t *testing.T) {
	g := NewWithT(t)
	l := newLandscape(t)
	base := l.commit(profilesRepo([]string{"1.33.0"}, []string{"aws"}, nil))
	applied := l.commit(profilesRepo([]string{"1.33.0", "1.34.0"}, []string{"aws"}, nil))
	l.createSync(time.Hour)
	counter := l.startCounted("main@sha1:"+applied, 20*time.Second)

	rewritten, err := l.git.ForcePush(l.repo, gitserver.DefaultBranch, base,
		profilesRepo([]string{"1.33.0", "1.34.1"}, []string{"aws"}, nil), "amend: 1.34.1, not 1.34.0")
	g.Expect(err).NotTo(HaveOccurred())
	l.requestSync("rewritten")
	ps, converged := l.waitRevision("main@sha1:"+rewritten, 20*time.Second)
	g.Expect(inventory(ps)).To(Equal([]string{"CloudProfile//aws"}))
	g.Expect(l.kubernetesVersions(g, "aws")).To(Equal([]string{"1.33.0", "1.34.1"}))
	g.Expect(profileWriteCounts(counter)).To(Equal(map[string]int{"PATCH cloudprofiles": 1}))
	figures(t, "force-push: applied %s after the sync request, profile writes %v", converged.Round(10*time.Millisecond), profileWriteCounts(counter))
}

// TestGitDeletedBranchFailsClearlyAndPrunesNothing: the branch the sync
// follows is deleted. The sync reports FetchFailed naming the branch and
// the branches there are; every profile stays on the cluster and in the
// inventory, and nothing is deleted.
func TestGitDeletedBranchFailsClearlyAndPrunesNothing(t *testing.T) {
	g := NewWithT(t)
	l := newLandscape(t)
	proxy := l.gitProxy()
	l.commit(profilesRepo([]string{"1.33.0"}, []string{"aws"}, nil))
	release, err := l.git.CommitOnBranch(l.repo, "release", profilesRepo([]string{"1.33.0"}, []string{"aws", "gcp"}, []string{"gcp-team"}), "release")
	g.Expect(err).NotTo(HaveOccurred())
	l.createSyncThrough(proxy, &v1alpha1.GitReference{Branch: "release"}, time.Hour, 0)
	counter := l.startCounted("release@sha1:"+release, 20*time.Second)

	g.Expect(l.git.DeleteBranch(l.repo, "release")).To(Succeed())
	l.requestSync("deleted")
	failed, took := l.waitFetchFailed(10*time.Second, `branch "release" not found`, "branches: main")
	want := []string{"CloudProfile//aws", "CloudProfile//gcp", "NamespacedCloudProfile/team-a/gcp-team"}
	g.Expect(failed.Status.LastAppliedRevision).To(Equal("release@sha1:" + release))
	g.Expect(inventory(failed)).To(Equal(want))
	// Retries (with backoff) find the same; nothing is pruned meanwhile.
	g.Consistently(l.onCluster).WithTimeout(3 * time.Second).Should(Equal(want))
	g.Expect(profileWriteCounts(counter)).To(BeEmpty(), "no apply, no delete")
	figures(t, "branch deleted: FetchFailed after %s, profile writes %v, FetchFailed warnings %d",
		took.Round(10*time.Millisecond), profileWriteCounts(counter), len(l.warningEvents(g)[v1alpha1.FetchFailedReason]))
}

// TestGitMovedTagIsFollowed: spec.ref.tag names a tag that is then moved
// to another commit (git tag --force and a forced push). The sync applies
// the commit the tag names now, as Flux's GitRepository does: a tag is a
// name, and the revision reports the commit.
func TestGitMovedTagIsFollowed(t *testing.T) {
	g := NewWithT(t)
	l := newLandscape(t)
	first := l.commit(profilesRepo([]string{"1.33.0"}, []string{"aws"}, nil))
	g.Expect(l.git.Tag(l.repo, "stable", first)).To(Succeed())
	proxy := l.gitProxy()
	l.createSyncThrough(proxy, &v1alpha1.GitReference{Tag: "stable"}, time.Hour, 0)
	counter := l.startCounted("stable@sha1:"+first, 20*time.Second)

	second := l.commit(profilesRepo([]string{"1.33.0", "1.34.1"}, []string{"aws"}, nil))
	g.Expect(l.git.MoveTag(l.repo, "stable", second)).To(Succeed())
	l.requestSync("moved")
	_, converged := l.waitRevision("stable@sha1:"+second, 20*time.Second)
	g.Expect(l.kubernetesVersions(g, "aws")).To(Equal([]string{"1.33.0", "1.34.1"}))
	g.Expect(profileWriteCounts(counter)).To(Equal(map[string]int{"PATCH cloudprofiles": 1}))
	figures(t, "tag moved: applied %s after the sync request, profile writes %v", converged.Round(10*time.Millisecond), profileWriteCounts(counter))
}

// TestGitSemVerRangeGainsANewerTag: a tag newer than the applied one and
// inside spec.ref.semver is pushed (and one outside it). The next sync, at
// spec.interval without anyone asking, applies the newer tag in range.
func TestGitSemVerRangeGainsANewerTag(t *testing.T) {
	g := NewWithT(t)
	l := newLandscape(t)
	first := l.commit(profilesRepo([]string{"1.33.0"}, []string{"aws"}, nil))
	g.Expect(l.git.Tag(l.repo, "v1.0.0", first)).To(Succeed())
	proxy := l.gitProxy()
	const interval = 2 * time.Second
	l.createSyncThrough(proxy, &v1alpha1.GitReference{SemVer: ">=1.0.0 <2.0.0"}, interval, 0)
	counter := l.startCounted("v1.0.0@sha1:"+first, 20*time.Second)

	second := l.commit(profilesRepo([]string{"1.33.0", "1.34.1"}, []string{"aws"}, nil))
	g.Expect(l.git.Tag(l.repo, "v1.1.0", second)).To(Succeed())
	outOfRange := l.commit(profilesRepo([]string{"1.33.0", "1.34.1", "1.35.0"}, []string{"aws"}, nil))
	g.Expect(l.git.Tag(l.repo, "v2.0.0", outOfRange)).To(Succeed())
	_, converged := l.waitRevision("v1.1.0@sha1:"+second, 4*interval)
	g.Consistently(func(g Gomega) string { return l.current(g).Status.LastAppliedRevision }).
		WithTimeout(2*interval).Should(Equal("v1.1.0@sha1:"+second), "v2.0.0 is outside the range")
	g.Expect(l.kubernetesVersions(g, "aws")).To(Equal([]string{"1.33.0", "1.34.1"}))
	g.Expect(profileWriteCounts(counter)).To(Equal(map[string]int{"PATCH cloudprofiles": 1}))
	figures(t, "semver gains a tag, interval %s: applied after %s, profile writes %v", interval, converged.Round(10*time.Millisecond), profileWriteCounts(counter))
}

// TestGitBrokenPackIsRefusedAndTheNextGoodFetchApplies: the server's pack
// arrives corrupted, then truncated. Each fetch is refused (FetchFailed),
// the last revision stays, and the Git cache keeps nothing of them: the
// next sound fetch applies the new revision.
func TestGitBrokenPackIsRefusedAndTheNextGoodFetchApplies(t *testing.T) {
	g := NewWithT(t)
	l := newLandscape(t)
	proxy := l.gitProxy()
	first := l.commit(profilesRepo([]string{"1.33.0"}, []string{"aws"}, nil))
	l.createSyncThrough(proxy, nil, time.Hour, 0)
	counter := l.startCounted("main@sha1:"+first, 20*time.Second)

	second := l.commit(profilesRepo([]string{"1.33.0", "1.34.1"}, []string{"aws"}, nil))
	for _, broken := range []struct {
		mode gitserver.FaultMode
		says string
	}{
		{gitserver.CorruptPack, "fetch HEAD of " + proxy.RepoURL(l.repo)},
		{gitserver.TruncatePack, "unexpected EOF"},
	} {
		setMode(t, proxy, broken.mode)
		l.requestSync(broken.mode.String())
		failed, _ := l.waitFetchFailed(10*time.Second, broken.says)
		g.Expect(failed.Status.LastAppliedRevision).To(Equal("main@sha1:"+first), broken.mode.String())
		g.Expect(inventory(failed)).To(Equal([]string{"CloudProfile//aws"}))
		g.Expect(l.kubernetesVersions(g, "aws")).To(Equal([]string{"1.33.0"}))
		g.Expect(proxy.Requests(broken.mode)).To(BeNumerically(">=", 2), "the listing and the pack went through the fault")
	}
	g.Expect(profileWriteCounts(counter)).To(BeEmpty())

	setMode(t, proxy, gitserver.Pass)
	_, converged := l.waitRevision("main@sha1:"+second, 20*time.Second)
	g.Expect(l.kubernetesVersions(g, "aws")).To(Equal([]string{"1.33.0", "1.34.1"}))
	g.Expect(profileWriteCounts(counter)).To(Equal(map[string]int{"PATCH cloudprofiles": 1}))
	figures(t, "corrupted then truncated pack: converged %s after sound packs, profile writes %v, FetchFailed warnings %d",
		converged.Round(10*time.Millisecond), profileWriteCounts(counter), len(l.warningEvents(g)[v1alpha1.FetchFailedReason]))
}
