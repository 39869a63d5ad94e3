package controllers

import (
	"testing"

	. "github.com/onsi/gomega"

	"github.com/profilesync/profilesync/internal/profile"
)

func TestDecodedRevisionsAreReusedOnlyForTheSameRevisionAndPath(t *testing.T) {
	g := NewWithT(t)
	var decoded decodedRevisions
	objects := []profile.Object{{File: "profiles.yaml"}}

	_, ok := decoded.get("ns/dev", "main@sha1:a", "overlays/dev")
	g.Expect(ok).To(BeFalse(), "nothing decoded yet")

	warnings := []syncWarning{{reason: "BuildWarning", message: "overlays/dev/kustomization.yaml: patch by index"}}
	decoded.put("ns/dev", decodedRevision{revision: "main@sha1:a", path: "overlays/dev", objects: objects, warnings: warnings})
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
}
