package profilesync

import (
	"fmt"
	"testing"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1alpha1 "github.com/profilesync/profilesync/api/v1alpha1"
	"github.com/profilesync/profilesync/internal/gitsource"
	"github.com/profilesync/profilesync/internal/sandbox"
	"github.com/profilesync/profilesync/test/builders"
)

const reuseProfile = `apiVersion: core.profilesync.io/v1alpha1
kind: CloudProfile
metadata:
  name: %s
spec:
  type: local
  regions: [{name: %s}]
`

// writeReuseLandscape writes a base of three CloudProfiles, one a file,
// and an overlay that labels them, with b's region as given.
func writeReuseLandscape(t *testing.T, region string) string {
	t.Helper()
	root := t.TempDir()
	files := map[string]string{
		"base/kustomization.yaml":    "resources:\n- a.yaml\n- b.yaml\n- c.yaml\n",
		"base/a.yaml":                fmt.Sprintf(reuseProfile, "a", "local"),
		"base/b.yaml":                fmt.Sprintf(reuseProfile, "b", region),
		"base/c.yaml":                fmt.Sprintf(reuseProfile, "c", "local"),
		"overlay/kustomization.yaml": "resources:\n- ../base\nlabels:\n- pairs: {landscape: bench}\n",
	}
	builders.WriteTree(t, root, files)
	return root
}

// TestTheNextRevisionsBuildReusesTheKeptRevisionsDocuments: the build of a
// ProfileSync's next revision hands the sandbox the result of the revision
// it kept, which renders only the file the push changed; the objects are a
// cold build's.
func TestTheNextRevisionsBuildReusesTheKeptRevisionsDocuments(t *testing.T) {
	g := NewWithT(t)
	runner, err := sandbox.New(sandbox.Options{})
	g.Expect(err).NotTo(HaveOccurred())
	obj := &v1alpha1.ProfileSync{ObjectMeta: metav1.ObjectMeta{Name: "sync", Namespace: "ns"}, Spec: v1alpha1.ProfileSyncSpec{Path: "overlay"}}
	r := &ProfileSyncReconciler{Builds: runner}

	first, err := r.build(t.Context(), obj, &gitsource.Result{Dir: writeReuseLandscape(t, "local"), Revision: "main@sha1:a"})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(first.built.Reused).To(BeZero())
	first.size = decodedSize(first)
	g.Expect(r.decoded.put("ns/sync", first, 0)).To(BeTrue())

	pushed := &gitsource.Result{Dir: writeReuseLandscape(t, "other"), Revision: "main@sha1:b"}
	second, err := r.build(t.Context(), obj, pushed)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(second.built.Reused).To(Equal(2), "a.yaml's and c.yaml's documents are the kept revision's")

	cold, err := (&ProfileSyncReconciler{Builds: runner}).build(t.Context(), obj, pushed)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(cold.built.Reused).To(BeZero())
	g.Expect(second.built.Documents).To(Equal(cold.built.Documents))
	g.Expect(second.digests).To(Equal(cold.digests))
	g.Expect(second.documents).To(Equal(cold.documents))

	otherPath := obj.DeepCopy()
	otherPath.Spec.Path = "base"
	elsewhere, err := r.build(t.Context(), otherPath, pushed)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(elsewhere.built.Reused).To(BeZero(), "the kept revision of another path is not reused")
}
