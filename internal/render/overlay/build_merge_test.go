package overlay

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"
	"sigs.k8s.io/kustomize/kyaml/openapi"
	"sigs.k8s.io/yaml"

	"github.com/profilesync/profilesync/internal/render/mergekeys"
	"github.com/profilesync/profilesync/internal/render/profile"
	"github.com/profilesync/profilesync/test/builders"
)

// mergeBase is the base the strategic-merge tests patch: versions and
// stages in an order kustomize would change if it could.
const mergeBase = `apiVersion: core.profilesync.io/v1alpha1
kind: CloudProfile
metadata:
  name: aws
spec:
  type: aws
  kubernetes:
    versions:
    - version: 1.32.9
      lifecycle:
      - classification: supported
      - classification: deprecated
        startTime: "2026-06-01T00:00:00Z"
    - version: 1.33.5
      lifecycle:
      - classification: supported
      - classification: deprecated
        startTime: "2026-12-01T00:00:00Z"
    - version: 1.33.7
      lifecycle:
      - classification: preview
      - classification: supported
        startTime: "2026-12-01T00:00:00Z"
      - classification: deprecated
        startTime: "2027-06-01T00:00:00Z"
    - version: 1.34.2
  machineImages:
  - name: gardenlinux
    versions:
    - version: 1877.3.0
    - version: 1592.9.0
      lifecycle:
      - classification: supported
      - classification: deprecated
        startTime: "2026-05-01T00:00:00Z"
    - version: 1443.20.0
  - name: ubuntu
    versions:
    - version: 24.4.2
---
apiVersion: core.profilesync.io/v1alpha1
kind: NamespacedCloudProfile
metadata:
  name: aws-payments
  namespace: team-payments
spec:
  parent:
    kind: CloudProfile
    name: aws
  kubernetes:
    versions:
    - version: 1.32.9
      lifecycle:
      - classification: deprecated
        startTime: "2026-08-01T00:00:00Z"
    - version: 1.33.5
      lifecycle:
      - classification: deprecated
        startTime: "2027-01-01T00:00:00Z"
  machineTypes:
  - name: m6i.4xlarge
    cpu: "16"
    gpu: "0"
    memory: 64Gi
  - name: m6i.8xlarge
    cpu: "32"
    gpu: "0"
    memory: 128Gi
`

// mergeRepo writes mergeBase as base/ and an overlay with the given patches
// entries as overlays/x/, and returns the repository's root.
func mergeRepo(t *testing.T, patches string, files map[string]string) string {
	t.Helper()
	root := t.TempDir()
	tree := map[string]string{
		"base/kustomization.yaml":       kustomization("profiles.yaml"),
		"base/profiles.yaml":            mergeBase,
		"overlays/x/kustomization.yaml": kustomization("../../base") + "patches:\n" + patches,
	}
	for path, content := range files {
		tree[path] = content
	}
	builders.WriteTree(t, root, tree)
	return root
}

// inlinePatch is a patches entry with patch as its inline text.
func inlinePatch(patch string) string {
	return "- patch: |-\n" + indentLines(patch, "    ")
}

func indentLines(text, prefix string) string {
	lines := strings.Split(strings.TrimSuffix(text, "\n"), "\n")
	return prefix + strings.Join(lines, "\n"+prefix) + "\n"
}

// decodedDocs decodes built documents into plain values, which compare the
// objects whatever the order of fields in a mapping.
func decodedDocs(t *testing.T, docs []profile.Document) []map[string]any {
	t.Helper()
	objects := make([]map[string]any, len(docs))
	for i, doc := range docs {
		if err := yaml.Unmarshal(doc.Data, &objects[i]); err != nil {
			t.Fatalf("decoding %s: %v", doc.File, err)
		}
	}
	return objects
}

// decodedBase is what mergeBase builds to unpatched.
func decodedBase(t *testing.T) []map[string]any {
	t.Helper()
	root := t.TempDir()
	builders.WriteTree(t, root, map[string]string{"kustomization.yaml": kustomization("profiles.yaml"), "profiles.yaml": mergeBase})
	docs, err := buildWithDefaults(t, root, ".")
	NewWithT(t).Expect(err).NotTo(HaveOccurred())
	return decodedDocs(t, docs)
}

// at follows path (field names and list indices) into a decoded object.
func fieldAt(object any, path ...any) any {
	for _, step := range path {
		switch step := step.(type) {
		case string:
			object = object.(map[string]any)[step]
		case int:
			object = object.([]any)[step]
		}
	}
	return object
}

func TestStrategicMergePatchesNameListEntriesByKey(t *testing.T) {
	const cloudProfile = "apiVersion: core.profilesync.io/v1alpha1\nkind: CloudProfile\nmetadata:\n  name: aws\n"
	const namespaced = "apiVersion: core.profilesync.io/v1alpha1\nkind: NamespacedCloudProfile\nmetadata:\n  name: aws-payments\n  namespace: team-payments\n"
	tests := []struct {
		name    string
		patches string
		files   map[string]string
		// change turns the unpatched objects (CloudProfile, then the
		// NamespacedCloudProfile) into what the overlay must build.
		change func(objects []map[string]any)
	}{
		{
			name: "a patch naming 1.33.7 and its supported stage changes that stage's startTime and nothing else",
			patches: inlinePatch(cloudProfile + `spec:
  kubernetes:
    versions:
    - version: 1.33.7
      lifecycle:
      - classification: supported
        startTime: "2027-01-15T00:00:00Z"
`),
			change: func(objects []map[string]any) {
				fieldAt(objects[0], "spec", "kubernetes", "versions", 2, "lifecycle", 1).(map[string]any)["startTime"] = "2027-01-15T00:00:00Z"
			},
		},
		{
			name: "$patch: delete on one version removes exactly that version",
			patches: inlinePatch(cloudProfile + `spec:
  kubernetes:
    versions:
    - version: 1.33.5
      $patch: delete
`),
			change: func(objects []map[string]any) {
				spec := fieldAt(objects[0], "spec", "kubernetes").(map[string]any)
				versions := spec["versions"].([]any)
				spec["versions"] = append(versions[:1:1], versions[2:]...)
			},
		},
		{
			name:    "a patch in a file changes a stage of two versions named by key",
			patches: "- path: retime.yaml\n",
			files: map[string]string{"overlays/x/retime.yaml": cloudProfile + `spec:
  kubernetes:
    versions:
    - version: 1.34.2
      lifecycle:
      - classification: preview
        startTime: "2027-02-01T00:00:00Z"
    - version: 1.32.9
      lifecycle:
      - classification: deprecated
        startTime: "2026-07-01T00:00:00Z"
`},
			change: func(objects []map[string]any) {
				fieldAt(objects[0], "spec", "kubernetes", "versions", 0, "lifecycle", 1).(map[string]any)["startTime"] = "2026-07-01T00:00:00Z"
				fieldAt(objects[0], "spec", "kubernetes", "versions", 3).(map[string]any)["lifecycle"] = []any{
					map[string]any{"classification": "preview", "startTime": "2027-02-01T00:00:00Z"},
				}
			},
		},
		{
			name: "a NamespacedCloudProfile's override and machine type are patched by key",
			patches: inlinePatch(namespaced + `spec:
  kubernetes:
    versions:
    - version: 1.33.5
      lifecycle:
      - classification: deprecated
        startTime: "2027-02-01T00:00:00Z"
  machineTypes:
  - name: m6i.8xlarge
    memory: 256Gi
`),
			change: func(objects []map[string]any) {
				fieldAt(objects[1], "spec", "kubernetes", "versions", 1, "lifecycle", 0).(map[string]any)["startTime"] = "2027-02-01T00:00:00Z"
				fieldAt(objects[1], "spec", "machineTypes", 1).(map[string]any)["memory"] = "256Gi"
			},
		},
		{
			name: "machine image versions are patched by key within the image named by key",
			patches: inlinePatch(cloudProfile + `spec:
  machineImages:
  - name: gardenlinux
    versions:
    - version: 1592.9.0
      lifecycle:
      - classification: deprecated
        startTime: "2026-04-01T00:00:00Z"
    - version: 1443.20.0
      $patch: delete
`),
			change: func(objects []map[string]any) {
				image := fieldAt(objects[0], "spec", "machineImages", 0).(map[string]any)
				fieldAt(image, "versions", 1, "lifecycle", 1).(map[string]any)["startTime"] = "2026-04-01T00:00:00Z"
				image["versions"] = image["versions"].([]any)[:2]
			},
		},
		{
			name: "a version the patch adds follows the version named before it",
			patches: inlinePatch(cloudProfile + `spec:
  kubernetes:
    versions:
    - version: 1.33.7
    - version: 1.33.8
      lifecycle:
      - classification: preview
        startTime: "2027-01-01T00:00:00Z"
`),
			change: func(objects []map[string]any) {
				spec := fieldAt(objects[0], "spec", "kubernetes").(map[string]any)
				versions := spec["versions"].([]any)
				added := map[string]any{"version": "1.33.8", "lifecycle": []any{map[string]any{"classification": "preview", "startTime": "2027-01-01T00:00:00Z"}}}
				spec["versions"] = append(append(versions[:3:3], added), versions[3:]...)
			},
		},
		{
			name: "a stage the patch adds alone comes first, before the stages the base has",
			patches: inlinePatch(cloudProfile + `spec:
  kubernetes:
    versions:
    - version: 1.33.5
      lifecycle:
      - classification: preview
        startTime: "2026-01-01T00:00:00Z"
`),
			change: func(objects []map[string]any) {
				version := fieldAt(objects[0], "spec", "kubernetes", "versions", 1).(map[string]any)
				version["lifecycle"] = append([]any{map[string]any{"classification": "preview", "startTime": "2026-01-01T00:00:00Z"}}, version["lifecycle"].([]any)...)
			},
		},
		{
			name: "a stage the patch names after the last stage of the base is added last",
			patches: inlinePatch(cloudProfile + `spec:
  kubernetes:
    versions:
    - version: 1.32.9
      lifecycle:
      - classification: deprecated
      - classification: expired
        startTime: "2026-12-15T00:00:00Z"
`),
			change: func(objects []map[string]any) {
				version := fieldAt(objects[0], "spec", "kubernetes", "versions", 0).(map[string]any)
				version["lifecycle"] = append(version["lifecycle"].([]any), map[string]any{"classification": "expired", "startTime": "2026-12-15T00:00:00Z"})
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			want := decodedBase(t)
			tt.change(want)
			docs, err := buildWithDefaults(t, mergeRepo(t, tt.patches, tt.files), filepath.Join("overlays", "x"))
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(decodedDocs(t, docs)).To(Equal(want))
		})
	}
}

// plainKustomizeBuild builds dir with kustomize as its command does, on
// the disk, with its default options, and returns each object as
// kustomize's JSON of it (Resource.MarshalJSON), which Build renders byte
// for byte (renderJSON).
func plainKustomizeBuild(t *testing.T, dir string) [][]byte {
	t.Helper()
	kustomizeRuns.Lock()
	defer kustomizeRuns.Unlock()
	openapi.ResetOpenAPI()
	defer openapi.ResetOpenAPI()
	resources, err := krusty.MakeKustomizer(krusty.MakeDefaultOptions()).Run(filesys.MakeFsOnDisk(), dir)
	if err != nil {
		t.Fatalf("kustomize build %s: %v", dir, err)
	}
	out := make([][]byte, resources.Size())
	for i, res := range resources.Resources() {
		if out[i], err = res.MarshalJSON(); err != nil {
			t.Fatal(err)
		}
	}
	return out
}

// withSchemaFile copies overlay to a sibling directory that names the
// schema mergekeys.OpenAPISchema returns in its openapi field, as a repository does
// for plain kustomize, and returns the copy.
func withSchemaFile(t *testing.T, root, overlay string) string {
	t.Helper()
	schema, err := mergekeys.OpenAPISchema()
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(root, overlay)
	copied := dir + "-plain"
	if err := os.CopyFS(copied, os.DirFS(dir)); err != nil {
		t.Fatal(err)
	}
	kustomizationPath := filepath.Join(copied, "kustomization.yaml")
	content, err := os.ReadFile(kustomizationPath)
	if err != nil {
		t.Fatal(err)
	}
	builders.WriteTree(t, copied, map[string]string{
		"kustomization.yaml": string(content) + "openapi:\n  path: schema.json\n",
		"schema.json":        string(schema),
	})
	return copied
}

func docsData(docs []profile.Document) [][]byte {
	data := make([][]byte, len(docs))
	for i, doc := range docs {
		data[i] = doc.Data
	}
	return data
}

// TestPlainKustomizeWithTheSchemaBuildsWhatBuildBuilds is the promise of
// mergekeys.OpenAPISchema: written to a file and named in the overlay's openapi field,
// it makes plain kustomize render what the sync renders, byte for byte,
// wherever kustomize keeps the order of the lists it merges.
func TestPlainKustomizeWithTheSchemaBuildsWhatBuildBuilds(t *testing.T) {
	const cloudProfile = "apiVersion: core.profilesync.io/v1alpha1\nkind: CloudProfile\nmetadata:\n  name: aws\n"
	tests := []struct {
		name    string
		patches string
	}{
		{
			name: "a patch naming the first version and its first stage",
			patches: inlinePatch(cloudProfile + `spec:
  kubernetes:
    versions:
    - version: 1.32.9
      lifecycle:
      - classification: supported
        startTime: "2025-01-01T00:00:00Z"
`),
		},
		{
			name: "a version deleted from the middle and an image version deleted by key",
			patches: inlinePatch(cloudProfile + `spec:
  kubernetes:
    versions:
    - version: 1.33.5
      $patch: delete
  machineImages:
  - name: gardenlinux
    versions:
    - version: 1592.9.0
      $patch: delete
`),
		},
		{
			name: "a NamespacedCloudProfile's first override retimed by key",
			patches: inlinePatch(`apiVersion: core.profilesync.io/v1alpha1
kind: NamespacedCloudProfile
metadata:
  name: aws-payments
  namespace: team-payments
spec:
  kubernetes:
    versions:
    - version: 1.32.9
      lifecycle:
      - classification: deprecated
        startTime: "2026-09-01T00:00:00Z"
`),
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			root := mergeRepo(t, tt.patches, nil)
			docs, err := buildWithDefaults(t, root, filepath.Join("overlays", "x"))
			g.Expect(err).NotTo(HaveOccurred())
			plain := plainKustomizeBuild(t, withSchemaFile(t, root, filepath.Join("overlays", "x")))
			g.Expect(plain).To(Equal(docsData(docs)))
			g.Expect(decodedDocs(t, docs)).NotTo(Equal(decodedBase(t)), "the patch changed something")
		})
	}
}

// TestPlainKustomizeWithTheSchemaListsPatchedEntriesFirst pins the one
// difference: kustomize moves the entries a patch names to the front of
// their list (kubernetes-sigs/kustomize#5904), Build keeps the base's order.
func TestPlainKustomizeWithTheSchemaListsPatchedEntriesFirst(t *testing.T) {
	g := NewWithT(t)
	root := mergeRepo(t, inlinePatch(`apiVersion: core.profilesync.io/v1alpha1
kind: CloudProfile
metadata:
  name: aws
spec:
  kubernetes:
    versions:
    - version: 1.33.7
      lifecycle:
      - classification: supported
        startTime: "2027-01-15T00:00:00Z"
`), nil)
	docs, err := buildWithDefaults(t, root, filepath.Join("overlays", "x"))
	g.Expect(err).NotTo(HaveOccurred())
	plain := plainKustomizeBuild(t, withSchemaFile(t, root, filepath.Join("overlays", "x")))
	g.Expect(plain).To(HaveLen(2))
	g.Expect(plain[1]).To(Equal(docs[1].Data), "the NamespacedCloudProfile is not patched")

	var plainProfile map[string]any
	g.Expect(yaml.Unmarshal(plain[0], &plainProfile)).To(Succeed())
	built := decodedDocs(t, docs)[0]
	versionsOf := func(object map[string]any) []string {
		var versions []string
		for _, v := range fieldAt(object, "spec", "kubernetes", "versions").([]any) {
			versions = append(versions, v.(map[string]any)["version"].(string))
		}
		return versions
	}
	g.Expect(versionsOf(plainProfile)).To(Equal([]string{"1.33.7", "1.32.9", "1.33.5", "1.34.2"}))
	g.Expect(versionsOf(built)).To(Equal([]string{"1.32.9", "1.33.5", "1.33.7", "1.34.2"}))
	g.Expect(fieldAt(plainProfile, "spec", "kubernetes", "versions", 0, "lifecycle")).To(Equal([]any{
		map[string]any{"classification": "supported", "startTime": "2027-01-15T00:00:00Z"},
		map[string]any{"classification": "preview"},
		map[string]any{"classification": "deprecated", "startTime": "2027-06-01T00:00:00Z"},
	}), "out of rank order: a lifecycle the API refuses")
	g.Expect(fieldAt(built, "spec", "kubernetes", "versions", 2, "lifecycle")).To(Equal([]any{
		map[string]any{"classification": "preview"},
		map[string]any{"classification": "supported", "startTime": "2027-01-15T00:00:00Z"},
		map[string]any{"classification": "deprecated", "startTime": "2027-06-01T00:00:00Z"},
	}))
}
