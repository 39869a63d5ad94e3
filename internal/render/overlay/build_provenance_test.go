package overlay

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"

	"github.com/profilesync/profilesync/internal/render/profile"
	"github.com/profilesync/profilesync/test/builders"
)

func TestBuildNamesThePatchThatSetEachField(t *testing.T) {
	const (
		overlayFile = "overlays/x/kustomization.yaml"
		cloudHeader = "apiVersion: core.profilesync.io/v1alpha1\nkind: CloudProfile\nmetadata:\n  name: aws\nspec:\n"
	)
	tests := []struct {
		name    string
		base    string // the base's kustomization after its resources
		overlay string // the overlay's kustomization after its resources
		files   map[string]string
		want    []profile.FieldSource // of CloudProfile/aws
	}{
		{
			name:    "a patch file that sets a field of a version names the file and the version's entry",
			overlay: "patches:\n- path: expire.yaml\n",
			files: map[string]string{"overlays/x/expire.yaml": cloudHeader +
				"  kubernetes:\n    versions:\n    - version: 1.33.7\n      expirationDate: \"2028-01-01T00:00:00Z\"\n"},
			want: []profile.FieldSource{{Field: "spec.kubernetes.versions[2].expirationDate", KeyedField: "spec.kubernetes.versions (1.33.7).expirationDate", File: "overlays/x/expire.yaml",
				Patch: "the patch's entry spec.kubernetes.versions (1.33.7)"}},
		},
		{
			name:    "a version an inline patch adds is the patch's as a whole, named by the kustomization's entry",
			overlay: "patches:\n" + inlinePatch(cloudHeader+"  kubernetes:\n    versions:\n    - version: 1.35.0\n"),
			want: []profile.FieldSource{{Field: "spec.kubernetes.versions[0]", KeyedField: "spec.kubernetes.versions (1.35.0)", File: overlayFile, // an added entry comes first (restoreKeyedListOrder)
				Patch: "patches[0], entry spec.kubernetes.versions (1.35.0)"}},
		},
		{
			name:    "a stage of an image version is named by the image and the version",
			overlay: "patches:\n" + inlinePatch(cloudHeader+"  machineImages:\n  - name: gardenlinux\n    versions:\n    - version: 1592.9.0\n      lifecycle:\n      - classification: deprecated\n        startTime: \"2026-09-01T00:00:00Z\"\n"),
			want: []profile.FieldSource{{Field: "spec.machineImages[0].versions[1].lifecycle[1].startTime", KeyedField: "spec.machineImages (gardenlinux).versions (1592.9.0).lifecycle (deprecated).startTime", File: overlayFile,
				Patch: "patches[0], entry spec.machineImages (gardenlinux).versions (1592.9.0).lifecycle (deprecated)"}},
		},
		{
			name: "a later patch that sets the field again takes it over",
			overlay: "patches:\n" + inlinePatch(cloudHeader+"  kubernetes:\n    versions:\n    - version: 1.34.2\n      expirationDate: \"2028-01-01T00:00:00Z\"\n") +
				inlinePatch(cloudHeader+"  kubernetes:\n    versions:\n    - version: 1.34.2\n      expirationDate: \"2029-01-01T00:00:00Z\"\n"),
			want: []profile.FieldSource{{Field: "spec.kubernetes.versions[3].expirationDate", KeyedField: "spec.kubernetes.versions (1.34.2).expirationDate", File: overlayFile,
				Patch: "patches[1], entry spec.kubernetes.versions (1.34.2)"}},
		},
		{
			name:    "a JSON patch is named by the kustomization's entry",
			overlay: "patches:\n" + jsonPatchOn("- op: replace\n  path: /spec/type\n  value: gcp\n"),
			want:    []profile.FieldSource{{Field: "spec.type", KeyedField: "spec.type", File: overlayFile, Patch: "patches[0]"}},
		},
		{
			name:    "a patch of a component names the component's patch file, and the overlay's own patch comes after it",
			overlay: "components:\n- ../../components/expire\npatches:\n" + jsonPatchOn("- op: replace\n  path: /spec/type\n  value: gcp\n"),
			files: map[string]string{
				"components/expire/kustomization.yaml": "apiVersion: kustomize.config.k8s.io/v1alpha1\nkind: Component\npatches:\n- path: expire.yaml\n",
				"components/expire/expire.yaml": cloudHeader +
					"  kubernetes:\n    versions:\n    - version: 1.33.7\n      expirationDate: \"2028-01-01T00:00:00Z\"\n",
			},
			want: []profile.FieldSource{
				{Field: "spec.kubernetes.versions[2].expirationDate", KeyedField: "spec.kubernetes.versions (1.33.7).expirationDate", File: "components/expire/expire.yaml",
					Patch: "the patch's entry spec.kubernetes.versions (1.33.7)"},
				{Field: "spec.type", KeyedField: "spec.type", File: overlayFile, Patch: "patches[0]"},
			},
		},
		{
			name:    "a patch that writes the value the base has sets nothing",
			overlay: "patches:\n" + inlinePatch(cloudHeader+"  type: aws\n"),
		},
		{
			name:    "the base's patches come before the overlay's, and each names its own kustomization",
			base:    "patches:\n" + jsonPatchOn("- op: replace\n  path: /spec/type\n  value: gcp\n"),
			overlay: "patches:\n" + inlinePatch(cloudHeader+"  kubernetes:\n    versions:\n    - version: 1.34.2\n      expirationDate: \"2028-01-01T00:00:00Z\"\n"),
			want: []profile.FieldSource{
				{Field: "spec.type", KeyedField: "spec.type", File: "base/kustomization.yaml", Patch: "patches[0]"},
				{Field: "spec.kubernetes.versions[3].expirationDate", KeyedField: "spec.kubernetes.versions (1.34.2).expirationDate", File: overlayFile, Patch: "patches[0], entry spec.kubernetes.versions (1.34.2)"},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			files := map[string]string{
				"base/kustomization.yaml":       kustomization("profiles.yaml") + tt.base,
				"base/profiles.yaml":            mergeBase,
				"overlays/x/kustomization.yaml": kustomization("../../base") + tt.overlay,
			}
			for path, content := range tt.files {
				files[path] = content
			}
			root := t.TempDir()
			builders.WriteTree(t, root, files)
			// The same on the linear path, which checks the patches as it
			// applies them, and through kustomize, whose build is replayed.
			for _, linear := range []bool{true, false} {
				ctx := context.Background()
				docs, _, err := buildWithChecks(ctx, ctx, root, filepath.Join("overlays", "x"), DefaultLimits(), linear)
				g.Expect(err).NotTo(HaveOccurred())
				g.Expect(docs).To(HaveLen(2))
				g.Expect(docs[0].File).To(Equal("base/profiles.yaml"))
				g.Expect(docs[0].SetBy).To(Equal(tt.want), "linear path allowed: %t", linear)
				g.Expect(docs[1].SetBy).To(BeEmpty(), "no patch touches the NamespacedCloudProfile")
			}
		})
	}
}

// TestTheChecksAfterABuildThatRunOutOfTimeLeaveTheBuildWhole: when the
// checks after a kustomize build must stop (the sandbox's child near its
// deadline), the build's objects come back whole, without the fields
// patches set, and one warning says what was not checked; the build does
// not fail. On the linear path the checks are done with the build, so they
// come back whatever the time left.
func TestTheChecksAfterABuildThatRunOutOfTimeLeaveTheBuildWhole(t *testing.T) {
	g := NewWithT(t)
	root := t.TempDir()
	patch := "patches:\n" + inlinePatch("apiVersion: core.profilesync.io/v1alpha1\nkind: CloudProfile\nmetadata:\n  name: aws\nspec:\n  type: gcp\n")
	builders.WriteTree(t, root, map[string]string{
		"base/kustomization.yaml": kustomization("profiles.yaml"),
		"base/profiles.yaml":      mergeBase,
		// A sort order is not the linear path's to keep: kustomize builds it.
		"overlays/x/kustomization.yaml":      kustomization("../../base") + "sortOptions: {order: fifo}\n" + patch,
		"overlays/linear/kustomization.yaml": kustomization("../../base") + patch,
	})
	stopped, stop := context.WithCancelCause(context.Background())
	stop(errors.New("the build's time was nearly up"))
	docs, warnings, err := BuildWithWarningsWithin(context.Background(), stopped, root, filepath.Join("overlays", "x"), DefaultLimits())
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(docs).To(HaveLen(2))
	g.Expect(string(docs[0].Data)).To(ContainSubstring(`"type":"gcp"`))
	g.Expect(docs[0].SetBy).To(BeEmpty())
	g.Expect(warnings.Lines()).To(ConsistOf(
		"overlays/x: the checks after the build did not finish (JSON patches addressing list entries by index, stale patches, which patch set which field, " +
			"so problems name the objects' files): the build's time was nearly up"))

	docs, warnings, err = BuildWithWarningsWithin(context.Background(), context.Background(), root, filepath.Join("overlays", "x"), DefaultLimits())
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(warnings).To(BeEmpty())
	g.Expect(docs[0].SetBy).To(Equal([]profile.FieldSource{{Field: "spec.type", KeyedField: "spec.type", File: "overlays/x/kustomization.yaml", Patch: "patches[0]"}}))

	docs, warnings, err = BuildWithWarningsWithin(context.Background(), stopped, root, filepath.Join("overlays", "linear"), DefaultLimits())
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(warnings).To(BeEmpty())
	g.Expect(docs[0].SetBy).To(Equal([]profile.FieldSource{{Field: "spec.type", KeyedField: "spec.type", File: "overlays/linear/kustomization.yaml", Patch: "patches[0]"}}))
}

// TestAnOverlayIsCheckedWithoutBuildingItAgain: an overlay that patches
// plain bases is built once, on the linear path, and its checks (which
// patch set which field, the warnings about its patches) come with that
// build: kustomize never runs, and an invalid value a patch set is still
// named by the patch, with the base file as its origin. An overlay
// kustomize must build (here: an annotation for every object) is checked
// by building it again, once per patch and once without them, and names
// the patch the same way.
func TestAnOverlayIsCheckedWithoutBuildingItAgain(t *testing.T) {
	const header = "apiVersion: core.profilesync.io/v1alpha1\nkind: CloudProfile\nmetadata:\n  name: a\nspec:\n"
	tests := []struct {
		name, overlay string // the overlay's kustomization after its resources
		builds        int64  // kustomize builds, the checks' included
		// problem is the validation's problem, "" when the build is valid.
		problem string
		setBy   []profile.FieldSource
	}{
		{
			name:    "a valid overlay on the linear path",
			overlay: "patches:\n- path: type.yaml\n",
			setBy:   []profile.FieldSource{{Field: "spec.type", KeyedField: "spec.type", File: "overlays/x/type.yaml"}},
		},
		{
			name:    "an invalid value a patch file set, on the linear path",
			overlay: "patches:\n- path: expire.yaml\n",
			problem: "overlays/x/expire.yaml: CloudProfile/a: spec.kubernetes.versions[0] (1.31.0).expirationDate: Forbidden: " +
				"1.31.0 is the highest Kubernetes version and may not expire: clusters must always have a version to move to " +
				"(set by the patch's entry spec.kubernetes.versions (1.31.0), on the object of base/a.yaml)",
			setBy: []profile.FieldSource{{Field: "spec.kubernetes.versions[0].expirationDate", KeyedField: "spec.kubernetes.versions (1.31.0).expirationDate", File: "overlays/x/expire.yaml",
				Patch: "the patch's entry spec.kubernetes.versions (1.31.0)"}},
		},
		{
			name:    "the same under labels and annotations for every object, on the linear path",
			overlay: "labels:\n- pairs: {landscape: bench}\ncommonLabels: {tier: gold}\ncommonAnnotations: {team: x}\npatches:\n- path: expire.yaml\n",
			problem: "overlays/x/expire.yaml: CloudProfile/a: spec.kubernetes.versions[0] (1.31.0).expirationDate: Forbidden: " +
				"1.31.0 is the highest Kubernetes version and may not expire: clusters must always have a version to move to " +
				"(set by the patch's entry spec.kubernetes.versions (1.31.0), on the object of base/a.yaml)",
			setBy: []profile.FieldSource{{Field: "spec.kubernetes.versions[0].expirationDate", KeyedField: "spec.kubernetes.versions (1.31.0).expirationDate", File: "overlays/x/expire.yaml",
				Patch: "the patch's entry spec.kubernetes.versions (1.31.0)"}},
		},
		{
			// A sort order is not for the linear path to keep.
			name:    "the same through kustomize, checked by building it again",
			overlay: "sortOptions: {order: fifo}\npatches:\n- path: expire.yaml\n",
			builds:  1 + 2, // the build, then the replay: without the patch, with it
			problem: "overlays/x/expire.yaml: CloudProfile/a: spec.kubernetes.versions[0] (1.31.0).expirationDate: Forbidden: " +
				"1.31.0 is the highest Kubernetes version and may not expire: clusters must always have a version to move to " +
				"(set by the patch's entry spec.kubernetes.versions (1.31.0), on the object of base/a.yaml)",
			setBy: []profile.FieldSource{{Field: "spec.kubernetes.versions[0].expirationDate", KeyedField: "spec.kubernetes.versions (1.31.0).expirationDate", File: "overlays/x/expire.yaml",
				Patch: "the patch's entry spec.kubernetes.versions (1.31.0)"}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			root := t.TempDir()
			builders.WriteTree(t, root, map[string]string{
				"base/kustomization.yaml":       kustomization("a.yaml"),
				"base/a.yaml":                   fmt.Sprintf(minimalCloudProfile, "a"),
				"overlays/x/kustomization.yaml": kustomization("../../base") + tt.overlay,
				"overlays/x/type.yaml":          header + "  type: patched\n",
				"overlays/x/expire.yaml":        header + "  kubernetes:\n    versions:\n    - version: 1.31.0\n      expirationDate: \"2030-01-01T00:00:00Z\"\n",
			})
			before := kustomizeBuilds.Load()
			docs, warnings, err := BuildWithWarnings(context.Background(), root, filepath.Join("overlays", "x"), DefaultLimits())
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(warnings).To(BeEmpty())
			g.Expect(kustomizeBuilds.Load() - before).To(Equal(tt.builds))
			g.Expect(docs).To(HaveLen(1))
			g.Expect(docs[0].SetBy).To(Equal(tt.setBy))
			set, err := profile.Load(docs, nil, time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
			g.Expect(err).NotTo(HaveOccurred())
			if tt.problem == "" {
				g.Expect(set.Problems).To(BeEmpty())
				return
			}
			g.Expect(set.Problems.Lines()).To(ContainElement(tt.problem))
		})
	}
}

// TestAProblemOfAMergedSpecNamesThePatchThatSetTheNamespacedProfilesField:
// a problem found once a NamespacedCloudProfile is merged with its parent
// (status.cloudProfileSpec, where the parent's entries come first) about a
// field a patch set in the namespaced profile names that patch, found by the
// entry's name rather than its index; a problem of a field the parent holds
// names the namespaced profile's file, as before.
func TestAProblemOfAMergedSpecNamesThePatchThatSetTheNamespacedProfilesField(t *testing.T) {
	const namespaced = "apiVersion: core.profilesync.io/v1alpha1\nkind: NamespacedCloudProfile\nmetadata:\n  name: team\n  namespace: t\nspec:\n"
	const highestExpires = "Forbidden: 1.31.0 is the highest Kubernetes version and may not expire: clusters must always have a version to move to " +
		"(from spec.kubernetes.versions[1] (1.31.0))"
	tests := []struct {
		name, patch string
		want        string
	}{
		{
			name:  "the patch sets a field of an entry the namespaced profile lists second and the merged spec first",
			patch: namespaced + "  kubernetes:\n    versions:\n    - version: 1.31.0\n      expirationDate: \"2030-01-01T00:00:00Z\"\n",
			want: "overlays/x/expire.yaml: NamespacedCloudProfile/t/team: status.cloudProfileSpec.kubernetes.versions[0] (1.31.0).expirationDate: " +
				highestExpires + " (set by the patch's entry spec.kubernetes.versions (1.31.0), on the object of base/team.yaml)",
		},
		{
			name:  "the patch sets another field: the problem is the file's",
			patch: namespaced + "  machineTypes:\n  - {name: big, cpu: \"8\", gpu: \"0\", memory: 8Gi}\n",
			want:  "base/team.yaml: NamespacedCloudProfile/t/team: status.cloudProfileSpec.kubernetes.versions[0] (1.31.0).expirationDate: " + highestExpires,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			root := t.TempDir()
			base := namespaced + "  parent: {kind: CloudProfile, name: a}\n  kubernetes:\n    versions:\n" +
				"    - {version: 1.30.0, expirationDate: \"2029-01-01T00:00:00Z\"}\n    - {version: 1.31.0}\n"
			if !strings.Contains(tt.patch, "kubernetes") {
				base = strings.Replace(base, "- {version: 1.31.0}", "- {version: 1.31.0, expirationDate: \"2030-01-01T00:00:00Z\"}", 1)
			}
			builders.WriteTree(t, root, map[string]string{
				"base/kustomization.yaml":       kustomization("a.yaml", "team.yaml"),
				"base/a.yaml":                   strings.Replace(fmt.Sprintf(minimalCloudProfile, "a"), "    - version: 1.31.0\n", "    - version: 1.31.0\n    - version: 1.30.0\n", 1),
				"base/team.yaml":                base,
				"overlays/x/kustomization.yaml": kustomization("../../base") + "patches:\n- path: expire.yaml\n",
				"overlays/x/expire.yaml":        tt.patch,
			})
			docs, _, err := BuildWithWarnings(context.Background(), root, filepath.Join("overlays", "x"), DefaultLimits())
			g.Expect(err).NotTo(HaveOccurred())
			set, err := profile.Load(docs, nil, time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(set.Problems.Lines()).To(ContainElement(tt.want))
		})
	}
}

// TestAProblemOfAMergedSpecNamesThePatchThatSetTheParentsField: a problem
// found once a NamespacedCloudProfile is merged with its parent about a
// field the parent holds (the bastion) names the patch of the overlay that
// set it in the parent, with the parent's file as the origin, not the
// namespaced profile's file, where the value is not.
func TestAProblemOfAMergedSpecNamesThePatchThatSetTheParentsField(t *testing.T) {
	g := NewWithT(t)
	root := t.TempDir()
	parent := strings.Replace(fmt.Sprintf(minimalCloudProfile, "a"), "versions: [{version: 1.0.0}]", "versions: [{version: 1.0.0, classification: supported}]", 1)
	builders.WriteTree(t, root, map[string]string{
		"base/kustomization.yaml": kustomization("a.yaml", "team.yaml"),
		"base/a.yaml":             parent,
		"base/team.yaml": "apiVersion: core.profilesync.io/v1alpha1\nkind: NamespacedCloudProfile\nmetadata:\n  name: team\n  namespace: t\nspec:\n" +
			"  parent: {kind: CloudProfile, name: a}\n  machineImages:\n  - name: local\n    versions:\n    - {version: 1.0.0, expirationDate: \"2025-06-01T00:00:00Z\"}\n",
		"overlays/x/kustomization.yaml": kustomization("../../base") + "patches:\n- path: bastion.yaml\n",
		"overlays/x/bastion.yaml": "apiVersion: core.profilesync.io/v1alpha1\nkind: CloudProfile\nmetadata:\n  name: a\nspec:\n" +
			"  bastion:\n    machineImage: {name: local, version: 1.0.0}\n",
	})
	docs, _, err := BuildWithWarnings(context.Background(), root, filepath.Join("overlays", "x"), DefaultLimits())
	g.Expect(err).NotTo(HaveOccurred())
	set, err := profile.Load(docs, nil, time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(set.Problems.Lines()).To(ConsistOf(
		"overlays/x/bastion.yaml: NamespacedCloudProfile/t/team: status.cloudProfileSpec.bastion.machineImage.version: " +
			`Invalid value: "local": no image with classification supported and arch "<nil>" found (set by this patch, on the object of base/a.yaml)`))
}
