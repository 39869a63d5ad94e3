package repofile

// Severity says what a finding of a settings file's rule does: an error
// refuses the change (the CLI exits non-zero, the operator refuses the
// revision), a warning is only reported. Both settings files set it, the
// versioning policy per rule and the rollout file per lag, so it lives here,
// below both: internal/rollout, and through it internal/gitsource, reads
// the rollout file without compiling the policy and the profile model.
type Severity string

const (
	// SeverityWarning findings are reported; they refuse nothing.
	SeverityWarning Severity = "warning"
	// SeverityError findings refuse the change.
	SeverityError Severity = "error"
)
