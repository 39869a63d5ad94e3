package profile

import (
	"bytes"
	"fmt"
	"runtime"
	"slices"
	"testing"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/api/equality"
)

// memoDocuments are the documents of a revision: a CloudProfile and two
// NamespacedCloudProfiles, a document with a problem and an empty one.
func memoDocuments(names ...string) []Document {
	var docs []Document
	for _, name := range names {
		data := fmt.Sprintf(namespacedProfileOf, name, "team", "aws")
		if name == "aws" || name == "gcp" {
			data = fmt.Sprintf(minimalCloudProfile, name)
		}
		if name == "broken" {
			data = "apiVersion: core.profilesync.io/v1alpha1\nkind: CloudProfile\nmetadata: {name: broken}\nspec: {unknown: 1}\n"
		}
		if name == "empty" {
			data = "# nothing\n"
		}
		docs = append(docs, Document{File: "profiles.yaml", Data: []byte(data)})
	}
	return docs
}

// knownOf are the objects of a decoded revision by their document's digest.
func knownOf(objects []Object, digests [][32]byte) map[[32]byte]Object {
	known := make(map[[32]byte]Object, len(objects))
	for i, o := range objects {
		known[digests[i]] = o
	}
	return known
}

// TestDecodingReusingAnEarlierRevisionGivesWhatDecodingGives: a revision
// decoded with the objects of the one before gives the objects and problems
// of decoding it from nothing (in particular the document numbers of
// problems, after a document is inserted before them), takes the unchanged
// documents' objects without decoding them, and shares nothing with the
// revision before.
func TestDecodingReusingAnEarlierRevisionGivesWhatDecodingGives(t *testing.T) {
	g := NewWithT(t)
	first := memoDocuments("aws", "team-a", "broken", "empty", "team-b")
	objects, problems, digests := DecodeDocumentsReusing(first, nil)
	wantObjects, wantProblems := DecodeDocuments(first)
	g.Expect(objects).To(Equal(wantObjects))
	g.Expect(problems.Lines()).To(Equal(wantProblems.Lines()))
	g.Expect(digests).To(HaveLen(len(objects)))
	known := knownOf(objects, digests)

	second := memoDocuments("gcp", "aws", "team-a", "broken", "empty", "team-c")
	second[2].SetBy = []FieldSource{{Field: "spec.parent.name", File: "overlay/patch.yaml"}}
	objects, problems, digests = DecodeDocumentsReusing(second, known)
	wantObjects, wantProblems = DecodeDocuments(second)
	g.Expect(objects).To(Equal(wantObjects))
	g.Expect(problems.Lines()).To(Equal(wantProblems.Lines()))
	g.Expect(problems.Lines()).To(ContainElement(HavePrefix("profiles.yaml: CloudProfile/broken")), "the document with a problem is decoded again")
	g.Expect(digests).To(HaveLen(len(objects)))

	// Unchanged documents are taken from what is known, not decoded: a
	// known object marked as no decoding would give it shows.
	marked := map[[32]byte]Object{}
	for digest, o := range known {
		o = o.DeepCopy()
		if o.CloudProfile != nil {
			o.CloudProfile.Labels = map[string]string{"reused": "true"}
		} else {
			o.NamespacedCloudProfile.Labels = map[string]string{"reused": "true"}
		}
		marked[digest] = o
	}
	objects, _, _ = DecodeDocumentsReusing(second, marked)
	reused := map[string]bool{}
	for _, o := range objects {
		var labels map[string]string
		if o.CloudProfile != nil {
			labels = o.CloudProfile.GetLabels()
		} else {
			labels = o.NamespacedCloudProfile.GetLabels()
		}
		reused[o.Ref()] = labels["reused"] == "true"
	}
	g.Expect(reused).To(Equal(map[string]bool{
		"CloudProfile/gcp":                   false, // new
		"CloudProfile/aws":                   true,  // unchanged
		"NamespacedCloudProfile/team/team-a": false, // the same bytes, but a patch set a field now
		"NamespacedCloudProfile/team/team-c": false, // new
	}))

	objects[1].CloudProfile.Labels["reused"] = "changed"
	for _, o := range marked {
		if o.CloudProfile != nil {
			g.Expect(o.CloudProfile.Labels).To(HaveKeyWithValue("reused", "true"), "the revisions share nothing")
		}
	}
}

// FuzzDecodingReusingGivesWhatDecodingGives decodes a revision, then a second
// one reusing the first's objects, and checks that the second gives the
// objects and problems of decoding it from nothing, whatever the two
// streams hold (documents in common, moved, changed, broken).
func FuzzDecodingReusingGivesWhatDecodingGives(f *testing.F) {
	aws := fmt.Sprintf(minimalCloudProfile, "aws")
	team := fmt.Sprintf(namespacedProfileOf, "team-a", "team", "aws")
	f.Add([]byte(aws+"---\n"+team), []byte(team+"---\n"+aws))
	f.Add([]byte(aws), []byte("---\n"+aws+"---\nkind: CloudProfile\n---\n"+team))
	f.Add([]byte(team+"---\n{\"kind\": \"CloudProfile\", \"metadata\": []}\n"), []byte(team+"---\n# nothing\n"))
	f.Fuzz(func(t *testing.T, first, second []byte) {
		firstDocs, err := SplitDocuments("fuzz.yaml", bytes.NewReader(first))
		if err != nil {
			return
		}
		secondDocs, err := SplitDocuments("fuzz.yaml", bytes.NewReader(second))
		if err != nil {
			return
		}
		objects, _, digests := DecodeDocumentsReusing(firstDocs, nil)
		if len(digests) != len(objects) {
			t.Fatalf("%d digests for %d objects", len(digests), len(objects))
		}
		reused, reusedProblems, _ := DecodeDocumentsReusing(secondDocs, knownOf(objects, digests))
		wantObjects, wantProblems := DecodeDocuments(secondDocs)
		if !equality.Semantic.DeepEqual(reused, wantObjects) {
			t.Fatalf("reusing gave other objects than decoding")
		}
		if !slices.Equal(reusedProblems.Lines(), wantProblems.Lines()) {
			t.Fatalf("reusing gave the problems\n%s\ndecoding\n%s", reusedProblems, wantProblems)
		}
	})
}

// TestDecodingOnEveryCPUGivesWhatDecodingInOrderGives: the documents are
// decoded on several goroutines (four, whatever the machine has), and the
// objects and problems are those of decoding each in turn, in the
// documents' order, document numbers included.
func TestDecodingOnEveryCPUGivesWhatDecodingInOrderGives(t *testing.T) {
	g := NewWithT(t)
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(4))
	var names []string
	for i := range 40 {
		names = append(names, []string{"aws", "team-a", "broken", "empty", "gcp", fmt.Sprintf("team-%d", i)}[i%6])
	}
	docs := memoDocuments(names...)
	var wantObjects []Object
	var wantProblems Problems
	for i, doc := range docs {
		object, problems := decodeDocument(doc, i+1)
		wantProblems = append(wantProblems, problems...)
		if object != nil && len(problems) == 0 {
			wantObjects = append(wantObjects, *object)
		}
	}
	objects, problems := DecodeDocuments(docs)
	g.Expect(objects).To(Equal(wantObjects))
	g.Expect(problems.Lines()).To(Equal(wantProblems.Lines()))
	g.Expect(problems.Lines()).To(ContainElement(ContainSubstring("CloudProfile/broken")))

	firstObjects, _, firstDigests := DecodeDocumentsReusing(docs[:6], nil)
	known := knownOf(firstObjects, firstDigests)
	objects, problems, _ = DecodeDocumentsReusing(docs, known)
	g.Expect(objects).To(Equal(wantObjects))
	g.Expect(problems.Lines()).To(Equal(wantProblems.Lines()))
}
