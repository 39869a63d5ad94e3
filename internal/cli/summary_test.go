package cli

import (
	"fmt"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
)

// TestEvaluateSummarizesAMistakeRepeatedTenThousandTimes: the typing check
// of -f inputs (an unquoted version, a number to YAML) reported every one of
// ten thousand copies of one mistake, line by line; it is summarised like
// every other list of problems.
func TestEvaluateSummarizesAMistakeRepeatedTenThousandTimes(t *testing.T) {
	g := NewWithT(t)
	var profile strings.Builder
	profile.WriteString("apiVersion: core.profilesync.io/v1alpha1\nkind: CloudProfile\nmetadata:\n  name: aws\nspec:\n  type: aws\n  kubernetes:\n    versions:\n")
	for i := range 10000 {
		fmt.Fprintf(&profile, "    - version: 1.%d\n", i)
	}

	status, stdout, stderr := run(t, "evaluate", profile.String(), "-f", "-")

	g.Expect(status).To(Equal(exitInvalidInput))
	g.Expect(stdout).To(BeEmpty())
	lines := strings.Split(strings.TrimSuffix(stderr, "\n"), "\n")
	g.Expect(lines).To(HaveLen(11), "ten of the mistake and one line for the rest")
	g.Expect(lines[0]).To(HavePrefix("<stdin>: CloudProfile/aws: spec.kubernetes.versions[0].version: Invalid value: 1.0 as written"))
	g.Expect(lines[10]).To(Equal("<stdin>: CloudProfile/aws: spec.kubernetes.versions[*].version: ... and 9,990 more like it"))
}
