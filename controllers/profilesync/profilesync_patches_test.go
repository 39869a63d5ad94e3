package profilesync

import (
	"context"
	"testing"
	"time"

	"github.com/fluxcd/pkg/runtime/conditions"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"

	v1alpha1 "github.com/profilesync/profilesync/api/v1alpha1"
	"github.com/profilesync/profilesync/test/testenv"
)

// TestAPartialEntryAPatchCreatesIsReportedAsABuildWarning syncs an overlay
// whose strategic-merge patch names, by version, an image version its base
// no longer has: kustomize creates it from the patch alone, without the
// architectures every other version has, and says nothing; the revision is
// applied, and a BuildWarning event names the kustomization and the version.
func TestAPartialEntryAPatchCreatesIsReportedAsABuildWarning(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ensureNamespace(t, clusterProfilesNamespace)
	server := startGitServer(t)
	profile := testenv.UniqueName("partial")
	files := map[string]string{
		"base/profiles.yaml": "apiVersion: core.profilesync.io/v1alpha1\nkind: CloudProfile\nmetadata:\n  name: " + profile + "\nspec:\n  type: local\n" +
			"  kubernetes:\n    versions:\n    - version: 1.31.0\n" +
			"  machineImages:\n  - name: ubuntu\n    updateStrategy: major\n    versions:\n    - {version: 24.4.1, architectures: [amd64]}\n    - {version: 22.4.0, architectures: [amd64]}\n" +
			"  machineTypes:\n  - {name: m5.large, cpu: \"2\", gpu: \"0\", memory: 8Gi}\n  regions:\n  - name: eu-1\n",
		"base/kustomization.yaml": "resources:\n- profiles.yaml\n",
		"overlay/kustomization.yaml": "resources:\n- ../base\npatches:\n- patch: |-\n" +
			"    apiVersion: core.profilesync.io/v1alpha1\n    kind: CloudProfile\n    metadata:\n      name: " + profile + "\n" +
			"    spec:\n      machineImages:\n      - name: ubuntu\n        versions:\n        - version: 24.4.0\n          lifecycle:\n          - classification: supported\n",
	}
	repo := testenv.UniqueName("partial")
	commit, err := server.CreateRepo(repo, files)
	g.Expect(err).NotTo(HaveOccurred())
	sync := createLandscapeSync(t, repo, server.RepoURL(repo), "overlay", profile)
	waitApplied(t, sync, commit)

	g.Eventually(func(g Gomega) {
		warnings, err := testenv.Events(ctx, k8sClient,
			testenv.EventQuery{Namespace: clusterProfilesNamespace, Name: sync.Name, Reason: v1alpha1.BuildWarningReason})
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(warnings).To(HaveLen(1))
		g.Expect(warnings[0].Type).To(Equal(corev1.EventTypeWarning))
		g.Expect(warnings[0].Message).To(ContainSubstring("overlay/kustomization.yaml"))
		g.Expect(warnings[0].Message).To(ContainSubstring("the /spec/machineImages/ubuntu/versions entry 24.4.0 matches no entry of the target, so the patch creates it without architectures"))
	}).WithTimeout(15 * time.Second).Should(Succeed())
}

// TestARefusedValueAPatchSetNamesThePatch syncs an overlay whose patch file
// makes the highest Kubernetes version expire: the revision is refused, and
// the message names the patch file and its entry, where the value is, and
// the base file as the object's origin.
func TestARefusedValueAPatchSetNamesThePatch(t *testing.T) {
	g := NewWithT(t)
	ensureNamespace(t, clusterProfilesNamespace)
	server := startGitServer(t)
	profile := testenv.UniqueName("patched")
	files := map[string]string{
		"base/profiles.yaml":         singleProfileRepo(profile, "1.31.0")["profiles.yaml"],
		"base/kustomization.yaml":    "resources:\n- profiles.yaml\n",
		"overlay/kustomization.yaml": "resources:\n- ../base\npatches:\n- path: expire.yaml\n",
		"overlay/expire.yaml": "apiVersion: core.profilesync.io/v1alpha1\nkind: CloudProfile\nmetadata:\n  name: " + profile + "\n" +
			"spec:\n  kubernetes:\n    versions:\n    - version: 1.31.0\n      expirationDate: \"2030-01-01T00:00:00Z\"\n",
	}
	repo := testenv.UniqueName("patched")
	commit, err := server.CreateRepo(repo, files)
	g.Expect(err).NotTo(HaveOccurred())
	sync := createLandscapeSync(t, repo, server.RepoURL(repo), "overlay", profile)

	g.Eventually(func(g Gomega) {
		got := getProfileSync(g, sync)
		g.Expect(got.Status.LastAttemptedRevision).To(Equal("main@sha1:" + commit))
		g.Expect(conditions.GetReason(got, v1alpha1.ReadyCondition)).To(Equal(v1alpha1.ValidationFailedReason))
		g.Expect(conditions.GetMessage(got, v1alpha1.ReadyCondition)).To(ContainSubstring(
			"overlay/expire.yaml: CloudProfile/" + profile + ": spec.kubernetes.versions[0] (1.31.0).expirationDate: Forbidden: "))
		g.Expect(conditions.GetMessage(got, v1alpha1.ReadyCondition)).To(ContainSubstring(
			"(set by the patch's entry spec.kubernetes.versions (1.31.0), on the object of base/profiles.yaml)"))
	}).WithTimeout(15 * time.Second).Should(Succeed())
}
