package procstat

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"
)

func TestCPUSecondsGrowsWithTheProcesssWork(t *testing.T) {
	before, err := CPUSeconds(os.Getpid(), false)
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(300 * time.Millisecond)
	for n := 0; time.Now().Before(deadline); n++ {
		_ = n * n
	}
	after, err := CPUSeconds(os.Getpid(), true)
	if err != nil {
		t.Fatal(err)
	}
	if after <= before {
		t.Errorf("CPU seconds did not grow over 300 ms of work: %v then %v", before, after)
	}
}

func TestChildProcessFindsTheOnlyChildOfAName(t *testing.T) {
	sleep, err := exec.LookPath("sleep")
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(sleep, "5")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	pid, err := ChildProcess(filepath.Base(sleep))
	if err != nil {
		t.Fatal(err)
	}
	if pid != cmd.Process.Pid {
		t.Errorf("got PID %d, want %d", pid, cmd.Process.Pid)
	}
	if _, err := ChildProcess("no-such-command"); err == nil {
		t.Error("a name no child has: no error")
	}
}
