package propose

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/api/equality"

	v1alpha1 "github.com/profilesync/profilesync/api/v1alpha1"
	"github.com/profilesync/profilesync/internal/render/profile"
	"github.com/profilesync/profilesync/test/builders"
)

var update = flag.Bool("update", false, "rewrite the golden files of testdata/edit")

func decodeFile(t *testing.T, file string, content []byte) []profile.Object {
	t.Helper()
	docs, err := profile.SplitDocuments(file, bytes.NewReader(content))
	if err != nil {
		t.Fatal(err)
	}
	objects, problems := profile.DecodeDocuments(docs)
	if len(problems) > 0 {
		t.Fatalf("%s does not decode: %v", file, problems)
	}
	return objects
}

// TestEditsKeepTheFileAsWritten runs the engine on a commented,
// hand-formatted profile and writes its edits into the file: the golden
// output differs from the input only in the versions the edits name, and
// it decodes to exactly the profiles the engine computed.
func TestEditsKeepTheFileAsWritten(t *testing.T) {
	g := NewWithT(t)
	const file = "base/cloudprofiles.yaml"
	input, err := os.ReadFile(filepath.Join("testdata", "edit", "cloudprofiles.yaml"))
	g.Expect(err).NotTo(HaveOccurred())
	objects := decodeFile(t, file, input)
	gardenlinux := Feed{File: file, CloudProfile: "aws", MachineImage: "gardenlinux"}
	result, err := Propose(Input{
		Profiles: objects,
		Policy:   strictPolicy(),
		Schedule: schedule,
		Now:      at(now),
		Discovered: []Discovered{
			{Source: "kubernetes", Target: Feed{File: file, CloudProfile: "aws"}, Releases: []Release{
				release("1.33.7", "2026-11-20T00:00:00Z"), release("1.34.0", "2026-11-25T00:00:00Z"),
			}},
			{Source: "gardenlinux", Target: gardenlinux, Releases: []Release{release("1592.5", "2026-11-26T00:00:00Z")}},
		},
	})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(result.Skipped).To(BeEmpty())
	var summaries []string
	for _, p := range result.Proposals {
		summaries = append(summaries, p.Summary)
	}
	g.Expect(summaries).To(Equal([]string{
		"kubernetes 1.31.8 retired: expired on 2026-06-01, more than 90d ago, and no NamespacedCloudProfile of the repository lists it",
		"kubernetes 1.33.7 (tagged 2026-11-20) supported from 2026-12-28; 1.33.5 deprecated from 2026-12-28 with 30 days' notice, expires 2027-04-27",
		"kubernetes 1.34.0 (tagged 2026-11-25) in preview, supported from 2026-12-12; minor 1.32 leaves the 2 supported minors: 1.32.9 deprecated from 2026-12-28 with 30 days' notice, expires 2027-04-27",
		"gardenlinux 1592.5 (tagged 2026-11-26) supported from 2026-12-28; 1592.4.0 deprecated from 2026-12-28 with 30 days' notice, expires 2027-04-27",
	}))

	edited, err := EditFile(file, input, result.Edits())
	g.Expect(err).NotTo(HaveOccurred())
	builders.AssertGolden(t, filepath.Join("testdata", "edit", "cloudprofiles.golden.yaml"), edited, *update)

	// The file as edited is what the engine proposed, object by object.
	g.Expect(equality.Semantic.DeepEqual(decodeFile(t, file, edited), result.Profiles)).To(BeTrue(),
		cmp.Diff(decodeFile(t, file, edited), result.Profiles))
}

func TestAFileWithoutEditsIsWrittenBackByteForByte(t *testing.T) {
	g := NewWithT(t)
	for _, name := range []string{"cloudprofiles.yaml", "cloudprofiles.golden.yaml"} {
		input, err := os.ReadFile(filepath.Join("testdata", "edit", name))
		g.Expect(err).NotTo(HaveOccurred())
		out, err := EditFile("base/cloudprofiles.yaml", input, nil)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(string(out)).To(Equal(string(input)), name)
	}
}

func TestEditsThatCannotBeMadeNameTheirTarget(t *testing.T) {
	input, err := os.ReadFile(filepath.Join("testdata", "edit", "cloudprofiles.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	const file = "base/cloudprofiles.yaml"
	tests := []struct {
		name string
		edit Edit
		want string
	}{
		{"a CloudProfile the file does not hold", Edit{Target: Feed{File: file, CloudProfile: "gcp"}, Action: RemoveVersion, Version: "1.31.8"},
			"base/cloudprofiles.yaml: no CloudProfile/gcp in the file"},
		{"a machine image the CloudProfile does not have", Edit{Target: Feed{File: file, CloudProfile: "aws", MachineImage: "flatcar"}, Action: RemoveVersion, Version: "1.0.0"},
			"base/cloudprofiles.yaml: CloudProfile/aws machine image flatcar: no list of versions at spec.machineImages[name=flatcar].versions"},
		{"a version that is not listed", Edit{Target: Feed{File: file, CloudProfile: "aws"}, Action: SetLifecycle, Version: "1.30.1",
			Lifecycle: []v1alpha1.LifecycleStage{stg(supported, "")}},
			"base/cloudprofiles.yaml: CloudProfile/aws kubernetes: 1.30.1: not listed"},
		{"a version listed already", Edit{Target: Feed{File: file, CloudProfile: "aws"}, Action: AddVersion, Version: "1.33.5"},
			"base/cloudprofiles.yaml: CloudProfile/aws kubernetes: 1.33.5: listed already"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			_, err := EditFile(file, input, []Edit{tt.edit})
			g.Expect(err).To(MatchError(tt.want))
		})
	}
	if !strings.Contains(string(input), "1.33.5") {
		t.Fatal("the fixture changed")
	}
}

func TestAFileWhoseListsAreIndentedUnderTheirKeyKeepsThatStyle(t *testing.T) {
	g := NewWithT(t)
	const in = `apiVersion: core.profilesync.io/v1alpha1
kind: CloudProfile
metadata:
  name: aws
spec:
  kubernetes:
    versions:
      # the only minor
      - version: 1.33.5
        classification: supported
        expirationDate: "2027-06-01T00:00:00Z"
`
	out, err := EditFile("f.yaml", []byte(in), []Edit{
		{Target: Feed{File: "f.yaml", CloudProfile: "aws"}, Action: AddVersion, Version: "1.33.6",
			Lifecycle: []v1alpha1.LifecycleStage{stg(preview, ""), stg(supported, "2026-12-28T00:00:00Z")}},
		{Target: Feed{File: "f.yaml", CloudProfile: "aws"}, Action: SetLifecycle, Version: "1.33.5",
			Lifecycle: []v1alpha1.LifecycleStage{stg(supported, ""), stg(deprecated, "2026-12-28T00:00:00Z"), stg(expired, "2027-04-27T00:00:00Z")}},
	})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(string(out)).To(Equal(`apiVersion: core.profilesync.io/v1alpha1
kind: CloudProfile
metadata:
  name: aws
spec:
  kubernetes:
    versions:
      # the only minor
      - version: 1.33.5
        lifecycle:
          - classification: supported
          - classification: deprecated
            startTime: "2026-12-28T00:00:00Z"
          - classification: expired
            startTime: "2027-04-27T00:00:00Z"
      - version: 1.33.6
        lifecycle:
          - classification: preview
          - classification: supported
            startTime: "2026-12-28T00:00:00Z"
`))
}
