package cli

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1alpha1 "github.com/profilesync/profilesync/api/v1alpha1"
	"github.com/profilesync/profilesync/internal/prdiff"
	"github.com/profilesync/profilesync/internal/render/overlay"
	"github.com/profilesync/profilesync/internal/render/profile"
	"github.com/profilesync/profilesync/test/testenv"
)

// startCluster starts an envtest API server with the CRDs for this test
// only, and returns a kubeconfig file for it and a client.
func startCluster(t *testing.T) (kubeconfig string, c client.Client) {
	t.Helper()
	env := testenv.StartForTest(t, testenv.WithScheme(newScheme()))
	kubeconfig = filepath.Join(t.TempDir(), "kubeconfig")
	if err := os.WriteFile(kubeconfig, env.Environment.KubeConfig, 0o600); err != nil {
		t.Fatal(err)
	}
	return kubeconfig, env.Client
}

// apply creates the objects of an overlay's build, or of a file, in the
// cluster, as the sync would have applied them.
func apply(t *testing.T, c client.Client, root, path string) {
	t.Helper()
	g := NewWithT(t)
	absRoot, err := filepath.Abs(root)
	g.Expect(err).NotTo(HaveOccurred())
	var docs []profile.Document
	if filepath.Ext(path) == ".yaml" {
		f, err := os.Open(filepath.Join(absRoot, path))
		g.Expect(err).NotTo(HaveOccurred())
		defer f.Close()
		docs, err = profile.SplitDocuments(path, f)
		g.Expect(err).NotTo(HaveOccurred())
	} else {
		docs, err = overlay.Build(context.Background(), absRoot, path, overlay.DefaultLimits())
		g.Expect(err).NotTo(HaveOccurred())
	}
	objects, problems := profile.DecodeDocuments(docs)
	g.Expect(problems).To(BeEmpty())
	for _, o := range objects {
		if o.CloudProfile != nil {
			g.Expect(c.Create(context.Background(), o.CloudProfile)).To(Succeed())
		} else {
			g.Expect(c.Create(context.Background(), o.NamespacedCloudProfile)).To(Succeed())
		}
	}
}

// TestDiffWithTheCluster runs diff --cluster against an API server that
// holds what main's prod overlay built, as the sync applied it: the diff of
// the pull request's prod overlay with the cluster is its diff with main.
// The steps share the API server and run in order.
func TestDiffWithTheCluster(t *testing.T) {
	kubeconfig, c := startCluster(t)
	ctx := context.Background()
	g := NewWithT(t)
	g.Expect(c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "team-payments"}})).To(Succeed())
	apply(t, c, diffFixtureMain, filepath.Join("overlays", "prod"))

	t.Run("the cluster is the base, the build of the overlay the head", func(t *testing.T) {
		g := NewWithT(t)
		status, stdout, stderr := run(t, "diff", "", "--cluster", "--kubeconfig", kubeconfig, "--head-dir", diffFixturePR, "overlays/prod", "--at", diffTime)
		g.Expect(stderr).To(BeEmpty())
		g.Expect(status).To(Equal(exitOK))
		assertGolden(t, filepath.Join("testdata", "diff", "cluster.txt"), stdout)
	})

	t.Run("it finds what the diff of the revisions finds", func(t *testing.T) {
		g := NewWithT(t)
		status, stdout, stderr := run(t, "diff", "", "--cluster", "--kubeconfig", kubeconfig, "--head-dir", diffFixturePR, "overlays/prod", "--at", diffTime, "-o", "json")
		g.Expect(status).To(Equal(exitOK), stderr)
		cluster := decodeDiffJSON(t, stdout)
		g.Expect(cluster.Base).To(Equal("cluster"))
		g.Expect(cluster.Head).To(Equal(filepath.ToSlash(filepath.Join(diffFixturePR, "overlays", "prod"))))

		status, stdout, stderr = run(t, "diff", "", "--base-dir", diffFixtureMain, "--head-dir", diffFixturePR, "overlays/prod", "--at", diffTime, "-o", "json")
		g.Expect(status).To(Equal(exitOK), stderr)
		revisions := decodeDiffJSON(t, stdout)
		g.Expect(cluster.Landscapes).To(Equal(revisions.Landscapes),
			"live objects carry the API server's defaults, and the namespaced one is merged with its live parent")
		g.Expect(cluster.Summary().ProfilesChanged).To(Equal(2))
	})

	t.Run("the kubeconfig's context is chosen with --context, and the current one is used without", func(t *testing.T) {
		g := NewWithT(t)
		config, err := clientcmd.LoadFromFile(kubeconfig)
		g.Expect(err).NotTo(HaveOccurred())
		config.Clusters["nowhere"] = &clientcmdapi.Cluster{Server: "https://127.0.0.1:1"}
		config.Contexts["nowhere"] = &clientcmdapi.Context{Cluster: "nowhere", AuthInfo: config.Contexts[config.CurrentContext].AuthInfo}
		config.CurrentContext = "nowhere"
		twoContexts := filepath.Join(t.TempDir(), "kubeconfig")
		g.Expect(clientcmd.WriteToFile(*config, twoContexts)).To(Succeed())

		status, stdout, stderr := run(t, "diff", "", "--cluster", "--kubeconfig", twoContexts, "--context", "envtest", "--head-dir", diffFixturePR, "overlays/prod", "--at", diffTime)
		g.Expect(status).To(Equal(exitOK), stderr)
		g.Expect(stdout).To(HavePrefix("Base cluster (context envtest), head "))

		status, stdout, stderr = run(t, "diff", "", "--cluster", "--kubeconfig", twoContexts, "--head-dir", diffFixturePR, "overlays/prod", "--at", diffTime)
		g.Expect(status).To(Equal(exitInvalidInput))
		g.Expect(stdout).To(BeEmpty())
		g.Expect(stderr).To(HavePrefix("reading the cluster: "))
		g.Expect(stderr).To(ContainSubstring("127.0.0.1:1"))
	})

	t.Run("without --kubeconfig, $KUBECONFIG is read", func(t *testing.T) {
		g := NewWithT(t)
		t.Setenv("KUBECONFIG", kubeconfig)
		status, stdout, stderr := run(t, "diff", "", "--cluster", "--head-dir", diffFixturePR, "overlays/prod", "--at", diffTime)
		g.Expect(status).To(Equal(exitOK), stderr)
		golden, err := os.ReadFile(filepath.Join("testdata", "diff", "cluster.txt"))
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(stdout).To(Equal(string(golden)))
	})

	t.Run("a parent the build lacks is read from the cluster", func(t *testing.T) {
		g := NewWithT(t)
		head := t.TempDir()
		copyTree(t, filepath.Join(diffFixturePR, "overlays", "prod"), filepath.Join(head, "team"))
		g.Expect(os.Remove(filepath.Join(head, "team", "kustomization.yaml"))).To(Succeed())
		status, stdout, stderr := run(t, "diff", "", "--cluster", "--kubeconfig", kubeconfig, "--head-dir", head, "team", "--at", diffTime, "-o", "json")
		g.Expect(status).To(Equal(exitOK), stderr)
		report := decodeDiffJSON(t, stdout)
		g.Expect(report.Landscapes).To(HaveLen(1))
		g.Expect(report.Landscapes[0].Landscape).To(Equal("team"))
		g.Expect(report.Landscapes[0].Profiles).To(HaveLen(1))
		changes := report.Landscapes[0].Profiles[0].Changes
		g.Expect(changes).To(ContainElement(And(
			HaveField("Kind", prdiff.ChangeStageMoved), HaveField("Version", "1.32.9"), HaveField("Stage", v1alpha1.ClassificationExpired),
		)), "only the override moved: the parent is the live one on both sides")
		g.Expect(changes).NotTo(ContainElement(HaveField("Kind", prdiff.ChangeImageAdded)))
	})

	t.Run("a profile the cluster lacks is added", func(t *testing.T) {
		g := NewWithT(t)
		ncp := &v1alpha1.NamespacedCloudProfile{ObjectMeta: metav1.ObjectMeta{Namespace: "team-payments", Name: "aws-payments"}}
		g.Expect(c.Delete(ctx, ncp)).To(Succeed())
		status, stdout, stderr := run(t, "diff", "", "--cluster", "--kubeconfig", kubeconfig, "--head-dir", diffFixturePR, "overlays/prod", "--at", diffTime)
		g.Expect(status).To(Equal(exitOK), stderr)
		g.Expect(stdout).To(MatchRegexp(`\nprod\s+NamespacedCloudProfile/team-payments/aws-payments\s+-\s+-\s+profile added\s`))
	})

	t.Run("a live namespaced profile whose parent is gone is compared by its status", func(t *testing.T) {
		g := NewWithT(t)
		g.Expect(c.Delete(ctx, &v1alpha1.CloudProfile{ObjectMeta: metav1.ObjectMeta{Name: "aws"}})).To(Succeed())
		apply(t, c, diffFixtureMain, filepath.Join("overlays", "prod", "namespacedcloudprofiles.yaml"))
		status, stdout, stderr := run(t, "diff", "", "--cluster", "--kubeconfig", kubeconfig, "--head-dir", diffFixturePR, "overlays/prod", "--at", diffTime)
		g.Expect(status).To(Equal(exitOK), stderr)
		g.Expect(stderr).To(Equal("warning: cluster: NamespacedCloudProfile/team-payments/aws-payments: " +
			`its parent CloudProfile "aws" is not in the cluster; it has no status.cloudProfileSpec, so it is compared as empty` + "\n"))
		g.Expect(stdout).To(MatchRegexp(`\nprod\s+CloudProfile/aws\s+-\s+-\s+profile added\s`))
	})
}
