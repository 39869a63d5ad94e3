package cli

import (
	"io"
	"time"

	"github.com/spf13/cobra"
)

func newEvaluateCommand() *cobra.Command {
	var at timeFlag
	var inputs inputOptions
	cmd := &cobra.Command{
		Use:   "evaluate [--at TIME] -f PATH [-f PATH]...",
		Short: "Print profiles with the status the controllers would write at a time",
		Long: `Reads CloudProfiles and NamespacedCloudProfiles (core.profilesync.io/v1alpha1
or core.gardener.cloud/v1beta1), validates them as one set and prints them as a
YAML stream, in input order, with the status the controllers write at TIME:
every version's classification, the next classification and when it starts,
status.nextTransitionTime and, for a namespaced profile, the merged
status.cloudProfileSpec (its parent must be among the inputs).

PATH is a file, a directory (every *.yaml and *.yml file below it, sorted,
kustomization and policy files skipped) or - for standard input. Files are
read as the sync reads a repository: only regular files inside the root
(--root, by default the Git work tree containing PATH, else PATH's own
directory), never in .git/, through no symbolic link that leads out of the
root, each within --max-file-size and all together within
--max-rendered-size.

Exit status: 0 valid (warnings on stderr, prefixed "warning: "); 1 invalid
input (nothing on stdout, every problem on stderr as
FILE: KIND/NAME: FIELD: message); 2 usage error.`,
		Example: `  profilesync evaluate --at 2024-12-03T00:00:00Z -f profiles/
  kustomize build overlays/prod | profilesync evaluate -f -`,
		DisableFlagsInUseLine: true,
		Args:                  inputsOnlyWithFilenameFlag,
		RunE: failOnInput(func(cmd *cobra.Command, _ []string) error {
			reader, err := newInputReader(inputs)
			if err != nil {
				return err
			}
			read, err := readInputs(inputs, reader, cmd.InOrStdin())
			if err != nil {
				return err
			}
			return printEvaluated(read, at.or(time.Now()), cmd.OutOrStdout(), cmd.ErrOrStderr())
		}),
	}
	flags := cmd.Flags()
	flags.SortFlags = false
	flags.Var(&at, "at", "evaluate at this RFC 3339 time (default now)")
	bindInputs(flags, &inputs)
	return cmd
}

// printEvaluated validates and evaluates docs at t and prints them; on
// invalid input nothing reaches stdout.
func printEvaluated(inputs profileInputs, at time.Time, stdout, stderr io.Writer) error {
	evaluated, ok := evaluateProfiles(inputs, at, stderr)
	if !ok {
		return errInvalidInputReported
	}
	return writeProfiles(evaluated, stdout)
}
