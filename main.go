// Command profilesync is the ProfileSync operator. Without a command it runs
// the controller manager; the other commands work without a cluster, for
// pull-request checks and for people (see `profilesync help`). The command
// line lives in internal/cli.
package main

import (
	"os"

	"github.com/profilesync/profilesync/internal/cli"
)

func main() {
	os.Exit(cli.Execute(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}
