package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	. "github.com/onsi/gomega"

	"github.com/profilesync/profilesync/internal/policy"
)

const rolloutHeader = "apiVersion: rollout.profilesync.io/v1alpha1\nkind: Rollout\nlandscapes:\n"

// headWithRollout is the diff fixture's head with the given rollout file at
// its root.
func headWithRollout(t *testing.T, rolloutFile string) string {
	t.Helper()
	head := t.TempDir()
	copyTree(t, diffFixturePR, head)
	if err := os.WriteFile(filepath.Join(head, "profilesync-rollout.yaml"), []byte(rolloutFile), 0o644); err != nil {
		t.Fatal(err)
	}
	return head
}

func TestDiffChecksTheOrderOfTheRolloutFile(t *testing.T) {
	const devThenProd = rolloutHeader + "- {name: development, path: overlays/dev}\n- name: production\n  path: ./overlays/prod\n  after: [development]\n  soak: 1d\n"
	tests := []struct {
		name       string
		rollout    string
		args       []string
		status     int
		landscapes []string
		findings   []string
		severities []policy.Severity
		stderr     string
	}{
		{
			name:    "a landscape that supports a version before its upstream is a warning, named as the file names it",
			rollout: devThenProd, status: exitOK,
			landscapes: []string{"development", "production"},
			findings:   []string{"production: CloudProfile/aws: kubernetes 1.34.2 is supported from 2026-11-28T00:00:00Z, 3d before development (2026-12-01T00:00:00Z)"},
			severities: []policy.Severity{""},
		},
		{
			name:       "a lag of severity error the head breaks fails the diff",
			rollout:    devThenProd + "  lag: {supported: {duration: 7d, severity: error}}\n",
			status:     exitInvalidInput,
			landscapes: []string{"development", "production"},
			findings: []string{
				"production: CloudProfile/aws: kubernetes 1.32.12 is supported from 2026-11-20T00:00:00Z, 7d before development (2026-11-20T00:00:00Z) plus the lag of 7d",
				"production: CloudProfile/aws: kubernetes 1.33.7 is supported from 2026-11-25T00:00:00Z, 7d before development (2026-11-25T00:00:00Z) plus the lag of 7d",
				"production: CloudProfile/aws: kubernetes 1.34.2 is supported from 2026-11-28T00:00:00Z, 10d before development (2026-12-01T00:00:00Z) plus the lag of 7d",
			},
			severities: []policy.Severity{policy.SeverityError, policy.SeverityError, policy.SeverityError},
			stderr: "profilesync-rollout.yaml: production: CloudProfile/aws: kubernetes 1.32.12 is supported from 2026-11-20T00:00:00Z, 7d before development (2026-11-20T00:00:00Z) plus the lag of 7d\n" +
				"profilesync-rollout.yaml: production: CloudProfile/aws: kubernetes 1.33.7 is supported from 2026-11-25T00:00:00Z, 7d before development (2026-11-25T00:00:00Z) plus the lag of 7d\n" +
				"profilesync-rollout.yaml: production: CloudProfile/aws: kubernetes 1.34.2 is supported from 2026-11-28T00:00:00Z, 10d before development (2026-12-01T00:00:00Z) plus the lag of 7d\n",
		},
		{
			name:       "--rollout overrides the file",
			rollout:    devThenProd + "  lag: {supported: {duration: 7d, severity: error}}\n",
			args:       []string{"--rollout", "development,production"},
			status:     exitOK,
			landscapes: []string{"development", "production"},
			findings:   []string{"production: CloudProfile/aws: kubernetes 1.34.2 is supported from 2026-11-28T00:00:00Z, 3d before development (2026-12-01T00:00:00Z)"},
			severities: []policy.Severity{""},
		},
		{
			name:       "the file's order and upstreams, not the directories', decide",
			rollout:    rolloutHeader + "- {name: prod, path: overlays/prod}\n- {name: dev, path: overlays/dev, after: [prod]}\n",
			status:     exitOK,
			landscapes: []string{"prod", "dev"},
			findings:   []string{},
			severities: []policy.Severity{},
		},
		{
			name:       "PATHs given are compared, named by the file",
			rollout:    devThenProd,
			args:       []string{"overlays/prod"},
			status:     exitOK,
			landscapes: []string{"production"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			head := headWithRollout(t, tt.rollout)
			args := append([]string{"--base-dir", diffFixtureMain, "--head-dir", head, "--at", diffTime, "-o", "json"}, tt.args...)
			status, stdout, stderr := run(t, "diff", "", args...)
			g.Expect(status).To(Equal(tt.status), stderr)
			g.Expect(stderr).To(Equal(tt.stderr))
			report := decodeDiffJSON(t, stdout)
			var names []string
			for _, l := range report.Landscapes {
				names = append(names, l.Landscape)
			}
			g.Expect(names).To(Equal(tt.landscapes))
			if tt.findings == nil {
				g.Expect(report.RolloutWarnings).To(BeEmpty())
				return
			}
			lines, severities := []string{}, []policy.Severity{}
			for _, w := range report.RolloutWarnings {
				lines, severities = append(lines, w.String()), append(severities, w.Severity)
			}
			g.Expect(lines).To(Equal(tt.findings))
			g.Expect(severities).To(Equal(tt.severities))
		})
	}
}

func TestABadRolloutFileFailsDiffAndBuildNamingFileAndField(t *testing.T) {
	head := headWithRollout(t, rolloutHeader+"- {name: dev, path: overlays/dev}\n- {name: staging, path: overlays/staging, after: [dev]}\n- {name: prod, path: overlays/prod, after: [stagin]}\n")
	const want = `profilesync-rollout.yaml: landscapes[2].after[0]: unknown landscape "stagin" (the landscapes are dev, staging, prod)`
	for _, tt := range []struct {
		name string
		args []string
	}{
		{"diff", []string{"diff", "--base-dir", diffFixtureMain, "--head-dir", head, "--at", diffTime}},
		{"build", []string{"build", "--root", head, filepath.Join(head, "overlays", "dev"), "--at", diffTime}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			status, stdout, stderr := run(t, tt.args[0], "", tt.args[1:]...)
			g.Expect(status).To(Equal(exitInvalidInput))
			g.Expect(stdout).To(BeEmpty())
			g.Expect(strings.TrimSpace(stderr)).To(HaveSuffix(want))
		})
	}
}

func TestBuildWithAGoodRolloutFileBuilds(t *testing.T) {
	g := NewWithT(t)
	head := headWithRollout(t, rolloutHeader+"- {name: dev, path: overlays/dev}\n- {name: prod, path: overlays/prod, after: [dev]}\n")
	status, stdout, stderr := run(t, "build", "", "--root", head, filepath.Join(head, "overlays", "dev"), "--at", diffTime)
	g.Expect(status).To(Equal(exitOK), stderr)
	g.Expect(stdout).To(ContainSubstring("kind: CloudProfile"))
}
