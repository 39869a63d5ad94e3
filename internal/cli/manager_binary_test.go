package cli

import (
	"testing"

	. "github.com/onsi/gomega"
)

// TestTheManagerProcessSetsItsShareAsItsGoMemoryLimit runs the binary as the
// Deployment does: flags that fit make the manager set the Go runtime's soft
// memory limit to its share of the budget (what the builds and the headroom
// leave), and the collector's GOGC to memorybudget.ManagerGCPercent under
// it unless the environment sets GOGC, before it looks for a cluster (none
// here: it stops there); flags that do not fit stop it with the
// arithmetic, exit status 2.
func TestTheManagerProcessSetsItsShareAsItsGoMemoryLimit(t *testing.T) {
	g := NewWithT(t)
	bin := buildBinary(t)

	run := runBinary(t, bin, t.TempDir(), "--memory-budget=2Gi", "--max-concurrent-builds=2", "--build-memory-limit=640Mi")
	g.Expect(run.status).To(Equal(1), "no cluster to run against: %s", run.stderr)
	// 2Gi − 2 × 640Mi − 204Mi of headroom.
	g.Expect(run.stderr).To(ContainSubstring(`"msg":"memory budget","budget":2147483648,"source":"--memory-budget","builds":2,"buildMemory":671088640,"decodedCache":134217728,"goMemoryLimit":591396864,"gcPercent":200`))

	run = runBinaryWithEnv(t, bin, t.TempDir(), []string{"GOGC=150"}, "--memory-budget=2Gi", "--max-concurrent-builds=2", "--build-memory-limit=640Mi")
	g.Expect(run.status).To(Equal(1), "no cluster to run against: %s", run.stderr)
	g.Expect(run.stderr).To(ContainSubstring(`"goMemoryLimit":591396864,"gcPercent":150`), "the operator's GOGC is kept")

	run = runBinary(t, bin, t.TempDir(), "manager", "--memory-budget=512Mi", "--max-concurrent-builds=4", "--build-memory-limit=1Gi")
	g.Expect(run.status).To(Equal(exitUsage))
	g.Expect(run.stderr).To(HavePrefix("manager: the flags do not fit the memory budget of 512Mi (--memory-budget): "))
	g.Expect(run.stderr).To(ContainSubstring("raise the memory limit (the container's, or --memory-budget) to at least 4977Mi"))
	g.Expect(run.stderr).NotTo(ContainSubstring("memory budget\""), "nothing started")
}
