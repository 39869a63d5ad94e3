package cli

import (
	"fmt"
	"os"
	"testing"
)

// TestMain points the manager's reading of its container's memory limit at
// an empty directory (no limit), so that no test depends on the limit of the
// machine it runs on; the tests of the limit write the cgroup files
// themselves (cgroupV2Root).
func TestMain(m *testing.M) {
	noCgroup, err := os.MkdirTemp("", "no-cgroup-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	containerCgroupRoot = noCgroup
	status := m.Run()
	_ = os.Remove(noCgroup)
	os.Exit(status)
}
