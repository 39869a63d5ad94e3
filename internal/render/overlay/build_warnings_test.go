package overlay

import (
	"context"
	"path/filepath"
	"testing"

	. "github.com/onsi/gomega"

	"github.com/profilesync/profilesync/test/builders"
)

// jsonPatchOn is a patches entry with an inline JSON patch of ops (YAML
// lines) targeting the CloudProfile aws.
func jsonPatchOn(ops string) string {
	return "- target:\n    kind: CloudProfile\n    name: aws\n  patch: |-\n" + indentLines(ops, "    ")
}

func TestBuildWarnsAboutJSONPatchesThatAddressKeyedEntriesByIndex(t *testing.T) {
	const kustomizationFile = "overlays/x/kustomization.yaml: "
	tests := []struct {
		name    string
		overlay string // the overlay's kustomization after its resources
		files   map[string]string
		want    []string
	}{
		{
			name:    "a JSON patch into a version's stage names the version and the stage it hits now",
			overlay: "patches:\n" + jsonPatchOn("- op: replace\n  path: /spec/kubernetes/versions/2/lifecycle/1/startTime\n  value: \"2027-01-15T00:00:00Z\"\n"),
			want: []string{kustomizationFile + "CloudProfile/aws: patch /spec/kubernetes/versions/2/lifecycle/1/startTime: " +
				"/spec/kubernetes/versions/2 is 1.33.7 and /spec/kubernetes/versions/2/lifecycle/1 is supported; " +
				"address them by version and classification with a strategic-merge patch"},
		},
		{
			name:    "each operation is checked against what the operations before it left",
			overlay: "patches:\n" + jsonPatchOn("- op: remove\n  path: /spec/kubernetes/versions/0\n- op: add\n  path: /spec/kubernetes/versions/0/lifecycle/-\n  value: {classification: expired, startTime: \"2027-06-01T00:00:00Z\"}\n"),
			want: []string{
				kustomizationFile + "CloudProfile/aws: patch /spec/kubernetes/versions/0: /spec/kubernetes/versions/0 is 1.32.9; " +
					"address it by version with a strategic-merge patch ($patch: delete removes an entry)",
				kustomizationFile + "CloudProfile/aws: patch /spec/kubernetes/versions/0/lifecycle/-: /spec/kubernetes/versions/0 is 1.33.5; " +
					"address it by version with a strategic-merge patch",
			},
		},
		{
			name:    "a JSON patch after a strategic-merge patch is checked against what that patch left",
			overlay: "patches:\n" + inlinePatch("apiVersion: core.profilesync.io/v1alpha1\nkind: CloudProfile\nmetadata:\n  name: aws\nspec:\n  kubernetes:\n    versions:\n    - version: 1.32.9\n      $patch: delete\n") + jsonPatchOn("- op: remove\n  path: /spec/kubernetes/versions/0\n"),
			want: []string{kustomizationFile + "CloudProfile/aws: patch /spec/kubernetes/versions/0: /spec/kubernetes/versions/0 is 1.33.5; " +
				"address it by version with a strategic-merge patch ($patch: delete removes an entry)"},
		},
		{
			name:    "a JSON patch in a file names the file",
			overlay: "patches:\n- path: ops.yaml\n  target:\n    kind: CloudProfile\n",
			files:   map[string]string{"overlays/x/ops.yaml": "- op: replace\n  path: /spec/machineImages/0/versions/1/lifecycle/1/startTime\n  value: \"2026-04-01T00:00:00Z\"\n"},
			want: []string{kustomizationFile + "CloudProfile/aws: patch /spec/machineImages/0/versions/1/lifecycle/1/startTime in ops.yaml: " +
				"/spec/machineImages/0 is gardenlinux, /spec/machineImages/0/versions/1 is 1592.9.0 and /spec/machineImages/0/versions/1/lifecycle/1 is deprecated; " +
				"address them by name, version and classification with a strategic-merge patch"},
		},
		{
			name:    "the legacy patchesJson6902 are checked after the namespace and name transformers",
			overlay: "namePrefix: dev-\npatchesJson6902:\n- target:\n    kind: NamespacedCloudProfile\n    name: dev-aws-payments\n  patch: |-\n    - op: remove\n      path: /spec/machineTypes/1\n",
			want: []string{kustomizationFile + "NamespacedCloudProfile/team-payments/dev-aws-payments: patch /spec/machineTypes/1: " +
				"/spec/machineTypes/1 is m6i.8xlarge; address it by name with a strategic-merge patch ($patch: delete removes an entry)"},
		},
		{
			name:    "appending with - addresses no entry by index",
			overlay: "patches:\n" + jsonPatchOn("- op: add\n  path: /spec/kubernetes/versions/-\n  value: {version: 1.35.0}\n"),
		},
		{
			name:    "a field outside keyed lists is no index",
			overlay: "patches:\n" + jsonPatchOn("- op: replace\n  path: /spec/type\n  value: gcp\n"),
		},
		{
			name:    "a strategic-merge patch deleting a version the base does not have deletes nothing, and is named",
			overlay: "patches:\n" + inlinePatch("apiVersion: core.profilesync.io/v1alpha1\nkind: CloudProfile\nmetadata:\n  name: aws\nspec:\n  kubernetes:\n    versions:\n    - version: 1.20.0\n      $patch: delete\n"),
			want: []string{kustomizationFile + "CloudProfile/aws: strategic-merge patch: $patch: delete of the /spec/kubernetes/versions entry 1.20.0 deletes nothing: " +
				"the target has no such entry; remove it from the patch"},
		},
		{
			name:    "a stage deleted from a version the base does not have deletes nothing, named by the file and the keys",
			overlay: "patches:\n- path: stale.yaml\n",
			files: map[string]string{"overlays/x/stale.yaml": "apiVersion: core.profilesync.io/v1alpha1\nkind: CloudProfile\nmetadata:\n  name: aws\nspec:\n  machineImages:\n  - name: gardenlinux\n" +
				"    versions:\n    - version: 1.0.0\n      lifecycle:\n      - classification: deprecated\n        $patch: delete\n"},
			want: []string{kustomizationFile + "CloudProfile/aws: strategic-merge patch stale.yaml: $patch: delete of the /spec/machineImages/gardenlinux/versions/1.0.0/lifecycle entry deprecated deletes nothing: " +
				"the target has no such entry; remove it from the patch"},
		},
		{
			name:    "a patch by key that creates an image version without the fields every other version has is named, with the fields",
			overlay: "patches:\n- path: retime.yaml\n",
			files: map[string]string{
				"base/profiles.yaml": imagesWithArchitectures,
				"overlays/x/retime.yaml": "apiVersion: core.profilesync.io/v1alpha1\nkind: CloudProfile\nmetadata:\n  name: aws\nspec:\n  machineImages:\n  - name: gardenlinux\n" +
					"    versions:\n    - version: 1877.3.0\n      lifecycle:\n      - classification: deprecated\n        startTime: \"2027-03-01T00:00:00Z\"\n",
			},
			want: []string{kustomizationFile + "CloudProfile/aws: strategic-merge patch retime.yaml: the /spec/machineImages/gardenlinux/versions entry 1877.3.0 matches no entry of the target, " +
				"so the patch creates it without architectures and cri, which every other entry of the list has; if the base renamed or removed it, update the patch"},
		},
		{
			name: "an image version a patch creates whole, like the versions the image has, is intended and not warned about",
			overlay: "patches:\n" + inlinePatch("apiVersion: core.profilesync.io/v1alpha1\nkind: CloudProfile\nmetadata:\n  name: aws\nspec:\n  machineImages:\n  - name: gardenlinux\n"+
				"    versions:\n    - version: 1900.0.0\n      architectures: [amd64]\n      cri:\n      - name: containerd\n"),
			files: map[string]string{"base/profiles.yaml": imagesWithArchitectures},
		},
		{
			name:    "a Kubernetes version a patch adds with what the other versions all have is intended and not warned about",
			overlay: "patches:\n" + inlinePatch("apiVersion: core.profilesync.io/v1alpha1\nkind: CloudProfile\nmetadata:\n  name: aws\nspec:\n  kubernetes:\n    versions:\n    - version: 1.35.0\n      lifecycle:\n      - classification: preview\n"),
		},
		{
			name:    "a stage added to a version the base has is not warned about",
			overlay: "patches:\n" + inlinePatch("apiVersion: core.profilesync.io/v1alpha1\nkind: CloudProfile\nmetadata:\n  name: aws\nspec:\n  kubernetes:\n    versions:\n    - version: 1.33.5\n      lifecycle:\n      - classification: expired\n        startTime: \"2027-06-01T00:00:00Z\"\n"),
		},
		{
			name:    "a strategic-merge patch deleting an entry the target has is not warned about",
			overlay: "patches:\n" + inlinePatch("apiVersion: core.profilesync.io/v1alpha1\nkind: CloudProfile\nmetadata:\n  name: aws\nspec:\n  kubernetes:\n    versions:\n    - version: 1.32.9\n      $patch: delete\n"),
		},
		{
			name: "with a schema of its own that keys nothing, nothing is keyed",
			overlay: "openapi:\n  path: schema.json\npatches:\n" +
				jsonPatchOn("- op: replace\n  path: /spec/kubernetes/versions/2/lifecycle/1/startTime\n  value: \"2027-01-15T00:00:00Z\"\n"),
			files: map[string]string{"overlays/x/schema.json": versionsReplacedSchema},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			files := map[string]string{
				"base/kustomization.yaml":       kustomization("profiles.yaml"),
				"base/profiles.yaml":            mergeBase,
				"overlays/x/kustomization.yaml": kustomization("../../base") + tt.overlay,
			}
			for path, content := range tt.files {
				files[path] = content
			}
			root := t.TempDir()
			builders.WriteTree(t, root, files)
			docs, warnings, err := BuildWithWarnings(context.Background(), root, filepath.Join("overlays", "x"), DefaultLimits())
			g.Expect(err).NotTo(HaveOccurred())
			if len(tt.want) == 0 {
				g.Expect(warnings).To(BeEmpty())
			} else {
				g.Expect(warnings.Lines()).To(Equal(tt.want))
			}

			plain, err := buildWithDefaults(t, root, filepath.Join("overlays", "x"))
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(plain).To(Equal(docs), "Build builds the same, without the warnings")
		})
	}
}

func TestBuildWarnsAboutEveryKustomizationOfTheBuildAndEveryObjectAPatchTargets(t *testing.T) {
	g := NewWithT(t)
	second := "---\napiVersion: core.profilesync.io/v1alpha1\nkind: CloudProfile\nmetadata:\n  name: gcp\nspec:\n  type: gcp\n  kubernetes:\n    versions:\n    - version: 1.31.0\n"
	root := t.TempDir()
	builders.WriteTree(t, root, map[string]string{
		"base/kustomization.yaml": kustomization("profiles.yaml") +
			"patches:\n- target:\n    kind: CloudProfile\n  patch: |-\n    - op: remove\n      path: /spec/kubernetes/versions/0\n",
		"base/profiles.yaml": mergeBase + second,
		"overlays/x/kustomization.yaml": kustomization("../../base") +
			"patches:\n" + jsonPatchOn("- op: test\n  path: /spec/kubernetes/versions/0/version\n  value: 1.33.5\n"),
	})
	_, warnings, err := BuildWithWarnings(context.Background(), root, filepath.Join("overlays", "x"), DefaultLimits())
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(warnings.Lines()).To(Equal([]string{
		"base/kustomization.yaml: CloudProfile/aws: patch /spec/kubernetes/versions/0: /spec/kubernetes/versions/0 is 1.32.9; " +
			"address it by version with a strategic-merge patch ($patch: delete removes an entry)",
		"base/kustomization.yaml: CloudProfile/gcp: patch /spec/kubernetes/versions/0: /spec/kubernetes/versions/0 is 1.31.0; " +
			"address it by version with a strategic-merge patch ($patch: delete removes an entry)",
		"overlays/x/kustomization.yaml: CloudProfile/aws: patch /spec/kubernetes/versions/0/version: /spec/kubernetes/versions/0 is 1.33.5; " +
			"address it by version with a strategic-merge patch",
	}))
}

// imagesWithArchitectures is a CloudProfile whose image versions all
// carry architectures and cri, as Gardener's profiles do.
const imagesWithArchitectures = `apiVersion: core.profilesync.io/v1alpha1
kind: CloudProfile
metadata:
  name: aws
spec:
  type: aws
  kubernetes:
    versions:
    - version: 1.33.5
  machineImages:
  - name: gardenlinux
    versions:
    - version: 1877.3.1
      architectures: [amd64, arm64]
      cri:
      - name: containerd
    - version: 1592.9.0
      architectures: [amd64]
      cri:
      - name: containerd
      lifecycle:
      - classification: supported
      - classification: deprecated
        startTime: "2026-05-01T00:00:00Z"
`
