package main

import (
	"bytes"
	"context"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
)

// TestRunLocalReachesReadyAndCleansUp runs `make run-local` headless on a
// fixed day, so the classifications it prints are known, and checks that
// both landscapes' control planes are gone afterwards.
func TestRunLocalReachesReadyAndCleansUp(t *testing.T) {
	g := NewWithT(t)
	if os.Getenv("KUBEBUILDER_ASSETS") == "" {
		t.Fatal("KUBEBUILDER_ASSETS is not set: run the tests with 'make test'")
	}
	var out bytes.Buffer
	opts := options{
		repoDir:       filepath.Join("..", "..", "examples", "profiles-repo"),
		projectDir:    filepath.Join("..", ".."),
		workDir:       t.TempDir(),
		landscapes:    []string{"dev", "prod"},
		interval:      10 * time.Second,
		now:           time.Date(2026, 11, 22, 0, 0, 0, 0, time.UTC),
		soak:          3 * time.Second,
		readyTimeout:  2 * time.Minute,
		exitWhenReady: true,
	}
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	g.Expect(run(ctx, opts, &out)).To(Succeed(), out.String())
	view := out.String()
	if testing.Verbose() {
		t.Log(view) // what the README's tour shows
	}

	g.Expect(view).To(ContainSubstring("All profiles Ready."))
	g.Expect(view).To(ContainSubstring("export KUBECONFIG=" + filepath.Join(opts.workDir, "dev.kubeconfig")))
	// dev offers 1.34.3 already, prod does not.
	g.Expect(view).To(MatchRegexp(`cloudprofile\.core\.profilesync\.io/aws\s+aws\s+True\s+2026-12-01T00:00:00Z\s+<none>\s+12 versions: 3 supported, 3 preview, 5 deprecated, 1 expired`))
	g.Expect(view).To(MatchRegexp(`cloudprofile\.core\.profilesync\.io/aws\s+aws\s+True\s+2026-12-15T00:00:00Z\s+<none>\s+11 versions: 3 supported, 2 preview, 5 deprecated, 1 expired`))
	g.Expect(view).To(MatchRegexp(`team-payments\s+namespacedcloudprofile\.core\.profilesync\.io/aws-payments\s+aws\s+True`))
	g.Expect(view).To(MatchRegexp(`profilesync\.core\.profilesync\.io/prod\s+http://127\.0\.0\.1:\d+/profiles\.git\s+overlays/prod\s+True\s+main@sha1:[0-9a-f]{40}`))
	// The namespaced profile keeps 1.32.9 until February; its parent expires it in December.
	g.Expect(view).To(MatchRegexp(`2026-12-15T00:00:00Z\s+23d\s+CloudProfile/aws\s+kubernetes 1\.32\.9\s+deprecated → expired`))
	g.Expect(view).To(MatchRegexp(`2027-02-15T00:00:00Z\s+85d\s+NamespacedCloudProfile/team-payments/aws-payments\s+kubernetes 1\.32\.9\s+deprecated → expired`))
	g.Expect(view).To(ContainSubstring("git push"))

	// The tour: a pushed commit reaches dev at once and prod only once dev
	// has held it for the soak, and rollout status shows it before, while
	// prod waits, and after.
	tour := regexp.MustCompile(`(?m)^(dev|prod) applied ([0-9a-f]{12}) and recorded it, (\d+)s after the push$`).FindAllStringSubmatch(view, -1)
	g.Expect(tour).To(HaveLen(2), view)
	g.Expect(tour[0][1]).To(Equal("dev"))
	g.Expect(tour[1][1]).To(Equal("prod"))
	g.Expect(tour[1][2]).To(Equal(tour[0][2]), "prod takes the commit dev took")
	prodAfter, err := strconv.Atoi(tour[1][3])
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(time.Duration(prodAfter)*time.Second).To(BeNumerically(">=", opts.soak), "prod waits out the soak")
	g.Expect(strings.Count(view, "$ profilesync rollout status http://127.0.0.1:")).To(Equal(3))
	g.Expect(view).To(MatchRegexp(`(?m)^prod\s+dev\s+3s\s+` + tour[1][2][:7] + `\s+\S+\s+up to date$`))
	// While prod waits out the soak it says so, and until when.
	g.Expect(view).To(MatchRegexp(`(?m)^prod waits for `+tour[1][2]+` until 2026-11-22T\d\d:\d\d:\d\dZ \(dev has held it since 2026-11-22T\d\d:\d\d:\d\dZ\)$`), view)
	// The admission webhooks run: the tenant's write of spec.kubernetes is
	// refused as production refuses it.
	g.Expect(view).To(MatchRegexp(`Error from server \(Forbidden\): admission webhook "vnamespacedcloudprofile\.core\.profilesync\.io" denied the request: .*modify-spec-kubernetes`))
	g.Expect(view).To(MatchRegexp(`(?m)^  curl -sk -H "Authorization: Bearer \$\(cat \S+/dev-metrics\.token\)" https://127\.0\.0\.1:\d+/metrics$`))
	g.Expect(view).To(ContainSubstring("Stopped every control plane and the Git server."))
	g.Expect(opts.workDir).NotTo(BeADirectory(), "the work directory is removed")

	// Nothing is left listening: every API server printed is gone.
	servers := regexp.MustCompile(`API server (https://[^,]+),`).FindAllStringSubmatch(view, -1)
	g.Expect(servers).To(HaveLen(2))
	for _, m := range servers {
		u, err := url.Parse(m[1])
		g.Expect(err).NotTo(HaveOccurred())
		conn, err := net.DialTimeout("tcp", u.Host, time.Second)
		if err == nil {
			conn.Close()
		}
		g.Expect(err).To(HaveOccurred(), "API server %s still listening", u.Host)
	}
}
