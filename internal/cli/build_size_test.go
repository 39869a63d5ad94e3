package cli

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	. "github.com/onsi/gomega"

	"github.com/profilesync/profilesync/internal/render/profile"
)

// TestBuildAndEvaluateRefuseAProfileTheAPIServerCannotStore: a CloudProfile
// of 1.5 MiB passes every other rule, and the build's file limits, but the
// API server could not store it; build and evaluate refuse it, naming it
// with its size against the bound.
func TestBuildAndEvaluateRefuseAProfileTheAPIServerCannotStore(t *testing.T) {
	g := NewWithT(t)
	root := t.TempDir()
	profileYAML := strings.Replace(profileWith(oneKubernetesVersion+"  providerConfig:\n    blob: "+strings.Repeat("x", 1536<<10)+"\n"), "name: p\n", "name: big\n", 1)
	g.Expect(os.WriteFile(filepath.Join(root, "kustomization.yaml"), []byte("resources: [profile.yaml]\n"), 0o644)).To(Succeed())
	g.Expect(os.WriteFile(filepath.Join(root, "profile.yaml"), []byte(profileYAML), 0o644)).To(Succeed())
	want := fmt.Sprintf(`^profile.yaml: CloudProfile/big: Too long: \d+ bytes as the API server would store it .*, more than the %d it can store`, profile.MaxStoredSize)

	status, stdout, stderr := run(t, "build", "", root, "--root", root)
	g.Expect(status).To(Equal(exitInvalidInput))
	g.Expect(stdout).To(BeEmpty())
	g.Expect(stderr).To(MatchRegexp(want))

	status, stdout, stderr = run(t, "evaluate", "", "-f", filepath.Join(root, "profile.yaml"))
	g.Expect(status).To(Equal(exitInvalidInput))
	g.Expect(stdout).To(BeEmpty())
	g.Expect(stderr).To(MatchRegexp(strings.Replace(want, "^profile.yaml", "^"+regexp.QuoteMeta(filepath.Join(root, "profile.yaml")), 1)))
}
