package overlay

import (
	"context"
	"fmt"
	"maps"
	"path/filepath"
	"strings"
	"testing"

	. "github.com/onsi/gomega"

	"github.com/profilesync/profilesync/internal/render/profile"
	"github.com/profilesync/profilesync/test/builders"
)

// compactCloudProfile is a CloudProfile in YAML's flow style: smaller as
// read than as rendered, so that the rendered size can go past its limit
// where the size read does not.
const compactCloudProfile = `{apiVersion: core.profilesync.io/v1alpha1, kind: CloudProfile, metadata: {name: %s}, spec: {type: local,
  machineImages: [{name: local, versions: [{version: 1.0.0}]}], machineTypes: [{name: local, cpu: "1", gpu: "0", memory: 1Gi}],
  regions: [{name: local}], kubernetes: {versions: [{version: 1.31.0}]}}}
`

// reuseLandscape is a landscape of the bench's shape: a base of one file
// per CloudProfile and a file of NamespacedCloudProfiles, and an overlay
// that labels every object.
func reuseLandscape() map[string]string {
	files := map[string]string{
		"base/kustomization.yaml":       kustomization("a.yaml", "b.yaml", "c.yaml", "namespaced.yaml"),
		"base/namespaced.yaml":          fmt.Sprintf(namespacedProfile, "n1", "team-a") + "---\n" + fmt.Sprintf(namespacedProfile, "n2", "team-b"),
		"overlays/x/kustomization.yaml": kustomization("../../base") + "labels:\n- pairs: {landscape: bench}\n",
	}
	for _, name := range []string{"a", "b", "c"} {
		files["base/"+name+".yaml"] = fmt.Sprintf(compactCloudProfile, name)
	}
	return files
}

// withExpiry gives the Kubernetes version of a minimalCloudProfile an
// expiration date: the edit of a push.
func withExpiry(content, date string) string {
	if strings.Contains(content, "{version: 1.31.0}") {
		return strings.Replace(content, "{version: 1.31.0}", "{version: 1.31.0, expirationDate: \""+date+"T00:00:00Z\"}", 1)
	}
	return strings.Replace(content, "    - version: 1.31.0\n", "    - version: 1.31.0\n      expirationDate: \""+date+"T00:00:00Z\"\n", 1)
}

// reuseOutcome is what a build answers, its documents spliced.
type reuseOutcome struct {
	docs     []profile.Document
	warnings profile.Problems
	err      string
	reusable *Reusable
	reused   int
}

func buildReusingOutcome(t *testing.T, root string, limits Limits, previous *Reusable, previousDocs []profile.Document) reuseOutcome {
	t.Helper()
	built, err := BuildReusing(context.Background(), context.Background(), root, filepath.Join("overlays", "x"), limits, previous)
	if err != nil {
		return reuseOutcome{err: err.Error()}
	}
	docs, err := built.Splice(previousDocs)
	if err != nil {
		t.Fatalf("splicing: %v", err)
	}
	outcome := reuseOutcome{docs: docs, warnings: built.Warnings, reusable: built.Reusable}
	for _, r := range built.Reused {
		outcome.reused += r.Count
	}
	return outcome
}

// TestAReusingBuildIsAColdBuild builds a landscape, edits it as a push
// may, and builds the edit both cold and reusing the first build: the
// documents (their files, data and field sources), the warnings, the
// errors and what the next build may reuse must be the same.
func TestAReusingBuildIsAColdBuild(t *testing.T) {
	landscape := reuseLandscape()
	tests := []struct {
		name string
		edit func(files map[string]string)
		// limits of the second build, given what its cold build renders
		// with the default limits; the defaults when nil.
		limits func(rendered int64) Limits
		// reused is how many documents the reusing build must take from
		// the first.
		reused int
	}{
		{name: "nothing changed: every document is reused", edit: func(map[string]string) {}, reused: 5},
		{name: "one version's expiry changed in one file: the others are reused", edit: func(files map[string]string) {
			files["base/b.yaml"] = withExpiry(files["base/b.yaml"], "2030-01-01")
		}, reused: 4},
		{name: "a file added to the base", edit: func(files map[string]string) {
			files["base/d.yaml"] = fmt.Sprintf(compactCloudProfile, "d")
			files["base/kustomization.yaml"] = kustomization("a.yaml", "b.yaml", "d.yaml", "c.yaml", "namespaced.yaml")
		}},
		{name: "a file removed from the base", edit: func(files map[string]string) {
			files["base/kustomization.yaml"] = kustomization("a.yaml", "namespaced.yaml")
		}},
		{name: "the overlay's labels changed", edit: func(files map[string]string) {
			files["overlays/x/kustomization.yaml"] = kustomization("../../base") + "labels:\n- pairs: {landscape: other}\n"
		}},
		{name: "a patch added to the overlay", edit: func(files map[string]string) {
			files["overlays/x/kustomization.yaml"] += "patches:\n- patch: |\n    apiVersion: core.profilesync.io/v1alpha1\n    kind: CloudProfile\n" +
				"    metadata: {name: c}\n    spec: {regions: [{name: other}]}\n"
		}},
		{name: "a file of a base with a patch changed: nothing below the patch is reused", edit: func(files map[string]string) {
			files["base/kustomization.yaml"] += "patches:\n- patch: |\n    apiVersion: core.profilesync.io/v1alpha1\n    kind: CloudProfile\n" +
				"    metadata: {name: a}\n    spec: {regions: [{name: other}]}\n"
			files["base/b.yaml"] = withExpiry(files["base/b.yaml"], "2030-01-01")
		}},
		{name: "a changed file defines an object an unchanged one defines", edit: func(files map[string]string) {
			files["base/b.yaml"] = fmt.Sprintf(compactCloudProfile, "a")
		}},
		{name: "a changed file comes before an unchanged one that defines its object", edit: func(files map[string]string) {
			files["base/a.yaml"] = fmt.Sprintf(compactCloudProfile, "c")
		}},
		{name: "a new file comes before an unchanged one that defines its object", edit: func(files map[string]string) {
			files["base/d.yaml"] = fmt.Sprintf(compactCloudProfile, "c")
			files["base/kustomization.yaml"] = kustomization("d.yaml", "a.yaml", "b.yaml", "c.yaml", "namespaced.yaml")
		}},
		{name: "an unchanged file's documents go past the rendered size", edit: func(files map[string]string) {
			files["base/a.yaml"] = withExpiry(files["base/a.yaml"], "2030-01-01")
		}, limits: func(rendered int64) Limits { return Limits{MaxRenderedSize: rendered - 1} }},
		{name: "a changed file's documents go past the rendered size", edit: func(files map[string]string) {
			files["base/namespaced.yaml"] = strings.Replace(files["base/namespaced.yaml"], "2030-01-01", "2031-06-01", 1)
		}, limits: func(rendered int64) Limits { return Limits{MaxRenderedSize: rendered - 1} }},
		{name: "the unchanged files go past the object limit", edit: func(files map[string]string) {
			files["base/b.yaml"] = withExpiry(files["base/b.yaml"], "2030-01-01")
		}, limits: func(int64) Limits { return Limits{MaxObjects: 4} }},
		{name: "a changed file is of a kind the linear path leaves to kustomize", edit: func(files map[string]string) {
			files["base/b.yaml"] = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: b}\ndata: {a: b}\n"
		}},
		{name: "a changed file is listed twice", edit: func(files map[string]string) {
			files["base/b.yaml"] = withExpiry(files["base/b.yaml"], "2030-01-01")
			files["base/kustomization.yaml"] = kustomization("a.yaml", "b.yaml", "c.yaml", "namespaced.yaml", "b.yaml")
		}},
		{name: "an unchanged file is listed twice", edit: func(files map[string]string) {
			files["base/kustomization.yaml"] = kustomization("a.yaml", "b.yaml", "c.yaml", "namespaced.yaml", "a.yaml")
		}},
		{name: "the base's annotations changed", edit: func(files map[string]string) {
			files["base/kustomization.yaml"] += "commonAnnotations: {team: x}\n"
		}},
		{name: "an unchanged file moved to another directory", edit: func(files map[string]string) {
			files["base/more/a.yaml"] = files["base/a.yaml"]
			files["base/kustomization.yaml"] = kustomization("more/a.yaml", "b.yaml", "c.yaml", "namespaced.yaml")
		}},
		{name: "one document of a file of two changed: the other is reused", edit: func(files map[string]string) {
			files["base/namespaced.yaml"] = strings.Replace(files["base/namespaced.yaml"], "2030-01-01", "2031-06-01", 1)
		}, reused: 4},
		{name: "a document added to a file", edit: func(files map[string]string) {
			files["base/namespaced.yaml"] += "---\n" + fmt.Sprintf(namespacedProfile, "n3", "team-c")
		}, reused: 5},
		{name: "a document removed from a file", edit: func(files map[string]string) {
			files["base/namespaced.yaml"] = fmt.Sprintf(namespacedProfile, "n2", "team-b") + "---\n# n1 is gone\n"
		}, reused: 4},
		{name: "the documents of a file reordered", edit: func(files map[string]string) {
			files["base/namespaced.yaml"] = fmt.Sprintf(namespacedProfile, "n2", "team-b") + "---\n" + fmt.Sprintf(namespacedProfile, "n1", "team-a")
		}, reused: 5},
		{name: "a changed document defines the object an unchanged one of its file defines", edit: func(files map[string]string) {
			files["base/namespaced.yaml"] = fmt.Sprintf(namespacedProfile, "n2", "team-b") + "---\n" + fmt.Sprintf(namespacedProfile, "n2", "team-b") + "  # again\n"
		}},
		{name: "a changed document is of a kind the linear path leaves to kustomize", edit: func(files map[string]string) {
			files["base/namespaced.yaml"] = fmt.Sprintf(namespacedProfile, "n1", "team-a") + "---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\n"
		}},
		{name: "a changed document is a List", edit: func(files map[string]string) {
			files["base/namespaced.yaml"] = fmt.Sprintf(namespacedProfile, "n1", "team-a") + "---\n" +
				profileList("List", fmt.Sprintf(namespacedProfile, "n2", "team-b"), fmt.Sprintf(namespacedProfile, "n3", "team-c"))
		}},
		{name: "a changed document breaks the typing check", edit: func(files map[string]string) {
			files["base/namespaced.yaml"] = strings.Replace(files["base/namespaced.yaml"], "version: 1.31.0", "version: 1.31", 1)
		}},
		{name: "a changed document does not parse", edit: func(files map[string]string) {
			files["base/namespaced.yaml"] += "---\n{a: [\n"
		}},
		{name: "a file of two documents becomes one of a document", edit: func(files map[string]string) {
			files["base/namespaced.yaml"] = fmt.Sprintf(namespacedProfile, "n1", "team-a")
		}},
		{name: "an unchanged document goes past the rendered size after a changed one", edit: func(files map[string]string) {
			files["base/namespaced.yaml"] = strings.Replace(files["base/namespaced.yaml"], "2030-01-01", "2031-06-01", 1)
		}, limits: func(rendered int64) Limits { return Limits{MaxRenderedSize: rendered - 1} }},
		{name: "a changed file breaks the typing check", edit: func(files map[string]string) {
			files["base/b.yaml"] = strings.Replace(files["base/b.yaml"], "{version: 1.31.0}", "{version: 1.31}", 1)
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			before, after := t.TempDir(), t.TempDir()
			builders.WriteTree(t, before, landscape)
			edited := maps.Clone(landscape)
			tt.edit(edited)
			builders.WriteTree(t, after, edited)
			// The same root for both revisions, as the manager's checkouts
			// are the same paths relative to their roots.
			first := buildReusingOutcome(t, before, DefaultLimits(), nil, nil)
			g.Expect(first.err).To(BeEmpty())
			g.Expect(first.reusable).NotTo(BeNil(), "the first build took the linear path")

			limits := DefaultLimits()
			if tt.limits != nil {
				var rendered int64
				for _, doc := range buildReusingOutcome(t, after, limits, nil, nil).docs {
					rendered += int64(len(doc.Data))
				}
				limits = tt.limits(rendered).OrDefaults()
			}
			cold := buildReusingOutcome(t, after, limits, nil, nil)
			reusing := buildReusingOutcome(t, after, limits, first.reusable, first.docs)
			g.Expect(reusing.err).To(Equal(cold.err))
			g.Expect(reusing.docs).To(Equal(cold.docs))
			g.Expect(reusing.warnings).To(Equal(cold.warnings))
			g.Expect(reusing.reusable).To(Equal(cold.reusable))
			g.Expect(cold.reused).To(BeZero())
			if tt.reused > 0 {
				g.Expect(reusing.reused).To(Equal(tt.reused))
			}
		})
	}
}

// TestAPushParsesOnlyTheFileItChanged builds a landscape of N resource
// files, then the push that changes one of them, reusing the first build:
// the second build parses one file, where a cold build parses N.
func TestAPushParsesOnlyTheFileItChanged(t *testing.T) {
	g := NewWithT(t)
	const n = 8
	files := map[string]string{"overlays/x/kustomization.yaml": kustomization("../../base") + "labels:\n- pairs: {landscape: bench}\n"}
	var names []string
	for i := range n {
		name := fmt.Sprintf("p%d.yaml", i)
		names = append(names, name)
		files["base/"+name] = fmt.Sprintf(minimalCloudProfile, fmt.Sprintf("p%d", i))
	}
	files["base/kustomization.yaml"] = kustomization(names...)
	root := t.TempDir()
	builders.WriteTree(t, root, files)

	parses := resourceFileParses.Load()
	first := buildReusingOutcome(t, root, DefaultLimits(), nil, nil)
	g.Expect(first.err).To(BeEmpty())
	g.Expect(resourceFileParses.Load()-parses).To(Equal(int64(n)), "a cold build parses every file")

	builders.WriteTree(t, root, map[string]string{"base/p3.yaml": withExpiry(files["base/p3.yaml"], "2030-01-01")})
	parses = resourceFileParses.Load()
	second := buildReusingOutcome(t, root, DefaultLimits(), first.reusable, first.docs)
	g.Expect(second.err).To(BeEmpty())
	g.Expect(resourceFileParses.Load()-parses).To(Equal(int64(1)), "the push parses the file it changed")
	g.Expect(second.reused).To(Equal(n - 1))
	g.Expect(second.docs).To(Equal(buildReusingOutcome(t, root, DefaultLimits(), nil, nil).docs))
}

// TestAPushParsesOnlyTheDocumentItChanged builds a landscape whose N
// CloudProfiles share one file (test/bench's), then the push that changes
// one of them, reusing the first build: the second build parses one
// document, where a cold build parses N.
func TestAPushParsesOnlyTheDocumentItChanged(t *testing.T) {
	g := NewWithT(t)
	const n = 8
	var profiles []string
	for i := range n {
		profiles = append(profiles, fmt.Sprintf(minimalCloudProfile, fmt.Sprintf("p%d", i)))
	}
	root := t.TempDir()
	builders.WriteTree(t, root, map[string]string{
		"base/kustomization.yaml":       kustomization("profiles.yaml"),
		"base/profiles.yaml":            strings.Join(profiles, "---\n"),
		"overlays/x/kustomization.yaml": kustomization("../../base") + "labels:\n- pairs: {landscape: bench}\n",
	})

	parses := resourceDocumentParses.Load()
	first := buildReusingOutcome(t, root, DefaultLimits(), nil, nil)
	g.Expect(first.err).To(BeEmpty())
	g.Expect(resourceDocumentParses.Load()-parses).To(Equal(int64(n)), "a cold build parses every document")

	profiles[3] = withExpiry(profiles[3], "2030-01-01")
	builders.WriteTree(t, root, map[string]string{"base/profiles.yaml": strings.Join(profiles, "---\n")})
	parses = resourceDocumentParses.Load()
	second := buildReusingOutcome(t, root, DefaultLimits(), first.reusable, first.docs)
	g.Expect(second.err).To(BeEmpty())
	g.Expect(resourceDocumentParses.Load()-parses).To(Equal(int64(1)), "the push parses the document it changed")
	g.Expect(second.reused).To(Equal(n - 1))
	cold := buildReusingOutcome(t, root, DefaultLimits(), nil, nil)
	g.Expect(second.docs).To(Equal(cold.docs))
	g.Expect(second.reusable).To(Equal(cold.reusable))
}

// TestSpliceRefusesReusedDocumentsThatDoNotFit holds Built.Splice to the
// previous build's documents: an answer that names documents it does not
// have is an error, never a panic.
func TestSpliceRefusesReusedDocumentsThatDoNotFit(t *testing.T) {
	previous := []profile.Document{{File: "a"}, {File: "b"}}
	built := []profile.Document{{File: "x"}}
	tests := []struct {
		name   string
		reused []Reused
		want   []string // the files in order; nil for an error
	}{
		{name: "before, between and after the documents built", reused: []Reused{{At: 0, From: 1, Count: 1}, {At: 2, From: 0, Count: 1}},
			want: []string{"b", "x", "a"}},
		{name: "past the previous documents", reused: []Reused{{At: 0, From: 1, Count: 2}}},
		{name: "a negative count", reused: []Reused{{At: 0, From: 1, Count: -1}}},
		{name: "out of order", reused: []Reused{{At: 1, From: 0, Count: 1}, {At: 0, From: 1, Count: 1}}},
		{name: "past the documents built", reused: []Reused{{At: 3, From: 0, Count: 1}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			docs, err := Built{Documents: built, Reused: tt.reused}.Splice(previous)
			if tt.want == nil {
				g.Expect(err).To(HaveOccurred())
				return
			}
			g.Expect(err).NotTo(HaveOccurred())
			var got []string
			for _, d := range docs {
				got = append(got, d.File)
			}
			g.Expect(got).To(Equal(tt.want))
		})
	}
}

// FuzzAReusingBuildIsAColdBuild edits a landscape of files of several
// documents as the fuzzer's bytes choose (documents changed, added,
// removed, moved, duplicated, of another kind, untyped, a label or a patch
// added, a file split), and requires the reusing build of the edit to be
// its cold build: documents, warnings, errors and reusable facts.
func FuzzAReusingBuildIsAColdBuild(f *testing.F) {
	for _, seed := range [][]byte{{0}, {1, 5}, {2, 9}, {3, 1, 4}, {4, 2}, {5, 3}, {6}, {7}, {8, 2}, {9}, {10, 1}, {11, 6, 0, 2}} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, edits []byte) {
		if len(edits) > 8 {
			return
		}
		documents := map[string][]string{}
		for f, file := range []string{"one.yaml", "two.yaml"} {
			for d := range 3 {
				documents[file] = append(documents[file], fmt.Sprintf(compactCloudProfile, fmt.Sprintf("p%d-%d", f, d)))
			}
		}
		documents["three.yaml"] = []string{fmt.Sprintf(namespacedProfile, "n1", "team-a"), fmt.Sprintf(namespacedProfile, "n2", "team-b")}
		render := func(documents map[string][]string, overlay string) map[string]string {
			files := map[string]string{
				"base/kustomization.yaml":       kustomization("one.yaml", "two.yaml", "three.yaml"),
				"overlays/x/kustomization.yaml": kustomization("../../base") + "labels:\n- pairs: {landscape: bench}\n" + overlay,
			}
			for file, docs := range documents {
				files["base/"+file] = strings.Join(docs, "---\n")
			}
			return files
		}
		before := render(documents, "")
		overlay := ""
		for i := 0; i < len(edits); i++ {
			file := []string{"one.yaml", "two.yaml", "three.yaml"}[int(edits[i]/16)%3]
			docs := documents[file]
			at := int(edits[i]/48) % max(1, len(docs))
			switch edits[i] % 12 {
			case 0:
				if len(docs) > 0 {
					docs[at] = withExpiry(docs[at], "2031-01-01")
				}
			case 1:
				docs = append(docs, fmt.Sprintf(compactCloudProfile, fmt.Sprintf("new%d", i)))
			case 2:
				if len(docs) > 0 {
					docs = append(docs[:at], docs[at+1:]...)
				}
			case 3:
				if len(docs) > 1 {
					docs[0], docs[len(docs)-1] = docs[len(docs)-1], docs[0]
				}
			case 4:
				docs = append(docs, fmt.Sprintf(compactCloudProfile, "p0-0"))
			case 5:
				docs = append(docs, "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\n")
			case 6:
				if len(docs) > 0 {
					docs[at] = strings.Replace(docs[at], "{version: 1.31.0}", "{version: 1.31}", 1)
				}
			case 7:
				overlay = "commonAnnotations: {team: x}\n"
			case 8:
				overlay = "patches:\n- patch: |\n    apiVersion: core.profilesync.io/v1alpha1\n    kind: CloudProfile\n" +
					"    metadata: {name: p0-0}\n    spec: {regions: [{name: other}]}\n"
			case 9:
				docs = append(docs, "# only a comment\n")
			case 10:
				docs = append(docs, profileList("List", fmt.Sprintf(namespacedProfile, fmt.Sprintf("l%d", i), "team-c")))
			case 11:
				if len(docs) > 0 {
					docs[at] += "  # a comment that changes the text, not the object\n"
				}
			}
			documents[file] = docs
		}
		after := render(documents, overlay)
		g := NewWithT(t)
		beforeRoot, afterRoot := t.TempDir(), t.TempDir()
		builders.WriteTree(t, beforeRoot, before)
		builders.WriteTree(t, afterRoot, after)
		first := buildReusingOutcome(t, beforeRoot, DefaultLimits(), nil, nil)
		g.Expect(first.err).To(BeEmpty())
		cold := buildReusingOutcome(t, afterRoot, DefaultLimits(), nil, nil)
		reusing := buildReusingOutcome(t, afterRoot, DefaultLimits(), first.reusable, first.docs)
		g.Expect(reusing.err).To(Equal(cold.err))
		g.Expect(reusing.docs).To(Equal(cold.docs))
		g.Expect(reusing.warnings).To(Equal(cold.warnings))
		g.Expect(reusing.reusable).To(Equal(cold.reusable))
	})
}
