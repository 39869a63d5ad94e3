package bench

import (
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/profilesync/profilesync/test/procstat"
)

// controllerProcess is a controller binary running against the control
// plane.
type controllerProcess struct {
	name string
	cmd  *exec.Cmd
	log  string
}

// startProcess starts a controller with the kubeconfig, its health probes on
// a free port, metrics off and leader election off, and waits until it is
// ready.
func (s *sideBySide) startProcess(name, path string, env []string, args ...string) {
	b := s.b
	health := s.freeAddress()
	args = append(args, "--health-addr="+health, "--log-level=error")
	if !slices.ContainsFunc(args, func(a string) bool { return strings.HasPrefix(a, "--metrics-addr=") }) {
		args = append(args, "--metrics-addr=0")
	}
	logPath := filepath.Join(b.TempDir(), name+".log")
	logFile, err := os.Create(logPath)
	if err != nil {
		b.Fatal(err)
	}
	defer logFile.Close()
	cmd := exec.Command(path, args...)
	cmd.Env = append(append(os.Environ(), "KUBECONFIG="+s.kubeconfig), env...)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	if err := cmd.Start(); err != nil {
		b.Fatalf("start %s: %v", name, err)
	}
	p := &controllerProcess{name: name, cmd: cmd, log: logPath}
	s.processes = append(s.processes, p)
	deadline := time.Now().Add(time.Minute)
	for {
		resp, err := http.Get("http://" + health + "/readyz")
		if err == nil {
			_ = resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return
			}
		}
		if time.Now().After(deadline) {
			log, _ := os.ReadFile(logPath)
			b.Fatalf("%s not ready after a minute:\n%s", name, log)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func (p *controllerProcess) stop(b *testing.B) {
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	// A controller stopped by a signal exits with an error; only its
	// stopping matters here.
	done := make(chan struct{})
	go func() {
		_ = p.cmd.Wait()
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		_ = p.cmd.Process.Kill()
		<-done
		b.Logf("%s did not stop within 30 s of SIGTERM; killed", p.name)
	}
}

// resources is a sample of the measured processes' CPU time (cumulative)
// and peak RSS since the last sample.
type resources struct {
	controllerCPU, controllerPeakMiB float64
	apiServerCPU, apiServerPeakMiB   float64
}

// sample reads the processes' CPU time and peak RSS, then resets the peaks
// so that the next sample's peak is that of the time between the two.
func (s *sideBySide) sample() resources {
	var r resources
	for _, p := range s.processes {
		cpu, peak := processUsage(s.b, p.cmd.Process.Pid)
		r.controllerCPU += cpu
		r.controllerPeakMiB += peak
	}
	r.apiServerCPU, r.apiServerPeakMiB = processUsage(s.b, s.apiServer)
	return r
}

// processUsage is a process's CPU seconds (user and system, its own and
// that of its children it has waited for: ProfileSync's build children,
// each waited for when its build ends) and its peak RSS since the last
// call, which resets it. A child still running is counted once it ends,
// so a sample taken when the work is done holds every build.
func processUsage(b *testing.B, pid int) (cpuSeconds, peakMiB float64) {
	cpuSeconds, err := procstat.CPUSeconds(pid, true)
	if err != nil {
		b.Fatal(err)
	}
	process := strconv.Itoa(pid)
	peakMiB = peakRSSMiB(b, process)
	resetPeakRSS(b, process)
	return cpuSeconds, peakMiB
}
