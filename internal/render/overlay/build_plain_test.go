package overlay

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	. "github.com/onsi/gomega"

	"github.com/profilesync/profilesync/internal/render/profile"
	"github.com/profilesync/profilesync/test/builders"
)

// buildBothWays builds path of root twice, each time on a file system of
// its own: through kustomize only, and on the linear path where the build
// allows it, each with the checks of its way (the replay of the patches
// after a kustomize build, the checks while the linear path applies them).
// It returns both results (the documents with their SetBy, and the
// warnings), whether the second build took the linear path, and how often
// kustomize ran in it.
type bothWays struct {
	kustomize, linear                 []profile.Document
	kustomizeWarnings, linearWarnings profile.Problems
	kustomizeErr, linearErr           error
	tookLinearPath                    bool
	// krustyRuns and plainAttempts count the kustomize runs and the tries
	// of the linear path of the second build.
	krustyRuns, plainAttempts int
}

// expectAsKustomizeBuilds holds the build to kustomize's: refused in
// kustomize's words, through kustomize, when refused is set; otherwise the
// same objects and warnings, on the linear path when linear (kustomize
// never ran), through one kustomize build when not. It tells whether the
// build was refused.
func (b bothWays) expectAsKustomizeBuilds(g Gomega, refused string, linear bool) (wasRefused bool) {
	if refused != "" {
		g.Expect(b.kustomizeErr).To(MatchError(ContainSubstring(refused)))
		g.Expect(b.linearErr).To(Equal(b.kustomizeErr), "kustomize's refusal")
		g.Expect(b.tookLinearPath).To(BeFalse())
		return true
	}
	g.Expect(b.kustomizeErr).NotTo(HaveOccurred())
	g.Expect(b.linearErr).NotTo(HaveOccurred())
	g.Expect(b.linear).To(Equal(b.kustomize), "the same objects, bytes, files and fields set by patches")
	g.Expect(b.linearWarnings).To(Equal(b.kustomizeWarnings))
	g.Expect(b.tookLinearPath).To(Equal(linear))
	if linear {
		g.Expect(b.krustyRuns).To(BeZero(), "kustomize never ran")
	} else {
		g.Expect(b.krustyRuns).To(Equal(1), "kustomize built it")
	}
	return false
}

func buildBothWays(t testing.TB, root, path string, limits Limits) bothWays {
	t.Helper()
	var result bothWays
	ctx := context.Background()
	result.kustomize, result.kustomizeWarnings, result.kustomizeErr = buildWithChecks(ctx, ctx, root, path, limits, false)
	result.linear, result.linearWarnings, result.linearErr = buildWithChecks(ctx, ctx, root, path, limits, true)
	linear, target, err := confineBuild(ctx, root, path, limits)
	if err != nil {
		t.Fatal(err)
	}
	func() {
		// kustomize panics on some input (an object renamed onto
		// another's id), which the builds above report as their error.
		defer func() {
			if recovered := recover(); recovered != nil {
				result.tookLinearPath = false
			}
		}()
		_, result.tookLinearPath, _ = linear.buildWith(target, true)
	}()
	result.krustyRuns, result.plainAttempts = linear.krustyRuns, linear.plainAttempts
	return result
}

// profileList is a List of the given objects' YAML, each indented as an
// item.
func profileList(kind string, objects ...string) string {
	var b strings.Builder
	b.WriteString("apiVersion: v1\nkind: " + kind + "\nitems:\n")
	for _, object := range objects {
		for i, line := range strings.Split(strings.TrimSuffix(object, "\n"), "\n") {
			if i == 0 {
				b.WriteString("- " + line + "\n")
			} else {
				b.WriteString("  " + line + "\n")
			}
		}
	}
	return b.String()
}

const namespacedProfile = `apiVersion: core.gardener.cloud/v1beta1
kind: NamespacedCloudProfile
metadata:
  name: %s
  namespace: %s
spec:
  parent: {kind: CloudProfile, name: a}
  kubernetes:
    versions:
    - version: 1.31.0
      expirationDate: "2030-01-01T00:00:00Z"
`

// TestTheLinearPathBuildsWhatKustomizeBuilds builds the fixture
// repositories' overlays and bases, and plain resource lists of every shape
// the linear path takes, both through kustomize and with the linear path
// allowed, and compares the outputs byte for byte (and each object's file).
func TestTheLinearPathBuildsWhatKustomizeBuilds(t *testing.T) {
	synthetic := t.TempDir()
	profileA, profileB, profileC := fmt.Sprintf(minimalCloudProfile, "a"), fmt.Sprintf(minimalCloudProfile, "b"), fmt.Sprintf(minimalCloudProfile, "c")
	builders.WriteTree(t, synthetic, map[string]string{
		"nested/base/kustomization.yaml":     kustomization("profiles.yaml", "more"),
		"nested/base/profiles.yaml":          profileA + "---\n" + fmt.Sprintf(namespacedProfile, "tenant", "team"),
		"nested/base/more/kustomization.yml": "resources:\n- b.yaml\n",
		"nested/base/more/b.yaml":            profileB,
		"nested/overlay/kustomization.yaml":  kustomization("../base", "c.yaml") + "buildMetadata: [originAnnotations]\n",
		"nested/overlay/c.yaml":              profileC,
		"bases/kustomization.yaml":           "bases:\n- ../nested/base\n",
		// kustomize puts a List's items after the file's other objects.
		"lists/kustomization.yaml": kustomization("lists.yaml"),
		"lists/lists.yaml": profileList("CloudProfileList", profileA, profileB) + "---\n" + profileC + "---\n" +
			profileList("List", fmt.Sprintf(namespacedProfile, "tenant", "team")) + "---\n# only a comment\n",
		// The same name in two namespaces, and without one: two objects
		// (kustomize's "default" is not "team").
		"namespaces/kustomization.yaml": kustomization("n.yaml"),
		"namespaces/n.yaml": fmt.Sprintf(namespacedProfile, "tenant", "team") + "---\n" + fmt.Sprintf(namespacedProfile, "tenant", "other") +
			"---\n" + strings.Replace(fmt.Sprintf(namespacedProfile, "tenant", "x"), "  namespace: x\n", "", 1),
		"plain-directory/b.yaml":         profileB,
		"plain-directory/a/a.yaml":       profileA,
		"plain-directory/c/c.yml":        profileC,
		"annotated/kustomization.yaml":   kustomization("a.yaml"),
		"annotated/a.yaml":               strings.Replace(profileA, "  name: a\n", "  name: a\n  annotations: {}\n  labels: {team: x}\n", 1),
		"other-kinds/kustomization.yaml": kustomization("a.yaml", "cm.yaml"),
		"other-kinds/a.yaml":             profileA,
		"other-kinds/cm.yaml":            "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c\n",
		"patched/kustomization.yaml":     kustomization("../nested/overlay") + "namePrefix: x-\n",
		// test/bench's overlay over bases of their own labels.
		"labelled/base/kustomization.yaml": kustomization("../../nested/overlay") + "commonLabels: {tier: base}\ncommonAnnotations: {from: base}\n",
		"labelled/kustomization.yaml":      kustomization("base") + "labels:\n- pairs: {landscape: bench}\n",
		"configured/kustomization.yaml":    kustomization("../nested/base") + "commonLabels: {landscape: bench}\nconfigurations: [fields.yaml]\n",
		"configured/fields.yaml":           "commonLabels:\n- {kind: CloudProfile, path: metadata/annotations, create: true}\n",
	})

	tests := []struct {
		name, root, path string
		// linear says whether the build may take the linear path.
		linear bool
	}{
		{"the fixture's base", profilesRepo, "base", true},
		{"the fixture's dev overlay, which patches", profilesRepo, "overlays/dev", true},
		{"the fixture's prod overlay, which patches from a file", profilesRepo, "overlays/prod", true},
		{"the example repository's base", examplesRepo, "base", true},
		{"the example's dev overlay", examplesRepo, "overlays/dev", true},
		{"the example's prod overlay", examplesRepo, "overlays/prod", true},
		{"bases nested two deep, and an overlay adding a file", synthetic, "nested/overlay", true},
		{"the deprecated bases field", synthetic, "bases", true},
		{"Lists of profiles and of anything, among other objects", synthetic, "lists", true},
		{"one name in several namespaces", synthetic, "namespaces", true},
		{"a plain directory with a kustomized and a plain subdirectory", synthetic, "plain-directory", true},
		{"an object with empty annotations kustomize drops", synthetic, "annotated", true},
		{"an object of another kind than a profile", synthetic, "other-kinds", false},
		{"a name prefix over plain bases", synthetic, "patched", false},
		{"labels for every object, in an overlay and in its base", synthetic, "labelled", true},
		{"labels to fields a configuration adds", synthetic, "configured", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			built := buildBothWays(t, tt.root, tt.path, DefaultLimits())
			g.Expect(built.kustomizeErr).NotTo(HaveOccurred())
			g.Expect(built.linearErr).NotTo(HaveOccurred())
			g.Expect(built.kustomize).NotTo(BeEmpty())
			g.Expect(built.linear).To(Equal(built.kustomize), "the same objects, bytes, files and fields set by patches, in the same order")
			g.Expect(built.linearWarnings).To(Equal(built.kustomizeWarnings), "the same warnings about the patches")
			g.Expect(built.tookLinearPath).To(Equal(tt.linear))
			if tt.linear {
				g.Expect(built.krustyRuns).To(BeZero(), "kustomize never ran")
			}
		})
	}
}

// TestAnObjectDefinedTwiceInAPlainListIsRefusedAsKustomizeRefusesIt builds
// plain lists that define one object twice: the build refuses each with
// the message of a kustomize build, which names both files.
func TestAnObjectDefinedTwiceInAPlainListIsRefusedAsKustomizeRefusesIt(t *testing.T) {
	profileA := fmt.Sprintf(minimalCloudProfile, "a")
	tests := []struct {
		name    string
		files   map[string]string
		wantErr string
	}{
		{
			name:  "in two files",
			files: map[string]string{"kustomization.yaml": kustomization("a.yaml", "b.yaml"), "a.yaml": profileA, "b.yaml": profileA},
			wantErr: "kustomize build of .: CloudProfile/a is defined more than once: in a.yaml and b.yaml; " +
				"a build defines each object once, so keep one and patch it where it must differ",
		},
		{
			name: "in one file, once inside a List",
			files: map[string]string{"kustomization.yaml": kustomization("a.yaml"),
				"a.yaml": profileA + "---\n" + profileList("CloudProfileList", profileA)},
			wantErr: "may not add resource with an already registered id: CloudProfile.v1alpha1.core.profilesync.io/a.[noNs]",
		},
		{
			name: "once without a namespace and once in default",
			files: map[string]string{"kustomization.yaml": kustomization("a.yaml", "b.yaml"),
				"a.yaml": fmt.Sprintf(namespacedProfile, "tenant", "default"),
				"b.yaml": strings.Replace(fmt.Sprintf(namespacedProfile, "tenant", "default"), "  namespace: default\n", "", 1)},
			wantErr: "may not add resource with an already registered id: NamespacedCloudProfile.v1beta1.core.gardener.cloud/tenant.[noNs]",
		},
		{
			name: "through two bases that list one file",
			files: map[string]string{"kustomization.yaml": kustomization("one", "two"), "a.yaml": profileA,
				"one/kustomization.yaml": kustomization("../a.yaml"), "two/kustomization.yaml": kustomization("../a.yaml")},
			wantErr: "recursed merging from path 'two': may not add resource with an already registered id: CloudProfile.v1alpha1.core.profilesync.io/a.[noNs]",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			root := t.TempDir()
			builders.WriteTree(t, root, tt.files)
			built := buildBothWays(t, root, ".", DefaultLimits())
			g.Expect(built.linearErr).To(MatchError(ContainSubstring(tt.wantErr)))
			g.Expect(built.linearErr.Error()).To(Equal(built.kustomizeErr.Error()))
			g.Expect(built.plainAttempts).To(Equal(1), "the linear path found the object twice")
			g.Expect(built.tookLinearPath).To(BeFalse())
			g.Expect(built.krustyRuns).To(Equal(1), "and kustomize reported it")
		})
	}
}

// TestPatchesTakeTheLinearPathWhereItBuildsWhatKustomizeBuilds: an overlay
// that patches plain bases is built on the linear path, kustomize never
// running, to what kustomize builds; a patch that renames, deletes or marks
// an object, a patch with options, or a patch kustomize refuses sends the
// build through kustomize, which builds it or refuses it in its words.
func TestPatchesTakeTheLinearPathWhereItBuildsWhatKustomizeBuilds(t *testing.T) {
	const header = "apiVersion: core.profilesync.io/v1alpha1\nkind: CloudProfile\nmetadata:\n  name: a\n"
	jsonPatch := func(target, ops string) string {
		return "- target: " + target + "\n  patch: |-\n" + indentLines(ops, "    ")
	}
	tests := []struct {
		name    string
		patches string // the overlay's patches entries
		linear  bool
		// refused is kustomize's error, when it refuses the overlay.
		refused string
	}{
		{name: "a JSON patch by target", patches: jsonPatch("{kind: CloudProfile, name: a}", "- {op: replace, path: /spec/type, value: patched}\n"), linear: true},
		{name: "a strategic-merge patch by name, and one by a label selector", linear: true,
			patches: inlinePatch(header+"spec:\n  type: patched\n") +
				"- target: {labelSelector: tier=gold}\n  patch: |-\n" + indentLines(header+"spec:\n  regions:\n  - name: eu-2\n", "    ")},
		{name: "a JSON patch by a label the base sets and the overlay's labels change after it", linear: true,
			patches: jsonPatch("{labelSelector: tier=gold}", "- {op: replace, path: /spec/type, value: patched}\n") + "commonLabels: {tier: silver}\n"},
		{name: "a JSON patch by a name pattern over both profiles", patches: jsonPatch("{kind: CloudProfile, name: \"[ab]\"}", "- {op: replace, path: /spec/type, value: patched}\n"), linear: true},
		{name: "a patch that renames the object", patches: jsonPatch("{kind: CloudProfile, name: a}", "- {op: replace, path: /metadata/name, value: c}\n")},
		{name: "a patch that deletes the object", patches: inlinePatch(header + "$patch: delete\n")},
		{name: "a patch that marks the object as local configuration",
			patches: jsonPatch("{kind: CloudProfile, name: a}", "- {op: add, path: /metadata/annotations, value: {config.kubernetes.io/local-config: \"true\"}}\n")},
		{name: "a patch with options", patches: inlinePatch(header+"spec:\n  type: patched\n") + "  options: {allowNameChange: true}\n"},
		{name: "a strategic-merge patch that matches no object",
			patches: inlinePatch(strings.Replace(header, "name: a", "name: z", 1) + "spec:\n  type: patched\n"), refused: "no resource matches strategic merge patch"},
		{name: "a JSON patch without a target", patches: "- patch: |-\n    - {op: replace, path: /spec/type, value: patched}\n", refused: "must specify a target"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			root := t.TempDir()
			builders.WriteTree(t, root, map[string]string{
				"base/kustomization.yaml":    kustomization("a.yaml", "b.yaml"),
				"base/a.yaml":                strings.Replace(fmt.Sprintf(minimalCloudProfile, "a"), "  name: a\n", "  name: a\n  labels: {tier: gold}\n", 1),
				"base/b.yaml":                fmt.Sprintf(minimalCloudProfile, "b"),
				"overlay/kustomization.yaml": kustomization("../base") + "patches:\n" + tt.patches,
			})
			buildBothWays(t, root, "overlay", DefaultLimits()).expectAsKustomizeBuilds(g, tt.refused, tt.linear)
		})
	}
}

// TestTheObjectLimitRefusesTenThousandFilesBeforeKustomizeRuns: a plain
// directory of 10,000 small files, twice the default --max-objects, is
// refused by the object count while the files are planned, and kustomize
// never runs (it would accumulate the limit's worth of objects first,
// which took 35 s).
func TestTheObjectLimitRefusesTenThousandFilesBeforeKustomizeRuns(t *testing.T) {
	tests := []struct {
		name string
		// file is the content of file i.
		file func(i int) string
	}{
		{"profiles", func(i int) string { return fmt.Sprintf(minimalCloudProfile, fmt.Sprintf("p%d", i)) }},
		{"ConfigMaps, which only kustomize builds", func(i int) string {
			return fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c%d\n", i)
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			root := t.TempDir()
			files := make(map[string]string, 10000)
			for i := range 10000 {
				files[fmt.Sprintf("objects/%05d.yaml", i)] = tt.file(i)
			}
			builders.WriteTree(t, root, files)
			r, target, err := confineBuild(context.Background(), root, "objects", DefaultLimits())
			g.Expect(err).NotTo(HaveOccurred())
			_, err = r.build(target)
			var limit *LimitError
			g.Expect(errors.As(err, &limit)).To(BeTrue(), "%v", err)
			g.Expect(err).To(MatchError(ContainSubstring(fmt.Sprintf(
				"objects/%05d.yaml: %d objects read in all are over the maximum number of objects a build reads of %d (raise it with --max-objects)",
				DefaultMaxObjects, DefaultMaxObjects+1, DefaultMaxObjects))))
			g.Expect(r.krustyRuns).To(BeZero(), "kustomize never ran")
		})
	}
}

// plainListObject writes object number n of a generated plain list:
// choice picks its kind, whether it takes a name another object has,
// its namespace and its annotations, most often what the linear path
// builds.
func plainListObject(n int, choice byte) (object string, asParsed bool) {
	name := fmt.Sprintf("p%d", n)
	if choice&15 == 0 {
		name = "twice"
	}
	asParsed = true
	switch kind := (choice >> 3) & 15; {
	case kind < 10:
		object = fmt.Sprintf(minimalCloudProfile, name)
	case kind < 15:
		namespace := []string{"team", "default", ""}[int(choice>>6)%3]
		object = fmt.Sprintf(namespacedProfile, name, namespace)
		if namespace == "" {
			object = strings.Replace(object, "  namespace: \n", "", 1)
		}
	default:
		object = fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: %s\n", name)
		asParsed = false
	}
	var extra string
	switch choice >> 6 {
	case 1:
		extra = "  annotations: {}\n"
	case 2:
		extra = "  labels: {tier: gold}\n"
	case 3:
		if choice&0x30 == 0x30 {
			asParsed = false
			extra = []string{"  annotations: {config.kubernetes.io/local-config: \"true\"}\n",
				"  annotations: {internal.config.kubernetes.io/needsHashSuffix: enabled}\n"}[choice&1]
		}
	}
	return strings.Replace(object, "  name: "+name+"\n", "  name: "+name+"\n"+extra, 1), asParsed
}

// plainListFile writes a file of a generated plain list from spec: each
// byte one object, some of them in a List, some documents empty.
func plainListFile(file string, spec []byte) (content string, asParsed bool) {
	var documents []string
	var listed []string
	asParsed = true
	for i, choice := range spec {
		object, objectAsParsed := plainListObject(i, choice)
		asParsed = asParsed && objectAsParsed
		object = strings.Replace(object, fmt.Sprintf("name: p%d\n", i), fmt.Sprintf("name: %s-p%d\n", file, i), 1)
		switch {
		case choice%13 == 12:
			documents = append(documents, "# nothing here\n")
		case choice%5 == 4:
			listed = append(listed, object)
		default:
			documents = append(documents, object)
		}
	}
	if len(listed) > 0 {
		documents = append(documents, profileList([]string{"List", "CloudProfileList"}[len(listed)%2], listed...))
	}
	return strings.Join(documents, "---\n"), asParsed
}

// FuzzBuildPlainListsLikeKustomize generates plain resource lists (files of
// profiles, namespaced profiles and ConfigMaps, some in Lists, some defined
// twice, with annotations kustomize acts on, in the build's directory and
// in a base it lists, and one file of the fuzzer's own text), with labels
// and annotations for every object in either kustomization
// (generateMetadata), builds each
// through kustomize and with the linear path allowed, and checks that both
// builds give the same objects in the same order, or the same error, and
// that the linear path never builds what kustomize refuses.
func FuzzBuildPlainListsLikeKustomize(f *testing.F) {
	f.Add([]byte{0, 1, 2}, []byte{}, []byte{24}, "", []byte{})
	f.Add([]byte{0, 0}, []byte{4, 9}, []byte{}, "", []byte{})
	f.Add([]byte{24, 48, 60}, []byte{96, 132}, []byte{9, 36, 75}, "", []byte{})
	f.Add([]byte{1}, []byte{}, []byte{}, fmt.Sprintf(minimalCloudProfile, "raw"), []byte{})
	f.Add([]byte{2}, []byte{}, []byte{}, profileList("CloudProfileList", fmt.Sprintf(minimalCloudProfile, "a")), []byte{})
	f.Add([]byte{}, []byte{1}, []byte{}, "apiVersion: v1\nkind: List\nitems: []\n", []byte{})
	f.Add([]byte{0, 1, 2}, []byte{}, []byte{24, 48}, "", []byte{0, 0, 4, 9, 1, 1, 6, 16, 8, 2})
	f.Add([]byte{0, 96}, []byte{}, []byte{}, "", []byte{3, 0, 2, 4, 3, 99})
	f.Fuzz(func(t *testing.T, first, second, base []byte, raw string, metadata []byte) {
		if len(first)+len(second)+len(base) > 64 || len(metadata) > 32 {
			return
		}
		labels := generateMetadata(metadata)
		root := t.TempDir()
		resources := []string{"first.yaml", "second.yaml"}
		files := map[string]string{}
		var firstAsParsed, secondAsParsed, baseAsParsed bool
		files["first.yaml"], firstAsParsed = plainListFile("first", first)
		files["second.yaml"], secondAsParsed = plainListFile("second", second)
		// asParsed says whether kustomize keeps every object as parsed: the
		// linear path must then build it, unless kustomize refuses it.
		asParsed := firstAsParsed && secondAsParsed && raw == "" && labels.plain
		if len(base) > 0 {
			files["base/kustomization.yaml"] = kustomization("objects.yaml") + labels.base
			files["base/objects.yaml"], baseAsParsed = plainListFile("base", base)
			asParsed = asParsed && baseAsParsed
			resources = append(resources, "base")
		}
		if raw != "" {
			files["raw.yaml"] = raw
			resources = append(resources, "raw.yaml")
		}
		files["kustomization.yaml"] = kustomization(resources...) + labels.overlay
		builders.WriteTree(t, root, files)

		built := buildBothWays(t, root, ".", Limits{MaxFileSize: 64 << 10, MaxRenderedSize: 1 << 20})
		if built.tookLinearPath && built.kustomizeErr != nil {
			t.Fatalf("the linear path built what kustomize refuses: %v", built.kustomizeErr)
		}
		if asParsed && built.kustomizeErr == nil && !built.tookLinearPath {
			t.Fatalf("a plain list of profiles kustomize builds as parsed was not built on the linear path")
		}
		if (built.linearErr == nil) != (built.kustomizeErr == nil) ||
			built.linearErr != nil && built.linearErr.Error() != built.kustomizeErr.Error() {
			t.Fatalf("the builds fail differently:\nlinear path allowed: %v\nkustomize: %v", built.linearErr, built.kustomizeErr)
		}
		if len(built.linear) != len(built.kustomize) {
			t.Fatalf("%d objects with the linear path allowed (taken: %t), %d through kustomize", len(built.linear), built.tookLinearPath, len(built.kustomize))
		}
		for i := range built.linear {
			if built.linear[i].File != built.kustomize[i].File || !bytes.Equal(built.linear[i].Data, built.kustomize[i].Data) {
				t.Fatalf("object %d differs (linear path taken: %t):\n%s: %s\nkustomize:\n%s: %s", i, built.tookLinearPath,
					built.linear[i].File, built.linear[i].Data, built.kustomize[i].File, built.kustomize[i].Data)
			}
		}
	})
}

// TestTheLinearPathRefusesOutputOverTheLimitAsKustomizeDoes: a plain list
// whose output goes past --max-rendered-size is refused with the same
// error on both paths, and when an object defined twice follows, the build
// reports that object, as kustomize (which accumulates everything before
// it renders) does.
func TestTheLinearPathRefusesOutputOverTheLimitAsKustomizeDoes(t *testing.T) {
	// A profile whose annotations are an alias of its labels renders
	// larger than it reads, so that the output goes past a limit the reads
	// stay within.
	aliased := func(name string) string {
		return strings.Replace(fmt.Sprintf(minimalCloudProfile, name), "  name: "+name+"\n",
			"  name: "+name+"\n  labels: &labels {tier: "+strings.Repeat("g", 300)+"}\n  annotations: *labels\n", 1)
	}
	profileA, profileB := aliased("a"), aliased("b")
	tests := []struct {
		name    string
		files   map[string]string
		wantErr string
		linear  bool
	}{
		{
			name:    "too large",
			files:   map[string]string{"kustomization.yaml": kustomization("a.yaml", "b.yaml"), "a.yaml": profileA, "b.yaml": profileB},
			wantErr: "is over the maximum rendered size of 1.5 KiB (raise it with --max-rendered-size)",
			linear:  true,
		},
		{
			name: "too large, and an object defined twice after that",
			files: map[string]string{"kustomization.yaml": kustomization("a.yaml", "b.yaml", "again.yaml"),
				"a.yaml": profileA, "b.yaml": profileB, "again.yaml": "{apiVersion: core.profilesync.io/v1alpha1, kind: CloudProfile, metadata: {name: b}}\n"},
			wantErr: "CloudProfile/b is defined more than once: in again.yaml and b.yaml",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			root := t.TempDir()
			builders.WriteTree(t, root, tt.files)
			built := buildBothWays(t, root, ".", Limits{MaxRenderedSize: 1500})
			g.Expect(built.kustomizeErr).To(MatchError(ContainSubstring(tt.wantErr)))
			g.Expect(built.linearErr).To(MatchError(built.kustomizeErr.Error()))
			g.Expect(built.plainAttempts).To(Equal(1))
			g.Expect(built.tookLinearPath).To(Equal(tt.linear))
		})
	}
}

// FuzzBuildPatchesLikeKustomize: an overlay with any patches over plain
// bases, under labels and annotations for every object in the overlay and
// in its base (generateMetadata), builds, with the linear path allowed,
// what kustomize builds, with the same fields set by patches and the same
// warnings, or fails as kustomize fails.
func FuzzBuildPatchesLikeKustomize(f *testing.F) {
	const header = "apiVersion: core.profilesync.io/v1alpha1\nkind: CloudProfile\nmetadata:\n  name: a\n"
	for _, seed := range []struct {
		patches, file string
		metadata      []byte
	}{
		{"- path: p.yaml\n", header + "spec:\n  kubernetes:\n    versions:\n    - version: 1.31.0\n      expirationDate: \"2030-01-01T00:00:00Z\"\n", nil},
		{"- target: {kind: CloudProfile}\n  patch: |-\n    - {op: replace, path: /spec/type, value: x}\n", "", nil},
		{"- target: {kind: CloudProfile, name: a}\n  patch: |-\n    - {op: remove, path: /spec/kubernetes/versions/0}\n", "", nil},
		{"- path: p.yaml\n- target: {labelSelector: tier=gold}\n  path: p.yaml\n", header + "spec:\n  machineImages:\n  - name: local\n    versions:\n    - version: 9.9.9\n", nil},
		{"- path: p.yaml\n", header + "spec:\n  machineTypes:\n  - name: local\n    $patch: delete\n  - name: gone\n    $patch: delete\n", nil},
		{"- path: p.yaml\n", header + "$patch: delete\n", nil},
		{"- patch: |-\n    apiVersion: core.profilesync.io/v1alpha1\n    kind: NamespacedCloudProfile\n    metadata: {name: team, namespace: t}\n    spec:\n      kubernetes:\n        versions:\n        - {version: 1.31.0, expirationDate: \"2030-01-01T00:00:00Z\"}\n", "", nil},
		// A patch that adds the object's first annotation: kustomize's
		// replay sets metadata.annotations, the whole map.
		{"- path: p.yaml\n", header + "  annotations: {owner: me}\nspec:\n  type: patched\n", nil},
		// A patch that selects by a label the base adds, and one that sets
		// labels the overlay's then set again.
		{"- target: {labelSelector: landscape=bench}\n  patch: |-\n    - {op: replace, path: /spec/type, value: x}\n", "", []byte{4, 8, 0, 1}},
		{"- path: p.yaml\n", header + "  labels: {landscape: patched, owner: me}\n  annotations: {owner: me}\nspec:\n  type: patched\n", []byte{0, 0, 1, 2, 2, 2, 3, 0}},
	} {
		f.Add(seed.patches, seed.file, seed.metadata)
	}
	f.Fuzz(func(t *testing.T, patches, file string, metadata []byte) {
		if len(patches)+len(file) > 2048 || len(metadata) > 32 {
			return
		}
		labels := generateMetadata(metadata)
		root := t.TempDir()
		builders.WriteTree(t, root, map[string]string{
			"base/kustomization.yaml": kustomization("a.yaml", "b.yaml", "team.yaml") + labels.base,
			"base/a.yaml":             strings.Replace(fmt.Sprintf(minimalCloudProfile, "a"), "  name: a\n", "  name: a\n  labels: {tier: gold}\n", 1),
			"base/b.yaml":             fmt.Sprintf(minimalCloudProfile, "b"),
			"base/team.yaml": "apiVersion: core.profilesync.io/v1alpha1\nkind: NamespacedCloudProfile\nmetadata:\n  name: team\n  namespace: t\n" +
				"spec:\n  parent: {kind: CloudProfile, name: a}\n  kubernetes:\n    versions:\n    - {version: 1.31.0}\n",
			"overlay/kustomization.yaml": kustomization("../base") + labels.overlay + "patches:\n" + patches,
			"overlay/p.yaml":             file,
		})
		built := buildBothWays(t, root, "overlay", Limits{MaxFileSize: 64 << 10, MaxRenderedSize: 1 << 20})
		if (built.linearErr == nil) != (built.kustomizeErr == nil) ||
			built.linearErr != nil && built.linearErr.Error() != built.kustomizeErr.Error() {
			t.Fatalf("the builds fail differently:\nlinear path allowed: %v\nkustomize: %v", built.linearErr, built.kustomizeErr)
		}
		if built.tookLinearPath && built.kustomizeErr != nil {
			t.Fatalf("the linear path built what kustomize refuses: %v", built.kustomizeErr)
		}
		if len(built.linear) != len(built.kustomize) {
			t.Fatalf("%d objects with the linear path allowed (taken: %t), %d through kustomize", len(built.linear), built.tookLinearPath, len(built.kustomize))
		}
		for i := range built.linear {
			if built.linear[i].File != built.kustomize[i].File || !bytes.Equal(built.linear[i].Data, built.kustomize[i].Data) {
				t.Fatalf("object %d differs (linear path taken: %t):\n%s: %s\nkustomize:\n%s: %s", i, built.tookLinearPath,
					built.linear[i].File, built.linear[i].Data, built.kustomize[i].File, built.kustomize[i].Data)
			}
			// Problems find their source by field (profile.SourceOf), so
			// the sources are compared as a set: the two paths meet the
			// fields of one patch in different orders when a later patch
			// sets them again to the same values.
			if !slices.Equal(bySourceField(built.linear[i].SetBy), bySourceField(built.kustomize[i].SetBy)) {
				t.Fatalf("object %d: fields set by patches differ (linear path taken: %t):\n%v\nkustomize's replay:\n%v",
					i, built.tookLinearPath, built.linear[i].SetBy, built.kustomize[i].SetBy)
			}
		}
		if !slices.Equal(built.linearWarnings.Lines(), built.kustomizeWarnings.Lines()) {
			t.Fatalf("the warnings differ (linear path taken: %t):\n%v\nkustomize:\n%v", built.tookLinearPath, built.linearWarnings.Lines(), built.kustomizeWarnings.Lines())
		}
	})
}

// bySourceField is sources sorted by field.
func bySourceField(sources []profile.FieldSource) []profile.FieldSource {
	return slices.SortedFunc(slices.Values(sources), func(a, b profile.FieldSource) int { return strings.Compare(a.Field, b.Field) })
}
