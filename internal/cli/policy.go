package cli

import (
	"bytes"
	"fmt"
	"io"
	"time"

	"github.com/spf13/pflag"

	"github.com/profilesync/profilesync/internal/policy"
	"github.com/profilesync/profilesync/internal/render/profile"
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

// bindPolicyHorizon adds --policy-horizon, how far ahead of --at 'build' and
// 'diff' look for policy errors that time alone brings.
func bindPolicyHorizon(flags *pflag.FlagSet, horizon *time.Duration) {
	flags.Var(horizonFlag{horizon}, "policy-horizon",
		"also check the versioning policy at every transition up to this far after --at, a duration like 180d; "+
			"an error found there fails, naming its date (from then on the operator refuses every revision)")
}

// checkPolicyAhead checks head against p at now (base and commit for the
// notice rule, as Policy.Check) and adds to the errors those that head, left
// as it is, starts to break within horizon after now: a pull request that
// schedules a refusal by the operator fails.
func checkPolicyAhead(p *policy.Policy, head, base []profile.Object, now, commit time.Time, horizon time.Duration) policy.Findings {
	findings := p.Check(head, base, now, commit)
	findings.Errors = append(findings.Errors, p.ScheduledErrors(head, now, now.Add(horizon))...)
	return findings
}
