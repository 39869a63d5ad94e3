package cli

import (
	"bytes"
	"flag"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	"sigs.k8s.io/yaml"

	v1alpha1 "github.com/profilesync/profilesync/api/v1alpha1"
	"github.com/profilesync/profilesync/test/builders"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/ from the current output")

// profilesRepo is the fixture repository shared with the build and e2e tests.
var profilesRepo = filepath.Join("..", "..", "test", "testdata", "profiles-repo")

// run calls a command the way main does, with buffers for its streams.
func run(t *testing.T, name string, stdin string, args ...string) (status int, stdout, stderr string) {
	t.Helper()
	var out, errOut bytes.Buffer
	status = Execute(append([]string{name}, args...), strings.NewReader(stdin), &out, &errOut)
	return status, out.String(), errOut.String()
}

// assertGolden compares got with the golden file, or rewrites the file when
// the tests run with -update.
func assertGolden(t *testing.T, path string, got string) {
	t.Helper()
	builders.AssertGolden(t, path, []byte(got), *update)
}

// decodeStream reads evaluate's output back into profiles.
func decodeStream(t *testing.T, stream string) (cloudProfiles []v1alpha1.CloudProfile, namespaced []v1alpha1.NamespacedCloudProfile) {
	t.Helper()
	for _, doc := range strings.Split(stream, "\n---\n") {
		var header struct{ Kind string }
		if err := yaml.Unmarshal([]byte(doc), &header); err != nil {
			t.Fatalf("output is not YAML: %v\n%s", err, doc)
		}
		switch header.Kind {
		case v1alpha1.CloudProfileKind:
			var cp v1alpha1.CloudProfile
			if err := yaml.UnmarshalStrict([]byte(doc), &cp); err != nil {
				t.Fatalf("output is not a CloudProfile: %v", err)
			}
			cloudProfiles = append(cloudProfiles, cp)
		case v1alpha1.NamespacedCloudProfileKind:
			var ncp v1alpha1.NamespacedCloudProfile
			if err := yaml.UnmarshalStrict([]byte(doc), &ncp); err != nil {
				t.Fatalf("output is not a NamespacedCloudProfile: %v", err)
			}
			namespaced = append(namespaced, ncp)
		default:
			t.Fatalf("unexpected kind %q in output", header.Kind)
		}
	}
	return cloudProfiles, namespaced
}

func classifications(versions []v1alpha1.VersionStatus) []string {
	out := make([]string, len(versions))
	for i, v := range versions {
		out[i] = v.Version + " " + string(v.Classification)
	}
	return out
}

func TestHelpPrintsUsageWithAnExampleAndExitsZero(t *testing.T) {
	for _, name := range []string{"evaluate", "build", "diff", "update-path", "timeline", "openapi"} {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			status, stdout, stderr := run(t, name, "", "--help")
			g.Expect(status).To(Equal(exitOK))
			g.Expect(stdout).To(ContainSubstring("Usage:\n  profilesync " + name))
			g.Expect(stdout).To(ContainSubstring("Examples:\n  profilesync " + name))
			g.Expect(stderr).To(BeEmpty())
		})
	}
}

func TestUsageErrorsExitTwo(t *testing.T) {
	tests := []struct {
		name    string
		command string
		args    []string
		stderr  string
	}{
		{"an unknown flag", "evaluate", []string{"--bogus"}, "evaluate: unknown flag: --bogus"},
		{"no input", "evaluate", nil, "evaluate: no input: give at least one -f PATH"},
		{"a time that is not RFC 3339", "evaluate", []string{"--at", "2024-12-03", "-f", "-"}, `invalid argument "2024-12-03" for "--at" flag: not an RFC 3339 time`},
		{"a positional argument", "evaluate", []string{"profiles.yaml"}, `unexpected argument "profiles.yaml": inputs are given with -f`},
		{"build without a path", "build", nil, "build: expected exactly one PATH, got 0 arguments"},
		{"update-path without a version", "update-path", []string{"-f", "-", "--profile", "aws"}, "give --kubernetes VERSION or --machine-image IMAGE --version VERSION"},
		{"update-path with both subjects", "update-path", []string{"-f", "-", "--profile", "aws", "--kubernetes", "1.31.6", "--machine-image", "gardenlinux"}, "not both"},
		{"update-path with an image but no version", "update-path", []string{"-f", "-", "--profile", "aws", "--machine-image", "gardenlinux"}, "--machine-image and --version go together"},
		{"update-path without a profile", "update-path", []string{"-f", "-", "--kubernetes", "1.31.6"}, "--profile is required"},
		{"timeline ending before it starts", "timeline", []string{"-f", "-", "--at", "2025-01-01T00:00:00Z", "--until", "2024-01-01T00:00:00Z"}, "--until 2024-01-01T00:00:00Z is before --at 2025-01-01T00:00:00Z"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			status, stdout, stderr := run(t, tt.command, "", tt.args...)
			g.Expect(status).To(Equal(exitUsage))
			g.Expect(stdout).To(BeEmpty())
			g.Expect(stderr).To(ContainSubstring(tt.stderr))
			g.Expect(stderr).To(ContainSubstring("Run 'profilesync " + tt.command + " --help' for usage."))
		})
	}
}

func TestEvaluateGEP32Example(t *testing.T) {
	g := NewWithT(t)
	status, stdout, stderr := run(t, "evaluate", "", "--at", "2024-12-03T00:00:00Z", "-f", filepath.Join("testdata", "gep-32", "cloudprofile.yaml"))
	g.Expect(stderr).To(BeEmpty())
	g.Expect(status).To(Equal(exitOK))
	assertGolden(t, filepath.Join("testdata", "evaluate", "gep-32.yaml"), stdout)

	cloudProfiles, _ := decodeStream(t, stdout)
	g.Expect(cloudProfiles).To(HaveLen(1))
	g.Expect(cloudProfiles[0].APIVersion).To(Equal("core.profilesync.io/v1alpha1"), "a Gardener profile is read as ours")
	g.Expect(classifications(cloudProfiles[0].Status.Kubernetes.Versions)).To(Equal([]string{
		"1.30.6 supported", "1.27.0 supported", "1.28.0 supported", "1.18.0 expired", "2.0.0 unavailable",
	}))
	g.Expect(cloudProfiles[0].Status.NextTransitionTime.UTC().Format("2006-01-02")).To(Equal("2025-03-01"), "1.30.6 is deprecated next")
}

func TestEvaluateGEP32NamespacedExample(t *testing.T) {
	g := NewWithT(t)
	status, stdout, stderr := run(t, "evaluate", "", "--at", "2024-12-03T00:00:00Z", "-f", filepath.Join("testdata", "gep-32-namespaced"))
	g.Expect(stderr).To(BeEmpty())
	g.Expect(status).To(Equal(exitOK))
	assertGolden(t, filepath.Join("testdata", "evaluate", "gep-32-namespaced.yaml"), stdout)

	_, namespaced := decodeStream(t, stdout)
	g.Expect(namespaced).To(HaveLen(1))
	merged := namespaced[0].Status.CloudProfileSpec.Kubernetes.Versions
	var lifecycles []string
	for _, v := range merged {
		stages := v.Version + ":"
		for _, s := range v.Lifecycle {
			stages += " " + string(s.Classification)
			if s.StartTime != nil {
				stages += "@" + s.StartTime.UTC().Format("2006-01-02")
			}
		}
		lifecycles = append(lifecycles, stages)
	}
	// GEP-32 "Compatibility with Namespaced Cloud Profiles": expired moves to
	// the overridden deprecated start.
	g.Expect(lifecycles).To(Equal([]string{
		"1.27.0:",
		"1.28.0: preview supported@2025-12-01",
		"1.18.0: supported@2022-01-01 deprecated@2024-06-01 expired@2024-06-01",
		"2.0.0: preview@2036-02-07",
	}))
	g.Expect(classifications(namespaced[0].Status.Kubernetes.Versions)).To(Equal([]string{
		"1.27.0 supported", "1.28.0 preview", "1.18.0 expired", "2.0.0 unavailable",
	}))
}

func TestEvaluateAtAStartTimeTheNewStageIsInEffect(t *testing.T) {
	g := NewWithT(t)
	status, stdout, stderr := run(t, "evaluate", "", "--at", "2025-03-01T00:00:00Z", "-f", filepath.Join("testdata", "at-start.yaml"))
	g.Expect(stderr).To(BeEmpty())
	g.Expect(status).To(Equal(exitOK))
	cloudProfiles, _ := decodeStream(t, stdout)
	g.Expect(classifications(cloudProfiles[0].Status.Kubernetes.Versions)).To(Equal([]string{"1.31.0 supported", "1.30.0 expired"}))
	g.Expect(cloudProfiles[0].Status.NextTransitionTime).To(BeNil(), "nothing is scheduled after the start")
}

func TestEvaluateReadsStdin(t *testing.T) {
	g := NewWithT(t)
	input, err := os.ReadFile(filepath.Join("testdata", "gep-32", "cloudprofile.yaml"))
	g.Expect(err).NotTo(HaveOccurred())
	status, stdout, stderr := run(t, "evaluate", string(input), "--at", "2024-12-03T00:00:00Z", "-f", "-")
	g.Expect(status).To(Equal(exitOK))
	g.Expect(stderr).To(BeEmpty())
	golden, err := os.ReadFile(filepath.Join("testdata", "evaluate", "gep-32.yaml"))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(stdout).To(Equal(string(golden)))

	status, stdout, stderr = run(t, "evaluate", "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\n", "-f", "-")
	g.Expect(status).To(Equal(exitInvalidInput))
	g.Expect(stdout).To(BeEmpty())
	g.Expect(stderr).To(HavePrefix("<stdin>: ConfigMap/x: unsupported kind ConfigMap"))
}

func TestEvaluateKeepsInputOrderAcrossPaths(t *testing.T) {
	g := NewWithT(t)
	status, stdout, _ := run(t, "evaluate", "", "--at", "2025-06-01T00:00:00Z",
		"-f", filepath.Join(profilesRepo, "base", "namespacedcloudprofiles.yaml"),
		"-f", filepath.Join(profilesRepo, "base", "cloudprofiles.yaml"))
	g.Expect(status).To(Equal(exitOK))
	cloudProfiles, namespaced := decodeStream(t, stdout)
	g.Expect(cloudProfiles).To(HaveLen(2))
	g.Expect(namespaced).To(HaveLen(2))
	g.Expect(strings.Index(stdout, "name: aws-team-a")).To(BeNumerically("<", strings.Index(stdout, "name: openstack\n")))
}

func TestEvaluateReportsEveryProblemOfADirectoryAtOnce(t *testing.T) {
	g := NewWithT(t)
	status, stdout, stderr := run(t, "evaluate", "", "-f", filepath.Join("testdata", "mixed"))
	g.Expect(status).To(Equal(exitInvalidInput))
	g.Expect(stdout).To(BeEmpty(), "nothing is printed for invalid input")
	dir := filepath.Join("testdata", "mixed")
	g.Expect(strings.Split(strings.TrimSuffix(stderr, "\n"), "\n")).To(HaveExactElements(
		filepath.Join(dir, "nested", "c-unknown-field.yml")+`: NamespacedCloudProfile/team-a/aws-team-a: spec.machineTypez: unknown field: the API has no such field (check spelling and indentation)`,
		filepath.Join(dir, "b-invalid-lifecycle.yaml")+`: CloudProfile/gcp: spec.kubernetes.versions[0] (1.31.6).lifecycle[1].classification: Invalid value: "supported": stages must be in the order preview, supported, deprecated, expired, but supported comes after deprecated (lifecycle[0])`,
		filepath.Join(dir, "b-invalid-lifecycle.yaml")+`: CloudProfile/gcp: spec.kubernetes.versions[0] (1.31.6).lifecycle[1].startTime: Required value: only the first lifecycle stage may omit startTime`,
		filepath.Join(dir, "b-invalid-lifecycle.yaml")+`: CloudProfile/gcp: spec.kubernetes.versions[1] (1.32.0).expirationDate: Forbidden: 1.32.0 is the highest Kubernetes version and may not expire: clusters must always have a version to move to`,
		HavePrefix(filepath.Join(dir, "nested", "c-unknown-field.yml")+`: NamespacedCloudProfile/team-b/aws-team-b: spec.parent.name: Not found: "azure"`),
	))
}

func TestEvaluatePrintsWarningsAndSucceeds(t *testing.T) {
	g := NewWithT(t)
	input, err := os.ReadFile(filepath.Join("testdata", "overlapping-supported.yaml"))
	g.Expect(err).NotTo(HaveOccurred())
	status, stdout, stderr := run(t, "evaluate", string(input), "-f", "-", "--at", "2025-06-01T00:00:00Z")
	g.Expect(status).To(Equal(exitOK))
	g.Expect(stdout).To(ContainSubstring("kind: CloudProfile"))
	g.Expect(stderr).To(HavePrefix("warning: <stdin>: CloudProfile/aws: spec.kubernetes.versions[1] (1.31.1): supported window"))
}

func TestEvaluateMissingFileExitsOne(t *testing.T) {
	g := NewWithT(t)
	status, stdout, stderr := run(t, "evaluate", "", "-f", filepath.Join("testdata", "does-not-exist.yaml"))
	g.Expect(status).To(Equal(exitInvalidInput))
	g.Expect(stdout).To(BeEmpty())
	g.Expect(stderr).To(ContainSubstring("does-not-exist.yaml: no such file or directory"))
}

func TestBuildGolden(t *testing.T) {
	for _, overlay := range []string{"dev", "prod"} {
		t.Run(overlay, func(t *testing.T) {
			g := NewWithT(t)
			status, stdout, stderr := run(t, "build", "", filepath.Join(profilesRepo, "overlays", overlay), "--at", "2025-06-01T00:00:00Z", "--root", profilesRepo)
			g.Expect(stderr).To(BeEmpty())
			g.Expect(status).To(Equal(exitOK))
			assertGolden(t, filepath.Join("testdata", "build", overlay+".yaml"), stdout)
		})
	}
}

func TestBuildNamesTheFileOfEachProblem(t *testing.T) {
	g := NewWithT(t)
	root := t.TempDir()
	files := map[string]string{
		"base/kustomization.yaml":    "resources: [profile.yaml]\n",
		"base/profile.yaml":          strings.Replace(profileWith("  type: aws\n  kubernetes:\n    versions:\n    - version: \"1.31\"\n"), "name: p\n", "name: aws\n", 1),
		"overlay/kustomization.yaml": "resources: [../base, https://example.com/more.yaml]\n",
	}
	for path, content := range files {
		g.Expect(os.MkdirAll(filepath.Join(root, filepath.Dir(path)), 0o755)).To(Succeed())
		g.Expect(os.WriteFile(filepath.Join(root, path), []byte(content), 0o644)).To(Succeed())
	}

	status, stdout, stderr := run(t, "build", "", filepath.Join(root, "overlay"), "--root", root)
	g.Expect(status).To(Equal(exitInvalidInput))
	g.Expect(stdout).To(BeEmpty())
	g.Expect(stderr).To(Equal(`overlay/kustomization.yaml: resources entry "https://example.com/more.yaml": remote locations are refused: a build reads only the repository, never the network; copy what it names into the repository` + "\n"))

	g.Expect(os.WriteFile(filepath.Join(root, "overlay", "kustomization.yaml"), []byte("resources: [../base]\n"), 0o644)).To(Succeed())
	status, stdout, stderr = run(t, "build", "", filepath.Join(root, "overlay"), "--root", root)
	g.Expect(status).To(Equal(exitInvalidInput))
	g.Expect(stdout).To(BeEmpty())
	g.Expect(stderr).To(HavePrefix(`base/profile.yaml: CloudProfile/aws: spec.kubernetes.versions[0] (1.31).version: Invalid value: "1.31"`))
}

func TestUpdatePath(t *testing.T) {
	base := filepath.Join(profilesRepo, "base")
	tests := []struct {
		name string
		args []string
		want string
	}{
		{
			name: "Kubernetes: a deprecated version has no patch to go to but a forced path to the next minor",
			args: []string{"--profile", "aws", "--kubernetes", "1.30.10"},
			want: `{"auto":null,"force":"1.31.6"}`,
		},
		{
			name: "Kubernetes: the next minor's only version is preview, so there is no forced path",
			args: []string{"--profile", "aws", "--kubernetes", "1.32.2"},
			want: `{"auto":null,"force":null}`,
		},
		{
			name: "machine image with strategy minor: forced to the lowest higher major",
			args: []string{"--profile", "aws", "--machine-image", "gardenlinux", "--version", "1443.10.0"},
			want: `{"auto":null,"force":"1592.4.0"}`,
		},
		{
			name: "machine image with the default strategy major: auto to the highest, no forced path",
			args: []string{"--profile", "aws", "--machine-image", "ubuntu", "--version", "22.4.0"},
			want: `{"auto":"24.4.0","force":null}`,
		},
		{
			name: "a namespaced profile uses its merged spec",
			args: []string{"--profile", "aws-team-a", "--namespace", "team-a", "--kubernetes", "1.30.10"},
			want: `{"auto":null,"force":"1.31.6"}`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			args := append([]string{"-f", base, "--at", "2025-06-01T00:00:00Z"}, tt.args...)
			status, stdout, stderr := run(t, "update-path", "", args...)
			g.Expect(stderr).To(BeEmpty())
			g.Expect(status).To(Equal(exitOK))
			g.Expect(stdout).To(Equal(tt.want + "\n"))
		})
	}
}

func TestUpdatePathErrorsExitOne(t *testing.T) {
	base := filepath.Join(profilesRepo, "base")
	tests := []struct {
		name   string
		args   []string
		stderr string
	}{
		{"an unknown profile", []string{"--profile", "gcp", "--kubernetes", "1.31.6"}, `update-path: no CloudProfile "gcp" among the inputs`},
		{"a namespaced profile in another namespace", []string{"--profile", "aws-team-a", "--namespace", "team-b", "--kubernetes", "1.31.6"}, `update-path: no NamespacedCloudProfile "aws-team-a" in namespace "team-b" among the inputs`},
		{"an unknown machine image", []string{"--profile", "aws", "--machine-image", "flatcar", "--version", "1.0.0"}, "CloudProfile/aws: "},
		{"a Kubernetes version the profile does not list", []string{"--profile", "aws", "--kubernetes", "1.99.0"},
			"base/cloudprofiles.yaml: CloudProfile/aws: Kubernetes version 1.99.0 is not listed in the profile, which lists 1.33.1, 1.32.2, 1.31.6, 1.30.10\n"},
		{"a machine image version the profile does not list", []string{"--profile", "aws", "--machine-image", "gardenlinux", "--version", "9.9.9"},
			"base/cloudprofiles.yaml: CloudProfile/aws: machine image gardenlinux version 9.9.9 is not listed in the profile, which lists 1877.0.0, 1592.4.0, 1443.10.0\n"},
		{"a namespaced profile is checked by its merged spec", []string{"--profile", "aws-team-a", "--namespace", "team-a", "--kubernetes", "1.99.0"},
			"NamespacedCloudProfile/team-a/aws-team-a: Kubernetes version 1.99.0 is not listed in the profile"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			args := append([]string{"-f", base, "--at", "2025-06-01T00:00:00Z"}, tt.args...)
			status, stdout, stderr := run(t, "update-path", "", args...)
			g.Expect(status).To(Equal(exitInvalidInput))
			g.Expect(stdout).To(BeEmpty())
			g.Expect(stderr).To(ContainSubstring(tt.stderr))
		})
	}
}

func TestTimelineListsTransitionsInTimeOrder(t *testing.T) {
	g := NewWithT(t)
	status, stdout, stderr := run(t, "timeline", "", "-f", filepath.Join(profilesRepo, "base"),
		"--at", "2025-06-01T00:00:00Z", "--until", "2025-10-01T00:00:00Z")
	g.Expect(stderr).To(BeEmpty())
	g.Expect(status).To(Equal(exitOK))
	assertGolden(t, filepath.Join("testdata", "timeline.txt"), stdout)

	lines := strings.Split(strings.TrimSuffix(stdout, "\n"), "\n")
	g.Expect(lines[0]).To(MatchRegexp(`^WHEN\s+PROFILE\s+KIND OF VERSION\s+VERSION\s+FROM → TO$`))
	var times []string
	for _, line := range lines[1:] {
		times = append(times, strings.Fields(line)[0])
	}
	g.Expect(sort.StringsAreSorted(times)).To(BeTrue(), "transitions are in time order: %v", times)
	g.Expect(times[len(times)-1]).To(Equal("2025-10-01T00:00:00Z"), "--until is inclusive")
	// team-a keeps 1.30.10 until October: the merged spec is used.
	g.Expect(stdout).To(MatchRegexp(`2025-10-01T00:00:00Z\s+NamespacedCloudProfile/team-a/aws-team-a\s+kubernetes\s+1.30.10\s+deprecated → expired`))
	g.Expect(stdout).To(MatchRegexp(`2025-08-01T00:00:00Z\s+CloudProfile/aws\s+kubernetes\s+1.30.10\s+deprecated → expired`))
}

// TestProfilesyncBinaryEvaluate builds the command and runs it as a process,
// as a pull-request check would.
func TestProfilesyncBinaryEvaluate(t *testing.T) {
	g := NewWithT(t)
	binary := filepath.Join(t.TempDir(), "profilesync")
	build := exec.Command("go", "build", "-o", binary, "github.com/profilesync/profilesync")
	output, err := build.CombinedOutput()
	g.Expect(err).NotTo(HaveOccurred(), string(output))

	evaluate := exec.Command(binary, "evaluate", "--at", "2024-12-03T00:00:00Z", "-f", "-")
	input, err := os.Open(filepath.Join("testdata", "gep-32", "cloudprofile.yaml"))
	g.Expect(err).NotTo(HaveOccurred())
	defer input.Close()
	evaluate.Stdin = input
	var stdout, stderr bytes.Buffer
	evaluate.Stdout, evaluate.Stderr = &stdout, &stderr
	g.Expect(evaluate.Run()).To(Succeed(), stderr.String())
	golden, err := os.ReadFile(filepath.Join("testdata", "evaluate", "gep-32.yaml"))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(stdout.String()).To(Equal(string(golden)))

	invalid := exec.Command(binary, "evaluate", "-f", filepath.Join("testdata", "mixed"))
	invalid.Stdout, invalid.Stderr = io.Discard, io.Discard
	err = invalid.Run()
	g.Expect(err).To(HaveOccurred())
	g.Expect(invalid.ProcessState.ExitCode()).To(Equal(exitInvalidInput))
}
