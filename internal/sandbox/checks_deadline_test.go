package sandbox

import (
	"testing"
	"time"

	. "github.com/onsi/gomega"
)

// TestTheChecksAfterABuildStopATenthOfTheTimeLeftBeforeTheDeadline: the
// child keeps the last tenth of its time to answer, so a build that
// finished is not lost to the checks that follow it.
func TestTheChecksAfterABuildStopATenthOfTheTimeLeftBeforeTheDeadline(t *testing.T) {
	g := NewWithT(t)
	deadline := time.Now().Add(10 * time.Second)
	checks := checksDeadline(deadline)
	g.Expect(checks).To(BeTemporally("<", deadline))
	g.Expect(deadline.Sub(checks)).To(BeNumerically("~", time.Second, 100*time.Millisecond))
}
