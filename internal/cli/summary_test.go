package cli

import (
	"fmt"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1alpha1 "github.com/profilesync/profilesync/api/v1alpha1"
	"github.com/profilesync/profilesync/internal/render/profile"
	"github.com/profilesync/profilesync/internal/rollout"
	"github.com/profilesync/profilesync/test/builders"
)

// TestEvaluateSummarizesAMistakeRepeatedTenThousandTimes: the typing check
// of -f inputs (an unquoted version, a number to YAML) reported every one of
// ten thousand copies of one mistake, line by line; it is summarised like
// every other list of problems.
func TestEvaluateSummarizesAMistakeRepeatedTenThousandTimes(t *testing.T) {
	g := NewWithT(t)
	var input strings.Builder
	input.WriteString("apiVersion: core.profilesync.io/v1alpha1\nkind: CloudProfile\nmetadata:\n  name: aws\nspec:\n  type: aws\n  kubernetes:\n    versions:\n")
	for i := range 10000 {
		fmt.Fprintf(&input, "    - version: 1.%d\n", i)
	}

	status, stdout, stderr := run(t, "evaluate", input.String(), "-f", "-")

	g.Expect(status).To(Equal(exitInvalidInput))
	g.Expect(stdout).To(BeEmpty())
	lines := strings.Split(strings.TrimSuffix(stderr, "\n"), "\n")
	g.Expect(lines).To(HaveLen(11), "ten of the mistake and one line for the rest")
	g.Expect(lines[0]).To(HavePrefix("<stdin>: CloudProfile/aws: spec.kubernetes.versions[0].version: Invalid value: 1.0 as written"))
	g.Expect(lines[10]).To(Equal("<stdin>: CloudProfile/aws: spec.kubernetes.versions[*].version: ... and 9,990 more like it"))
}

// TestDiffPrintsARolloutErrorRepeatedManyTimesSummarised: the rollout
// file's findings of severity error are printed on stderr as well as in the
// report, summarised there too.
func TestDiffPrintsARolloutErrorRepeatedManyTimesSummarised(t *testing.T) {
	g := NewWithT(t)
	file, err := rollout.Decode(rollout.FileName, []byte(rolloutHeader+
		"- {name: dev, path: overlays/dev}\n- {name: prod, path: overlays/prod, after: [dev], lag: {supported: {duration: 1d, severity: error}}}\n"))
	g.Expect(err).NotTo(HaveOccurred())
	supportedFrom := func(date string) profile.Object {
		spec := builders.Profile()
		spec.Kubernetes.Versions = nil
		for i := range 12 {
			spec.Kubernetes.Versions = append(spec.Kubernetes.Versions, builders.Staged(fmt.Sprintf("1.30.%d", i),
				builders.Stage(v1alpha1.ClassificationPreview, ""), builders.Stage(v1alpha1.ClassificationSupported, date)))
		}
		return profile.Object{CloudProfile: &v1alpha1.CloudProfile{ObjectMeta: metav1.ObjectMeta{Name: "aws"}, Spec: *spec}}
	}
	landscapes := []landscape{{name: "dev", path: "overlays/dev"}, {name: "prod", path: "overlays/prod"}}
	heads := sideSet{{supportedFrom("2026-03-01T00:00:00Z")}, {supportedFrom("2026-02-01T00:00:00Z")}}

	var stderr strings.Builder
	findings, ok := checkRollout(file, nil, diffTree{dir: "."}, landscapes, heads, builders.Time("2026-01-01T00:00:00Z"), &stderr)

	g.Expect(ok).To(BeFalse())
	g.Expect(findings).To(HaveLen(12), "the report keeps every finding")
	lines := strings.Split(strings.TrimSuffix(stderr.String(), "\n"), "\n")
	g.Expect(lines).To(HaveLen(11))
	g.Expect(lines[0]).To(HavePrefix("profilesync-rollout.yaml: prod: CloudProfile/aws: kubernetes 1.30.0 is supported from 2026-02-01T00:00:00Z"))
	g.Expect(lines[10]).To(Equal("profilesync-rollout.yaml: ... and 2 more like it"))
}
