package cli

import (
	"bytes"
	"fmt"
	"io"

	"github.com/profilesync/profilesync/internal/policy"
	"github.com/profilesync/profilesync/internal/profile"
)

// printPolicyFindings writes a landscape's policy findings to stderr as
// problems are written: errors as they are, warnings prefixed "warning: ",
// each line once (lines already in printed are skipped and the new ones
// added). ok is false when there is an error.
func printPolicyFindings(findings policy.Findings, printed map[string]bool, stderr io.Writer) (ok bool) {
	write := func(line string) {
		if !printed[line] {
			printed[line] = true
			fmt.Fprintln(stderr, line)
		}
	}
	for _, p := range findings.Warnings.Summarize() {
		write("warning: " + p.String())
	}
	for _, p := range findings.Errors.Summarize() {
		write(p.String())
	}
	return len(findings.Errors) == 0
}

// writeProfiles prints evaluated profiles as a YAML stream; nothing reaches
// stdout when encoding fails.
func writeProfiles(evaluated []profile.Object, stdout io.Writer) error {
	var out bytes.Buffer
	if err := profile.EncodeDocuments(&out, evaluated); err != nil {
		return fmt.Errorf("printing profiles: %w", err)
	}
	if _, err := stdout.Write(out.Bytes()); err != nil {
		return fmt.Errorf("printing profiles: %w", err)
	}
	return nil
}
