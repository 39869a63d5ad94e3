package cli

import (
	"os"
	"path/filepath"
	"testing"

	. "github.com/onsi/gomega"
)

// TestEvaluateJudgesOneSupportedPerMinorAtItsTime evaluates two
// deprecated-API supported versions of one minor: while both are
// supported they are refused, as Gardener refuses them; once both have
// expired they are accepted, as Gardener accepts them.
func TestEvaluateJudgesOneSupportedPerMinorAtItsTime(t *testing.T) {
	profile := filepath.Join(t.TempDir(), "p.yaml")
	if err := os.WriteFile(profile, []byte(`apiVersion: core.profilesync.io/v1alpha1
kind: CloudProfile
metadata:
  name: p
spec:
  type: local
  kubernetes:
    versions:
    - version: 1.31.0
    - version: 1.30.1
      classification: supported
      expirationDate: "2025-01-01T00:00:00Z"
    - version: 1.30.0
      classification: supported
      expirationDate: "2025-01-01T00:00:00Z"
  machineImages:
  - name: ubuntu
    versions:
    - version: 22.4.0
  machineTypes:
  - name: m1
    cpu: "2"
    gpu: "0"
    memory: 4Gi
  regions:
  - name: local
`), 0o644); err != nil {
		t.Fatal(err)
	}
	g := NewWithT(t)
	status, _, stderr := run(t, "evaluate", "", "--at", "2024-06-01T00:00:00Z", "-f", profile)
	g.Expect(status).To(Equal(exitInvalidInput), stderr)
	g.Expect(stderr).To(ContainSubstring("spec.kubernetes.versions[1] (1.30.1).classification: Forbidden: only one supported version per minor is allowed"))

	status, stdout, stderr := run(t, "evaluate", "", "--at", "2025-06-01T00:00:00Z", "-f", profile)
	g.Expect(status).To(Equal(exitOK), stderr)
	g.Expect(stdout).To(ContainSubstring("classification: expired"))
}
