package overlay

import (
	"path/filepath"
	"slices"
	"strings"
	"testing"

	. "github.com/onsi/gomega"

	"github.com/profilesync/profilesync/test/builders"
)

// kubernetesVersionsOf lists the Kubernetes versions of a decoded profile
// in order.
func kubernetesVersionsOf(profile map[string]any) []string {
	var versions []string
	for _, v := range fieldAt(profile, "spec", "kubernetes", "versions").([]any) {
		versions = append(versions, v.(map[string]any)["version"].(string))
	}
	return versions
}

func TestBuildKeepsTheBasesOrderOfKeyedListsKustomizeMoves(t *testing.T) {
	// retime names the third version: kustomize alone would move it first.
	retime := inlinePatch("apiVersion: core.profilesync.io/v1alpha1\nkind: CloudProfile\nmetadata:\n  name: aws\nspec:\n  kubernetes:\n    versions:\n" +
		"    - version: 1.33.7\n      lifecycle:\n      - classification: supported\n        startTime: \"2027-01-15T00:00:00Z\"\n")
	// aliasedBase shares one lifecycle between two versions through an
	// anchor; listBase is the base as a List.
	aliasedBase := strings.Replace(strings.Replace(mergeBase, "    - version: 1.32.9\n      lifecycle:\n", "    - version: 1.32.9\n      lifecycle: &stages\n", 1),
		"    - version: 1.33.5\n      lifecycle:\n      - classification: supported\n      - classification: deprecated\n        startTime: \"2026-12-01T00:00:00Z\"\n",
		"    - version: 1.33.5\n      lifecycle: *stages\n", 1)
	listBase := "apiVersion: v1\nkind: List\nitems:\n"
	for _, doc := range strings.Split(mergeBase, "---\n") {
		listBase += "- " + strings.ReplaceAll(strings.TrimSuffix(doc, "\n"), "\n", "\n  ") + "\n"
	}
	tests := []struct {
		name    string
		base    string
		overlay string
		want    []string
	}{
		{
			name:    "a version a JSON patch inserts at the top stays at the top",
			overlay: "patches:\n" + retime + jsonPatchOn("- op: add\n  path: /spec/kubernetes/versions/0\n  value: {version: 1.31.14}\n"),
			want:    []string{"1.31.14", "1.32.9", "1.33.5", "1.33.7", "1.34.2"},
		},
		{
			name:    "a version a JSON patch appends stays last",
			overlay: "patches:\n" + retime + jsonPatchOn("- op: add\n  path: /spec/kubernetes/versions/-\n  value: {version: 1.35.0}\n"),
			want:    []string{"1.32.9", "1.33.5", "1.33.7", "1.34.2", "1.35.0"},
		},
		{
			name:    "a profile a name prefix renames is found in its file all the same",
			overlay: "namePrefix: dev-\npatches:\n" + retime,
			want:    []string{"1.32.9", "1.33.5", "1.33.7", "1.34.2"},
		},
		{
			name:    "a base whose versions share a lifecycle through an alias is read as kustomize reads it",
			base:    aliasedBase,
			overlay: "patches:\n" + retime + jsonPatchOn("- op: add\n  path: /spec/kubernetes/versions/0\n  value: {version: 1.31.14}\n"),
			want:    []string{"1.31.14", "1.32.9", "1.33.5", "1.33.7", "1.34.2"},
		},
		{
			name:    "a base written as a List is read as kustomize reads it",
			base:    listBase,
			overlay: "patches:\n" + retime,
			want:    []string{"1.32.9", "1.33.5", "1.33.7", "1.34.2"},
		},
		{
			name:    "a JSON patch that moves a version cannot reorder the base's versions",
			overlay: "patches:\n" + retime + jsonPatchOn("- op: move\n  from: /spec/kubernetes/versions/3\n  path: /spec/kubernetes/versions/0\n"),
			want:    []string{"1.32.9", "1.33.5", "1.33.7", "1.34.2"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			root := t.TempDir()
			base := tt.base
			if base == "" {
				base = mergeBase
			}
			builders.WriteTree(t, root, map[string]string{
				"base/kustomization.yaml":       kustomization("profiles.yaml"),
				"base/profiles.yaml":            base,
				"overlays/x/kustomization.yaml": kustomization("../../base") + tt.overlay,
			})
			docs, err := buildWithDefaults(t, root, filepath.Join("overlays", "x"))
			g.Expect(err).NotTo(HaveOccurred())
			profile := decodedDocs(t, docs)[0]
			g.Expect(kubernetesVersionsOf(profile)).To(Equal(tt.want))
			g.Expect(fieldAt(profile, "spec", "kubernetes", "versions", slices.Index(tt.want, "1.33.7"), "lifecycle", 0, "classification")).To(Equal("preview"),
				"1.33.7's stages keep their rank order")
		})
	}
}

func TestParseSourceObjectsReadsWhatKustomizeReads(t *testing.T) {
	g := NewWithT(t)
	profile := "apiVersion: core.profilesync.io/v1alpha1\nkind: CloudProfile\nmetadata:\n  name: aws\nspec:\n  type: aws\n"
	plain := profile + "---\n" + strings.Replace(profile, "name: aws", "name: gcp", 1)
	objects, err := parseSourceObjects([]byte(plain))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(objects).To(HaveLen(2))
	g.Expect([]string{objects[0].kind + "/" + objects[0].name, objects[1].kind + "/" + objects[1].name}).To(Equal([]string{"CloudProfile/aws", "CloudProfile/gcp"}))

	aliased := strings.Replace(strings.Replace(profile, "  type: aws\n", "  type: &t aws\n", 1), "name: aws", "name: *t", 1)
	aliased = strings.Replace(aliased, "metadata:\n  name: *t\nspec:\n  type: &t aws\n", "spec:\n  type: &t aws\nmetadata:\n  name: *t\n", 1)
	objects, err = parseSourceObjects([]byte(aliased))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(objects).To(HaveLen(1))
	g.Expect(objects[0].name).To(Equal("aws"), "the alias is resolved, as kustomize resolves it")

	_, err = parseSourceObjects([]byte("kind: [unclosed"))
	g.Expect(err).To(HaveOccurred())
}

// Only a patch moves the entries of a keyed list, so only the files of
// objects a patch selected are read again to restore their order: a plain
// list, labelled or not, reads none.
func TestOnlyTheFilesOfPatchedObjectsAreReadAgainForTheirOrder(t *testing.T) {
	other := strings.ReplaceAll(mergeBase, "name: aws", "name: other")
	retime := inlinePatch("apiVersion: core.profilesync.io/v1alpha1\nkind: CloudProfile\nmetadata:\n  name: aws\nspec:\n  kubernetes:\n    versions:\n" +
		"    - version: 1.33.7\n      lifecycle:\n      - classification: supported\n        startTime: \"2027-01-15T00:00:00Z\"\n")
	tests := []struct {
		name    string
		overlay string
		reads   int64
	}{
		{name: "a plain list", overlay: ""},
		{name: "labels and annotations for every object", overlay: "labels:\n- pairs: {landscape: bench}\ncommonAnnotations: {team: x}\n"},
		{name: "a patch of one object of one file", overlay: "patches:\n" + retime, reads: 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			root := t.TempDir()
			builders.WriteTree(t, root, map[string]string{
				"base/kustomization.yaml":       kustomization("aws.yaml", "other.yaml"),
				"base/aws.yaml":                 mergeBase,
				"base/other.yaml":               other,
				"overlays/x/kustomization.yaml": kustomization("../../base") + tt.overlay,
			})
			before := sourcesReadForOrder.Load()
			docs, err := buildWithDefaults(t, root, filepath.Join("overlays", "x"))
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(docs).To(HaveLen(4))
			g.Expect(sourcesReadForOrder.Load() - before).To(Equal(tt.reads))
		})
	}
}
