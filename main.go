// Command profilesync is the ProfileSync operator. Without a subcommand it
// runs the controller manager; the subcommands work without a cluster, for
// pull-request checks and for people (see `profilesync help`).
package main

import (
	"fmt"
	"io"
	"os"
	"sort"
)

// subcommand runs one offline command with its arguments (without the
// subcommand's name) and returns the process exit status: 0 success, 1 invalid
// input, 2 usage error.
type subcommand struct {
	summary string
	run     func(args []string, stdin io.Reader, stdout, stderr io.Writer) int
}

// subcommands is filled by the files that implement them.
var subcommands = map[string]subcommand{}

func main() {
	if len(os.Args) > 1 {
		name := os.Args[1]
		if name == "help" || name == "-h" || name == "--help" {
			printUsage(os.Stdout)
			os.Exit(0)
		}
		if name == "manager" {
			os.Exit(runManager(os.Args[2:]))
		}
		if cmd, ok := subcommands[name]; ok {
			os.Exit(cmd.run(os.Args[2:], os.Stdin, os.Stdout, os.Stderr))
		}
	}
	os.Exit(runManager(os.Args[1:]))
}

func printUsage(w io.Writer) {
	fmt.Fprintln(w, "Usage:")
	fmt.Fprintln(w, "  profilesync [flags]            run the operator (profilesync manager --help lists the flags)")
	for _, name := range sortedSubcommandNames() {
		fmt.Fprintf(w, "  profilesync %-18s %s\n", name, subcommands[name].summary)
	}
	fmt.Fprintln(w, "\nRun 'profilesync COMMAND --help' for a command's flags and an example.")
}

func sortedSubcommandNames() []string {
	names := make([]string, 0, len(subcommands))
	for name := range subcommands {
		names = append(names, name)
	}
	sort.Strings(names)
	return names
}
