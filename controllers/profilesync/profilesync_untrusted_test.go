package profilesync

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/fluxcd/pkg/apis/meta"
	"github.com/fluxcd/pkg/runtime/conditions"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1alpha1 "github.com/profilesync/profilesync/api/v1alpha1"
	"github.com/profilesync/profilesync/test/gitserver"
	"github.com/profilesync/profilesync/test/testenv"
)

// suiteMaxCheckoutSize is the suite manager's --max-checkout-size: small, so
// that an oversized repository costs the test little.
const suiteMaxCheckoutSize = testenv.OperatorMaxCheckoutSize

// refusalMemoryBound is how much the test process's heap may grow while the
// manager refuses a hostile revision; docs/security.md promises it.
const refusalMemoryBound = 192 << 20

// heapWatch samples the heap in use until stopped and reports its peak.
type heapWatch struct {
	peak atomic.Uint64
	stop chan struct{}
	done chan struct{}
}

func watchHeap() *heapWatch {
	w := &heapWatch{stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(w.done)
		ticker := time.NewTicker(20 * time.Millisecond)
		defer ticker.Stop()
		for {
			var stats runtime.MemStats
			runtime.ReadMemStats(&stats)
			if stats.HeapInuse > w.peak.Load() {
				w.peak.Store(stats.HeapInuse)
			}
			select {
			case <-w.stop:
				return
			case <-ticker.C:
			}
		}
	}()
	return w
}

func (w *heapWatch) Stop() uint64 {
	close(w.stop)
	<-w.done
	return w.peak.Load()
}

func heapInUse() uint64 {
	runtime.GC()
	var stats runtime.MemStats
	runtime.ReadMemStats(&stats)
	return stats.HeapInuse
}

// randomText is n bytes that do not compress, so that Git stores them as
// large as they are.
func randomText(n int) string {
	raw := make([]byte, n*3/4+3)
	_, _ = rand.Read(raw)
	return base64.StdEncoding.EncodeToString(raw)[:n]
}

// TestAHostileCommitIsRefusedBeforeAnyWrite pushes, after a good revision,
// one commit of each kind an attacker with push access could try. Each is
// refused before anything is written, naming the file and the field or
// limit; the good revision stays applied, no request leaves the build, the
// manager's memory stays bounded, and it goes on serving other syncs.
func TestAHostileCommitIsRefusedBeforeAnyWrite(t *testing.T) {
	ensureNamespace(t, clusterProfilesNamespace)
	var canaryRequests atomic.Int64
	canary := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		canaryRequests.Add(1)
		_, _ = w.Write([]byte("canary-secret-token"))
	}))
	t.Cleanup(canary.Close)
	server := startGitServer(t)

	billionLaughs := "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: lol\ndata:\n  l0: &l0 \"lol\"\n"
	for level := 1; level <= 9; level++ {
		billionLaughs += fmt.Sprintf("  l%d: &l%d [%s]\n", level, level, strings.TrimSuffix(strings.Repeat(fmt.Sprintf("*l%d, ", level-1), 10), ", "))
	}

	rows := []struct {
		name string
		// commit returns the files of the hostile commit for the profile
		// named profile; it replaces profiles.yaml or adds a kustomization.
		commit     func(profile string) map[string]string
		wantReason string
		wantInMsg  []string
		// measureMemory: the row is about memory.
		measureMemory bool
	}{
		{
			name: "a generator fetching a metadata endpoint into an annotation",
			commit: func(profile string) map[string]string {
				return map[string]string{"kustomization.yaml": "resources:\n- profiles.yaml\nconfigMapGenerator:\n- name: leak\n  options: {annotations: {config.kubernetes.io/local-config: \"true\"}}\n  files:\n  - token=" + canary.URL + "/latest/meta-data\nreplacements:\n- source: {kind: ConfigMap, name: leak, fieldPath: data.token}\n  targets:\n  - select: {kind: CloudProfile}\n    fieldPaths: [metadata.annotations.leak]\n    options: {create: true}\n"}
			},
			wantReason: v1alpha1.BuildFailedReason,
			wantInMsg:  []string{`kustomization.yaml: configMapGenerator entry "` + canary.URL + `/latest/meta-data": remote locations are refused`},
		},
		{
			name: "a generator reading the checkout's Git metadata",
			commit: func(string) map[string]string {
				return map[string]string{"kustomization.yaml": "resources:\n- profiles.yaml\nconfigMapGenerator:\n- name: leak\n  files:\n  - .git/config\n"}
			},
			wantReason: v1alpha1.BuildFailedReason,
			wantInMsg:  []string{`kustomization.yaml: configMapGenerator entry ".git/config": .git/config is in .git/, Git's metadata, which is not part of the build: refused`},
		},
		{
			name: "a YAML alias bomb",
			commit: func(string) map[string]string {
				return map[string]string{"kustomization.yaml": "resources:\n- profiles.yaml\n- bomb.yaml\n", "bomb.yaml": billionLaughs}
			},
			wantReason:    v1alpha1.BuildFailedReason,
			wantInMsg:     []string{"bomb.yaml: exceeds the maximum file size (with its YAML aliases written out) of 4 MiB (raise it with --max-file-size)"},
			measureMemory: true,
		},
		{
			name: "a chain of 34 components whose errors quote each other",
			commit: func(string) map[string]string {
				files := map[string]string{"kustomization.yaml": "resources:\n- profiles.yaml\ncomponents:\n- c33\n", "c0/kustomization.yaml": ""}
				for i := 1; i < 34; i++ {
					files[fmt.Sprintf("c%d/kustomization.yaml", i)] = fmt.Sprintf("apiVersion: kustomize.config.k8s.io/v1alpha1\nkind: Component\ncomponents:\n- ../c%d\n", i-1)
				}
				return files
			},
			wantReason:    v1alpha1.BuildFailedReason,
			wantInMsg:     []string{`c24/kustomization.yaml: components entry "../c23": components nest 11 deep, more than the 10 a build allows`},
			measureMemory: true,
		},
		{
			name: "15,000 tiny objects",
			commit: func(string) map[string]string {
				var objects strings.Builder
				for i := range 15000 {
					fmt.Fprintf(&objects, "---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c%d\n", i)
				}
				return map[string]string{"kustomization.yaml": "resources:\n- profiles.yaml\n- objects.yaml\n", "objects.yaml": objects.String()}
			},
			wantReason:    v1alpha1.BuildFailedReason,
			wantInMsg:     []string{"objects.yaml: 15001 objects read in all are over the maximum number of objects a build reads of 1100 (raise it with --max-objects)"},
			measureMemory: true,
		},
		{
			name: "a repository larger than the maximum checkout size",
			commit: func(string) map[string]string {
				return map[string]string{"blob.txt": randomText(suiteMaxCheckoutSize + 1<<20)}
			},
			wantReason:    v1alpha1.FetchFailedReason,
			wantInMsg:     []string{"maximum checkout size of 4 MiB", "--max-checkout-size"},
			measureMemory: true,
		},
		{
			name: "a profile with an invalid name",
			commit: func(string) map[string]string {
				return map[string]string{"bad.yaml": "apiVersion: core.profilesync.io/v1alpha1\nkind: CloudProfile\nmetadata:\n  name: Bad_Name!\nspec:\n  type: local\n"}
			},
			wantReason: v1alpha1.ValidationFailedReason,
			wantInMsg:  []string{"bad.yaml: CloudProfile/Bad_Name!: metadata.name: Invalid value: \"Bad_Name!\""},
		},
		{
			name: "a profile that claims another sync's owner label",
			commit: func(profile string) map[string]string {
				return map[string]string{"profiles.yaml": strings.Replace(singleProfileRepo(profile, "1.31.0")["profiles.yaml"],
					"  name: "+profile+"\n", "  name: "+profile+"\n  labels:\n    "+v1alpha1.OwnerNameLabel+": someone-else\n", 1)}
			},
			wantReason: v1alpha1.ValidationFailedReason,
			wantInMsg:  []string{"profiles.yaml: CloudProfile/", "metadata.labels", v1alpha1.OwnerNameLabel},
		},
		{
			name: "a lifecycle stage written twice in a base, which an overlay's patch would merge into one",
			commit: func(profile string) map[string]string {
				base := singleProfileRepo(profile, "1.31.0")["profiles.yaml"] + "      lifecycle:\n" +
					"      - classification: supported\n        startTime: \"2025-01-01T00:00:00Z\"\n" +
					"      - classification: supported\n        startTime: \"2025-02-01T00:00:00Z\"\n"
				return map[string]string{
					"base/profiles.yaml":      base,
					"base/kustomization.yaml": "resources:\n- profiles.yaml\n",
					"kustomization.yaml": "resources:\n- base\npatches:\n- patch: |\n    apiVersion: core.profilesync.io/v1alpha1\n    kind: CloudProfile\n" +
						"    metadata:\n      name: " + profile + "\n    spec:\n      type: local\n",
				}
			},
			wantReason: v1alpha1.ValidationFailedReason,
			wantInMsg:  []string{"base/profiles.yaml: CloudProfile/", "spec.kubernetes.versions[0] (1.31.0).lifecycle[1]: Duplicate value: {\"classification\":\"supported\"}"},
		},
		{
			name: "a lifecycle of more stages than the API server accepts",
			commit: func(profile string) map[string]string {
				stages := ""
				for i := range 50 {
					stages += fmt.Sprintf("      - classification: supported\n        startTime: \"20%02d-01-01T00:00:00Z\"\n", 30+i%60)
				}
				return map[string]string{"profiles.yaml": singleProfileRepo(profile, "1.31.0")["profiles.yaml"] + "      lifecycle:\n" + stages}
			},
			wantReason: v1alpha1.ValidationFailedReason,
			// Fifty stages of four classifications repeat one: that is
			// reported, summarized, before the decoder would count them.
			wantInMsg: []string{"spec.kubernetes.versions[0] (1.31.0).lifecycle[1]: Duplicate value", "... and 39 more like it"},
		},
	}
	for _, row := range rows {
		t.Run(row.name, func(t *testing.T) {
			g := NewWithT(t)
			ctx := context.Background()
			landscape := applyGoodRevision(t, server, "hostile")
			repo, profile, good, sync, applied := landscape.repo, landscape.profile, landscape.good, landscape.sync, landscape.applied

			baseline := heapInUse()
			heap := watchHeap()
			_, err := server.Commit(repo, row.commit(profile), "hostile")
			g.Expect(err).NotTo(HaveOccurred())
			requestSync(t, sync, "hostile")
			g.Eventually(func(g Gomega) {
				got := getProfileSync(g, sync)
				g.Expect(got.Status.LastHandledReconcileAt).To(Equal("hostile"))
				g.Expect(conditions.GetReason(got, v1alpha1.ReadyCondition)).To(Equal(row.wantReason))
				g.Expect(conditions.IsStalled(got)).To(BeTrue(), "the same revision would fail the same way: no retries")
				for _, want := range row.wantInMsg {
					g.Expect(conditions.GetMessage(got, v1alpha1.ReadyCondition)).To(ContainSubstring(want))
				}
			}).WithTimeout(30 * time.Second).Should(Succeed())
			peak := heap.Stop()
			if row.measureMemory && peak > baseline {
				t.Logf("heap in use: %d MiB before, %d MiB at the peak of the refusal", baseline>>20, peak>>20)
				g.Expect(peak-baseline).To(BeNumerically("<", refusalMemoryBound), "heap growth while refusing")
			}

			got := getProfileSync(g, sync)
			g.Expect(got.Status.LastAppliedRevision).To(Equal("main@sha1:"+good), "the good revision stays the applied one")
			g.Expect(conditions.GetMessage(got, v1alpha1.ReadyCondition)).NotTo(ContainSubstring("canary-secret-token"))
			var after v1alpha1.CloudProfile
			g.Expect(k8sClient.Get(ctx, client.ObjectKey{Name: profile}, &after)).To(Succeed())
			// The status controller may still write status; the sync writes
			// spec and metadata, which move the generation or show here.
			g.Expect(after.Generation).To(Equal(applied.Generation), "nothing was written")
			g.Expect(after.Annotations).To(Equal(applied.Annotations), "nothing was written")
			g.Expect(after.Labels).To(Equal(applied.Labels), "nothing was written")
		})
	}
	NewWithT(t).Expect(canaryRequests.Load()).To(BeZero(), "no build reached the network")

	t.Run("the manager goes on serving other syncs", func(t *testing.T) {
		g := NewWithT(t)
		profile := testenv.UniqueName("bystander")
		commit, err := server.CreateRepo("bystander", singleProfileRepo(profile, "1.32.0"))
		g.Expect(err).NotTo(HaveOccurred())
		sync := createLandscapeSync(t, testenv.UniqueName("bystander"), server.RepoURL("bystander"), "", profile)
		waitApplied(t, sync, commit)
		g.Expect(conditions.IsReady(getProfileSync(g, sync))).To(BeTrue())
	})
}

func TestFailureMessagesStayWithinWhatAConditionHolds(t *testing.T) {
	g := NewWithT(t)
	var lines []string
	for i := range 5000 {
		lines = append(lines, fmt.Sprintf("profiles.yaml: CloudProfile/p: spec.kubernetes.versions[%d].version: Invalid value: \"x\"", i))
	}
	message := boundedMessage(strings.Join(lines, "\n"))
	g.Expect(len(message)).To(BeNumerically("<=", maxMessageLength+200))
	g.Expect(message).To(HavePrefix(lines[0] + "\n"))
	g.Expect(message).To(MatchRegexp(`\.\.\. and \d+ more lines: run 'profilesync build' on the revision to see them all$`))
	g.Expect(boundedMessage("short")).To(Equal("short"))
}

// TestAnIndexPatchIsReportedOnceAsABuildWarning syncs an overlay that
// retimes a version through a JSON patch by list index: the revision is
// applied, and a BuildWarning event names the version the index hits now,
// once for the revision, not at every sync.
func TestAnIndexPatchIsReportedOnceAsABuildWarning(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ensureNamespace(t, clusterProfilesNamespace)
	server := startGitServer(t)
	profile := testenv.UniqueName("indexed")
	files := map[string]string{
		"base/profiles.yaml":      singleProfileRepo(profile, "1.31.0")["profiles.yaml"] + "    - version: 1.30.0\n",
		"base/kustomization.yaml": "resources:\n- profiles.yaml\n",
		"overlay/kustomization.yaml": "resources:\n- ../base\npatches:\n- target: {kind: CloudProfile, name: " + profile + "}\n" +
			"  patch: |-\n    - op: add\n      path: /spec/kubernetes/versions/1/expirationDate\n      value: \"2030-01-01T00:00:00Z\"\n",
	}
	repo := testenv.UniqueName("indexed")
	commit, err := server.CreateRepo(repo, files)
	g.Expect(err).NotTo(HaveOccurred())
	sync := createLandscapeSync(t, repo, server.RepoURL(repo), "overlay", profile)
	waitApplied(t, sync, commit)

	buildWarnings := func(g Gomega) []corev1.Event {
		found, err := testenv.Events(ctx, k8sClient,
			testenv.EventQuery{Namespace: clusterProfilesNamespace, Name: sync.Name, Reason: v1alpha1.BuildWarningReason})
		g.Expect(err).NotTo(HaveOccurred())
		return found
	}
	g.Eventually(func(g Gomega) {
		warnings := buildWarnings(g)
		g.Expect(warnings).To(HaveLen(1))
		g.Expect(warnings[0].Type).To(Equal(corev1.EventTypeWarning))
		g.Expect(warnings[0].Message).To(ContainSubstring("overlay/kustomization.yaml"))
		g.Expect(warnings[0].Message).To(ContainSubstring("/spec/kubernetes/versions/1 is 1.30.0"))
	}).WithTimeout(15 * time.Second).Should(Succeed())

	requestSync(t, sync, "again")
	g.Eventually(func(g Gomega) {
		g.Expect(getProfileSync(g, sync).Status.LastHandledReconcileAt).To(Equal("again"))
	}).WithTimeout(15 * time.Second).Should(Succeed())
	g.Consistently(func(g Gomega) {
		warnings := buildWarnings(g)
		g.Expect(warnings).To(HaveLen(1))
		g.Expect(warnings[0].Count).To(BeNumerically("<=", 1), "reported once per revision")
	}).WithTimeout(2 * time.Second).Should(Succeed())
}

// createLandscapeSync creates a ProfileSync named name in the landscape
// namespace for the overlay at path of the repository at url. Its interval
// is an hour, so only requests and spec changes sync it. The ProfileSync and
// the CloudProfiles named are deleted when the test ends.
func createLandscapeSync(t *testing.T, name, url, path string, profiles ...string) *v1alpha1.ProfileSync {
	t.Helper()
	ctx := context.Background()
	sync := &v1alpha1.ProfileSync{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: clusterProfilesNamespace},
		Spec:       v1alpha1.ProfileSyncSpec{URL: url, Path: path, Interval: metav1.Duration{Duration: time.Hour}},
	}
	if err := k8sClient.Create(ctx, sync); err != nil {
		t.Fatalf("create ProfileSync %s: %v", name, err)
	}
	t.Cleanup(func() {
		_ = k8sClient.Delete(ctx, sync)
		for _, profile := range profiles {
			_ = k8sClient.Delete(ctx, &v1alpha1.CloudProfile{ObjectMeta: metav1.ObjectMeta{Name: profile}})
		}
	})
	return sync
}

// appliedLandscape is a landscape ProfileSync that has applied a good
// revision of one profile, the start of every test that pushes a bad one.
type appliedLandscape struct {
	repo, profile, good string
	sync                *v1alpha1.ProfileSync
	// applied is the profile as the good revision left it.
	applied v1alpha1.CloudProfile
}

// applyGoodRevision creates a repository on server, named after prefix,
// with one profile, and a landscape ProfileSync of it, and waits until the
// revision is applied.
func applyGoodRevision(t *testing.T, server *gitserver.Server, prefix string) appliedLandscape {
	t.Helper()
	l := appliedLandscape{repo: testenv.UniqueName(prefix), profile: testenv.UniqueName(prefix + "-profile")}
	var err error
	if l.good, err = server.CreateRepo(l.repo, singleProfileRepo(l.profile, "1.31.0")); err != nil {
		t.Fatal(err)
	}
	l.sync = createLandscapeSync(t, l.repo, server.RepoURL(l.repo), "", l.profile)
	waitApplied(t, l.sync, l.good)
	if err := k8sClient.Get(context.Background(), client.ObjectKey{Name: l.profile}, &l.applied); err != nil {
		t.Fatal(err)
	}
	return l
}

// waitApplied waits until sync has applied commit of the main branch.
func waitApplied(t *testing.T, sync *v1alpha1.ProfileSync, commit string) {
	t.Helper()
	NewWithT(t).Eventually(func(g Gomega) {
		g.Expect(getProfileSync(g, sync).Status.LastAppliedRevision).To(Equal("main@sha1:" + commit))
	}).WithTimeout(15 * time.Second).Should(Succeed())
}

// requestSync asks for a sync of sync now, with the reconcile-request
// annotation set to token. It patches the annotation alone: an update of
// the whole object would re-serialize spec.timeout and bump the generation,
// which a sync treats as a spec change (warnings are reported again).
func requestSync(t *testing.T, sync *v1alpha1.ProfileSync, token string) {
	t.Helper()
	patch := fmt.Sprintf(`{"metadata":{"annotations":{%q:%q}}}`, meta.ReconcileRequestAnnotation, token)
	if err := k8sClient.Patch(context.Background(), sync.DeepCopy(), client.RawPatch(types.MergePatchType, []byte(patch))); err != nil {
		t.Fatalf("request a sync of %s: %v", sync.Name, err)
	}
}
