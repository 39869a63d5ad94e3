package delivery

import (
	"context"
	"io"
	"log"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	. "github.com/onsi/gomega"

	"github.com/profilesync/profilesync/internal/propose/sources"
	"github.com/profilesync/profilesync/internal/repofile"
)

const cloudProfiles = `# The AWS profile.
apiVersion: core.profilesync.io/v1alpha1
kind: CloudProfile
metadata:
  name: aws
spec:
  type: aws
  kubernetes:
    versions:
    - version: 1.34.2
      lifecycle:
      - classification: supported
  machineImages:
  - name: gardenlinux
    updateStrategy: minor
    versions:
    # The image of the week.
    - version: 1592.4.0
      architectures: [amd64]
      cri:
      - name: containerd
      lifecycle:
      - classification: supported
  machineTypes:
  - {name: m5.large, cpu: "2", gpu: "0", memory: 8Gi, architecture: amd64}
  regions:
  - name: eu-1
    zones: [{name: eu-1a}]
`

// writeTree writes files under a new directory and returns it.
func writeTree(t *testing.T, files map[string]string) string {
	t.Helper()
	root := t.TempDir()
	for file, content := range files {
		path := filepath.Join(root, filepath.FromSlash(file))
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return root
}

func options(root string, now time.Time) Options {
	return Options{Root: root, Now: now, ReadLimits: repofile.Limits{MaxFileSize: 1 << 20, MaxTotalSize: 8 << 20},
		SourceLimits: sources.Limits{MaxBytes: 1 << 20, MaxTags: 100, Timeout: 10 * time.Second}}
}

func TestPlanOfATreeWithoutAVersionsFileSaysWhatTheFileIsFor(t *testing.T) {
	g := NewWithT(t)
	root := writeTree(t, map[string]string{"base/cloudprofiles.yaml": cloudProfiles})
	opts := options(root, time.Now())
	opts.Label = "profiles@main"
	_, err := Plan(context.Background(), opts)
	g.Expect(err).To(MatchError("profiles@main: no profilesync-versions.yaml at the repository root: it declares the sources of new versions (docs/versions.md)"))
}

func TestASourceThatFailsIsNamedAndTheOthersAreProposedAndWritten(t *testing.T) {
	g := NewWithT(t)
	images := httptest.NewServer(registry.New(registry.Logger(log.New(io.Discard, "", 0))))
	t.Cleanup(images.Close)
	host := strings.TrimPrefix(images.URL, "http://")
	image, err := random.Image(64, 1)
	g.Expect(err).NotTo(HaveOccurred())
	image, err = mutate.CreatedAt(image, v1.Time{Time: time.Date(2026, 11, 20, 0, 0, 0, 0, time.UTC)})
	g.Expect(err).NotTo(HaveOccurred())
	ref, err := name.NewTag(host + "/gardenlinux/gardenlinux:1592.5")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(remote.Write(ref, image)).To(Succeed())
	// Nothing listens on port 1 of loopback.
	root := writeTree(t, map[string]string{
		"base/cloudprofiles.yaml": cloudProfiles,
		"profilesync-versions.yaml": `apiVersion: versions.profilesync.io/v1alpha1
kind: VersionSources
sources:
- name: kubernetes
  git:
    url: http://127.0.0.1:1/kubernetes.git
  feeds:
  - {file: base/cloudprofiles.yaml, cloudProfile: aws}
- name: gardenlinux
  oci:
    repository: "` + host + `/gardenlinux/gardenlinux"
  feeds:
  - {file: base/cloudprofiles.yaml, cloudProfile: aws, machineImage: gardenlinux}
`,
	})

	outcome, err := Plan(context.Background(), options(root, time.Date(2026, 11, 28, 0, 0, 0, 0, time.UTC)))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(outcome.Failed()).To(BeTrue())
	g.Expect(outcome.Sources).To(HaveLen(2))
	g.Expect(outcome.Sources[0].Name).To(Equal("kubernetes"))
	g.Expect(outcome.Sources[0].Err).To(MatchError(HavePrefix("source kubernetes: ")))
	g.Expect(outcome.Sources[0].Versions).To(BeEmpty())
	g.Expect(outcome.Sources[1]).To(Equal(SourceOutcome{Name: "gardenlinux", Versions: []string{"1592.5"}}))
	g.Expect(outcome.Result.Proposals).To(HaveLen(1), "the failed source contributes nothing")
	g.Expect(outcome.Message()).To(HavePrefix("profilesync propose: 1 change of versions\n\n- gardenlinux 1592.5 (tagged 2026-11-20)"))

	before, err := os.ReadFile(filepath.Join(root, "base", "cloudprofiles.yaml"))
	g.Expect(err).NotTo(HaveOccurred())
	edited, err := WriteEdits(outcome.Reader, outcome.Result.Edits())
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(edited).To(HaveLen(1))
	g.Expect(edited[0].Path).To(Equal("base/cloudprofiles.yaml"))
	after, err := os.ReadFile(filepath.Join(root, "base", "cloudprofiles.yaml"))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(string(after)).To(Equal(string(edited[0].Content)), "the file on disk is the content returned")
	g.Expect(string(after)).NotTo(Equal(string(before)))
	g.Expect(string(after)).To(ContainSubstring("    # The image of the week.\n    - version: 1592.4.0\n"), "comments are kept")
	g.Expect(string(after)).To(ContainSubstring("    - version: 1.34.2\n      lifecycle:\n      - classification: supported\n  machineImages:"),
		"the list the failed source feeds is as it was")
}
