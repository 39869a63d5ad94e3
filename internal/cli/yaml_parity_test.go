package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
)

// trickyProfile puts line into the lifecycle stage of a profile's version;
// version, when set, replaces the version as written.
func trickyProfile(line, version string) string {
	if version == "" {
		version = "1.31.0"
	}
	return "apiVersion: core.profilesync.io/v1alpha1\nkind: CloudProfile\nmetadata:\n  name: p\nspec:\n  type: aws\n" +
		requiredLists[0].lines + requiredLists[1].lines + requiredLists[2].lines +
		"  kubernetes:\n    versions:\n    - version: " + version +
		"\n      lifecycle:\n      - classification: preview\n        startTime: \"2025-01-01T00:00:00Z\"\n      - " + line + "\n"
}

// TestEveryCommandReadsYAMLAsTheSyncDoes runs every command that reads
// profiles, and the build the sync runs, on each value of the corpus: they
// accept the same profiles and refuse the others with the same problem.
func TestEveryCommandReadsYAMLAsTheSyncDoes(t *testing.T) {
	stage := func(line string) string {
		return trickyProfile("classification: supported\n        "+line, "")
	}
	withLabel := func(label string) string {
		return strings.Replace(stage(`startTime: "2025-03-01T00:00:00Z"`), "  name: p\n", "  name: p\n  labels:\n    "+label+"\n", 1)
	}
	cases := []struct{ name, profile, wantErr string }{
		{name: "a quoted RFC 3339 time", profile: stage(`startTime: "2025-03-01T00:00:00Z"`)},
		{name: "an unquoted date", profile: stage("startTime: 2025-03-01"),
			wantErr: "startTime: Invalid value: 2025-03-01 as written: YAML types an unquoted date or time as a timestamp"},
		{name: "an unquoted date and time", profile: stage("startTime: 2025-03-01 12:00:00"), wantErr: `quote it: "2025-03-01 12:00:00"`},
		{name: "an unquoted RFC 3339 time, which every reader passes on as written", profile: stage("startTime: 2025-03-01T00:00:00Z")},
		{name: "an unquoted RFC 3339 time with a zone offset", profile: stage("startTime: 2025-03-01T01:00:00+01:00")},
		{name: "an unquoted time whose zero fraction kustomize drops", profile: stage("startTime: 2025-03-01T00:00:00.000Z"),
			wantErr: `quote it: "2025-03-01T00:00:00.000Z"`},
		{name: "an unquoted time without a zone, a string to YAML and no RFC 3339 time", profile: stage("startTime: 2025-03-01T00:00:00"),
			wantErr: `startTime in body must be of type date-time: "2025-03-01T00:00:00"`},
		{name: "a version typed as a number", profile: trickyProfile("classification: supported\n        startTime: \"2025-03-01T00:00:00Z\"", "1.30"),
			wantErr: `spec.kubernetes.versions[0].version: Invalid value: 1.30 as written: YAML reads it as a number, and this field is a string; quote it: "1.30"`},
		{name: "yes, a string in YAML 1.2 and a boolean in 1.1", profile: withLabel("usable: yes"),
			wantErr: `metadata.labels.usable: Invalid value: yes as written: YAML 1.2, which the sync reads, takes it as the string "yes", YAML 1.1 as a boolean`},
		{name: "on, a string in YAML 1.2 and a boolean in 1.1", profile: withLabel("name: on"), wantErr: `metadata.labels.name: Invalid value: on as written`},
		{name: "an octal-looking value", profile: withLabel("team: 0755"),
			wantErr: "metadata.labels.team: Invalid value: 0755 as written: YAML 1.1 and YAML 1.2, which the sync reads, take it as different values"},
		{name: "a quoted yes", profile: withLabel(`usable: "yes"`)},
		{name: "a provider type and an access restriction written twice, which Gardener accepts as once", profile: strings.Replace(
			stage(`startTime: "2025-03-01T00:00:00Z"`), "  - name: eu-1\n",
			"  - name: eu-1\n    accessRestrictions:\n    - name: eu-access-only\n    - name: eu-access-only\n  seedSelector:\n    providerTypes: [aws, aws]\n", 1)},
	}
	gardenerExample, err := os.ReadFile("../../test/testdata/gardener/gardener-cloudprofile.yaml")
	if err != nil {
		t.Fatal(err)
	}
	cases = append(cases, struct{ name, profile, wantErr string }{
		name: "Gardener's example profile, with its unquoted expirationDate: 2022-11-30T01:02:03Z", profile: string(gardenerExample),
	})
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			root := t.TempDir()
			g.Expect(os.Mkdir(filepath.Join(root, ".git"), 0o755)).To(Succeed())
			g.Expect(os.Mkdir(filepath.Join(root, "base"), 0o755)).To(Succeed())
			g.Expect(os.WriteFile(filepath.Join(root, "base", "p.yaml"), []byte(tc.profile), 0o644)).To(Succeed())
			base := filepath.Join(root, "base")
			commands := map[string][]string{
				"evaluate": {"evaluate", "--at", "2025-06-01T00:00:00Z", "-f", base},
				"timeline": {"timeline", "--at", "2025-06-01T00:00:00Z", "-f", base},
				"build":    {"build", "--at", "2025-06-01T00:00:00Z", base},
			}
			if strings.Contains(tc.profile, "\n  name: p\n") {
				commands["update-path"] = []string{"update-path", "--at", "2025-06-01T00:00:00Z", "-f", base, "--profile", "p", "--kubernetes", "1.31.0"}
			}
			for name, args := range commands {
				status, _, stderr := run(t, args[0], "", args[1:]...)
				if tc.wantErr == "" {
					g.Expect(status).To(Equal(exitOK), "%s: %s", name, stderr)
					continue
				}
				g.Expect(status).To(Equal(exitInvalidInput), "%s: %s", name, stderr)
				g.Expect(stderr).To(ContainSubstring(tc.wantErr), name)
			}
		})
	}
}

// TestEveryCommandReportsTypingSchemaAndRuleProblemsInOneRound: a version
// written twice hides neither the missing spec.type nor the namespaced
// profile's invalid parent, which is named as invalid, not as missing.
func TestEveryCommandReportsTypingSchemaAndRuleProblemsInOneRound(t *testing.T) {
	g := NewWithT(t)
	profiles := "apiVersion: core.profilesync.io/v1alpha1\nkind: CloudProfile\nmetadata:\n  name: p\nspec:\n" +
		requiredLists[0].lines + requiredLists[1].lines + requiredLists[2].lines +
		"  kubernetes:\n    versions:\n    - version: 1.31.0\n    - version: 1.31.0\n---\n" +
		"apiVersion: core.profilesync.io/v1alpha1\nkind: NamespacedCloudProfile\nmetadata:\n  name: team\n  namespace: team\nspec:\n  parent: {kind: CloudProfile, name: p}\n"
	want := []string{
		`p.yaml: CloudProfile/p: spec.kubernetes.versions[1] (1.31.0): Duplicate value: {"version":"1.31.0"}: each key may appear once in this list`,
		`p.yaml: CloudProfile/p: spec.type: Required value`,
		`p.yaml: NamespacedCloudProfile/team/team: spec.parent.name: Invalid value: "p": the parent CloudProfile is invalid (see its problems), so this profile cannot be merged`,
	}
	dir := t.TempDir()
	file := filepath.Join(dir, "p.yaml")
	g.Expect(os.WriteFile(file, []byte(profiles), 0o644)).To(Succeed())
	for name, args := range map[string][]string{
		"evaluate":    {"evaluate", "--at", "2025-06-01T00:00:00Z", "-f", file},
		"timeline":    {"timeline", "--at", "2025-06-01T00:00:00Z", "-f", file},
		"update-path": {"update-path", "--at", "2025-06-01T00:00:00Z", "-f", file, "--profile", "p", "--kubernetes", "1.31.0"},
	} {
		status, _, stderr := run(t, args[0], "", args[1:]...)
		g.Expect(status).To(Equal(exitInvalidInput), "%s: %s", name, stderr)
		var lines []string
		for _, line := range strings.Split(strings.TrimSpace(stderr), "\n") {
			lines = append(lines, strings.TrimPrefix(line, dir+string(filepath.Separator)))
		}
		g.Expect(lines).To(Equal(want), name)
	}
}
