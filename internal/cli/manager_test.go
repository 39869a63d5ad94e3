package cli

import (
	"bytes"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"github.com/spf13/pflag"

	v1alpha1 "github.com/profilesync/profilesync/api/v1alpha1"
	"github.com/profilesync/profilesync/internal/sandbox"
)

// runWithManager runs the command line with a manager that records its
// flags and returns startErr instead of starting.
func runWithManager(t *testing.T, startErr error, args ...string) (started *managerFlags, status int, stdout, stderr string) {
	t.Helper()
	var out, errOut bytes.Buffer
	root := newRootCommand(strings.NewReader(""), &out, &errOut, func(flags *managerFlags) error {
		started = flags
		return startErr
	})
	status = execute(root, args)
	return started, status, out.String(), errOut.String()
}

// TestManagerRunsWithOrWithoutItsName: config/manager runs `profilesync
// --flag...`, people type `profilesync manager --flag...`; both start the
// same manager with the same flags.
func TestManagerRunsWithOrWithoutItsName(t *testing.T) {
	deploymentArgs := []string{"--enable-leader-election", "--storage-path=/data", "--metrics-addr=:8443", "--health-addr=:9440"}
	for _, prefix := range [][]string{nil, {"manager"}} {
		t.Run(strings.Join(append([]string{"profilesync"}, prefix...), " "), func(t *testing.T) {
			g := NewWithT(t)
			flags, status, stdout, stderr := runWithManager(t, nil, prefix...)
			g.Expect(status).To(Equal(exitOK))
			g.Expect(stdout + stderr).To(BeEmpty())
			g.Expect(flags).NotTo(BeNil(), "the manager started")
			g.Expect(flags.concurrent).To(Equal(4), "defaults apply")
			g.Expect(flags.maxCheckoutSize).To(Equal(defaultMaxCheckoutSize))
			g.Expect(flags.maxHold).To(Equal(v1alpha1.DefaultMaxHold))

			args := append(append(append([]string{}, prefix...), deploymentArgs...), "--concurrent", "8", "--max-file-size", "1Mi", "--max-hold", "48h")
			flags, status, _, stderr = runWithManager(t, nil, args...)
			g.Expect(status).To(Equal(exitOK), stderr)
			g.Expect(flags.leaderElection.Enable).To(BeTrue())
			g.Expect(flags.storagePath).To(Equal("/data"))
			g.Expect(flags.concurrent).To(Equal(8))
			g.Expect(flags.builds.Limits.MaxFileSize).To(Equal(int64(1 << 20)))
			g.Expect(flags.builds.Memory).To(Equal(sandbox.DefaultMemory), "defaults apply")
			g.Expect(flags.maxHold).To(Equal(48 * time.Hour))
		})
	}
}

func TestManagerHelpListsEveryFlag(t *testing.T) {
	g := NewWithT(t)
	flags, status, stdout, stderr := runWithManager(t, nil, "manager", "--help")
	g.Expect(status).To(Equal(exitOK))
	g.Expect(stderr).To(BeEmpty())
	g.Expect(flags).To(BeNil(), "--help does not start the manager")
	g.Expect(stdout).To(ContainSubstring("Usage:\n  profilesync manager [flags]"))
	g.Expect(stdout).To(ContainSubstring("Examples:\n  profilesync manager"))

	var all managerFlags
	fs := pflag.NewFlagSet("manager", pflag.ContinueOnError)
	all.bind(fs)
	fs.VisitAll(func(flag *pflag.Flag) {
		if flag.Deprecated != "" {
			g.Expect(stdout).NotTo(ContainSubstring("--"+flag.Name+" "), "manager --help hides the deprecated --%s", flag.Name)
			return
		}
		g.Expect(stdout).To(ContainSubstring("--"+flag.Name+" "), "manager --help lists --%s", flag.Name)
	})
}

func TestManagerUsageErrorsExitTwoWithoutStarting(t *testing.T) {
	tests := []struct {
		args   []string
		stderr string
	}{
		{[]string{"--bogus"}, "profilesync: unknown flag: --bogus\nRun 'profilesync --help' for usage.\n"},
		{[]string{"manager", "--bogus"}, "manager: unknown flag: --bogus\nRun 'profilesync manager --help' for usage.\n"},
		{[]string{"manager", "--concurrent", "many"}, `manager: invalid argument "many" for "--concurrent" flag: strconv.ParseInt: parsing "many": invalid syntax` + "\nRun 'profilesync manager --help' for usage.\n"},
		{[]string{"manager", "--webhook-cert-provisioning=cert-manager"}, `manager: invalid argument "cert-manager" for "--webhook-cert-provisioning" flag: "cert-manager" is neither "self" nor "external"` + "\nRun 'profilesync manager --help' for usage.\n"},
		{[]string{"manager", "extra"}, "manager: unexpected argument \"extra\": the manager takes only flags\nRun 'profilesync manager --help' for usage.\n"},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			g := NewWithT(t)
			flags, status, stdout, stderr := runWithManager(t, nil, tt.args...)
			g.Expect(status).To(Equal(exitUsage))
			g.Expect(flags).To(BeNil())
			g.Expect(stdout).To(BeEmpty())
			g.Expect(stderr).To(Equal(tt.stderr))
		})
	}
}

// TestManagerFailuresExitWithTheirStatus: the manager logs why it fails,
// so nothing more is printed.
func TestManagerFailuresExitWithTheirStatus(t *testing.T) {
	g := NewWithT(t)
	_, status, stdout, stderr := runWithManager(t, reportedError{status: exitInvalidInput})
	g.Expect(status).To(Equal(exitInvalidInput))
	g.Expect(stdout + stderr).To(BeEmpty())

	// The real manager refuses a selector that does not parse before it
	// looks for a cluster.
	var out, errOut bytes.Buffer
	g.Expect(Execute([]string{"--watch-label-selector", "a b c"}, strings.NewReader(""), &out, &errOut)).To(Equal(exitUsage))
	g.Expect(out.String()+errOut.String()).To(BeEmpty(), "the manager logs the problem")
}
