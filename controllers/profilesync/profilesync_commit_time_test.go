package profilesync

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/fluxcd/pkg/runtime/conditions"
	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"

	v1alpha1 "github.com/profilesync/profilesync/api/v1alpha1"
	"github.com/profilesync/profilesync/internal/policy"
	"github.com/profilesync/profilesync/test/gitserver"
	"github.com/profilesync/profilesync/test/testenv"
)

// redateTip rewrites the tip of main in repo on server as the same change
// (tree, parents, message) whose author and committer claim when: Git
// stores unix seconds, so a commit can claim any year. It returns the new
// commit.
func redateTip(t *testing.T, server *gitserver.Server, repo string, when time.Time) string {
	t.Helper()
	bare, err := git.PlainOpen(filepath.Join(server.Root(), repo+".git"))
	if err != nil {
		t.Fatal(err)
	}
	tip, err := bare.Reference(plumbing.NewBranchReferenceName("main"), true)
	if err != nil {
		t.Fatal(err)
	}
	original, err := bare.CommitObject(tip.Hash())
	if err != nil {
		t.Fatal(err)
	}
	signature := object.Signature{Name: "hostile", Email: "hostile@example.com", When: when}
	redated := &object.Commit{Author: signature, Committer: signature, Message: original.Message, TreeHash: original.TreeHash, ParentHashes: original.ParentHashes}
	encoded := bare.Storer.NewEncodedObject()
	if err := redated.Encode(encoded); err != nil {
		t.Fatal(err)
	}
	hash, err := bare.Storer.SetEncodedObject(encoded)
	if err != nil {
		t.Fatal(err)
	}
	if err := bare.Storer.SetReference(plumbing.NewHashReference(tip.Name(), hash)); err != nil {
		t.Fatal(err)
	}
	return hash.String()
}

// TestACommitTimeNoStatusCanHoldIsIgnoredWithAWarning syncs a landscape
// with a 30-day notice policy, then a commit that deprecates a version in
// two days and whose committer claims year 10000. Measured from that time,
// every stage would already be history and the notice rule would pass the
// commit (it did before CommitTime checked the range); the manager ignores
// the time, says so in a PolicyWarning event naming the commit and the
// field, measures the notice from its clock's now, and keeps patching the
// status: the revision is refused as breaking the notice, the last one
// stays applied.
func TestACommitTimeNoStatusCanHoldIsIgnoredWithAWarning(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ensureNamespace(t, clusterProfilesNamespace)
	server := startGitServer(t)
	profile := testenv.UniqueName("redated")
	repo := testenv.UniqueName("redated")
	commit, err := server.CreateRepo(repo, map[string]string{
		policy.FileName: policyTestPolicy,
		"profiles.yaml": policyTestProfile(profile, "2099-01-01T00:00:00Z", "2099-06-01T00:00:00Z"),
	})
	g.Expect(err).NotTo(HaveOccurred())
	sync := createLandscapeSync(t, repo, server.RepoURL(repo), "", profile)
	waitApplied(t, sync, commit)

	_, err = server.Commit(repo, map[string]string{
		"profiles.yaml": policyTestProfile(profile, time.Now().Add(48*time.Hour).UTC().Format(time.RFC3339), "2099-06-01T00:00:00Z"),
	}, "deprecate 1.31.0 in two days")
	g.Expect(err).NotTo(HaveOccurred())
	hostile := redateTip(t, server, repo, time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC))
	requestSync(t, sync, "after the commit from year 10000")

	g.Eventually(func(g Gomega) {
		got := getProfileSync(g, sync)
		g.Expect(got.Status.LastAttemptedRevision).To(Equal("main@sha1:" + hostile))
		g.Expect(got.Status.LastAppliedRevision).To(Equal("main@sha1:" + commit))
		g.Expect(conditions.IsFalse(got, v1alpha1.ReadyCondition)).To(BeTrue())
		g.Expect(conditions.GetReason(got, v1alpha1.ReadyCondition)).To(Equal(v1alpha1.PolicyViolationReason))
		message := conditions.GetMessage(got, v1alpha1.ReadyCondition)
		g.Expect(message).To(ContainSubstring("spec.kubernetes.versions[0].lifecycle[1].startTime: policy notice: 1.31.0 becomes deprecated"))
		g.Expect(message).To(ContainSubstring("the policy requires 30d notice"))
		g.Expect(message).NotTo(ContainSubstring("10000"))
	}).WithTimeout(20 * time.Second).Should(Succeed())
	g.Expect(testenv.GetCloudProfile(g, k8sClient, profile).Spec.Kubernetes.Versions[0].Lifecycle[1].StartTime.UTC().Year()).To(Equal(2099))

	g.Eventually(func(g Gomega) {
		warnings, err := testenv.Events(ctx, k8sClient,
			testenv.EventQuery{Namespace: clusterProfilesNamespace, Name: sync.Name, Reason: v1alpha1.PolicyWarningReason})
		g.Expect(err).NotTo(HaveOccurred())
		var messages []string
		for _, w := range warnings {
			g.Expect(w.Type).To(Equal(corev1.EventTypeWarning))
			messages = append(messages, w.Message)
		}
		g.Expect(messages).To(ContainElement(And(
			ContainSubstring("commit "+hostile+": committer time"),
			ContainSubstring("outside years 0000 to 9999"),
			ContainSubstring("the policy's notice is measured from now"),
		)))
	}).WithTimeout(10 * time.Second).Should(Succeed())
}
