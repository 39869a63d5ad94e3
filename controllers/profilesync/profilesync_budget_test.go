package profilesync

import (
	"fmt"
	"testing"
	"time"

	"github.com/fluxcd/pkg/runtime/conditions"
	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1alpha1 "github.com/profilesync/profilesync/api/v1alpha1"
	"github.com/profilesync/profilesync/internal/memorybudget"
	"github.com/profilesync/profilesync/internal/render/profile"
	"github.com/profilesync/profilesync/test/metricstest"
	"github.com/profilesync/profilesync/test/testenv"
)

// TestSixTenantsOnALargeRefusedRevisionStayInTheBudget is issue 31's
// measurement: six tenants' ProfileSyncs follow one large revision that
// tenancy refuses (it writes CloudProfiles). Each builds and decodes it, and
// is refused; what stays in the manager between syncs is six refusals, not
// six decoded revisions, so the manager's heap after GC grows by less than
// one decoded revision, the cache of decoded revisions holds nothing, and the
// heap stays within the manager's share of the memory budget (its baseline
// and the cache's bound, docs/security.md#the-memory-budget).
func TestSixTenantsOnALargeRefusedRevisionStayInTheBudget(t *testing.T) {
	g := NewWithT(t)
	server := startGitServer(t)
	files := map[string]string{}
	// The revision decoded once, to measure it: its documents and objects
	// live only in this function, not into the heap measured below.
	oneRevision := func() int64 {
		var docs []profile.Document
		for i := range 30 {
			name := fmt.Sprintf("profiles-%02d.yaml", i)
			files[name] = manyVersionsProfile(testenv.UniqueName("budget"))
			docs = append(docs, profile.Document{File: name, Data: []byte(files[name])})
		}
		objects, problems := profile.DecodeDocuments(docs)
		g.Expect(problems).To(BeEmpty())
		return decodedSize(decodedRevision{objects: objects})
	}()
	repo := testenv.UniqueName("large-refused")
	revision, err := server.CreateRepo(repo, files)
	g.Expect(err).NotTo(HaveOccurred())
	yamlSize := 0
	for _, content := range files {
		yamlSize += len(content)
	}

	before := heapInUse()
	peak := watchHeap()
	var tenants []*v1alpha1.ProfileSync
	for i := range 6 {
		namespace := testenv.UniqueName(fmt.Sprintf("tenant-%d", i))
		ensureNamespace(t, namespace)
		sync := &v1alpha1.ProfileSync{
			ObjectMeta: metav1.ObjectMeta{Name: "large", Namespace: namespace},
			Spec: v1alpha1.ProfileSyncSpec{URL: server.RepoURL(repo), Interval: metav1.Duration{Duration: time.Hour},
				Timeout: &metav1.Duration{Duration: 5 * time.Minute}},
		}
		g.Expect(k8sClient.Create(t.Context(), sync)).To(Succeed())
		t.Cleanup(func() { _ = k8sClient.Delete(t.Context(), sync) })
		tenants = append(tenants, sync)
	}
	for _, sync := range tenants {
		g.Eventually(func(g Gomega) {
			got := getProfileSync(g, sync)
			g.Expect(got.Status.LastAttemptedRevision).To(Equal("main@sha1:" + revision))
			g.Expect(conditions.GetReason(got, v1alpha1.ReadyCondition)).To(Equal(v1alpha1.AccessDeniedReason))
		}).WithTimeout(5 * time.Minute).WithPolling(time.Second).Should(Succeed())
	}
	highest := peak.Stop()

	after := heapInUse()
	grown := int64(after) - int64(before)
	cached := metricstest.Value(g, testMetrics, "profilesync_decoded_revisions_bytes", nil)
	t.Logf("a revision of %d bytes of YAML decodes to %d bytes; six tenants refused it: heap in use after GC %d MiB (grown %d MiB), peak %d MiB, decoded revisions kept %.0f bytes",
		yamlSize, oneRevision, after>>20, grown>>20, highest>>20, cached)
	g.Expect(cached).To(BeZero(), "a refused revision keeps its refusal, not its decoded objects")
	g.Expect(grown).To(BeNumerically("<", oneRevision), "six refusals kept, not six decoded revisions of %d bytes each", oneRevision)
	g.Expect(after).To(BeNumerically("<=", memorybudget.ManagerBaseline+memorybudget.DefaultCache),
		"the manager's heap within its share of the budget: its baseline and the cache's bound")
	g.Expect(highest).To(BeNumerically("<=", memorybudget.ManagerBaseline+memorybudget.DefaultCache),
		"even while the six builds' answers are decoded")
}
