package cli

import (
	"fmt"
	"runtime"
	"runtime/debug"

	"github.com/spf13/cobra"
)

// The release and commit the binary was built from, set by the build with
// -ldflags "-X github.com/profilesync/profilesync/internal/cli.version=v0.4.0
// -X github.com/profilesync/profilesync/internal/cli.commit=SHA" (the
// Makefile's build and the Dockerfile do). Empty when the build did not set
// them: the version is then the module's (go install ...@v0.4.0 records it)
// and the commit Go's VCS stamp (vcs.revision), which a build in a Git work
// tree records and a build without .git/ (the Dockerfile's) does not.
var (
	version string
	commit  string
)

// ldflagsVersionVariable is the -X name of version, for the build files and
// their test.
const ldflagsVersionVariable = "github.com/profilesync/profilesync/internal/cli.version"

func newVersionCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print the version, the commit and the Go version of this binary",
		Long: `Prints the release this binary was built as, the commit it was built from
(with "(modified)" when the work tree had uncommitted changes) and the Go
version that compiled it, one per line. "unknown" stands for what the build
did not record.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			info, _ := debug.ReadBuildInfo()
			_, err := fmt.Fprint(cmd.OutOrStdout(), describeBuild(version, commit, info, runtime.Version()))
			return err
		},
	}
}

// describeBuild writes what 'profilesync version' prints: the version and
// commit set at link time, else those info records, and goVersion.
func describeBuild(version, commit string, info *debug.BuildInfo, goVersion string) string {
	modified := false
	if info != nil {
		if version == "" && info.Main.Version != "" {
			version = info.Main.Version
		}
		for _, setting := range info.Settings {
			switch setting.Key {
			case "vcs.revision":
				if commit == "" {
					commit = setting.Value
				}
			case "vcs.modified":
				modified = setting.Value == "true"
			}
		}
	}
	if version == "" {
		version = "unknown"
	}
	if commit == "" {
		commit = "unknown"
	} else if modified {
		commit += " (modified)"
	}
	return fmt.Sprintf("version: %s\ncommit: %s\ngo: %s\n", version, commit, goVersion)
}
