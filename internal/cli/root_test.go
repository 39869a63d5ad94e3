package cli

import (
	"testing"

	. "github.com/onsi/gomega"
)

func TestHelpListsTheCommands(t *testing.T) {
	for _, args := range [][]string{{"help"}, {"--help"}, {"-h"}} {
		t.Run(args[0], func(t *testing.T) {
			g := NewWithT(t)
			status, stdout, stderr := run(t, args[0], "", args[1:]...)
			g.Expect(status).To(Equal(exitOK))
			g.Expect(stderr).To(BeEmpty())
			g.Expect(stdout).To(ContainSubstring("Available Commands:"))
			for _, name := range []string{"build", "diff", "evaluate", "timeline", "rollout", "update-path", "completion", "manager", "openapi", "version"} {
				g.Expect(stdout).To(MatchRegexp(`\n  %s +\S`, name), "the command list names %s with its summary", name)
			}
		})
	}
}

func TestCompletionPrintsAScriptForEachShell(t *testing.T) {
	for shell, marker := range map[string]string{
		"bash": "complete -o default -F __start_profilesync profilesync",
		"zsh":  "#compdef profilesync",
		"fish": "complete -c profilesync",
	} {
		t.Run(shell, func(t *testing.T) {
			g := NewWithT(t)
			status, stdout, stderr := run(t, "completion", "", shell)
			g.Expect(status).To(Equal(exitOK))
			g.Expect(stderr).To(BeEmpty())
			g.Expect(stdout).To(ContainSubstring(marker))
		})
	}
}

func TestUnknownCommandIsAUsageError(t *testing.T) {
	g := NewWithT(t)
	status, stdout, stderr := run(t, "evalute", "", "-f", "-")
	g.Expect(status).To(Equal(exitUsage))
	g.Expect(stdout).To(BeEmpty())
	g.Expect(stderr).To(HavePrefix(`profilesync: unknown command "evalute" for "profilesync"`))
	g.Expect(stderr).To(ContainSubstring("Did you mean this?\n\tevaluate\n"))
	g.Expect(stderr).To(HaveSuffix("Run 'profilesync --help' for usage.\n"))
}
