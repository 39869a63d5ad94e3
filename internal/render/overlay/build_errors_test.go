package overlay

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	. "github.com/onsi/gomega"

	"github.com/profilesync/profilesync/internal/render/profile"
	"github.com/profilesync/profilesync/test/builders"
)

const minimalCloudProfile = `apiVersion: core.profilesync.io/v1alpha1
kind: CloudProfile
metadata:
  name: %s
spec:
  type: local
  machineImages: [{name: local, versions: [{version: 1.0.0}]}]
  machineTypes: [{name: local, cpu: "1", gpu: "0", memory: 1Gi}]
  regions: [{name: local}]
  kubernetes:
    versions:
    - version: 1.31.0
`

func kustomization(resources ...string) string {
	out := "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources:\n"
	for _, r := range resources {
		out += "- " + r + "\n"
	}
	return out
}

func TestBuildRefusesWhatLeavesTheRepository(t *testing.T) {
	tests := []struct {
		name  string
		files map[string]string
		path  string
		// wantErr are substrings the error must contain.
		wantErr []string
	}{
		{
			name:    "a remote Git base is refused naming the kustomization and the entry",
			files:   map[string]string{"overlay/kustomization.yaml": kustomization("github.com/example/profiles//base?ref=v1")},
			path:    "overlay",
			wantErr: []string{"overlay/kustomization.yaml: resources entry \"github.com/example/profiles//base?ref=v1\": remote locations are refused"},
		},
		{
			name:    "a remote https resource is refused",
			files:   map[string]string{"overlay/kustomization.yaml": kustomization("https://example.com/profile.yaml")},
			path:    "overlay",
			wantErr: []string{"overlay/kustomization.yaml: resources entry \"https://example.com/profile.yaml\": remote"},
		},
		{
			name:    "an scp-like Git address is refused",
			files:   map[string]string{"overlay/kustomization.yaml": kustomization("git@example.com:org/repo.git")},
			path:    "overlay",
			wantErr: []string{"resources entry \"git@example.com:org/repo.git\": remote"},
		},
		{
			name: "a remote resource in a base the overlay uses is refused naming the base's kustomization",
			files: map[string]string{
				"overlays/dev/kustomization.yaml": kustomization("../../base"),
				"base/kustomization.yaml":         kustomization("git::https://example.com/org/repo.git//profiles"),
			},
			path:    "overlays/dev",
			wantErr: []string{"base/kustomization.yaml: resources entry \"git::https://example.com/org/repo.git//profiles\": remote"},
		},
		{
			name: "a remote patch file is refused",
			files: map[string]string{
				"overlay/kustomization.yaml": "resources: []\npatches:\n- path: https://example.com/patch.yaml\n",
			},
			path:    "overlay",
			wantErr: []string{"overlay/kustomization.yaml: patches entry \"https://example.com/patch.yaml\": remote"},
		},
		{
			name:    "a base outside the repository root is refused",
			files:   map[string]string{"overlay/kustomization.yaml": kustomization("../../outside")},
			path:    "overlay",
			wantErr: []string{"overlay/kustomization.yaml: resources entry \"../../outside\"", "outside the repository root"},
		},
		{
			name:    "a build path outside the repository root is refused",
			files:   map[string]string{"overlay/kustomization.yaml": kustomization()},
			path:    "../outside",
			wantErr: []string{"build path \"../outside\"", "outside the repository root"},
		},
		{
			name:    "every problem of the kustomizations is reported at once",
			files:   map[string]string{"overlay/kustomization.yaml": kustomization("https://example.com/a.yaml", "../../outside", "missing.yaml")},
			path:    "overlay",
			wantErr: []string{"\"https://example.com/a.yaml\"", "\"../../outside\"", "resources entry \"missing.yaml\": no such file or directory"},
		},
		{
			name:    "Helm charts are refused",
			files:   map[string]string{"overlay/kustomization.yaml": "helmCharts:\n- name: profiles\n  repo: https://charts.example.com\n"},
			path:    "overlay",
			wantErr: []string{"overlay/kustomization.yaml: helmCharts: refused"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			root := filepath.Join(t.TempDir(), "repo")
			builders.WriteTree(t, root, tt.files)
			builders.WriteTree(t, filepath.Dir(root), map[string]string{"outside/kustomization.yaml": kustomization()})

			docs, err := buildWithDefaults(t, root, tt.path)
			g.Expect(docs).To(BeNil())
			g.Expect(err).To(HaveOccurred())
			for _, want := range tt.wantErr {
				g.Expect(err.Error()).To(ContainSubstring(want))
			}
		})
	}
}

func TestBuildRefusesASymbolicLinkOutOfTheRepository(t *testing.T) {
	g := NewWithT(t)
	dir := t.TempDir()
	root := filepath.Join(dir, "repo")
	builders.WriteTree(t, dir, map[string]string{
		"outside/secret.yaml":             "apiVersion: v1\nkind: Secret\nmetadata:\n  name: s\n",
		"repo/overlay/kustomization.yaml": kustomization("secret.yaml"),
	})
	g.Expect(os.Symlink(filepath.Join(dir, "outside", "secret.yaml"), filepath.Join(root, "overlay", "secret.yaml"))).To(Succeed())

	_, err := buildWithDefaults(t, root, "overlay")
	g.Expect(err).To(MatchError(And(ContainSubstring("overlay/secret.yaml is a symbolic link to"), ContainSubstring("outside the repository root"))))
}

// TestBuildRefusesADanglingLinkByWhereItLeads: a checkout writes committed
// links as they were written, so a link out of the tree leads to nothing
// there; it is still a link out of the repository, not a missing file.
func TestBuildRefusesADanglingLinkByWhereItLeads(t *testing.T) {
	tests := []struct {
		name, target, wantErr string
	}{
		{name: "a link out of the root", target: "../../outside/missing.yaml", wantErr: "overlay/p.yaml is a symbolic link to"},
		{name: "a link into .git/", target: "../.git/missing.yaml", wantErr: "overlay/p.yaml is a symbolic link into .git/"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			root := filepath.Join(t.TempDir(), "repo")
			builders.WriteTree(t, root, map[string]string{"overlay/kustomization.yaml": kustomization("p.yaml")})
			g.Expect(os.Symlink(tt.target, filepath.Join(root, "overlay", "p.yaml"))).To(Succeed())

			_, err := buildWithDefaults(t, root, "overlay")
			g.Expect(err).To(MatchError(ContainSubstring(tt.wantErr)))
			g.Expect(err).NotTo(MatchError(ContainSubstring("no such file")))
		})
	}
}

func TestBuildReadsAPlainDirectoryLikeFlux(t *testing.T) {
	g := NewWithT(t)
	root := t.TempDir()
	builders.WriteTree(t, root, map[string]string{
		"profiles/b.yaml":                        fmt.Sprintf(minimalCloudProfile, "b"),
		"profiles/a.yml":                         fmt.Sprintf(minimalCloudProfile, "a"),
		"profiles/nested/c.yaml":                 fmt.Sprintf(minimalCloudProfile, "c"),
		"profiles/kustomized/kustomization.yaml": kustomization("d.yaml"),
		"profiles/kustomized/d.yaml":             fmt.Sprintf(minimalCloudProfile, "d"),
		"profiles/kustomized/ignored.yaml":       fmt.Sprintf(minimalCloudProfile, "not-listed"),
		"profiles/.hidden/e.yaml":                fmt.Sprintf(minimalCloudProfile, "hidden"),
		"profiles/README.md":                     "not YAML",
	})

	docs, err := buildWithDefaults(t, root, "profiles")
	g.Expect(err).NotTo(HaveOccurred())
	objects, problems := profile.DecodeDocuments(docs)
	g.Expect(problems).To(BeEmpty())
	var got []string
	for _, o := range objects {
		got = append(got, o.File+" "+o.Ref())
		g.Expect(o.CloudProfile.Annotations).NotTo(HaveKey("config.kubernetes.io/origin"), "the origin annotation is not applied")
	}
	g.Expect(got).To(Equal([]string{
		"profiles/a.yml CloudProfile/a",
		"profiles/b.yaml CloudProfile/b",
		"profiles/kustomized/d.yaml CloudProfile/d",
		"profiles/nested/c.yaml CloudProfile/c",
	}))
}

func TestBuildKeepsTheUsersBuildMetadataAndNamesFilesOfProblems(t *testing.T) {
	g := NewWithT(t)
	root := t.TempDir()
	builders.WriteTree(t, root, map[string]string{
		"base/kustomization.yaml":    kustomization("profile.yaml"),
		"base/profile.yaml":          fmt.Sprintf(minimalCloudProfile, "local") + "  regionz: []\n",
		"overlay/kustomization.yaml": kustomization("../base") + "buildMetadata: [managedByLabel]\n",
	})

	docs, err := buildWithDefaults(t, root, "overlay")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(docs).To(HaveLen(1))
	g.Expect(string(docs[0].Data)).To(ContainSubstring("app.kubernetes.io/managed-by"))
	_, problems := profile.DecodeDocuments(docs)
	// kustomize's managed-by label names a version this binary does not
	// know, "(devel)", which the API server would refuse as a label value.
	g.Expect(problems.Error()).To(Equal(`base/profile.yaml: CloudProfile/local: metadata.labels: Invalid value: "kustomize-(devel)": a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')
base/profile.yaml: CloudProfile/local: spec.regionz: unknown field: the API has no such field (check spelling and indentation)`))
}

// buildWithDefaults builds path of root with the default limits and no
// deadline.
func buildWithDefaults(t *testing.T, root, path string) ([]profile.Document, error) {
	t.Helper()
	return Build(context.Background(), root, path, DefaultLimits())
}
