package cli

import (
	"bytes"
	"context"
	"errors"
	"io"
	"math"
	"net"
	"os"
	"path/filepath"
	"runtime/debug"
	"strconv"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"github.com/spf13/pflag"
	appsv1 "k8s.io/api/apps/v1"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/util/cert"
	"sigs.k8s.io/controller-runtime/pkg/webhook"

	"github.com/profilesync/profilesync/internal/memorybudget"
	"github.com/profilesync/profilesync/internal/sandbox"
)

// parseManagerFlags parses args as the manager does, reading the
// container's memory limit under cgroupRoot.
func parseManagerFlags(t *testing.T, cgroupRoot string, args ...string) *managerFlags {
	t.Helper()
	var flags managerFlags
	fs := pflag.NewFlagSet("manager", pflag.ContinueOnError)
	flags.bind(fs)
	if err := fs.Parse(args); err != nil {
		t.Fatalf("parse %q: %v", args, err)
	}
	flags.cgroupRoot = cgroupRoot
	return &flags
}

// cgroupV2Root writes the cgroup files of a container whose memory limit is
// limit (cgroup v2, its own cgroup namespace) and returns their root.
func cgroupV2Root(t *testing.T, limit string) string {
	t.Helper()
	root := t.TempDir()
	for name, content := range map[string]string{"proc/self/cgroup": "0::/\n", "sys/fs/cgroup/memory.max": limit + "\n"} {
		if err := os.MkdirAll(filepath.Join(root, filepath.Dir(name)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(root, name), []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return root
}

// TestManagerRefusesFlagsThatDoNotFitItsMemoryBudget: the real command line
// refuses, before it looks for a cluster, builds whose memory together with
// the manager's own does not fit the budget, and says which flag to change.
func TestManagerRefusesFlagsThatDoNotFitItsMemoryBudget(t *testing.T) {
	g := NewWithT(t)
	var out, errOut bytes.Buffer
	status := Execute([]string{"manager", "--memory-budget=512Mi", "--max-concurrent-builds=4", "--build-memory-limit=1Gi"}, strings.NewReader(""), &out, &errOut)
	g.Expect(status).To(Equal(exitUsage))
	g.Expect(out.String()).To(BeEmpty())
	g.Expect(errOut.String()).To(Equal("manager: the flags do not fit the memory budget of 512Mi (--memory-budget): " +
		"256Mi for the manager + 128Mi of decoded revisions (--decoded-cache-size) + 4 builds (--max-concurrent-builds) × 1Gi each (--build-memory-limit) + 51Mi headroom (10%) = 4531Mi: " +
		"raise the memory limit (the container's, or --memory-budget) to at least 4977Mi\n" +
		"Run 'profilesync manager --help' for usage.\n"))

	flags, status, _, stderr := runWithManager(t, nil, "--memory-budget=2Gi", "--max-concurrent-builds=4", "--build-memory-limit=512Mi")
	g.Expect(status).To(Equal(exitUsage))
	g.Expect(flags).To(BeNil(), "the manager did not start")
	g.Expect(stderr).To(ContainSubstring("lower --max-concurrent-builds to 2, or lower --build-memory-limit to 365Mi"))

	flags, status, _, stderr = runWithManager(t, nil, "--memory-budget=2Gi", "--max-concurrent-builds=2", "--build-memory-limit=512Mi")
	g.Expect(status).To(Equal(exitOK), stderr)
	g.Expect(flags.memoryBudget).To(Equal(int64(2 << 30)))
	g.Expect(flags.decodedCacheSize).To(Equal(memorybudget.DefaultCache))
}

// TestManagerTakesItsBudgetFromTheContainer: without --memory-budget the
// budget is the container's cgroup limit; --memory-budget overrides it, and
// no limit at all checks nothing.
func TestManagerTakesItsBudgetFromTheContainer(t *testing.T) {
	tests := []struct {
		name, limit string
		args        []string
		wantErr     string
		wantShare   int64
	}{{
		name:    "the default builds (4 × 1Gi) do not fit a 512Mi container",
		limit:   "536870912",
		wantErr: "the flags do not fit the memory budget of 512Mi (the container's memory limit, ",
	}, {
		name:      "2 builds of 640Mi fit a 2Gi container, and the manager's Go soft limit is what they and the headroom leave",
		limit:     strconv.Itoa(2 << 30),
		args:      []string{"--max-concurrent-builds=2", "--build-memory-limit=640Mi"},
		wantShare: 2<<30 - 2*640<<20 - 204<<20,
	}, {
		name:      "--memory-budget overrides the container's limit",
		limit:     "536870912",
		args:      []string{"--memory-budget=8Gi"},
		wantShare: 8<<30 - 4<<30 - 819<<20,
	}, {
		name:  "a container without a limit checks nothing",
		limit: "max",
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			flags := parseManagerFlags(t, cgroupV2Root(t, tt.limit), tt.args...)
			plan, err := flags.memoryPlan()
			if tt.wantErr != "" {
				g.Expect(err).To(MatchError(ContainSubstring(tt.wantErr)))
				return
			}
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(plan.ManagerShare()).To(Equal(tt.wantShare))
		})
	}

	g := NewWithT(t)
	flags := parseManagerFlags(t, cgroupV2Root(t, "lots"))
	_, err := flags.memoryPlan()
	g.Expect(err).To(MatchError(ContainSubstring("memory.max: not a memory limit")))
	g.Expect(err).To(MatchError(ContainSubstring("(set --memory-budget to give the budget yourself)")))
}

// TestTheShippedDeploymentFitsItsMemoryBudget: config/manager's container
// limit and the manager's arguments there pass the start-up check, as the
// manager in that container would read them, with room to spare.
func TestTheShippedDeploymentFitsItsMemoryBudget(t *testing.T) {
	g := NewWithT(t)
	manifest, err := os.ReadFile(filepath.Join("..", "..", "config", "manager", "manager.yaml"))
	g.Expect(err).NotTo(HaveOccurred())
	var deployment *appsv1.Deployment
	decoder := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(manifest), 4096)
	for {
		var d appsv1.Deployment
		if err := decoder.Decode(&d); errors.Is(err, io.EOF) {
			break
		} else {
			g.Expect(err).NotTo(HaveOccurred())
		}
		if d.Kind == "Deployment" {
			deployment = &d
		}
	}
	g.Expect(deployment).NotTo(BeNil(), "config/manager/manager.yaml has the Deployment")
	g.Expect(deployment.Spec.Template.Spec.Containers).To(HaveLen(1))
	container := deployment.Spec.Template.Spec.Containers[0]
	limit := container.Resources.Limits.Memory()
	g.Expect(limit.IsZero()).To(BeFalse(), "the manager's container has a memory limit")

	flags := parseManagerFlags(t, cgroupV2Root(t, strconv.FormatInt(limit.Value(), 10)), container.Args...)
	g.Expect(flags.memoryBudget).To(BeZero(), "the budget is the container's limit, not a second number to keep in step")
	plan, err := flags.memoryPlan()
	g.Expect(err).NotTo(HaveOccurred())
	t.Logf("budget %s: %d builds × %d + cache %d + baseline %d + headroom %d; Go soft limit %d",
		limit, plan.Builds, plan.BuildMemory, plan.Cache, memorybudget.ManagerBaseline, plan.Headroom(), plan.ManagerShare())
	g.Expect(plan.Builds).To(BeNumerically(">=", 2), "more than one ProfileSync builds at a time")
	g.Expect(plan.BuildMemory).To(BeNumerically(">=", 512<<20), "a build has room for twice the largest landscape we know of (230 MiB)")
	g.Expect(plan.ManagerShare()).To(BeNumerically(">", memorybudget.ManagerBaseline+plan.Cache), "spare room beyond the plan")
	g.Expect(container.Args).To(ContainElement("--"+sandbox.ConcurrencyFlag+"="+strconv.Itoa(plan.Builds)),
		"the builds are set in the Deployment, not left to a default that may change")
}

// TestWebhookBindAddressReachesTheServer: --webhook-bind-address is where
// the admission webhook server listens; by default every interface.
func TestWebhookBindAddressReachesTheServer(t *testing.T) {
	g := NewWithT(t)
	defaults := webhookServerOptions(parseManagerFlags(t, "/"))
	g.Expect(defaults.Host).To(BeEmpty(), "every interface, so the API server reaches it through its Service")
	g.Expect(defaults.Port).To(Equal(9443))

	options := webhookServerOptions(parseManagerFlags(t, "/", "--webhook-bind-address=127.0.0.1", "--webhook-port=9555", "--webhook-cert-dir=/certs"))
	g.Expect(options.Host).To(Equal("127.0.0.1"))
	g.Expect(options.Port).To(Equal(9555))
	g.Expect(options.CertDir).To(Equal("/certs"))
}

// TestTheWebhookServerListensOnlyWhereItIsTold starts the admission webhook
// server with the manager's options: bound to 127.0.0.1 it does not answer
// on another address of the host (127.0.0.2, loopback too), and by default
// it answers on both.
func TestTheWebhookServerListensOnlyWhereItIsTold(t *testing.T) {
	certDir := t.TempDir()
	certificate, key, err := cert.GenerateSelfSignedCertKey("localhost", nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	for name, content := range map[string][]byte{"tls.crt": certificate, "tls.key": key} {
		if err := os.WriteFile(filepath.Join(certDir, name), content, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	for _, tt := range []struct {
		name, bindAddress   string
		otherAddressAnswers bool
	}{
		{"--webhook-bind-address=127.0.0.1", "127.0.0.1", false},
		{"the default, every interface", "", true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			port := freePort(t)
			args := []string{"--webhook-port=" + port, "--webhook-cert-dir=" + certDir}
			if tt.bindAddress != "" {
				args = append(args, "--webhook-bind-address="+tt.bindAddress)
			}
			server := webhook.NewServer(webhookServerOptions(parseManagerFlags(t, "/", args...)))
			ctx, cancel := context.WithCancel(t.Context())
			stopped := make(chan struct{})
			go func() {
				defer close(stopped)
				_ = server.Start(ctx)
			}()
			t.Cleanup(func() {
				cancel()
				<-stopped
			})
			dial := func(host string) error {
				conn, err := net.DialTimeout("tcp", net.JoinHostPort(host, port), time.Second)
				if err == nil {
					_ = conn.Close()
				}
				return err
			}
			g.Eventually(func() error { return dial("127.0.0.1") }).WithTimeout(10 * time.Second).Should(Succeed())
			if tt.otherAddressAnswers {
				g.Expect(dial("127.0.0.2")).To(Succeed())
			} else {
				g.Expect(dial("127.0.0.2")).NotTo(Succeed())
			}
		})
	}
}

// freePort is a TCP port nothing listens on, on any address.
func freePort(t *testing.T) string {
	t.Helper()
	listener, err := net.Listen("tcp", ":0")
	if err != nil {
		t.Fatal(err)
	}
	defer listener.Close()
	_, port, _ := net.SplitHostPort(listener.Addr().String())
	return port
}

// TestTheManagerCollectsLazilyUnderItsSoftMemoryLimit: with a budget the
// manager's share is the runtime's soft memory limit and, under it, the
// collector runs at memorybudget.ManagerGCPercent; a GOGC the environment
// set is kept; without a budget nothing changes.
func TestTheManagerCollectsLazilyUnderItsSoftMemoryLimit(t *testing.T) {
	budget := memorybudget.Plan{Limit: memorybudget.Limit{Bytes: 3 << 30, Source: "--memory-budget"},
		Builds: 2, BuildMemory: 1 << 30, Cache: memorybudget.DefaultCache}
	const noLimit = int64(math.MaxInt64)
	tests := []struct {
		name string
		plan memorybudget.Plan
		// environmentPercent stands for a GOGC in the environment, which
		// the runtime read at start-up; zero for none.
		environmentPercent int
		wantLimit          int64
		wantPercent        int64
	}{{
		name:        "with a budget the share is the soft limit and the collector runs at ManagerGCPercent under it",
		plan:        budget,
		wantLimit:   budget.ManagerShare(),
		wantPercent: memorybudget.ManagerGCPercent,
	}, {
		name:               "a GOGC from the environment is the operator's and is kept, under the same soft limit",
		plan:               budget,
		environmentPercent: 150,
		wantLimit:          budget.ManagerShare(),
		wantPercent:        150,
	}, {
		name:        "without a budget nothing bounds the heap, and Go's defaults stay",
		plan:        memorybudget.Plan{Builds: 2, BuildMemory: 1 << 30, Cache: memorybudget.DefaultCache},
		wantLimit:   noLimit,
		wantPercent: 100,
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			// The test process's own collector: Go's defaults, or the
			// environment's percent; restored after.
			percent := 100
			if tt.environmentPercent != 0 {
				percent = tt.environmentPercent
			}
			previousPercent, previousLimit := debug.SetGCPercent(percent), debug.SetMemoryLimit(noLimit)
			t.Cleanup(func() {
				debug.SetGCPercent(previousPercent)
				debug.SetMemoryLimit(previousLimit)
			})

			limit, gcPercent := tuneCollector(tt.plan, tt.environmentPercent != 0)
			g.Expect(limit).To(Equal(tt.wantLimit))
			g.Expect(gcPercent).To(Equal(tt.wantPercent))
			g.Expect(debug.SetMemoryLimit(-1)).To(Equal(tt.wantLimit), "what the runtime runs with")
		})
	}
}
