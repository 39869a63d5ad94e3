package delivery

import (
	"flag"
	"path/filepath"
	"testing"
	"time"

	. "github.com/onsi/gomega"

	"github.com/profilesync/profilesync/internal/propose"
	"github.com/profilesync/profilesync/internal/repofile"
	"github.com/profilesync/profilesync/test/builders"
)

var update = flag.Bool("update", false, "rewrite the golden files of testdata")

// messageProfiles is a profile with two supported minors, one minor expired
// long ago and an image, under a policy of two supported minors, 42 days of
// preview at most and 30 days' notice.
const messageProfiles = `apiVersion: core.profilesync.io/v1alpha1
kind: CloudProfile
metadata:
  name: aws
spec:
  type: aws
  kubernetes:
    versions:
    - version: 1.32.9
      lifecycle:
      - classification: supported
      - classification: deprecated
        startTime: "2026-01-01T00:00:00Z"
      - classification: expired
        startTime: "2026-03-01T00:00:00Z"
    - version: 1.33.5
      lifecycle:
      - classification: supported
    - version: 1.34.2
      lifecycle:
      - classification: supported
  machineImages:
  - name: gardenlinux
    updateStrategy: minor
    versions:
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

const messagePolicy = `apiVersion: policy.profilesync.io/v1alpha1
kind: VersioningPolicy
rules:
  supported: {severity: error, minors: 2}
  preview: {severity: error, maxMinors: 1, maxDays: 42}
  deprecation: {severity: error, olderPatches: true, requireExpiry: true}
  notice: {severity: error, days: 30}
`

const messageVersionsFile = `apiVersion: versions.profilesync.io/v1alpha1
kind: VersionSources
schedule:
  previewDuration: 14d
  expiryAfterDeprecation: 120d
  retirementAge: 90d
sources:
- name: kubernetes
  git:
    url: https://github.com/kubernetes/kubernetes
  feeds:
  - {file: base/cloudprofiles.yaml, cloudProfile: aws}
- name: gardenlinux
  oci:
    repository: ghcr.io/gardenlinux/gardenlinux
  feeds:
  - {file: base/cloudprofiles.yaml, cloudProfile: aws, machineImage: gardenlinux}
`

// TestTheCommitMessageListsEveryChangeAndItsReason: the message of a
// proposal with a new patch, a new minor that pushes the oldest out of the
// policy's window, a retirement and a new image, as a reviewer reads it
// (testdata/message.golden.txt).
func TestTheCommitMessageListsEveryChangeAndItsReason(t *testing.T) {
	g := NewWithT(t)
	root := writeTree(t, map[string]string{
		"base/cloudprofiles.yaml":   messageProfiles,
		"profilesync-policy.yaml":   messagePolicy,
		"profilesync-versions.yaml": messageVersionsFile,
	})
	reader, err := repofile.Open(root, repofile.Limits{MaxFileSize: 1 << 20, MaxTotalSize: 8 << 20})
	g.Expect(err).NotTo(HaveOccurred())
	file, err := propose.Read(reader)
	g.Expect(err).NotTo(HaveOccurred())
	objects, err := Profiles(reader, file)
	g.Expect(err).NotTo(HaveOccurred())
	tagged := func(version, at string) propose.Release {
		when, err := time.Parse(time.RFC3339, at)
		g.Expect(err).NotTo(HaveOccurred())
		return propose.Release{Version: version, Released: when}
	}
	discovered := []propose.Discovered{
		{Source: "kubernetes", Target: file.Sources[0].Feeds[0], Releases: []propose.Release{
			tagged("1.34.3", "2026-11-20T10:00:00Z"), tagged("1.35.0", "2026-11-21T10:00:00Z"),
		}},
		{Source: "gardenlinux", Target: file.Sources[1].Feeds[0], Releases: []propose.Release{tagged("1592.5", "2026-11-22T08:00:00Z")}},
	}

	result, err := proposeByPolicy(root, file, objects, nil, discovered, time.Date(2026, 11, 28, 0, 0, 0, 0, time.UTC), 1<<20)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(result.Skipped).To(BeEmpty())
	g.Expect(result.Proposals).To(HaveLen(4))

	builders.AssertGolden(t, filepath.Join("testdata", "message.golden.txt"), []byte(CommitMessage(result.Proposals)+"\n"), *update)
}
