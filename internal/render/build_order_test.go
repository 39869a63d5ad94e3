package render

import (
	"path/filepath"
	"slices"
	"testing"

	. "github.com/onsi/gomega"
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
	tests := []struct {
		name    string
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
			name:    "a JSON patch that moves a version cannot reorder the base's versions",
			overlay: "patches:\n" + retime + jsonPatchOn("- op: move\n  from: /spec/kubernetes/versions/3\n  path: /spec/kubernetes/versions/0\n"),
			want:    []string{"1.32.9", "1.33.5", "1.33.7", "1.34.2"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			root := t.TempDir()
			writeTree(t, root, map[string]string{
				"base/kustomization.yaml":       kustomization("profiles.yaml"),
				"base/profiles.yaml":            mergeBase,
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
