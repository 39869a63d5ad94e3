package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	. "github.com/onsi/gomega"

	"github.com/profilesync/profilesync/internal/render/mergekeys"
)

func TestOpenAPIPrintsTheSchemaEveryBuildUses(t *testing.T) {
	g := NewWithT(t)
	status, stdout, stderr := run(t, "openapi", "")
	g.Expect(status).To(Equal(exitOK))
	g.Expect(stderr).To(BeEmpty())
	want, err := mergekeys.OpenAPISchema()
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(stdout).To(Equal(string(want)))
	g.Expect(stdout).To(ContainSubstring(`"x-kubernetes-patch-merge-key": "classification"`))

	status, _, stderr = run(t, "openapi", "", "extra")
	g.Expect(status).To(Equal(exitUsage))
	g.Expect(stderr).To(ContainSubstring("Run 'profilesync openapi --help' for usage."))
}

func TestBuildWarnsOfAPatchThatAddressesAVersionByIndex(t *testing.T) {
	g := NewWithT(t)
	root := t.TempDir()
	files := map[string]string{
		"base/kustomization.yaml": "resources: [profile.yaml]\n",
		"base/profile.yaml":       strings.Replace(profileWith("  type: aws\n  kubernetes:\n    versions:\n    - version: 1.31.0\n    - version: 1.30.0\n"), "name: p\n", "name: aws\n", 1),
		"overlay/kustomization.yaml": "resources: [../base]\npatches:\n- target: {kind: CloudProfile, name: aws}\n  patch: |-\n" +
			"    - op: add\n      path: /spec/kubernetes/versions/1/expirationDate\n      value: \"2030-01-01T00:00:00Z\"\n",
	}
	for path, content := range files {
		g.Expect(os.MkdirAll(filepath.Join(root, filepath.Dir(path)), 0o755)).To(Succeed())
		g.Expect(os.WriteFile(filepath.Join(root, path), []byte(content), 0o644)).To(Succeed())
	}

	status, stdout, stderr := run(t, "build", "", filepath.Join(root, "overlay"), "--root", root, "--at", "2026-01-01T00:00:00Z")
	g.Expect(status).To(Equal(exitOK), stderr)
	g.Expect(stdout).To(ContainSubstring("expirationDate: \"2030-01-01T00:00:00Z\""))
	g.Expect(stderr).To(HavePrefix("warning: overlay/kustomization.yaml: CloudProfile/aws: patch /spec/kubernetes/versions/1/expirationDate: /spec/kubernetes/versions/1 is 1.30.0"))
}
