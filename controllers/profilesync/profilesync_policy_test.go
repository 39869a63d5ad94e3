package profilesync

import (
	"context"
	"testing"
	"time"

	"github.com/fluxcd/pkg/runtime/conditions"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1alpha1 "github.com/profilesync/profilesync/api/v1alpha1"
	"github.com/profilesync/profilesync/internal/policy"
	"github.com/profilesync/profilesync/test/builders"
	"github.com/profilesync/profilesync/test/testenv"
)

// policyTestPolicy asks for 30 days' notice (an error) and warns of expiries
// that force clusters across a minor.
const policyTestPolicy = `apiVersion: policy.profilesync.io/v1alpha1
kind: VersioningPolicy
rules:
  notice:
    severity: error
    days: 30
  forcedUpdates:
    severity: warning
`

// policyTestProfile has 1.31.0 deprecated at deprecation and expired at
// expiry, then 1.32.0: the expiry forces clusters on 1.31.0 to 1.32.0.
func policyTestProfile(name, deprecation, expiry string) string {
	return `apiVersion: core.profilesync.io/v1alpha1
kind: CloudProfile
metadata:
  name: ` + name + `
spec:
  type: local
` + builders.RequiredListsYAML + `  kubernetes:
    versions:
    - version: 1.31.0
      lifecycle:
      - classification: supported
      - classification: deprecated
        startTime: "` + deprecation + `"
      - classification: expired
        startTime: "` + expiry + `"
    - version: 1.32.0
`
}

// TestARevisionBreakingItsPolicyIsRefusedWhole syncs a landscape whose
// repository has a versioning policy: its warnings are events, once per
// revision; a commit that expires a version on two days' notice, and adds a
// profile, is refused whole before anything is written
// (ValidationFailed/PolicyViolation), and the last revision stays.
func TestARevisionBreakingItsPolicyIsRefusedWhole(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ensureNamespace(t, clusterProfilesNamespace)
	server := startGitServer(t)
	profile, added := testenv.UniqueName("policed"), testenv.UniqueName("policed-added")
	repo := testenv.UniqueName("policed")
	commit, err := server.CreateRepo(repo, map[string]string{
		policy.FileName: policyTestPolicy,
		"profiles.yaml": policyTestProfile(profile, "2099-01-01T00:00:00Z", "2099-06-01T00:00:00Z"),
	})
	g.Expect(err).NotTo(HaveOccurred())
	sync := createLandscapeSync(t, repo, server.RepoURL(repo), "", profile, added)
	waitApplied(t, sync, commit)

	policyWarnings := func(g Gomega) []corev1.Event {
		found, err := testenv.Events(ctx, k8sClient,
			testenv.EventQuery{Namespace: clusterProfilesNamespace, Name: sync.Name, Reason: v1alpha1.PolicyWarningReason})
		g.Expect(err).NotTo(HaveOccurred())
		return found
	}
	g.Eventually(func(g Gomega) {
		warnings := policyWarnings(g)
		g.Expect(warnings).To(HaveLen(1))
		g.Expect(warnings[0].Type).To(Equal(corev1.EventTypeWarning))
		g.Expect(warnings[0].Message).To(ContainSubstring("profiles.yaml: CloudProfile/" + profile + ": spec.kubernetes.versions[0].lifecycle[2].startTime: policy forcedUpdates:"))
		g.Expect(warnings[0].Message).To(ContainSubstring("1.31.0 → 1.32.0"))
	}).WithTimeout(15 * time.Second).Should(Succeed())
	before := testenv.GetCloudProfile(g, k8sClient, profile).Spec

	// Two days' notice for the deprecation and the expiry, and a new
	// profile in the same commit.
	soon := func(d time.Duration) string { return time.Now().Add(d).UTC().Format(time.RFC3339) }
	broken, err := server.Commit(repo, map[string]string{
		"profiles.yaml": policyTestProfile(profile, soon(24*time.Hour), soon(48*time.Hour)) + "---\n" +
			singleProfileRepo(added, "1.32.0")["profiles.yaml"],
	}, "expire 1.31.0 in two days")
	g.Expect(err).NotTo(HaveOccurred())
	requestSync(t, sync, "after the policy-breaking commit")
	g.Eventually(func(g Gomega) {
		got := getProfileSync(g, sync)
		g.Expect(got.Status.LastAttemptedRevision).To(Equal("main@sha1:" + broken))
		g.Expect(conditions.IsFalse(got, v1alpha1.ReadyCondition)).To(BeTrue())
		g.Expect(conditions.GetReason(got, v1alpha1.ReadyCondition)).To(Equal(v1alpha1.PolicyViolationReason))
		g.Expect(conditions.IsTrue(got, v1alpha1.ValidationFailedCondition)).To(BeTrue())
		g.Expect(conditions.GetReason(got, v1alpha1.ValidationFailedCondition)).To(Equal(v1alpha1.PolicyViolationReason))
		g.Expect(conditions.IsStalled(got)).To(BeTrue())
		message := conditions.GetMessage(got, v1alpha1.ReadyCondition)
		g.Expect(message).To(ContainSubstring("breaks the versioning policy " + policy.FileName))
		g.Expect(message).To(ContainSubstring("profiles.yaml: CloudProfile/" + profile + ": spec.kubernetes.versions[0].lifecycle[1].startTime: policy notice: 1.31.0 becomes deprecated"))
		g.Expect(message).To(ContainSubstring("spec.kubernetes.versions[0].lifecycle[2].startTime: policy notice: 1.31.0 becomes expired"))
		g.Expect(message).To(ContainSubstring("the policy requires 30d notice"))
		g.Expect(got.Status.LastAppliedRevision).To(Equal("main@sha1:" + commit))
	}).WithTimeout(15 * time.Second).Should(Succeed())

	// Nothing of the refused revision reached the cluster.
	g.Expect(testenv.GetCloudProfile(g, k8sClient, profile).Spec).To(Equal(before))
	err = k8sClient.Get(ctx, client.ObjectKey{Name: added}, &v1alpha1.CloudProfile{})
	g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "the profile the refused revision adds is not created")

	// Events are recorded asynchronously: the status may come first.
	g.Eventually(func(g Gomega) []corev1.Event {
		refusals, err := testenv.Events(ctx, k8sClient,
			testenv.EventQuery{Namespace: clusterProfilesNamespace, Name: sync.Name, Reason: v1alpha1.PolicyViolationReason})
		g.Expect(err).NotTo(HaveOccurred())
		return refusals
	}).WithTimeout(10*time.Second).ShouldNot(BeEmpty(), "the refusal is an event too")
}
