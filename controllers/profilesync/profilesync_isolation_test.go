package profilesync

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/fluxcd/pkg/runtime/conditions"
	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1alpha1 "github.com/profilesync/profilesync/api/v1alpha1"
	"github.com/profilesync/profilesync/controllers/metrics"
	"github.com/profilesync/profilesync/test/metricstest"
	"github.com/profilesync/profilesync/test/testenv"
)

// duplicateAfterWork is the profile's profiles.yaml with 1,088 ConfigMaps
// of 300 entries each after it (3.3 MB), the first defined again at the
// end: the build leaves the linear path at the second definition, and
// kustomize accumulates every object, seconds of one core, before it
// refuses it. (Until issue 36 the hostile commit here nested a
// providerConfig 9,000 levels deep, which the build rendered as indented
// YAML past --max-rendered-size; the build renders JSON now, in which that
// nesting is 54 KB, and applies it.)
func duplicateAfterWork(profile string) map[string]string {
	var objects strings.Builder
	objects.WriteString(singleProfileRepo(profile, "1.31.0")["profiles.yaml"])
	for i := range 1088 {
		fmt.Fprintf(&objects, "---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c%d\ndata:\n", i)
		for k := range 300 {
			fmt.Fprintf(&objects, "  k%03d: v\n", k)
		}
	}
	objects.WriteString("---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c0\n")
	return map[string]string{"profiles.yaml": objects.String()}
}

// TestARefusedBuildIsNotBuiltAgain pushes a commit whose build is refused
// after seconds of work, to a ProfileSync that syncs every two
// seconds: it is built once, and the refusal stands at every interval
// without another build until a new commit comes.
func TestARefusedBuildIsNotBuiltAgain(t *testing.T) {
	g := NewWithT(t)
	ensureNamespace(t, clusterProfilesNamespace)
	server := startGitServer(t)
	landscape := applyGoodRevision(t, server, "refused")
	repo, profile, good, sync := landscape.repo, landscape.profile, landscape.good, landscape.sync
	testenv.UpdateSpec(t, k8sClient, sync, func(s *v1alpha1.ProfileSync) {
		s.Spec.Interval = metav1.Duration{Duration: 2 * time.Second}
		s.Spec.Timeout = &metav1.Duration{Duration: 3 * time.Minute}
	})
	syncLabels := map[string]string{"namespace": sync.Namespace, "name": sync.Name}
	builds := func(g Gomega) float64 {
		return metricstest.Value(g, testMetrics, "profilesync_sync_duration_seconds", metricstest.WithLabels(syncLabels, "phase", metrics.PhaseBuild))
	}

	baseline := heapInUse()
	heap := watchHeap()
	hostile, err := server.Commit(repo, duplicateAfterWork(profile), "1,088 ConfigMaps, the last defined twice")
	g.Expect(err).NotTo(HaveOccurred())
	g.Eventually(func(g Gomega) {
		got := getProfileSync(g, sync)
		g.Expect(got.Status.LastAttemptedRevision).To(Equal("main@sha1:" + hostile))
		g.Expect(conditions.GetReason(got, v1alpha1.ReadyCondition)).To(Equal(v1alpha1.BuildFailedReason))
		g.Expect(conditions.GetMessage(got, v1alpha1.ReadyCondition)).To(ContainSubstring("ConfigMap/c0 is defined more than once"))
	}).WithTimeout(3 * time.Minute).WithPolling(time.Second).Should(Succeed())
	peak := heap.Stop()
	g.Expect(peak-min(peak, baseline)).To(BeNumerically("<", 64<<20), "the build's memory is its own process's, not the manager's")

	// A sync's phases are observed once its status is patched, a moment
	// after the status read above: the good revision and the hostile one
	// are each built once.
	const built float64 = 2
	g.Eventually(builds).WithTimeout(10 * time.Second).Should(Equal(built))
	g.Consistently(func(g Gomega) {
		got := getProfileSync(g, sync)
		g.Expect(conditions.GetReason(got, v1alpha1.ReadyCondition)).To(Equal(v1alpha1.BuildFailedReason))
		g.Expect(got.Status.LastAppliedRevision).To(Equal("main@sha1:"+good), "the good revision stays")
		g.Expect(builds(g)).To(Equal(built), "the refused revision is not built again")
	}).WithTimeout(8 * time.Second).WithPolling(time.Second).Should(Succeed())

	fixed, err := server.Commit(repo, singleProfileRepo(profile, "1.32.0"), "fixed")
	g.Expect(err).NotTo(HaveOccurred())
	waitApplied(t, sync, fixed)
	g.Eventually(builds).WithTimeout(10*time.Second).Should(Equal(built+1), "a new commit is built once")
}

// TestOneProfileSyncsBuildDoesNotHoldUpAnother runs a tenant's build that
// takes longer than its spec.timeout beside the platform's ProfileSync: the
// platform's new commit is applied while the tenant's build runs, and the
// tenant's build is stopped at its deadline.
func TestOneProfileSyncsBuildDoesNotHoldUpAnother(t *testing.T) {
	g := NewWithT(t)
	ensureNamespace(t, clusterProfilesNamespace)
	tenantNamespace := testenv.UniqueName("tenant")
	ensureNamespace(t, tenantNamespace)
	server := startGitServer(t)

	platformRepo, profile := testenv.UniqueName("platform"), testenv.UniqueName("platform-profile")
	first, err := server.CreateRepo(platformRepo, singleProfileRepo(profile, "1.31.0"))
	g.Expect(err).NotTo(HaveOccurred())
	platform := createLandscapeSync(t, platformRepo, server.RepoURL(platformRepo), "", profile)
	waitApplied(t, platform, first)

	// Within --max-objects (1,100), --max-file-size and the suite's
	// checkout size, but far more kustomize on one core than the tenant's
	// timeout of 3 s: 1,088 ConfigMaps of 300 entries, 3.3 MB, which
	// kustomize holds as YAML trees (ConfigMaps never take the linear path
	// of plain profile lists), each patched by a JSON patch (a round trip
	// through JSON per object). On a quiet machine the build took 2.3 s
	// without the patch, which the faster builds brought under the
	// timeout, and 12 s with it (in process, GOMAXPROCS=1).
	files := map[string]string{"kustomization.yaml": "resources: [objects-0.yaml, objects-1.yaml, objects-2.yaml, objects-3.yaml]\n" +
		"patches:\n- target:\n    kind: ConfigMap\n  patch: |\n    - op: add\n      path: /metadata/labels\n      value: {slow: \"yes\"}\n"}
	for f := range 4 {
		var objects strings.Builder
		for i := range 272 {
			fmt.Fprintf(&objects, "---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c%d-%d\ndata:\n", f, i)
			for k := range 300 {
				fmt.Fprintf(&objects, "  k%03d: v\n", k)
			}
		}
		files[fmt.Sprintf("objects-%d.yaml", f)] = objects.String()
	}
	tenantServer := startGitServer(t)
	tenantRepo := testenv.UniqueName("tenant")
	_, err = tenantServer.CreateRepo(tenantRepo, files)
	g.Expect(err).NotTo(HaveOccurred())
	tenant := &v1alpha1.ProfileSync{
		ObjectMeta: metav1.ObjectMeta{Name: "slow", Namespace: tenantNamespace},
		Spec: v1alpha1.ProfileSyncSpec{URL: tenantServer.RepoURL(tenantRepo), Interval: metav1.Duration{Duration: time.Hour},
			Timeout: &metav1.Duration{Duration: 3 * time.Second}},
	}
	g.Expect(k8sClient.Create(t.Context(), tenant)).To(Succeed())
	t.Cleanup(func() { _ = k8sClient.Delete(t.Context(), tenant) })
	// The build follows the fetch at once.
	g.Eventually(func() int64 { return tenantServer.Requests().UploadPacks }).
		WithTimeout(5 * time.Second).WithPolling(50 * time.Millisecond).Should(BeNumerically(">=", 1))

	start := time.Now()
	second, err := server.Commit(platformRepo, singleProfileRepo(profile, "1.32.0"), "second")
	g.Expect(err).NotTo(HaveOccurred())
	requestSync(t, platform, "while the tenant builds")
	waitApplied(t, platform, second)
	g.Expect(time.Since(start)).To(BeNumerically("<", 5*time.Second), "the platform's sync did not wait for the tenant's build")

	g.Eventually(func(g Gomega) {
		got := getProfileSync(g, tenant)
		g.Expect(conditions.GetReason(got, v1alpha1.ReadyCondition)).To(Equal(v1alpha1.BuildFailedReason))
		g.Expect(conditions.GetMessage(got, v1alpha1.ReadyCondition)).To(ContainSubstring("abandoned: context deadline exceeded"))
	}).WithTimeout(15 * time.Second).Should(Succeed())
}
