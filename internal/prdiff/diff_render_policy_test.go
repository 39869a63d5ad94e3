package prdiff

import (
	"github.com/profilesync/profilesync/internal/render/profile"

	"testing"

	. "github.com/onsi/gomega"
)

func TestRenderersPrintThePolicySection(t *testing.T) {
	g := NewWithT(t)
	finding := profile.Problem{File: "base/cp.yaml", Kind: "CloudProfile", Name: "aws_*1*", Field: "spec.kubernetes.versions[0]", Message: "policy supported: minor 1.33 has no supported patch"}
	report := Report{Policy: []PolicySection{
		{Landscape: "dev", File: "overlays/dev/profilesync-policy.yaml", Warnings: profile.Problems{finding}},
		{Landscape: "prod", File: "profilesync-policy.yaml", Errors: profile.Problems{finding, finding}},
		{Landscape: "staging", File: "profilesync-policy.yaml"},
	}}

	g.Expect(written(t, WriteText, report)).To(Equal(
		"Policy of dev (overlays/dev/profilesync-policy.yaml): 1 warning.\n" +
			"  warning: base/cp.yaml: CloudProfile/aws_*1*: spec.kubernetes.versions[0]: policy supported: minor 1.33 has no supported patch\n\n" +
			"Policy of prod (profilesync-policy.yaml): 2 errors.\n" +
			"  error: base/cp.yaml: CloudProfile/aws_*1*: spec.kubernetes.versions[0]: policy supported: minor 1.33 has no supported patch\n" +
			"  error: base/cp.yaml: CloudProfile/aws_*1*: spec.kubernetes.versions[0]: policy supported: minor 1.33 has no supported patch\n\n" +
			"Policy of staging (profilesync-policy.yaml): satisfied.\n\n" +
			"Summary: no changes.\n"))
	g.Expect(written(t, WriteMarkdown, report)).To(HaveSuffix(
		"### Versioning policy\n\n" +
			"dev (`overlays/dev/profilesync-policy.yaml`): 1 warning.\n\n" +
			"- **Warning:** base/cp.yaml: CloudProfile/aws\\_\\*1\\*: spec.kubernetes.versions\\[0\\]: policy supported: minor 1.33 has no supported patch\n\n" +
			"prod (`profilesync-policy.yaml`): 2 errors.\n\n" +
			"- **Error:** base/cp.yaml: CloudProfile/aws\\_\\*1\\*: spec.kubernetes.versions\\[0\\]: policy supported: minor 1.33 has no supported patch\n" +
			"- **Error:** base/cp.yaml: CloudProfile/aws\\_\\*1\\*: spec.kubernetes.versions\\[0\\]: policy supported: minor 1.33 has no supported patch\n\n" +
			"staging (`profilesync-policy.yaml`): satisfied.\n"))
	g.Expect(written(t, WriteJSON, report)).To(ContainSubstring(`"policy": [
    {
      "landscape": "dev",
      "file": "overlays/dev/profilesync-policy.yaml",
      "errors": [],
      "warnings": [
        "base/cp.yaml: CloudProfile/aws_*1*: spec.kubernetes.versions[0]: policy supported: minor 1.33 has no supported patch"
      ]
    },`))
	g.Expect(written(t, WriteJSON, Report{})).NotTo(ContainSubstring(`"policy"`), "a report without policies has no policy section")
}
