package overlay

import (
	"fmt"
	"strings"
	"testing"

	. "github.com/onsi/gomega"

	"github.com/profilesync/profilesync/internal/render/profile"
	"github.com/profilesync/profilesync/test/builders"
)

// patchHeader starts a patch of the profile p.
const patchHeader = "apiVersion: core.profilesync.io/v1alpha1\nkind: CloudProfile\nmetadata:\n  name: p\n"

// TestBuildErrorsNameThePlaceToEdit builds overlays with one mistake each
// and checks that the error names the file the author must edit, relative
// to the repository root, and what is wrong there, never only what
// kustomize made of it.
func TestBuildErrorsNameThePlaceToEdit(t *testing.T) {
	profileYAML := fmt.Sprintf(minimalCloudProfile, "p")
	tests := []struct {
		name  string
		files map[string]string
		// wantErr are parts of the error; notWant must not be in it.
		wantErr []string
		notWant string
	}{
		{
			name:    "a NUL byte in a resource",
			files:   map[string]string{"o/kustomization.yaml": kustomization("p.yaml"), "o/p.yaml": profileYAML + "# \x00\n"},
			wantErr: []string{"o/p.yaml: line 13, column 3: a NUL byte: YAML allows no control characters; remove it"},
			notWant: "in File: p.yaml",
		},
		{
			name:    "bytes that are not UTF-8 in a resource",
			files:   map[string]string{"o/kustomization.yaml": kustomization("p.yaml"), "o/p.yaml": profileYAML + "# \xff\xfe\n"},
			wantErr: []string{"o/p.yaml: line 13, column 3: the byte 0xff is not UTF-8"},
			notWant: "in File: p.yaml",
		},
		{
			name:    "a resource that is not YAML",
			files:   map[string]string{"o/kustomization.yaml": kustomization("p.yaml"), "o/p.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: [x\n"},
			wantErr: []string{"o/p.yaml: not valid YAML: yaml: line "},
			notWant: "in File: p.yaml",
		},
		{
			name: "a patch that is not YAML",
			files: map[string]string{"o/kustomization.yaml": kustomization("p.yaml") + "patches:\n- path: patch.yaml\n", "o/p.yaml": profileYAML,
				"o/patch.yaml": patchHeader + "spec:\n  type: [x\n"},
			wantErr: []string{"o/patch.yaml: not valid YAML: yaml: line "},
		},
		{
			name:    "a directory without a kustomization as a resource",
			files:   map[string]string{"o/kustomization.yaml": kustomization("../plain"), "plain/p.yaml": profileYAML},
			wantErr: []string{`o/kustomization.yaml: resources entry "../plain": plain is a directory without a kustomization (kustomization.yaml, kustomization.yml, Kustomization): add one, or list its files`},
			notWant: "unable to find one of",
		},
		{
			name: "a strategic-merge patch that matches no object",
			files: map[string]string{"o/kustomization.yaml": kustomization("p.yaml") + "patches:\n- path: patch.yaml\n", "o/p.yaml": profileYAML,
				"o/patch.yaml": strings.Replace(patchHeader, "name: p", "name: nosuch", 1) + "spec:\n  type: local\n"},
			wantErr: []string{`o/kustomization.yaml: patches entry "patch.yaml": o/patch.yaml: CloudProfile/nosuch: no object of the build matches this patch`},
			notWant: "failed to find unique target",
		},
		{
			name:    "a kustomization that includes itself",
			files:   map[string]string{"o/kustomization.yaml": kustomization("p.yaml", "../o"), "o/p.yaml": profileYAML},
			wantErr: []string{"cycle detected: candidate root 'o' contains visited root 'o'"},
		},
		{
			name:    "a control character in a kustomization",
			files:   map[string]string{"o/kustomization.yaml": kustomization("p.yaml") + "# \x07\n", "o/p.yaml": profileYAML},
			wantErr: []string{"o/kustomization.yaml: line 5, column 3: the control character U+0007: YAML allows no control characters"},
		},
		{
			name:    "two resources: keys in a kustomization",
			files:   map[string]string{"o/kustomization.yaml": "resources:\n- q.yaml\nresources:\n- p.yaml\n", "o/p.yaml": profileYAML},
			wantErr: []string{"o/kustomization.yaml: line 3: resources: given more than once in the same mapping (first on line 1)"},
		},
		{
			name:    "a key given twice deeper in a kustomization",
			files:   map[string]string{"o/kustomization.yaml": kustomization("p.yaml") + "patches:\n- path: a.yaml\n  path: b.yaml\n", "o/p.yaml": profileYAML},
			wantErr: []string{"o/kustomization.yaml: line 7: patches[0].path: given more than once in the same mapping (first on line 6)"},
		},
		{
			name:    "a remote entry under bases:",
			files:   map[string]string{"o/kustomization.yaml": "bases:\n- https://github.com/example/profiles\nresources:\n- p.yaml\n", "o/p.yaml": profileYAML},
			wantErr: []string{`o/kustomization.yaml: bases entry "https://github.com/example/profiles": remote locations are refused`},
			notWant: "resources entry",
		},
		{
			name:    "a missing entry under bases:",
			files:   map[string]string{"o/kustomization.yaml": "bases:\n- ../missing\nresources:\n- p.yaml\n", "o/p.yaml": profileYAML},
			wantErr: []string{`o/kustomization.yaml: bases entry "../missing": no such file or directory in the repository`},
		},
		{
			name:    "a reserved label set through labels:",
			files:   map[string]string{"o/kustomization.yaml": kustomization("p.yaml") + "labels:\n- pairs:\n    profilesync.io/name: x\n", "o/p.yaml": profileYAML},
			wantErr: []string{"o/kustomization.yaml: labels[0].pairs[profilesync.io/name]: the profilesync.io/ domain is reserved"},
			notWant: "o/p.yaml",
		},
		{
			name:    "a reserved label set through commonLabels:",
			files:   map[string]string{"o/kustomization.yaml": kustomization("p.yaml") + "commonLabels:\n  team.profilesync.io/x: x\n", "o/p.yaml": profileYAML},
			wantErr: []string{"o/kustomization.yaml: commonLabels[team.profilesync.io/x]: the profilesync.io/ domain is reserved"},
			notWant: "o/p.yaml",
		},
		{
			name:    "a reserved annotation set through commonAnnotations:",
			files:   map[string]string{"o/kustomization.yaml": kustomization("p.yaml") + "commonAnnotations:\n  profilesync.io/applied-digest: x\n", "o/p.yaml": profileYAML},
			wantErr: []string{"o/kustomization.yaml: commonAnnotations[profilesync.io/applied-digest]: the profilesync.io/ domain is reserved: the sync sets profilesync.io/applied-digest itself"},
			notWant: "o/p.yaml",
		},
		{
			name: "$retainKeys left in a patch file",
			files: map[string]string{"o/kustomization.yaml": kustomization("p.yaml") + "patches:\n- path: patch.yaml\n", "o/p.yaml": profileYAML,
				"o/patch.yaml": patchHeader + "spec:\n  $retainKeys: [type]\n  type: local\n"},
			wantErr: []string{`o/kustomization.yaml: patches entry "patch.yaml": o/patch.yaml: spec.$retainKeys: the directive $retainKeys is not carried out by kustomize`},
			notWant: "o/p.yaml",
		},
		{
			name: "$setElementOrder left in a strategic-merge patch file",
			files: map[string]string{"o/kustomization.yaml": kustomization("p.yaml") + "patchesStrategicMerge:\n- patch.yaml\n", "o/p.yaml": profileYAML,
				"o/patch.yaml": patchHeader + "spec:\n  kubernetes:\n    $setElementOrder/versions:\n    - version: 1.31.0\n"},
			wantErr: []string{`o/kustomization.yaml: patchesStrategicMerge entry "patch.yaml": o/patch.yaml: spec.kubernetes.$setElementOrder/versions: the directive $setElementOrder is not carried out`},
			notWant: "o/p.yaml",
		},
		{
			name: "$setElementOrder left in an inline patch",
			files: map[string]string{"o/kustomization.yaml": kustomization("p.yaml") + "patches:\n- patch: |\n    " +
				strings.ReplaceAll(patchHeader+"spec:\n  kubernetes:\n    $setElementOrder/versions: []\n", "\n", "\n    ") + "\n", "o/p.yaml": profileYAML},
			wantErr: []string{"o/kustomization.yaml: patches[0].patch: spec.kubernetes.$setElementOrder/versions: the directive $setElementOrder is not carried out"},
			notWant: "o/p.yaml",
		},
		{
			name: "a reserved label a patch sets",
			files: map[string]string{"o/kustomization.yaml": kustomization("p.yaml") + "patches:\n- path: patch.yaml\n", "o/p.yaml": profileYAML,
				"o/patch.yaml": "apiVersion: core.profilesync.io/v1alpha1\nkind: CloudProfile\nmetadata:\n  name: p\n  labels:\n    profilesync.io/name: x\n"},
			wantErr: []string{`o/kustomization.yaml: patches entry "patch.yaml": o/patch.yaml: metadata.labels[profilesync.io/name]: the profilesync.io/ domain is reserved`},
			notWant: "o/p.yaml",
		},
		{
			name: "a reserved annotation a JSON patch adds",
			files: map[string]string{"o/kustomization.yaml": kustomization("p.yaml") + "patches:\n- path: patch.yaml\n  target:\n    kind: CloudProfile\n", "o/p.yaml": profileYAML,
				"o/patch.yaml": "- op: add\n  path: /metadata/annotations/profilesync.io~1applied-digest\n  value: x\n"},
			wantErr: []string{`o/kustomization.yaml: patches entry "patch.yaml": o/patch.yaml: [0].path /metadata/annotations/profilesync.io~1applied-digest: the profilesync.io/ domain is reserved`},
			notWant: "o/p.yaml",
		},
		{
			name: "reserved labels a JSON patch sets whole",
			files: map[string]string{"o/kustomization.yaml": kustomization("p.yaml") + "patches:\n- path: patch.yaml\n  target:\n    kind: CloudProfile\n", "o/p.yaml": profileYAML,
				"o/patch.yaml": "- op: add\n  path: /metadata/labels\n  value:\n    profilesync.io/namespace: x\n"},
			wantErr: []string{`o/kustomization.yaml: patches entry "patch.yaml": o/patch.yaml: [0].path /metadata/labels.labels[profilesync.io/namespace]: the profilesync.io/ domain is reserved`},
			notWant: "o/p.yaml",
		},
		{
			name:    "an object defined in two files",
			files:   map[string]string{"o/kustomization.yaml": kustomization("p.yaml", "p2.yaml"), "o/p.yaml": profileYAML, "o/p2.yaml": profileYAML},
			wantErr: []string{"CloudProfile/p is defined more than once: in o/p.yaml and o/p2.yaml; a build defines each object once"},
			notWant: "must build at directory",
		},
		{
			name: "an object defined in an overlay and its base",
			files: map[string]string{"o/kustomization.yaml": kustomization("p.yaml", "../b"), "o/p.yaml": profileYAML,
				"b/kustomization.yaml": kustomization("p.yaml"), "b/p.yaml": profileYAML},
			wantErr: []string{"CloudProfile/p is defined more than once: in b/p.yaml and o/p.yaml;"},
			notWant: "already registered id",
		},
		{
			name:    "an object defined twice in one file",
			files:   map[string]string{"o/kustomization.yaml": kustomization("p.yaml"), "o/p.yaml": profileYAML + "---\n" + profileYAML},
			wantErr: []string{"CloudProfile/p is defined more than once: in o/p.yaml (2 times);"},
		},
		{
			name: "a namespaced object defined in two files",
			files: map[string]string{"o/kustomization.yaml": kustomization("a.yaml", "b.yaml"),
				"o/a.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c\n  namespace: team\n",
				"o/b.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c\n  namespace: team\n"},
			wantErr: []string{"ConfigMap/team/c is defined more than once: in o/a.yaml and o/b.yaml;"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			root := t.TempDir()
			builders.WriteTree(t, root, tt.files)
			docs, err := buildWithDefaults(t, root, "o")
			g.Expect(docs).To(BeNil())
			g.Expect(err).To(HaveOccurred())
			for _, want := range tt.wantErr {
				g.Expect(err.Error()).To(ContainSubstring(want))
			}
			g.Expect(err.Error()).NotTo(ContainSubstring(root), "paths are relative to the repository root")
			if tt.notWant != "" {
				g.Expect(err.Error()).NotTo(ContainSubstring(tt.notWant))
			}
		})
	}
}

// TestCheckYAMLTypingRefusesWhatIsNotYAMLText: every command reads files
// through profile.CheckYAMLTyping, which names the first byte that is not YAML text
// by line and column.
func TestCheckYAMLTypingRefusesWhatIsNotYAMLText(t *testing.T) {
	tests := []struct {
		name, content, want string
	}{
		{name: "a NUL byte", content: "a: b\nc: \x00\n", want: "p.yaml: line 2, column 4: a NUL byte: YAML allows no control characters; remove it"},
		{name: "a byte that is not UTF-8", content: "a: \xc3\n", want: "p.yaml: line 1, column 4: the byte 0xc3 is not UTF-8: a YAML file is UTF-8 text; save it as UTF-8"},
		{name: "DEL", content: "a: \x7f\n", want: "p.yaml: line 1, column 4: the control character U+007F"},
		{name: "a C1 control character", content: "a: \u0080\n", want: "p.yaml: line 1, column 4: the control character U+0080"},
		{name: "columns count characters, not bytes", content: "a: ä\x00\n", want: "p.yaml: line 1, column 5: a NUL byte"},
		{name: "tabs, carriage returns, NEL and any printable character are text", content: "a:\t\"ä\u0085€😀\"\r\n"},
		{name: "UTF-16 is left to the parser", content: "\xff\xfea\x00:\x00 \x00b\x00"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			problems := profile.CheckYAMLTyping("p.yaml", []byte(tt.content))
			if tt.want == "" {
				g.Expect(problems).To(BeEmpty())
				return
			}
			g.Expect(problems).To(HaveLen(1))
			g.Expect(problems[0].String()).To(HavePrefix(tt.want))
		})
	}
}
