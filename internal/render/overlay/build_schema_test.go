package overlay

import (
	"fmt"
	"sync"
	"testing"

	. "github.com/onsi/gomega"

	"github.com/profilesync/profilesync/test/builders"
)

// versionsReplacedSchema is a kustomize OpenAPI schema that gives a
// CloudProfile's Kubernetes versions no merge key, so that a strategic-merge
// patch replaces the whole list: the opposite of the schema every build
// registers unless its kustomization brings its own.
const versionsReplacedSchema = `{"definitions": {
  "io.profilesync.core.v1alpha1.CloudProfile": {
    "type": "object",
    "x-kubernetes-group-version-kind": [{"group": "core.profilesync.io", "kind": "CloudProfile", "version": "v1alpha1"}],
    "properties": {"spec": {"$ref": "#/definitions/io.profilesync.core.v1alpha1.CloudProfileSpec"}}
  },
  "io.profilesync.core.v1alpha1.CloudProfileSpec": {
    "type": "object",
    "properties": {"kubernetes": {"$ref": "#/definitions/io.profilesync.core.v1alpha1.KubernetesSettings"}}
  },
  "io.profilesync.core.v1alpha1.KubernetesSettings": {
    "type": "object",
    "properties": {"versions": {"type": "array", "items": {"type": "object"}}}
  }
}}`

// TestConcurrentBuildsDoNotShareAKustomizationsSchema builds a repository
// whose kustomization brings its own OpenAPI schema and one that uses the
// schema every build registers, one after the other and then at the same
// time. kustomize keeps the schema in a process-wide variable and never
// clears a custom one: without a reset before each build and one build at a
// time, one commit's schema changes how another repository's patches merge.
func TestConcurrentBuildsDoNotShareAKustomizationsSchema(t *testing.T) {
	g := NewWithT(t)
	profile := fmt.Sprintf(minimalCloudProfile, "p") + "    - version: 1.30.0\n"
	patch := "apiVersion: core.profilesync.io/v1alpha1\nkind: CloudProfile\nmetadata:\n  name: p\nspec:\n  kubernetes:\n    versions:\n    - version: 1.31.0\n      classification: deprecated\n"
	withSchema, without := t.TempDir(), t.TempDir()
	builders.WriteTree(t, withSchema, map[string]string{
		"kustomization.yaml": kustomization("profile.yaml") + "patches:\n- path: patch.yaml\nopenapi:\n  path: schema.json\n",
		"profile.yaml":       profile,
		"patch.yaml":         patch,
		"schema.json":        versionsReplacedSchema,
	})
	builders.WriteTree(t, without, map[string]string{
		"kustomization.yaml": kustomization("profile.yaml") + "patches:\n- path: patch.yaml\n",
		"profile.yaml":       profile,
		"patch.yaml":         patch,
	})
	alone := func(root string) string {
		docs, err := buildWithDefaults(t, root, ".")
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(docs).To(HaveLen(1))
		return string(docs[0].Data)
	}
	wantWithSchema, wantWithout := alone(withSchema), alone(without)
	g.Expect(wantWithout).To(ContainSubstring(`"versions":[{"classification":"deprecated","version":"1.31.0"},{"version":"1.30.0"}]`),
		"merged by version: the patch changes 1.31.0 and keeps 1.30.0")
	g.Expect(wantWithSchema).To(ContainSubstring(`"versions":[{"classification":"deprecated","version":"1.31.0"}]`))
	g.Expect(wantWithSchema).NotTo(ContainSubstring("1.30.0"), "the kustomization's own schema has no merge key: the patch replaces the list")

	var wg sync.WaitGroup
	for range 40 {
		for root, want := range map[string]string{withSchema: wantWithSchema, without: wantWithout} {
			wg.Add(1)
			go func() {
				defer wg.Done()
				docs, err := buildWithDefaults(t, root, ".")
				g.Expect(err).NotTo(HaveOccurred())
				g.Expect(docs).To(HaveLen(1))
				g.Expect(string(docs[0].Data)).To(Equal(want))
			}()
		}
	}
	wg.Wait()
}
