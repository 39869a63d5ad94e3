package main

import (
	"bufio"
	"bytes"
	"crypto/tls"
	"errors"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	. "github.com/onsi/gomega"
)

// TestRunLocalStopsCleanlyOnSignal runs the run-local binary headless as a
// terminal would, scrapes its metrics endpoint as it prints, and sends the
// signal of a closed terminal (SIGHUP) or of a service manager (SIGTERM): it
// must exit 0, leave no etcd or kube-apiserver running and no temporary
// directory behind.
func TestRunLocalStopsCleanlyOnSignal(t *testing.T) {
	if os.Getenv("KUBEBUILDER_ASSETS") == "" {
		t.Fatal("KUBEBUILDER_ASSETS is not set: run the tests with 'make test'")
	}
	binary := filepath.Join(t.TempDir(), "runlocal")
	build := exec.Command("go", "build", "-o", binary, ".")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	const running, startingUp = "Running until Ctrl-C.", "Landscape dev: API server"
	for _, tc := range []struct {
		signal     syscall.Signal
		landscapes string
		// sentAfter is the start of the line after which the signal is sent.
		sentAfter string
	}{
		{syscall.SIGHUP, "dev,prod", running},
		{syscall.SIGTERM, "dev", running},
		// Ctrl-C while it still starts up is a clean stop too.
		{syscall.SIGINT, "dev,prod", startingUp},
	} {
		t.Run(tc.signal.String()+" after "+tc.sentAfter, func(t *testing.T) {
			g := NewWithT(t)
			tmpDir, workDir := t.TempDir(), filepath.Join(t.TempDir(), "work")
			cmd := exec.Command(binary,
				"--repo", filepath.Join("..", "..", "examples", "profiles-repo"),
				"--project", filepath.Join("..", ".."),
				"--work-dir", workDir, "--landscapes", tc.landscapes, "--soak", "1s")
			// envtest makes its control planes' directories in TMPDIR.
			cmd.Env = append(os.Environ(), "TMPDIR="+tmpDir)
			// Through an io.Pipe, so that Wait, in its own goroutine, waits
			// for all output and the reader sees it end.
			stdout, stdoutWriter := io.Pipe()
			cmd.Stdout = stdoutWriter
			var stderr bytes.Buffer
			cmd.Stderr = &stderr
			g.Expect(cmd.Start()).To(Succeed())
			var children map[int]string
			var waited error
			exited := make(chan struct{})
			go func() {
				waited = cmd.Wait()
				stdoutWriter.Close()
				close(exited)
			}()
			t.Cleanup(func() {
				// A test that failed before the signal still stops run-local
				// as a user would, then kills what is left: run-local, and
				// its control planes, which a killed parent would orphan.
				select {
				case <-exited:
				default:
					_ = cmd.Process.Signal(syscall.SIGTERM)
					select {
					case <-exited:
					case <-time.After(time.Minute):
						_ = cmd.Process.Kill()
						<-exited
					}
				}
				for pid := range children {
					_ = syscall.Kill(pid, syscall.SIGKILL)
				}
			})

			var mu sync.Mutex
			var printed strings.Builder
			reached := make(chan struct{})
			var reachedOnce sync.Once
			copied := make(chan struct{})
			go func() {
				defer close(copied)
				scanner := bufio.NewScanner(stdout)
				for scanner.Scan() {
					mu.Lock()
					printed.WriteString(scanner.Text() + "\n")
					mu.Unlock()
					if strings.HasPrefix(scanner.Text(), tc.sentAfter) {
						reachedOnce.Do(func() { close(reached) })
					}
				}
			}()
			output := func() string { mu.Lock(); defer mu.Unlock(); return printed.String() }
			select {
			case <-reached:
			case <-exited:
				t.Fatalf("run-local ended before %q: %v\n%s\n%s", tc.sentAfter, waited, output(), stderr.String())
			case <-time.After(5 * time.Minute):
				t.Fatalf("no %q after 5 minutes:\n%s\n%s", tc.sentAfter, output(), stderr.String())
			}

			children = controlPlaneProcesses(t, cmd.Process.Pid)
			if tc.sentAfter == running {
				g.Expect(children).To(HaveLen(2*len(strings.Split(tc.landscapes, ","))), "an etcd and a kube-apiserver per landscape")
				scrapeAsPrinted(g, output())
			} else {
				g.Expect(children).NotTo(BeEmpty(), "dev's control plane runs")
			}

			g.Expect(cmd.Process.Signal(tc.signal)).To(Succeed())
			select {
			case <-exited:
			case <-time.After(2 * time.Minute):
				t.Fatalf("run-local still runs 2 minutes after %s:\n%s", tc.signal, output())
			}
			<-copied
			g.Expect(waited).To(Succeed(), "exit status 0 on %s:\n%s\n%s", tc.signal, output(), stderr.String())
			g.Expect(output()).To(ContainSubstring("Stopped every control plane and the Git server."))
			for pid, name := range children {
				g.Expect(syscall.Kill(pid, 0)).To(MatchError(syscall.ESRCH), "%s (pid %d) still runs", name, pid)
			}
			left, err := os.ReadDir(tmpDir)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(left).To(BeEmpty(), "temporary directories left behind")
			g.Expect(workDir).NotTo(BeADirectory())
		})
	}
}

// controlPlaneProcesses are the etcd and kube-apiserver processes whose
// parent is pid, by process id.
func controlPlaneProcesses(t *testing.T, pid int) map[int]string {
	t.Helper()
	entries, err := os.ReadDir("/proc")
	if err != nil {
		t.Fatal(err)
	}
	found := map[int]string{}
	for _, e := range entries {
		child, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		stat, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue // gone meanwhile
		}
		// pid (comm) state ppid ...: comm may hold spaces, so read after ")".
		fields := strings.Fields(string(stat[bytes.LastIndexByte(stat, ')')+1:]))
		if len(fields) < 2 || fields[1] != strconv.Itoa(pid) {
			continue
		}
		comm, _, _ := strings.Cut(string(stat[bytes.IndexByte(stat, '(')+1:]), ")")
		if comm == "etcd" || comm == "kube-apiserver" {
			found[child] = comm
		}
	}
	return found
}

// scrape GETs url with token and returns the body, or the status when it is
// not 200 OK.
func scrape(url, token string) (string, error) {
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		return "", err
	}
	req.Header.Set("Authorization", "Bearer "+token)
	httpClient := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{
		// The endpoint's certificate is self-signed, as in the cluster without --metrics-cert-dir.
		TLSClientConfig: &tls.Config{InsecureSkipVerify: true}, //nolint:gosec // a local self-signed endpoint
	}}
	resp, err := httpClient.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return resp.Status, nil
	}
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return "", errors.Join(err, errors.New("read the metrics"))
	}
	return string(body), nil
}

// scrapeAsPrinted scrapes dev's metrics endpoint as the curl line printed
// says, and checks that a request without a valid token gets none.
func scrapeAsPrinted(g Gomega, printed string) {
	// The metrics endpoint answers the curl line it printed.
	curl := regexp.MustCompile(`(?m)^  curl -sk -H "Authorization: Bearer \$\(cat (\S+)\)" (https://\S+)$`).FindStringSubmatch(printed)
	g.Expect(curl).NotTo(BeNil(), printed)
	token, err := os.ReadFile(curl[1])
	g.Expect(err).NotTo(HaveOccurred())
	metrics, err := scrape(curl[2], string(token))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(metrics).To(MatchRegexp(`(?m)^profilesync_\w+\{.*landscape="dev"`), "the controllers' own metrics")
	// Without a token the API server accepts, no metrics (controller-
	// runtime's filter answers a failed TokenReview with 500).
	g.Expect(scrape(curl[2], "not-a-token")).To(MatchRegexp(`^(401|403|500) `), "the endpoint is secure")
}
