package policy

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
)

const header = "apiVersion: policy.profilesync.io/v1alpha1\nkind: VersioningPolicy\n"

func TestDecodeReadsEveryRule(t *testing.T) {
	g := NewWithT(t)
	p, err := Decode("profilesync-policy.yaml", []byte(header+`rules:
  supported: {severity: error, minors: 4, machineImageGroups: 2}
  preview: {severity: warning, maxMinors: 1, maxDays: 42}
  deprecation: {severity: error, olderPatches: true, requireExpiry: true, machineImages: true}
  notice: {severity: error, days: 30}
  forcedUpdates: {severity: warning}
`))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(*p).To(Equal(Policy{APIVersion: APIVersion, Kind: Kind, Rules: Rules{
		Supported:     &SupportedRule{Severity: SeverityError, Minors: 4, MachineImageGroups: 2},
		Preview:       &PreviewRule{Severity: SeverityWarning, MaxMinors: intPtr(1), MaxDays: intPtr(42)},
		Deprecation:   &DeprecationRule{Severity: SeverityError, OlderPatches: true, RequireExpiry: true, MachineImages: true},
		Notice:        &NoticeRule{Severity: SeverityError, Days: 30},
		ForcedUpdates: &ForcedUpdatesRule{Severity: SeverityWarning},
	}}))
}

func TestDecodeNamesFileAndFieldOfEveryProblem(t *testing.T) {
	tests := []struct {
		name string
		data string
		want []string
	}{
		{"an unknown field", header + "rules:\n  notice: {severity: error, dayz: 30}\n", []string{
			"p.yaml: rules.notice.dayz: unknown field: the policy has no such field (check spelling and indentation; docs/policy.md lists the fields)",
			"p.yaml: rules.notice.days: Invalid value: 0: must be at least 1",
		}},
		{"a value of the wrong type", header + "rules:\n  notice: {severity: error, days: thirty}\n", []string{
			"p.yaml: rules.notice.days: Invalid value: must be of type integer, not string",
		}},
		{"a duplicate field", header + "rules:\n  notice: {severity: error, days: 3}\n  notice: {severity: error, days: 4}\n", []string{
			`p.yaml: not valid YAML: yaml: unmarshal errors: line 5: key "notice" already set in map`,
		}},
		{"a rule without severity and a severity that does not exist", header + "rules:\n  supported: {minors: 4}\n  forcedUpdates: {severity: fatal}\n", []string{
			"p.yaml: rules.supported.severity: Required value: warning or error",
			`p.yaml: rules.forcedUpdates.severity: Unsupported value: "fatal": supported values: "warning", "error"`,
		}},
		{"no rule at all", header + "rules: {}\n", []string{
			"p.yaml: rules: Required value: a policy turns on at least one rule: supported, preview, deprecation, notice or forcedUpdates",
		}},
		{"another schema", "apiVersion: v1\nkind: ConfigMap\nrules:\n  forcedUpdates: {severity: error}\n", []string{
			`p.yaml: apiVersion: Unsupported value: "v1": supported values: "policy.profilesync.io/v1alpha1"`,
			`p.yaml: kind: Unsupported value: "ConfigMap": supported values: "VersioningPolicy"`,
		}},
		{"rules that check nothing", header + "rules:\n  preview: {severity: error}\n  deprecation: {severity: error}\n  supported: {severity: error, minors: 0, machineImageGroups: -1}\n", []string{
			"p.yaml: rules.supported.minors: Invalid value: 0: must be at least 1",
			"p.yaml: rules.supported.machineImageGroups: Invalid value: -1: must be at least 0",
			"p.yaml: rules.preview: Required value: set maxMinors, maxDays or both",
			"p.yaml: rules.deprecation: Required value: set olderPatches, requireExpiry or both to true",
		}},
		{"not a mapping", "- a\n- b\n", []string{
			"p.yaml: not a policy: expected a mapping with apiVersion, kind and rules",
		}},
		{"a second YAML document, which the decoder would drop", header + "rules:\n  notice: {severity: error, days: 3}\n---\n" + header + "rules:\n  notice: {severity: error, days: 30}\n", []string{
			"p.yaml: a second YAML document at line 6: a policy file is one document, and the rest would be ignored; remove the --- before it and merge it into the first, or delete it",
		}},
		{"a boolean YAML 1.1 and 1.2 read differently is to be written true or false", header + "rules:\n  deprecation: {severity: error, olderPatches: yes}\n", []string{
			`p.yaml: rules.deprecation.olderPatches: Invalid value: yes as written: YAML 1.1, which reads this file, takes it as a boolean, YAML 1.2 as the string "yes"; quote it ("yes") or write true or false`,
		}},
		{"a severity YAML 1.1 reads as a boolean is to be quoted", header + "rules:\n  notice: {severity: off, days: 3}\n", []string{
			`p.yaml: rules.notice.severity: Invalid value: off as written: YAML 1.1, which reads this file, takes it as a boolean, YAML 1.2 as the string "off"; quote it ("off") or write true or false`,
		}},
		{"a number YAML 1.1 reads as octal", header + "rules:\n  notice: {severity: error, days: 030}\n", []string{
			`p.yaml: rules.notice.days: Invalid value: 030 as written: YAML 1.1, which reads this file, and YAML 1.2 take it as different values; quote it ("030") or write a plain decimal number`,
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			_, err := Decode("p.yaml", []byte(tt.data))
			var decodeErr *DecodeError
			g.Expect(errors.As(err, &decodeErr)).To(BeTrue(), "%v", err)
			g.Expect(strings.Split(err.Error(), "\n")).To(Equal(tt.want))
		})
	}
}

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestFindTakesThePolicyNearestToTheOverlay(t *testing.T) {
	g := NewWithT(t)
	root := t.TempDir()
	writeFile(t, filepath.Join(root, FileName), header+"rules:\n  notice: {severity: error, days: 30}\n")
	writeFile(t, filepath.Join(root, "overlays", "dev", FileName), header+"rules:\n  notice: {severity: warning, days: 7}\n")
	writeFile(t, filepath.Join(root, "overlays", "prod", "kustomization.yaml"), "resources: []\n")

	p, file, err := Find(root, "overlays/dev", 0)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(file).To(Equal("overlays/dev/" + FileName))
	g.Expect(p.Rules.Notice.Days).To(Equal(7))

	p, file, err = Find(root, "overlays/prod", 0)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(file).To(Equal(FileName))
	g.Expect(p.Rules.Notice.Days).To(Equal(30))

	g.Expect(os.Remove(filepath.Join(root, FileName))).To(Succeed())
	p, file, err = Find(root, "overlays/prod", 0)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(p).To(BeNil(), "no policy, nothing to check")
	g.Expect(file).To(BeEmpty())
}

func TestFindStaysInsideTheRepository(t *testing.T) {
	g := NewWithT(t)
	outside := t.TempDir()
	writeFile(t, filepath.Join(outside, FileName), header+"rules:\n  notice: {severity: error, days: 30}\n")
	root := t.TempDir()
	writeFile(t, filepath.Join(root, "overlays", "dev", "kustomization.yaml"), "resources: []\n")
	g.Expect(os.Symlink(filepath.Join(outside, FileName), filepath.Join(root, "overlays", "dev", FileName))).To(Succeed())

	_, _, err := Find(root, "overlays/dev", 0)
	g.Expect(err).To(MatchError("reading the policy: overlays/dev/" + FileName + ": a symbolic link that leads outside the repository root: refused"))

	g.Expect(os.Remove(filepath.Join(root, "overlays", "dev", FileName))).To(Succeed())
	writeFile(t, filepath.Join(root, ".git", "secret.yaml"), "CANARY-token: x\n")
	g.Expect(os.Symlink(filepath.Join("..", "..", ".git", "secret.yaml"), filepath.Join(root, "overlays", "dev", FileName))).To(Succeed())
	_, _, err = Find(root, "overlays/dev", 0)
	g.Expect(err).To(MatchError("reading the policy: overlays/dev/" + FileName + ": a symbolic link into .git/, Git's metadata: refused"))

	_, _, err = Find(root, "../elsewhere", 0)
	g.Expect(err).To(MatchError(ContainSubstring("is not inside the repository")))

	g.Expect(os.Remove(filepath.Join(root, "overlays", "dev", FileName))).To(Succeed())
	writeFile(t, filepath.Join(root, FileName), header+"rules:\n  notice: {severity: error, days: 30}\n")
	_, _, err = Find(root, "overlays/dev", 16)
	g.Expect(err).To(MatchError("reading the policy: " + FileName + ": 111 bytes is over the maximum file size of 16 bytes (raise it with --max-file-size)"))

	writeFile(t, filepath.Join(root, FileName), header+"rules:\n  notice: {severity: error, days: 0}\n")
	_, _, err = Find(root, "overlays/dev", 0)
	g.Expect(err).To(MatchError(FileName + ": rules.notice.days: Invalid value: 0: must be at least 1"))
}
