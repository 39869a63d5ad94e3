// Package cli is the profilesync command line: the operator's manager and
// the offline commands that check profiles without a cluster, for pull
// requests and for people. It is the top of the module's import graph: it
// may import the controllers, the webhooks and every internal package, and
// nothing imports it but main.
package cli

import (
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// Exit statuses of every command.
const (
	exitOK           = 0
	exitInvalidInput = 1
	exitUsage        = 2
)

// Execute runs the profilesync command line with args (without the program
// name) and returns the process exit status: 0 success, 1 invalid input,
// 2 usage error.
func Execute(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	return execute(NewRootCommand(stdin, stdout, stderr), args)
}

// NewRootCommand returns the profilesync command with every subcommand,
// reading and writing the given streams. Run it with Execute's exit
// statuses through execute, not with cobra's Execute: errors are silenced
// here and reported there.
func NewRootCommand(stdin io.Reader, stdout, stderr io.Writer) *cobra.Command {
	return newRootCommand(stdin, stdout, stderr, runManager)
}

// newRootCommand takes the function that starts the manager, so that tests
// can check how its flags are parsed without starting one.
func newRootCommand(stdin io.Reader, stdout, stderr io.Writer, startManager managerStarter) *cobra.Command {
	var flags managerFlags
	root := &cobra.Command{
		Use:   "profilesync",
		Short: "Keep cloud profiles in Git and drive their version lifecycles",
		Long: `ProfileSync keeps cloud profiles in Git and drives their version lifecycles
on the cluster.

Without a command, profilesync runs the operator, exactly as 'profilesync
manager' does, and takes the manager's flags ('profilesync manager --help'
lists them). The other commands work without a cluster, with the same code
the operator runs: they check a change to the profiles in a pull request.`,
		Example: `  profilesync --enable-leader-election --storage-path=/data   # the operator, as config/manager runs it
  profilesync build overlays/prod                             # check a landscape before merging
  profilesync diff --base origin/main --head HEAD             # what a change does to every landscape
  profilesync completion bash > /etc/bash_completion.d/profilesync`,
		SilenceErrors: true,
		SilenceUsage:  true,
		RunE: func(*cobra.Command, []string) error {
			return startWithinBudget(startManager, &flags)
		},
	}
	// The Deployment runs `profilesync --flag...` (config/manager), so the
	// root takes the manager's flags; hidden, they leave 'profilesync --help'
	// to the commands.
	flags.bind(root.Flags())
	root.Flags().VisitAll(func(flag *pflag.Flag) { flag.Hidden = true })

	root.SetIn(stdin)
	root.SetOut(stdout)
	root.SetErr(stderr)
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return usageError{err: err} })
	root.AddCommand(
		newBuildCommand(),
		newDiffCommand(),
		newEvaluateCommand(),
		newTimelineCommand(),
		newProposeCommand(),
		newRolloutCommand(),
		newUpdatePathCommand(),
		newVerifyCommand(),
		newManagerCommand(startManager),
		newOpenAPICommand(),
		newVersionCommand(),
	)
	addCompletionCommand(root)
	return root
}

// execute runs root with args and turns the outcome into an exit status,
// reporting errors on root's stderr.
func execute(root *cobra.Command, args []string) int {
	if args == nil {
		args = []string{} // cobra reads os.Args for nil
	}
	root.SetArgs(args)
	cmd, err := root.ExecuteC()
	if err == nil {
		return exitOK
	}
	stderr := root.ErrOrStderr()
	var reported reportedError
	if errors.As(err, &reported) {
		return reported.status
	}
	var input inputError
	if errors.As(err, &input) {
		fmt.Fprintln(stderr, strings.TrimSpace(input.Error()))
		return exitInvalidInput
	}
	// A usageError, or cobra refusing the command line before a command
	// ran: an unknown command, arguments a built-in command does not take.
	name := strings.TrimPrefix(cmd.CommandPath(), root.Name()+" ")
	fmt.Fprintf(stderr, "%s: %v\nRun '%s --help' for usage.\n", name, err, cmd.CommandPath())
	return exitUsage
}

// usageError is a mistake in the command line (exit 2), as opposed to a
// problem in the profiles (exit 1).
type usageError struct{ err error }

func (e usageError) Error() string { return e.err.Error() }
func (e usageError) Unwrap() error { return e.err }

func usageErrorf(format string, args ...any) error {
	return usageError{err: fmt.Errorf(format, args...)}
}

// inputError is a problem with what a command read (exit 1), printed on
// stderr as it is.
type inputError struct{ err error }

func (e inputError) Error() string { return e.err.Error() }
func (e inputError) Unwrap() error { return e.err }

// reportedError ends a command whose failure is already on stderr or in the
// log; execute only returns its status.
type reportedError struct{ status int }

func (e reportedError) Error() string { return fmt.Sprintf("exit status %d", e.status) }

// errInvalidInputReported ends a command after it printed every problem
// with the input.
var errInvalidInputReported = reportedError{status: exitInvalidInput}

// failOnInput adapts a command's work to cobra: an error it returns is a
// problem with the input unless it says it is a usage error or reported.
// Only errors that pass through here exit 1; whatever else cobra returns is
// a usage error.
func failOnInput(run func(cmd *cobra.Command, args []string) error) func(*cobra.Command, []string) error {
	return func(cmd *cobra.Command, args []string) error {
		err := run(cmd, args)
		var usage usageError
		var reported reportedError
		if err == nil || errors.As(err, &usage) || errors.As(err, &reported) {
			return err
		}
		return inputError{err: err}
	}
}
