package profilesync

import (
	"fmt"
	"strings"
	"testing"

	. "github.com/onsi/gomega"

	"github.com/profilesync/profilesync/internal/render/profile"
)

func TestDecodedRevisionsAreReusedOnlyForTheSameRevisionAndPath(t *testing.T) {
	g := NewWithT(t)
	var decoded decodedRevisions
	objects := []profile.Object{{File: "profiles.yaml"}}

	_, ok := decoded.get("ns/dev", "main@sha1:a", "overlays/dev")
	g.Expect(ok).To(BeFalse(), "nothing decoded yet")

	warnings := []syncWarning{{reason: "BuildWarning", message: "overlays/dev/kustomization.yaml: patch by index"}}
	decoded.put("ns/dev", decodedRevision{revision: "main@sha1:a", path: "overlays/dev", objects: objects, warnings: warnings, size: 100}, 0)
	got, ok := decoded.get("ns/dev", "main@sha1:a", "overlays/dev")
	g.Expect(ok).To(BeTrue())
	g.Expect(got.objects).To(Equal(objects))
	g.Expect(got.warnings).To(Equal(warnings), "the build's warnings come with the objects, to be reported once per revision")

	for _, miss := range []struct{ key, revision, path string }{
		{"ns/dev", "main@sha1:b", "overlays/dev"},  // a new commit
		{"ns/dev", "main@sha1:a", "overlays/prod"}, // another overlay
		{"ns/prod", "main@sha1:a", "overlays/dev"}, // another ProfileSync
	} {
		_, ok := decoded.get(miss.key, miss.revision, miss.path)
		g.Expect(ok).To(BeFalse(), "%+v", miss)
	}

	decoded.forget("ns/dev")
	_, ok = decoded.get("ns/dev", "main@sha1:a", "overlays/dev")
	g.Expect(ok).To(BeFalse(), "a deleted ProfileSync's objects are dropped")
	bytes, revisions := decoded.size()
	g.Expect(bytes).To(BeZero())
	g.Expect(revisions).To(BeZero())
}

// TestDecodedRevisionsOfEveryProfileSyncStayUnderOneBound: the bound is in
// bytes over every ProfileSync together, whatever their number; the least
// recently used revisions go first, and a use counts as much as a build.
func TestDecodedRevisionsOfEveryProfileSyncStayUnderOneBound(t *testing.T) {
	g := NewWithT(t)
	const (
		each  = 3 << 20
		bound = 10 * each
	)
	var decoded decodedRevisions
	revision := func(i int) decodedRevision {
		return decodedRevision{revision: fmt.Sprintf("main@sha1:%d", i), path: ".", size: each}
	}
	for i := range 200 {
		decoded.put(fmt.Sprintf("tenant-%d/sync", i), revision(i), bound)
		bytes, revisions := decoded.size()
		g.Expect(bytes).To(BeNumerically("<=", bound), "after %d ProfileSyncs", i+1)
		g.Expect(revisions).To(Equal(min(i+1, 10)))
		// tenant-0 is used at every sync of its own, so it stays.
		_, ok := decoded.get("tenant-0/sync", "main@sha1:0", ".")
		g.Expect(ok).To(BeTrue(), "the most recently used stays, after %d ProfileSyncs", i+1)
	}
	for i := 1; i < 191; i++ {
		_, ok := decoded.get(fmt.Sprintf("tenant-%d/sync", i), fmt.Sprintf("main@sha1:%d", i), ".")
		g.Expect(ok).To(BeFalse(), "tenant-%d was the least recently used", i)
	}
	for i := 191; i < 200; i++ {
		_, ok := decoded.get(fmt.Sprintf("tenant-%d/sync", i), fmt.Sprintf("main@sha1:%d", i), ".")
		g.Expect(ok).To(BeTrue(), "tenant-%d is among the ten most recent", i)
	}

	// A new revision of a ProfileSync replaces its old one: one per
	// ProfileSync, counted once.
	decoded.put("tenant-199/sync", decodedRevision{revision: "main@sha1:new", path: ".", size: each}, bound)
	bytes, revisions := decoded.size()
	g.Expect(bytes).To(Equal(int64(bound)))
	g.Expect(revisions).To(Equal(10))
	_, ok := decoded.get("tenant-199/sync", "main@sha1:199", ".")
	g.Expect(ok).To(BeFalse())
}

// TestARevisionLargerThanTheBoundIsNotKept: it would push out every other
// one and still break the bound; it is built again at each sync instead, and
// the ProfileSync's older revision goes too.
func TestARevisionLargerThanTheBoundIsNotKept(t *testing.T) {
	g := NewWithT(t)
	var decoded decodedRevisions
	decoded.put("ns/a", decodedRevision{revision: "r1", size: 10}, 100)
	decoded.put("ns/b", decodedRevision{revision: "r1", size: 10}, 100)
	g.Expect(decoded.put("ns/a", decodedRevision{revision: "r2", size: 101}, 100)).To(BeFalse(), "the sync logs it")
	_, ok := decoded.get("ns/a", "r2", "")
	g.Expect(ok).To(BeFalse())
	_, ok = decoded.get("ns/a", "r1", "")
	g.Expect(ok).To(BeFalse(), "the older revision of the ProfileSync is not kept either")
	_, ok = decoded.get("ns/b", "r1", "")
	g.Expect(ok).To(BeTrue(), "another ProfileSync's revision stays")
	bytes, revisions := decoded.size()
	g.Expect(bytes).To(Equal(int64(10)))
	g.Expect(revisions).To(Equal(1))
}

// manyVersionsProfile is a CloudProfile of 30 machine images of 100 versions
// each, with a few Kubernetes versions: about 100 KB of YAML of small fields.
func manyVersionsProfile(name string) string {
	var b strings.Builder
	b.WriteString("apiVersion: core.profilesync.io/v1alpha1\nkind: CloudProfile\nmetadata:\n  name: " + name + "\nspec:\n  type: local\n")
	b.WriteString("  kubernetes:\n    versions:\n    - version: 1.31.0\n    - version: 1.30.4\n")
	b.WriteString("  machineTypes:\n  - {name: m5.large, cpu: \"2\", gpu: \"0\", memory: 8Gi}\n  regions:\n  - name: eu-1\n  machineImages:\n")
	for image := range 30 {
		fmt.Fprintf(&b, "  - name: image-%d\n    versions:\n", image)
		for v := range 100 {
			fmt.Fprintf(&b, "    - version: %d.%d.0\n", v/10+1, v%10)
		}
	}
	return b.String()
}

// TestTheKeptRevisionLendsItsObjectsToTheNextBuild: whatever revision is
// kept for a ProfileSync, its next build finds it (kept), with its objects by
// the digest of their documents (known), and another ProfileSync's is not
// lent; the document digests count in the revision's size.
func TestTheKeptRevisionLendsItsObjectsToTheNextBuild(t *testing.T) {
	g := NewWithT(t)
	var decoded decodedRevisions
	docs := []profile.Document{
		{File: "profiles.yaml", Data: []byte("apiVersion: core.profilesync.io/v1alpha1\nkind: NamespacedCloudProfile\nmetadata: {name: a, namespace: team}\nspec: {parent: {kind: CloudProfile, name: aws}}\n")},
		{File: "profiles.yaml", Data: []byte("apiVersion: core.profilesync.io/v1alpha1\nkind: NamespacedCloudProfile\nmetadata: {name: b, namespace: team}\nspec: {parent: {kind: CloudProfile, name: aws}}\n")},
	}
	objects, problems, documents := profile.DecodeDocumentsReusing(docs, nil)
	g.Expect(problems).To(BeEmpty())
	revision := decodedRevision{revision: "main@sha1:a", path: "overlays/dev", objects: objects, documents: documents}
	withoutDocuments := revision
	withoutDocuments.documents = nil
	g.Expect(decodedSize(revision)).To(BeNumerically(">", decodedSize(withoutDocuments)))
	revision.size = decodedSize(revision)
	g.Expect(decoded.put("ns/dev", revision, 0)).To(BeTrue())

	_, ok := decoded.kept("ns/prod")
	g.Expect(ok).To(BeFalse(), "another ProfileSync's revision is not lent")
	kept, ok := decoded.kept("ns/dev")
	g.Expect(ok).To(BeTrue(), "lent whichever revision the next build is of")
	known := kept.known()
	g.Expect(known).To(HaveLen(2))
	g.Expect(known[profile.DocumentDigest(docs[1])]).To(Equal(objects[1]))
}
