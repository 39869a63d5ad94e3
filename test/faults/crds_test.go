package faults

import (
	"context"
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/fluxcd/pkg/runtime/probes"
	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/rest"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/profilesync/profilesync/controllers"
	"github.com/profilesync/profilesync/test/testenv"
)

// probe is the status code and body of a GET of a health endpoint.
func probe(g Gomega, url string) (int, string) {
	resp, err := http.Get(url) //nolint:gosec,noctx // a loopback test server
	g.Expect(err).NotTo(HaveOccurred())
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	g.Expect(err).NotTo(HaveOccurred())
	return resp.StatusCode, string(body)
}

// installCRDs installs the CRDs of config/crd/bases whose file names
// contain one of names, and waits until the API server serves them.
func installCRDs(t *testing.T, l *landscape, names ...string) {
	t.Helper()
	root, err := testenv.ModuleRoot()
	if err != nil {
		t.Fatal(err)
	}
	var paths []string
	for _, name := range names {
		paths = append(paths, filepath.Join(root, "config", "crd", "bases", "core.profilesync.io_"+name+".yaml"))
	}
	if _, err := envtest.InstallCRDs(l.env.Config, envtest.CRDInstallOptions{Paths: paths, ErrorIfPathMissing: true}); err != nil {
		t.Fatalf("install CRDs %s: %v", strings.Join(names, ", "), err)
	}
}

// TestCRDsMissingAtStartThenInstalled: the manager starts on a cluster
// without the CRDs. It stays up, healthy and not ready, while they are
// missing (also while only some are installed); once all are installed it
// starts its controllers without a restart and syncs a ProfileSync.
func TestCRDsMissingAtStartThenInstalled(t *testing.T) {
	g := NewWithT(t)
	l := newLandscape(t, testenv.WithoutCRDs())
	commit := l.commit(profilesRepo([]string{"1.33.0"}, []string{"aws"}, []string{"aws-team"}))

	probeAddr, err := testenv.FreeLoopbackAddress()
	g.Expect(err).NotTo(HaveOccurred())
	cacheDir := t.TempDir()
	// With --watch-label-selector the manager's cache asks, when it is
	// made, whether ProfileSync is namespaced: controller-runtime's dynamic
	// mapper cannot tell before the CRDs are installed, the operator's can.
	sharded := controllers.CacheOptions(labels.SelectorFromSet(labels.Set{"shard": "a"}))
	sharded.Scheme = l.env.Scheme
	httpClient, err := rest.HTTPClientFor(l.env.Config)
	g.Expect(err).NotTo(HaveOccurred())
	sharded.Mapper, err = apiutil.NewDynamicRESTMapper(l.env.Config, httpClient)
	g.Expect(err).NotTo(HaveOccurred())
	_, err = cache.New(l.env.Config, sharded)
	g.Expect(err).To(MatchError(ContainSubstring("failed to determine if *v1alpha1.ProfileSync is namespaced")))
	sharded.Mapper, err = controllers.NewRESTMapper(l.env.Config, httpClient)
	g.Expect(err).NotTo(HaveOccurred())
	_, err = cache.New(l.env.Config, sharded)
	g.Expect(err).NotTo(HaveOccurred())

	m, err := l.env.StartManager(testenv.ManagerOptions{
		Cache: controllers.CacheOptions(nil),
		Options: func(o *ctrl.Options) {
			o.HealthProbeBindAddress = probeAddr
			o.MapperProvider = controllers.NewRESTMapper
		},
		// As internal/cli's manager command does: the controllers are
		// registered by the CRD gate, with the operator's back-off, and
		// the probes are flux's.
		Setup: func(_ context.Context, mgr manager.Manager, _ *testenv.Env) error {
			_, err := controllers.WaitForCRDs(mgr, controllers.DefaultCRDBackoff, func(ctx context.Context) error {
				return controllers.SetupAll(ctx, mgr, controllers.Config{
					Options:                  controllers.Options{MaxConcurrentReconciles: 4},
					Clock:                    clock.RealClock{},
					StoragePath:              cacheDir,
					ClusterProfilesNamespace: landscapeNamespace,
					AllowCredentialsOverHTTP: true,
				})
			})
			probes.SetupChecks(mgr, mgr.GetLogger())
			return err
		},
	})
	g.Expect(err).NotTo(HaveOccurred())
	started := time.Now()

	notReady := func(g Gomega) {
		status, body := probe(g, "http://"+probeAddr+"/readyz?verbose")
		g.Expect(status).To(Equal(http.StatusInternalServerError))
		g.Expect(body).To(ContainSubstring("[-]" + controllers.CRDReadyzCheck + " failed"))
		status, _ = probe(g, "http://"+probeAddr+"/healthz")
		g.Expect(status).To(Equal(http.StatusOK), "healthy: the kubelet does not restart it")
	}
	g.Consistently(notReady).WithTimeout(time.Second).WithPolling(200 * time.Millisecond).Should(Succeed())

	// Some of the CRDs are not enough.
	installCRDs(t, l, "profilesyncs")
	l.createSync(time.Hour)
	g.Consistently(notReady).WithTimeout(time.Second).WithPolling(200 * time.Millisecond).Should(Succeed())

	installCRDs(t, l, "cloudprofiles", "namespacedcloudprofiles", "versionupdates")
	installed := time.Now()
	g.Eventually(func(g Gomega) {
		status, _ := probe(g, "http://"+probeAddr+"/readyz")
		g.Expect(status).To(Equal(http.StatusOK))
	}).WithTimeout(35 * time.Second).WithPolling(100 * time.Millisecond).Should(Succeed())
	ready := time.Since(installed)
	applied := l.waitApplied(commit, 30*time.Second)
	synced := time.Since(installed)
	want := []string{"CloudProfile//aws", "NamespacedCloudProfile/team-a/aws-team"}
	g.Expect(inventory(applied)).To(Equal(want))
	g.Expect(l.onCluster(g)).To(Equal(want))
	g.Expect(m.Stop()).To(Succeed(), "the manager ran throughout and stops cleanly")
	t.Logf("CRDs installed %v after the manager started: ready %v and the ProfileSync applied %v after the last CRD was installed, no restart",
		installed.Sub(started).Round(time.Millisecond), ready.Round(time.Millisecond), synced.Round(time.Millisecond))
}
