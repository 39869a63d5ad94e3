package cli

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestDiffWithTheClusterShowsWhatTheSyncRefusesToWriteOverTheLiveObjects:
// moving the expiry of an override a NamespacedCloudProfile already has into
// the past is refused by Gardener's admission on update, and by the sync
// before it writes; diff --cluster, which reads the same live object,
// reports it with the sync's line and fails, while an overlay that keeps the
// live expiry compares cleanly.
func TestDiffWithTheClusterShowsWhatTheSyncRefusesToWriteOverTheLiveObjects(t *testing.T) {
	kubeconfig, c := startCluster(t)
	g := NewWithT(t)
	g.Expect(c.Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "team-a"}})).To(Succeed())
	root := t.TempDir()
	g.Expect(os.Mkdir(filepath.Join(root, ".git"), 0o755)).To(Succeed())
	overlayDir := filepath.Join(root, "overlays", "prod")
	g.Expect(os.MkdirAll(overlayDir, 0o755)).To(Succeed())
	g.Expect(os.WriteFile(filepath.Join(overlayDir, "kustomization.yaml"), []byte("resources:\n- profiles.yaml\n"), 0o644)).To(Succeed())
	writeProfiles := func(expires string) {
		profiles := "apiVersion: core.profilesync.io/v1alpha1\nkind: CloudProfile\nmetadata:\n  name: local\nspec:\n  type: local\n" +
			"  kubernetes:\n    versions:\n    - version: 1.31.0\n    - version: 1.30.0\n" +
			requiredLists[0].lines + requiredLists[1].lines + requiredLists[2].lines +
			"---\napiVersion: core.profilesync.io/v1alpha1\nkind: NamespacedCloudProfile\nmetadata:\n  name: team\n  namespace: team-a\nspec:\n" +
			"  parent: {kind: CloudProfile, name: local}\n  kubernetes:\n    versions:\n    - version: 1.30.0\n      expirationDate: \"" + expires + "\"\n"
		g.Expect(os.WriteFile(filepath.Join(overlayDir, "profiles.yaml"), []byte(profiles), 0o644)).To(Succeed())
	}
	writeProfiles("2025-12-01T00:00:00Z")
	apply(t, c, root, filepath.Join("overlays", "prod"))
	diff := func() (int, string, string) {
		return run(t, "diff", "", "--cluster", "--kubeconfig", kubeconfig, "--head-dir", root, "overlays/prod", "--at", "2025-06-01T00:00:00Z")
	}

	status, _, stderr := diff()
	g.Expect(stderr).To(BeEmpty())
	g.Expect(status).To(Equal(exitOK))

	writeProfiles("2025-05-01T00:00:00Z")
	status, _, stderr = diff()
	g.Expect(status).To(Equal(exitInvalidInput), stderr)
	g.Expect(strings.Split(strings.TrimSpace(stderr), "\n")).To(ContainElement(
		`overlays/prod/profiles.yaml: NamespacedCloudProfile/team-a/team: spec.kubernetes.versions[0] (1.30.0).expirationDate: Invalid value: "2025-05-01T00:00:00Z": expiration date for version "1.30.0" is in the past`))
}
