package receiver

import (
	"os"
	"path/filepath"
	"testing"

	. "github.com/onsi/gomega"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

func TestReceiverMetricsFollowTheConventionsAndAreDocumented(t *testing.T) {
	g := NewWithT(t)
	registry := prometheus.NewPedanticRegistry()
	g.Expect(registry.Register(NewMetrics())).To(Succeed())
	problems, err := testutil.GatherAndLint(registry)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(problems).To(BeEmpty())

	families, err := registry.Gather()
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(families).To(HaveLen(2))
	doc, err := os.ReadFile(filepath.Join("..", "..", "docs", "metrics.md"))
	g.Expect(err).NotTo(HaveOccurred())
	for _, f := range families {
		g.Expect(string(doc)).To(ContainSubstring("`"+f.GetName()+"`"), "docs/metrics.md describes %s", f.GetName())
	}
	for _, result := range []string{resultTriggered, resultDeferred, resultCoalesced, resultRefused, resultRejected, resultFailed} {
		g.Expect(string(doc)).To(ContainSubstring("`"+result+"`"), "docs/metrics.md describes the result %s", result)
	}
}
