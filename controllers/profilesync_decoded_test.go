package controllers

import (
	"testing"

	. "github.com/onsi/gomega"

	"github.com/profilesync/profilesync/internal/render"
)

func TestDecodedRevisionsAreReusedOnlyForTheSameRevisionAndPath(t *testing.T) {
	g := NewWithT(t)
	var decoded decodedRevisions
	objects := []render.Object{{File: "profiles.yaml"}}

	_, ok := decoded.get("ns/dev", "main@sha1:a", "overlays/dev")
	g.Expect(ok).To(BeFalse(), "nothing decoded yet")

	decoded.put("ns/dev", "main@sha1:a", "overlays/dev", objects)
	got, ok := decoded.get("ns/dev", "main@sha1:a", "overlays/dev")
	g.Expect(ok).To(BeTrue())
	g.Expect(got).To(Equal(objects))

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
