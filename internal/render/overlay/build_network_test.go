package overlay

import (
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"sync/atomic"
	"testing"

	. "github.com/onsi/gomega"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/api/types"
	"sigs.k8s.io/kustomize/kyaml/filesys"

	"github.com/profilesync/profilesync/test/builders"
)

// canary is an HTTP server on loopback that counts the requests it gets. A
// build that reaches the network reaches it: every URL in these tests
// points there, Git addresses included (git fetches over HTTP).
type canary struct {
	*httptest.Server
	requests atomic.Int64
}

func startCanary(t *testing.T) *canary {
	t.Helper()
	c := &canary{}
	c.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		c.requests.Add(1)
		// What a metadata endpoint would answer: if it ever lands in a
		// build's output, the test sees it.
		_, _ = w.Write([]byte("canary-secret-token\n"))
	}))
	t.Cleanup(c.Close)
	return c
}

// TestTheCanarySeesWhatPlainKustomizeFetches shows that the canary works:
// kustomize's own loader, given a remote resource, does send it a request.
// Every test below that asserts "no request" relies on this.
func TestTheCanarySeesWhatPlainKustomizeFetches(t *testing.T) {
	g := NewWithT(t)
	c := startCanary(t)
	root := t.TempDir()
	builders.WriteTree(t, root, map[string]string{
		"kustomization.yaml": "configMapGenerator:\n- name: leak\n  files:\n  - token=" + c.URL + "/latest/meta-data\n",
	})
	options := krusty.MakeDefaultOptions()
	_, _ = krusty.MakeKustomizer(options).Run(filesys.MakeFsOnDisk(), root)
	g.Expect(c.requests.Load()).To(BeNumerically(">", 0), "plain kustomize fetches the URL")
}

// TestNoBuildReachesTheNetwork tries every place where kustomize loads a
// location, with a URL or Git address pointing at the canary. Each build is
// refused naming the file and the entry, and the canary hears nothing.
func TestNoBuildReachesTheNetwork(t *testing.T) {
	c := startCanary(t)
	url := c.URL + "/latest/meta-data"
	gitURL := c.URL + "/org/repo.git"
	profile := "profile.yaml"
	tests := []struct {
		name  string
		files map[string]string
		// wantErr are substrings the error must contain.
		wantErr []string
	}{
		{
			name:    "a remote resource",
			files:   map[string]string{"kustomization.yaml": kustomization(url)},
			wantErr: []string{`kustomization.yaml: resources entry "` + url + `": remote locations are refused`},
		},
		{
			name:    "a Git repository as a base",
			files:   map[string]string{"kustomization.yaml": kustomization(gitURL + "//base?ref=main")},
			wantErr: []string{`resources entry "` + gitURL + `//base?ref=main": remote`},
		},
		{
			name:    "a Git repository given the way kustomize shortens GitHub addresses",
			files:   map[string]string{"kustomization.yaml": kustomization("github.com/org/repo/base")},
			wantErr: []string{`resources entry "github.com/org/repo/base": remote`},
		},
		{
			name:    "a deprecated bases entry",
			files:   map[string]string{"kustomization.yaml": "bases:\n- " + url + "\n"},
			wantErr: []string{`bases entry "` + url + `": remote`},
		},
		{
			name:    "a component",
			files:   map[string]string{"kustomization.yaml": "components:\n- " + gitURL + "\n"},
			wantErr: []string{`components entry "` + gitURL + `": remote`},
		},
		{
			name:    "a patch file",
			files:   map[string]string{"kustomization.yaml": kustomization(profile) + "patches:\n- path: " + url + "\n"},
			wantErr: []string{`patches entry "` + url + `": remote`},
		},
		{
			name:    "a JSON 6902 patch file",
			files:   map[string]string{"kustomization.yaml": kustomization(profile) + "patchesJson6902:\n- path: " + url + "\n  target: {kind: CloudProfile, name: p}\n"},
			wantErr: []string{`patchesJson6902 entry "` + url + `": remote`},
		},
		{
			name:    "a strategic-merge patch file",
			files:   map[string]string{"kustomization.yaml": kustomization(profile) + "patchesStrategicMerge:\n- " + url + "\n"},
			wantErr: []string{`patchesStrategicMerge entry "` + url + `": remote`},
		},
		{
			name:    "a replacements file",
			files:   map[string]string{"kustomization.yaml": kustomization(profile) + "replacements:\n- path: " + url + "\n"},
			wantErr: []string{`replacements entry "` + url + `": remote`},
		},
		{
			name:    "an OpenAPI schema",
			files:   map[string]string{"kustomization.yaml": kustomization(profile) + "openapi:\n  path: " + url + "\n"},
			wantErr: []string{`openapi entry "` + url + `": remote`},
		},
		{
			name:    "a CRD file",
			files:   map[string]string{"kustomization.yaml": kustomization(profile) + "crds:\n- " + url + "\n"},
			wantErr: []string{`crds entry "` + url + `": remote`},
		},
		{
			name:    "a transformer configuration file",
			files:   map[string]string{"kustomization.yaml": kustomization(profile) + "configurations:\n- " + url + "\n"},
			wantErr: []string{`configurations entry "` + url + `": remote`},
		},
		{
			name:    "a config map generator file with a key",
			files:   map[string]string{"kustomization.yaml": "configMapGenerator:\n- name: leak\n  files:\n  - token=" + url + "\n"},
			wantErr: []string{`configMapGenerator entry "` + url + `": remote`},
		},
		{
			name:    "a secret generator env file",
			files:   map[string]string{"kustomization.yaml": "secretGenerator:\n- name: leak\n  envs:\n  - " + url + "\n"},
			wantErr: []string{`secretGenerator entry "` + url + `": remote`},
		},
		{
			name:    "a generator directory",
			files:   map[string]string{"kustomization.yaml": "generators:\n- " + gitURL + "\n"},
			wantErr: []string{`generators entry "` + gitURL + `": remote`},
		},
		{
			name: "an inline generator configuration",
			files: map[string]string{"kustomization.yaml": `generators:
- |
  apiVersion: builtin
  kind: ConfigMapGenerator
  metadata:
    name: leak
  files:
  - token=` + url + "\n"},
			wantErr: []string{`kustomization.yaml: ConfigMapGenerator/leak: files/envs entry "` + url + `": remote`},
		},
		{
			name: "an inline patch transformer",
			files: map[string]string{"kustomization.yaml": kustomization(profile) + `transformers:
- |
  apiVersion: builtin
  kind: PatchTransformer
  metadata:
    name: fetch
  path: ` + url + "\n"},
			wantErr: []string{`kustomization.yaml: PatchTransformer/fetch: path entry "` + url + `": remote`},
		},
		{
			name: "a replacement transformer in a configuration file",
			files: map[string]string{
				"kustomization.yaml": kustomization(profile) + "transformers:\n- replace.yaml\n",
				"replace.yaml":       "apiVersion: builtin\nkind: ReplacementTransformer\nmetadata:\n  name: r\nreplacements:\n- path: " + url + "\n",
			},
			wantErr: []string{`replace.yaml: ReplacementTransformer/r: replacements.path entry "` + url + `": remote`},
		},
		{
			name: "a strategic-merge patch transformer in a validator",
			files: map[string]string{
				"kustomization.yaml": kustomization(profile) + "validators:\n- psm.yaml\n",
				"psm.yaml":           "apiVersion: builtin\nkind: PatchStrategicMergeTransformer\nmetadata:\n  name: v\npaths:\n- " + url + "\n",
			},
			wantErr: []string{`psm.yaml: PatchStrategicMergeTransformer/v: paths entry "` + url + `": remote`},
		},
		{
			name: "a value-add transformer's target file",
			files: map[string]string{
				"kustomization.yaml": kustomization(profile) + "transformers:\n- add.yaml\n",
				"add.yaml":           "apiVersion: builtin\nkind: ValueAddTransformer\nmetadata:\n  name: a\nvalue: x\ntargetFilePath: " + url + "\n",
			},
			wantErr: []string{`add.yaml: ValueAddTransformer/a: targetFilePath entry "` + url + `": remote`},
		},
		{
			name: "a transformer whose path a directory's kustomization computes",
			// The configuration on disk is harmless; the directory's own
			// replacement writes the URL into it, so only the built
			// configuration shows the location.
			files: map[string]string{
				"kustomization.yaml":              kustomization(profile) + "transformers:\n- transformers\n",
				"transformers/kustomization.yaml": "resources:\n- patch.yaml\nconfigMapGenerator:\n- name: source\n  options: {annotations: {config.kubernetes.io/local-config: \"true\"}}\n  literals:\n  - where=" + url + "\nreplacements:\n- source: {kind: ConfigMap, name: source, fieldPath: data.where}\n  targets:\n  - select: {kind: PatchTransformer}\n    fieldPaths: [path]\n",
				"transformers/patch.yaml":         "apiVersion: builtin\nkind: PatchTransformer\nmetadata:\n  name: computed\npath: local.yaml\n",
			},
			wantErr: []string{`transformers: PatchTransformer/computed: path entry "` + url + `": remote`},
		},
		{
			name: "a remote resource in a base the overlay uses",
			files: map[string]string{
				"kustomization.yaml":      kustomization("base"),
				"base/kustomization.yaml": kustomization(url),
			},
			wantErr: []string{`base/kustomization.yaml: resources entry "` + url + `": remote`},
		},
		{
			name:    "a Helm chart",
			files:   map[string]string{"kustomization.yaml": "helmCharts:\n- name: profiles\n  repo: " + url + "\n"},
			wantErr: []string{"kustomization.yaml: helmCharts: refused"},
		},
		{
			name:    "an exec plugin",
			files:   map[string]string{"kustomization.yaml": "generators:\n- |\n  apiVersion: example.com/v1\n  kind: Fetcher\n  metadata:\n    name: f\n    annotations:\n      config.kubernetes.io/function: |\n        exec: {path: /usr/bin/curl}\n"},
			wantErr: []string{"kustomization.yaml: Fetcher/f: refused: only kustomize's builtin generators and transformers run"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			root := t.TempDir()
			tt.files[profile] = strings.ReplaceAll(minimalCloudProfile, "%s", "p")
			tt.files["local.yaml"] = "apiVersion: core.profilesync.io/v1alpha1\nkind: CloudProfile\nmetadata:\n  name: p\n"
			builders.WriteTree(t, root, tt.files)

			docs, err := buildWithDefaults(t, root, ".")
			g.Expect(docs).To(BeNil())
			g.Expect(err).To(HaveOccurred())
			for _, want := range tt.wantErr {
				g.Expect(err.Error()).To(ContainSubstring(want))
			}
			g.Expect(err.Error()).NotTo(ContainSubstring("canary-secret-token"))
			g.Expect(c.requests.Load()).To(BeZero(), "the canary was reached")
		})
	}
}

// TestEveryKustomizationFieldIsVetted fails when kustomize grows a field
// this package has not classified: each field either names locations, and
// vetKustomization checks it (TestNoBuildReachesTheNetwork has a case for
// it), or names none.
func TestEveryKustomizationFieldIsVetted(t *testing.T) {
	g := NewWithT(t)
	vetted := []string{
		"bases", "components", "configMapGenerator", "configurations", "crds", "generators",
		"helmChartInflationGenerator", "helmCharts", "helmGlobals", "openapi", "patches",
		"patchesJson6902", "patchesStrategicMerge", "replacements", "resources", "secretGenerator",
		"transformers", "validators",
	}
	withoutLocations := []string{
		"", // the inline TypeMeta
		"buildMetadata", "commonAnnotations", "commonLabels", "generatorOptions", "imageTags", "images",
		"labels", "metadata", "namePrefix", "nameSuffix", "namespace", "replicas", "sortOptions", "vars",
	}
	var fields []string
	kustomizationType := reflect.TypeOf(types.Kustomization{})
	for i := range kustomizationType.NumField() {
		name, _, _ := strings.Cut(kustomizationType.Field(i).Tag.Get("json"), ",")
		fields = append(fields, name)
	}
	known := append(append([]string{}, vetted...), withoutLocations...)
	sort.Strings(fields)
	sort.Strings(known)
	g.Expect(fields).To(Equal(known))
}

// TestEveryBuiltinPluginIsClassified fails when kustomize grows a builtin
// plugin that builtinPluginLocations does not know, which would be refused
// as a non-builtin, or could load a location unchecked.
func TestEveryBuiltinPluginIsClassified(t *testing.T) {
	g := NewWithT(t)
	var classified []string
	for kind := range builtinPluginLocations {
		classified = append(classified, kind)
	}
	builtins := krusty.GetBuiltinPluginNames()
	sort.Strings(classified)
	sort.Strings(builtins)
	g.Expect(classified).To(Equal(builtins))
}

// TestBuildReadsNothingOfGitMetadata checks that .git/ is not part of what a
// build may read, however it is named: the checkout's configuration holds
// the remote's address.
func TestBuildReadsNothingOfGitMetadata(t *testing.T) {
	secret := "https://user:git-metadata-secret@example.com/repo.git"
	tests := []struct {
		name    string
		files   map[string]string
		link    [2]string // a symbolic link to create: target, name
		wantErr string
	}{
		{
			name:    "a generator reading the checkout's configuration",
			files:   map[string]string{"overlay/kustomization.yaml": "configMapGenerator:\n- name: leak\n  files:\n  - ../.git/config\n"},
			wantErr: `overlay/kustomization.yaml: configMapGenerator entry "../.git/config": .git/config is in .git/, Git's metadata, which is not part of the build: refused`,
		},
		{
			name:    "a resource in .git",
			files:   map[string]string{"overlay/kustomization.yaml": kustomization("../.git")},
			wantErr: `resources entry "../.git": .git is in .git/`,
		},
		{
			name:    "a symbolic link into .git",
			files:   map[string]string{"overlay/kustomization.yaml": "configMapGenerator:\n- name: leak\n  files:\n  - config.txt\n"},
			link:    [2]string{"../.git/config", "overlay/config.txt"},
			wantErr: "overlay/config.txt is a symbolic link into .git/",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			root := t.TempDir()
			tt.files[".git/config"] = "[remote \"origin\"]\n\turl = " + secret + "\n"
			builders.WriteTree(t, root, tt.files)
			if tt.link[0] != "" {
				g.Expect(symlink(tt.link[0], filepath.Join(root, tt.link[1]))).To(Succeed())
			}
			docs, err := buildWithDefaults(t, root, "overlay")
			g.Expect(docs).To(BeNil())
			g.Expect(err).To(MatchError(ContainSubstring(tt.wantErr)))
			g.Expect(err.Error()).NotTo(ContainSubstring("git-metadata-secret"))
		})
	}

	t.Run("a plain directory skips .git", func(t *testing.T) {
		g := NewWithT(t)
		root := t.TempDir()
		builders.WriteTree(t, root, map[string]string{
			"profile.yaml":     strings.ReplaceAll(minimalCloudProfile, "%s", "p"),
			".git/leak.yaml":   "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: leak\ndata:\n  url: " + secret + "\n",
			"sub/.git/x.yaml":  "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: leak2\n",
			"sub/profile.yaml": strings.ReplaceAll(minimalCloudProfile, "%s", "q"),
		})
		docs, err := buildWithDefaults(t, root, ".")
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(docs).To(HaveLen(2))
	})
}

func symlink(target, name string) error { return os.Symlink(target, name) }
