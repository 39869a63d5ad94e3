package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	. "github.com/onsi/gomega"

	"github.com/profilesync/profilesync/internal/cli"
)

// readmeCommand is one `$ profilesync ...` line of a console block in
// README.md and the output the README shows for it.
type readmeCommand struct {
	line   string
	args   []string
	output string
}

// readmeCommands extracts the commands of the README's ```console blocks.
func readmeCommands(readme string) []readmeCommand {
	var commands []readmeCommand
	inConsole := false
	for _, line := range strings.Split(readme, "\n") {
		switch {
		case strings.HasPrefix(line, "```console"):
			inConsole = true
		case strings.HasPrefix(line, "```"):
			inConsole = false
		case inConsole && strings.HasPrefix(line, "$ profilesync "):
			commands = append(commands, readmeCommand{line: line, args: strings.Fields(strings.TrimPrefix(line, "$ profilesync "))})
		case inConsole && len(commands) > 0:
			commands[len(commands)-1].output += line + "\n"
		}
	}
	return commands
}

// TestREADMECommandsPrintWhatTheREADMEShows runs every offline command the
// README shows, in examples/profiles-repo, and compares what it prints.
func TestREADMECommandsPrintWhatTheREADMEShows(t *testing.T) {
	readme, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	commands := readmeCommands(string(readme))
	if len(commands) < 3 {
		t.Fatalf("found %d commands in README.md's console blocks, want at least 3", len(commands))
	}
	t.Chdir(filepath.Join("examples", "profiles-repo"))
	for _, c := range commands {
		t.Run(c.line, func(t *testing.T) {
			g := NewWithT(t)
			var stdout, stderr bytes.Buffer
			code := cli.Execute(c.args, strings.NewReader(""), &stdout, &stderr)
			g.Expect(code).To(Equal(0), stderr.String())
			g.Expect(stdout.String()).To(Equal(c.output))
		})
	}
}
