package profilesync

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/fluxcd/pkg/runtime/conditions"
	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1alpha1 "github.com/profilesync/profilesync/api/v1alpha1"
	"github.com/profilesync/profilesync/test/gitserver"
	"github.com/profilesync/profilesync/test/testenv"
)

// pushMessageBomb makes the tip of main of repo on server a commit whose
// message is size bytes of one byte, on top of the branch's tip: about a
// thousandth of that on the wire. It returns the commit.
func pushMessageBomb(t *testing.T, server *gitserver.Server, repo string, size int64) string {
	t.Helper()
	bareDir := filepath.Join(server.Root(), repo+".git")
	bare, err := git.PlainOpen(bareDir)
	if err != nil {
		t.Fatal(err)
	}
	tip, err := bare.Reference(plumbing.NewBranchReferenceName("main"), true)
	if err != nil {
		t.Fatal(err)
	}
	parent, err := bare.CommitObject(tip.Hash())
	if err != nil {
		t.Fatal(err)
	}
	head := fmt.Sprintf("tree %s\nparent %s\nauthor attacker <a@example.com> 1767225600 +0000\ncommitter attacker <a@example.com> 1767225600 +0000\n\n", parent.TreeHash, parent.Hash)
	bomb, err := gitserver.WriteLooseObject(bareDir, plumbing.CommitObject, []byte(head), size, 'a', []byte("\n"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(bareDir, "refs", "heads", "main"), []byte(bomb.String()+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return bomb.String()
}

// The attack of issue 31: a tenant's ProfileSync fetches a commit whose
// message is 1 GiB, about 1 MiB on the wire. The manager refuses it from
// the objects' headers, as a revision (BuildFailed, stalled, naming the
// commit, its size, the bound and the flag), remembers it without
// downloading it again, and its heap does not move meaningfully; a platform
// ProfileSync next to it goes on applying new revisions.
func TestACommitWithAHugeMessageIsRefusedFromItsHeaderWhileOtherSyncsGoOn(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ensureNamespace(t, clusterProfilesNamespace)
	ensureNamespace(t, "team-bomb")
	server := startGitServer(t)
	platform := applyGoodRevision(t, server, "platform")

	tenantRepo := testenv.UniqueName("tenant-bomb")
	_, err := server.CreateRepo(tenantRepo, map[string]string{"README.md": "tenant\n"})
	g.Expect(err).NotTo(HaveOccurred())
	bomb := pushMessageBomb(t, server, tenantRepo, 1<<30)

	baseline := heapInUse()
	heap := watchHeap()
	tenant := &v1alpha1.ProfileSync{
		ObjectMeta: metav1.ObjectMeta{Name: "tenant", Namespace: "team-bomb"},
		Spec:       v1alpha1.ProfileSyncSpec{URL: server.RepoURL(tenantRepo), Interval: metav1.Duration{Duration: time.Hour}},
	}
	g.Expect(k8sClient.Create(ctx, tenant)).To(Succeed())
	t.Cleanup(func() { _ = k8sClient.Delete(ctx, tenant) })

	// Meanwhile the platform's landscape takes two new revisions.
	for _, version := range []string{"1.32.0", "1.33.0"} {
		next, err := server.Commit(platform.repo, singleProfileRepo(platform.profile, version), "next")
		g.Expect(err).NotTo(HaveOccurred())
		requestSync(t, platform.sync, version)
		waitApplied(t, platform.sync, next)
		g.Expect(conditions.IsReady(getProfileSync(g, platform.sync))).To(BeTrue())
	}

	g.Eventually(func(g Gomega) {
		got := getProfileSync(g, tenant)
		g.Expect(conditions.GetReason(got, v1alpha1.ReadyCondition)).To(Equal(v1alpha1.BuildFailedReason))
		g.Expect(conditions.IsStalled(got)).To(BeTrue(), "the same revision would be refused the same way")
		g.Expect(got.Status.LastAttemptedRevision).To(Equal("main@sha1:" + bomb))
		message := conditions.GetMessage(got, v1alpha1.ReadyCondition)
		g.Expect(message).To(ContainSubstring("commit " + bomb + " refused"))
		g.Expect(message).To(ContainSubstring(" is 1 GiB, more than the 2 MiB a commit may have"))
		g.Expect(message).To(ContainSubstring("(raise it with --max-checkout-size)"))
	}).WithTimeout(60 * time.Second).Should(Succeed())
	peak := heap.Stop()
	t.Logf("heap in use: %d MiB before, %d MiB at the peak of the refusal", baseline>>20, peak>>20)
	if peak > baseline {
		g.Expect(peak-baseline).To(BeNumerically("<", 64<<20), "the 1 GiB commit is never inflated in the manager")
	}

	uploads := server.Requests().UploadPacks
	requestSync(t, tenant, "again")
	g.Eventually(func(g Gomega) {
		got := getProfileSync(g, tenant)
		g.Expect(got.Status.LastHandledReconcileAt).To(Equal("again"))
		g.Expect(conditions.GetReason(got, v1alpha1.ReadyCondition)).To(Equal(v1alpha1.BuildFailedReason))
	}).WithTimeout(30 * time.Second).Should(Succeed())
	g.Expect(server.Requests().UploadPacks).To(Equal(uploads), "the refused revision is not downloaded again")
}
