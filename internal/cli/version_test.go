package cli

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
)

func TestDescribeBuildPrefersWhatTheBuildSet(t *testing.T) {
	stamped := &debug.BuildInfo{
		Main: debug.Module{Path: "github.com/profilesync/profilesync", Version: "v0.4.0"},
		Settings: []debug.BuildSetting{
			{Key: "vcs", Value: "git"},
			{Key: "vcs.revision", Value: "1a2b3c4d5e6f"},
			{Key: "vcs.modified", Value: "false"},
		},
	}
	modified := &debug.BuildInfo{Main: debug.Module{Version: "(devel)"}, Settings: []debug.BuildSetting{
		{Key: "vcs.revision", Value: "1a2b3c4d5e6f"}, {Key: "vcs.modified", Value: "true"},
	}}
	for _, tt := range []struct {
		name            string
		version, commit string
		info            *debug.BuildInfo
		want            string
	}{
		{"the version set at link time wins over the module's", "v0.5.0-rc.1", "", stamped, "version: v0.5.0-rc.1\ncommit: 1a2b3c4d5e6f\ngo: go1.99\n"},
		{"without it, go install's module version and VCS stamp are used", "", "", stamped, "version: v0.4.0\ncommit: 1a2b3c4d5e6f\ngo: go1.99\n"},
		{"a commit set at link time wins over the VCS stamp", "v0.5.0", "feedface", stamped, "version: v0.5.0\ncommit: feedface\ngo: go1.99\n"},
		{"a build from a modified work tree says so", "", "", modified, "version: (devel)\ncommit: 1a2b3c4d5e6f (modified)\ngo: go1.99\n"},
		{"what nothing recorded is unknown", "", "", nil, "version: unknown\ncommit: unknown\ngo: go1.99\n"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			NewWithT(t).Expect(describeBuild(tt.version, tt.commit, tt.info, "go1.99")).To(Equal(tt.want))
		})
	}
}

func TestVersionPrintsTheGoVersionOfTheBinary(t *testing.T) {
	g := NewWithT(t)
	status, stdout, stderr := run(t, "version", "")
	g.Expect(status).To(Equal(exitOK), stderr)
	lines := strings.Split(strings.TrimSuffix(stdout, "\n"), "\n")
	g.Expect(lines).To(HaveLen(3))
	g.Expect(lines[0]).To(HavePrefix("version: "))
	g.Expect(lines[1]).To(HavePrefix("commit: "))
	g.Expect(lines[2]).To(Equal("go: " + runtime.Version()))
}

// TestTheBuildFilesSetTheVersion builds the binary as the Makefile and the
// Dockerfile do, with -X ldflagsVersionVariable, and checks that 'version'
// prints it: a variable renamed or moved would make -X silently do nothing.
func TestTheBuildFilesSetTheVersion(t *testing.T) {
	g := NewWithT(t)
	for _, file := range []string{"Makefile", "Dockerfile"} {
		content, err := os.ReadFile(filepath.Join("..", "..", file))
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(string(content)).To(ContainSubstring("-X "+ldflagsVersionVariable+"="), "%s sets the version", file)
	}
	bin := filepath.Join(t.TempDir(), "profilesync")
	build := exec.Command("go", "build", "-ldflags", "-X "+ldflagsVersionVariable+"=v9.8.7-test -X github.com/profilesync/profilesync/internal/cli.commit=c0ffee", "-o", bin, ".")
	build.Dir = filepath.Join("..", "..")
	out, err := build.CombinedOutput()
	g.Expect(err).NotTo(HaveOccurred(), string(out))
	out, err = exec.Command(bin, "version").Output()
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(string(out)).To(Equal("version: v9.8.7-test\ncommit: c0ffee\ngo: " + runtime.Version() + "\n"))
}
