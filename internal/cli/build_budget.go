package cli

import (
	"fmt"

	"github.com/spf13/pflag"

	"github.com/profilesync/profilesync/internal/rollout"
)

// maxBuildsFlag bounds the builds of one run of a command across
// landscapes. Each build is bounded on its own (--timeout, --memory, the
// read limits), but a command that builds every landscape of the rollout
// file (diff twice, base and head; rollout status; timeline
// --all-landscapes) multiplies that by their number, up to the file's 100.
const (
	maxBuildsFlag     = "max-builds"
	defaultMaxBuilds  = 50
	maxBuildsFlagHelp = "The most overlays one run builds in all, across landscapes (diff builds each twice, base and head); " +
		"a run that would build more is refused before its first build. Each build has its own limits besides."
)

func bindMaxBuilds(fs *pflag.FlagSet, maxBuilds *int) {
	fs.IntVar(maxBuilds, maxBuildsFlag, defaultMaxBuilds, maxBuildsFlagHelp)
}

// buildCount is the builds a run is about to start: landscapes overlays,
// each built perLandscape times (what says how, "base and head").
type buildCount struct {
	landscapes, perLandscape int
	what                     string
	// fromRolloutFile is set when the landscapes are those of the rollout
	// file rather than the command line's, so the error names the file.
	fromRolloutFile bool
}

// check refuses, before any build, a run that would build more overlays than
// maxBuilds allows, naming the rollout file's landscapes when they are the
// cause, the limit, and the flag that raises it.
func (c buildCount) check(maxBuilds int) error {
	builds := c.landscapes * c.perLandscape
	if maxBuilds < 1 {
		return usageErrorf("--%s must be at least 1, not %d", maxBuildsFlag, maxBuilds)
	}
	if builds <= maxBuilds {
		return nil
	}
	how := ""
	if c.perLandscape > 1 {
		how = fmt.Sprintf(", each built %d times (%s),", c.perLandscape, c.what)
	}
	if c.fromRolloutFile {
		return fmt.Errorf("%s: landscapes: %d landscapes%s make %d builds, more than --%s allows (%d): select the landscapes to build, or raise --%s",
			rollout.FileName, c.landscapes, how, builds, maxBuildsFlag, maxBuilds, maxBuildsFlag)
	}
	return fmt.Errorf("%d landscapes%s make %d builds, more than --%s allows (%d): select fewer, or raise --%s",
		c.landscapes, how, builds, maxBuildsFlag, maxBuilds, maxBuildsFlag)
}
