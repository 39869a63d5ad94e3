package controllers

import (
	"fmt"
	"runtime"
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

// TestDecodedSizeIsAtLeastWhatTheObjectsTake: the estimate that the bound
// counts is above the heap the decoded objects really hold, measured, for
// the profile shape that takes the most memory per byte of JSON (many small
// versions of many images) and for a providerConfig blob.
func TestDecodedSizeIsAtLeastWhatTheObjectsTake(t *testing.T) {
	for _, shape := range []struct {
		name string
		yaml func(name string) string
	}{
		{"many small versions", manyVersionsProfile},
		{"a providerConfig blob", func(name string) string { return profileOfSize(name, 1<<20) }},
	} {
		t.Run(shape.name, func(t *testing.T) {
			g := NewWithT(t)
			docs := make([]profile.Document, 20)
			for i := range docs {
				docs[i] = profile.Document{File: fmt.Sprintf("p%d.yaml", i), Data: []byte(shape.yaml(fmt.Sprintf("p%d", i)))}
			}
			before := heapAfterGC()
			objects, problems := profile.DecodeDocuments(docs)
			held := heapAfterGC() - before
			g.Expect(problems).To(BeEmpty())
			digests, err := contentDigests(objects)
			g.Expect(err).NotTo(HaveOccurred())
			size := decodedSize(decodedRevision{objects: objects, digests: digests})
			t.Logf("%s: %d objects hold %d bytes of heap, estimated %d", shape.name, len(objects), held, size)
			g.Expect(size).To(BeNumerically(">=", held))
			g.Expect(size).To(BeNumerically("<", 2*held), "not so far above that the bound keeps little")
			runtime.KeepAlive(objects)
			runtime.KeepAlive(docs)
		})
	}
}

func heapAfterGC() int64 {
	runtime.GC()
	var stats runtime.MemStats
	runtime.ReadMemStats(&stats)
	return int64(stats.HeapAlloc)
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
