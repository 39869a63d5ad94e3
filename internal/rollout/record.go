package rollout

import (
	"bytes"
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"time"

	strictjson "sigs.k8s.io/json"
)

// LandscapeRefPrefix is where the landscapes' records live in the profiles
// repository: the records of landscape "dev" are the history of
// refs/profilesync/landscapes/dev.
const LandscapeRefPrefix = "refs/profilesync/landscapes/"

// RecordFileName is the one file of a record commit's tree.
const RecordFileName = "record.json"

// RecordFormatVersion is the version of the record format that this
// operator writes and reads; a record of another version is refused, so a
// newer operator's records are never half understood.
const RecordFormatVersion = 1

// MaxRecordSize bounds a record file. Records are untrusted input (anyone
// who can push can write one), and a real record is a few hundred bytes.
const MaxRecordSize = 4 << 10

// maxLandscapeNameLength keeps a landscape name a DNS label, so it can also
// name a label value, a metric label and a ref component.
const maxLandscapeNameLength = 63

// RecordKind says what a landscape did with a revision.
type RecordKind string

const (
	// RecordApplied is a revision applied through the rollout: every
	// profile of it became Ready at ReadyAt.
	RecordApplied RecordKind = "applied"
	// RecordHotfix is a revision applied at once by name, ahead of the
	// rollout's order; it became Ready at ReadyAt. Downstream landscapes
	// count it as held like any applied revision: they still wait the
	// soak on it.
	RecordHotfix RecordKind = "hotfix"
	// RecordRefused is a revision the landscape refused (a build,
	// validation or policy failure): it kept what it ran before. It is
	// recorded so that no downstream landscape ever promotes that revision,
	// and it neither starts nor interrupts what the landscape holds.
	RecordRefused RecordKind = "refused"
	// RecordHeld says spec.rollout.hold was set at AppliedAt: the
	// landscape stays at Revision, the revision it runs, whatever qualifies,
	// until a released record. It is written after the applied (or hotfix)
	// record of Revision, so the hold in force is the newest held or
	// released record newer than the newest applied one. Like a refusal, it
	// neither starts nor interrupts what the landscape holds for its
	// downstream landscapes.
	RecordHeld RecordKind = "held"
	// RecordReleased says spec.rollout.hold was cleared at AppliedAt: the
	// landscape, still at Revision, takes what qualifies again.
	RecordReleased RecordKind = "released"
)

// Runs says whether a record of kind k says what the landscape runs: an
// applied or a hotfix record, the records downstream landscapes count as
// held. A refusal, a hold and its release say what the landscape did not
// take.
func (k RecordKind) Runs() bool { return k == RecordApplied || k == RecordHotfix }

// Record is one entry of a landscape's history in Git: what it did with one
// revision of the branch, and when.
type Record struct {
	// Landscape is the landscape that wrote it, the name in its ref.
	Landscape string
	// Kind is applied, hotfix, refused, held or released.
	Kind RecordKind
	// Revision is the commit (40 lowercase hex digits) applied or refused.
	Revision string
	// AppliedAt is when the revision was applied, or for a refusal when it
	// was refused, for a hold or its release when it was set or cleared.
	AppliedAt time.Time
	// ReadyAt is when every profile of the revision was Ready; zero for a
	// refusal, a hold and a release.
	ReadyAt time.Time
	// OperatorVersion is the version of the operator that wrote the record.
	OperatorVersion string
	// Reason is why a revision was refused (the condition reason, like
	// ValidationFailed); empty otherwise.
	Reason string
	// Commit is the record commit this was read from; empty for a record
	// not yet written. It is not part of the file.
	Commit string
	// Signature is what the reader found of the record commit's signature,
	// when it was given keys of the landscape to check it with; the zero
	// value says it was not checked. It is not part of the file.
	Signature RecordSignature
}

// RecordSignature is the mark gitsource puts on a record it read: whether
// its commit carries an SSH signature, by a key given for the record's
// landscape, over the commit as it is. The decision trusts only the mark
// (DecideLandscape ignores an upstream's records that are not Verified when
// Question.RequireSigned names it); it checks no signature itself.
type RecordSignature struct {
	// Checked says keys were given for the landscape, so the record was
	// checked: without it the record is neither verified nor refused.
	Checked bool
	// Verified says the signature verifies against one of those keys.
	Verified bool
	// Signer names the key the signature carries (its SSH fingerprint),
	// empty for an unsigned record.
	Signer string
	// Failure is why it does not verify: "unsigned", "unknown key" or
	// "bad signature", with Detail saying what the check found.
	Failure string
	Detail  string
}

// Describe says in a few words what the check found: "signed by KEY",
// or the failure, the signer and the detail; "not checked" when unchecked.
func (s RecordSignature) Describe() string {
	switch {
	case !s.Checked:
		return "not checked"
	case s.Verified:
		return "signed by " + s.Signer
	}
	signer := s.Signer
	if signer == "" {
		signer = "none"
	}
	return fmt.Sprintf("%s (signed by %s): %s", s.Failure, signer, s.Detail)
}

// recordFile is a record as it is stored. Times are written in UTC.
type recordFile struct {
	Version         int        `json:"version"`
	Landscape       string     `json:"landscape"`
	Kind            RecordKind `json:"kind"`
	Revision        string     `json:"revision"`
	AppliedAt       time.Time  `json:"appliedAt"`
	ReadyAt         *time.Time `json:"readyAt,omitempty"`
	OperatorVersion string     `json:"operatorVersion"`
	Reason          string     `json:"reason,omitempty"`
}

var (
	landscapeRefNamePattern = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`)
	recordRevisionPattern   = regexp.MustCompile(`^[0-9a-f]{40}$`)
	// A version as builds name themselves: v1.2.3, 1.2.3-rc.1+meta,
	// v1.2.3-4-gabcdef0, dev.
	operatorVersionPattern = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._+-]{0,63}$`)
	// A condition reason: CamelCase, as metav1.Condition requires.
	refusalReasonPattern = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9]{0,63}$`)
)

// LandscapeRef returns the ref that holds the records of landscape, after
// checking that the name is a landscape name: a DNS label (lowercase
// letters, digits and '-', at most 63 characters). It is the only way this
// package and gitsource build a ref from a name, so no name can reach
// another ref ("../heads/main", "a:refs/heads/main").
func LandscapeRef(landscape string) (string, error) {
	if err := landscapeNameError(landscape); err != nil {
		return "", err
	}
	return LandscapeRefPrefix + landscape, nil
}

func landscapeNameError(name string) error {
	if len(name) > maxLandscapeNameLength || !landscapeRefNamePattern.MatchString(name) {
		return fmt.Errorf("landscape name %q: use at most %d lowercase letters, digits and '-', starting and ending with a letter or digit",
			name, maxLandscapeNameLength)
	}
	return nil
}

// RecordError is everything wrong with one record file, each problem naming
// its field; Source says which record (the ref and commit it was read from).
type RecordError struct {
	Source   string
	Problems []string
}

func (e *RecordError) Error() string {
	return e.Source + ": " + strings.Join(e.Problems, "; ")
}

// DecodeRecord reads a record file strictly: at most MaxRecordSize bytes,
// JSON without unknown or duplicate fields, of RecordFormatVersion, and
// valid (see Record.Validate). source names the record in errors, like
// "refs/profilesync/landscapes/dev@<commit>"; every error is a
// *RecordError.
func DecodeRecord(source string, data []byte) (Record, error) {
	fail := func(problems ...string) (Record, error) {
		return Record{}, &RecordError{Source: source, Problems: problems}
	}
	if len(data) > MaxRecordSize {
		return fail(fmt.Sprintf("%s is %d bytes, more than the %d bytes a record may have", RecordFileName, len(data), MaxRecordSize))
	}
	var file recordFile
	strictErrs, err := strictjson.UnmarshalStrict(data, &file, strictjson.DisallowDuplicateFields, strictjson.DisallowUnknownFields)
	if err != nil {
		return fail("not a record: " + flattenMessage(err.Error()))
	}
	if len(strictErrs) > 0 {
		problems := make([]string, 0, len(strictErrs))
		for _, e := range strictErrs {
			problems = append(problems, flattenMessage(e.Error()))
		}
		return fail(problems...)
	}
	if file.Version != RecordFormatVersion {
		return fail(fmt.Sprintf("version: unsupported value %d: this operator reads version %d", file.Version, RecordFormatVersion))
	}
	record := Record{
		Landscape:       file.Landscape,
		Kind:            file.Kind,
		Revision:        file.Revision,
		AppliedAt:       file.AppliedAt,
		OperatorVersion: file.OperatorVersion,
		Reason:          file.Reason,
	}
	if file.ReadyAt != nil {
		if file.ReadyAt.IsZero() {
			return fail("readyAt: Invalid value: must be a time after year 1, or absent")
		}
		record.ReadyAt = *file.ReadyAt
	}
	if problems := record.problems(); len(problems) > 0 {
		return fail(problems...)
	}
	return record, nil
}

// EncodeRecord writes a valid record in the format DecodeRecord reads.
func EncodeRecord(record Record) ([]byte, error) {
	if err := record.Validate(); err != nil {
		return nil, err
	}
	file := recordFile{
		Version:         RecordFormatVersion,
		Landscape:       record.Landscape,
		Kind:            record.Kind,
		Revision:        record.Revision,
		AppliedAt:       record.AppliedAt.UTC(),
		OperatorVersion: record.OperatorVersion,
		Reason:          record.Reason,
	}
	if !record.ReadyAt.IsZero() {
		readyAt := record.ReadyAt.UTC()
		file.ReadyAt = &readyAt
	}
	var out bytes.Buffer
	encoder := json.NewEncoder(&out)
	encoder.SetIndent("", "  ")
	if err := encoder.Encode(file); err != nil {
		return nil, fmt.Errorf("encode the record of %s for %s: %w", record.Landscape, record.Revision, err)
	}
	if out.Len() > MaxRecordSize {
		return nil, fmt.Errorf("the record of %s for %s is %d bytes, more than the %d bytes a record may have",
			record.Landscape, record.Revision, out.Len(), MaxRecordSize)
	}
	return out.Bytes(), nil
}

// Validate checks what a record must be before it is written or used: a
// landscape name, a full commit SHA, a known kind, times in order (ready at
// or after applied; none for a refusal) and a refusal's reason.
func (r Record) Validate() error {
	if problems := r.problems(); len(problems) > 0 {
		source := "record"
		if r.Commit != "" {
			source += " " + r.Commit
		}
		return &RecordError{Source: source, Problems: problems}
	}
	return nil
}

func (r Record) problems() []string {
	var problems []string
	if err := landscapeNameError(r.Landscape); err != nil {
		problems = append(problems, "landscape: "+err.Error())
	}
	if !recordRevisionPattern.MatchString(r.Revision) {
		problems = append(problems, fmt.Sprintf("revision: Invalid value %q: must be a full commit SHA (40 lowercase hex digits)", shortValue(r.Revision)))
	}
	if !operatorVersionPattern.MatchString(r.OperatorVersion) {
		problems = append(problems, fmt.Sprintf("operatorVersion: Invalid value %q: must be a version like v1.2.3 (letters, digits, '.', '_', '+', '-', at most 64)",
			shortValue(r.OperatorVersion)))
	}
	if r.AppliedAt.IsZero() {
		problems = append(problems, "appliedAt: Required value")
	}
	for _, stamp := range []struct {
		field string
		time  time.Time
	}{{"appliedAt", r.AppliedAt}, {"readyAt", r.ReadyAt}} {
		// In UTC, as it is written; JSON has no year past 9999.
		if year := stamp.time.UTC().Year(); !stamp.time.IsZero() && (year < 1 || year > 9999) {
			problems = append(problems, fmt.Sprintf("%s: Invalid value: year %d in UTC is outside 1 to 9999", stamp.field, year))
		}
	}
	switch r.Kind {
	case RecordApplied, RecordHotfix:
		switch {
		case r.ReadyAt.IsZero():
			problems = append(problems, fmt.Sprintf("readyAt: Required value: an %s record says when the revision became Ready", r.Kind))
		case r.ReadyAt.Before(r.AppliedAt):
			problems = append(problems, fmt.Sprintf("readyAt: Invalid value %s: before appliedAt %s",
				r.ReadyAt.UTC().Format(time.RFC3339), r.AppliedAt.UTC().Format(time.RFC3339)))
		}
		if r.Reason != "" {
			problems = append(problems, fmt.Sprintf("reason: Forbidden: only a %s record has a reason", RecordRefused))
		}
	case RecordRefused:
		if !r.ReadyAt.IsZero() {
			problems = append(problems, "readyAt: Forbidden: a refused revision never became Ready")
		}
		if !refusalReasonPattern.MatchString(r.Reason) {
			problems = append(problems, fmt.Sprintf("reason: Invalid value %q: must be a condition reason like ValidationFailed", shortValue(r.Reason)))
		}
	case RecordHeld, RecordReleased:
		if !r.ReadyAt.IsZero() {
			problems = append(problems, fmt.Sprintf("readyAt: Forbidden: a %s record changes what the landscape takes, not what it runs", r.Kind))
		}
		if r.Reason != "" {
			problems = append(problems, fmt.Sprintf("reason: Forbidden: only a %s record has a reason", RecordRefused))
		}
	default:
		problems = append(problems, fmt.Sprintf("kind: Unsupported value %q: supported values: %q, %q, %q, %q, %q",
			shortValue(string(r.Kind)), RecordApplied, RecordHotfix, RecordRefused, RecordHeld, RecordReleased))
	}
	return problems
}

// truncate shortens a value quoted in a problem: records are untrusted and
// a message must stay short.
func shortValue(value string) string {
	const maxQuoted = 64
	for i := range value {
		if i >= maxQuoted {
			return value[:i] + "…"
		}
	}
	return value
}

func flattenMessage(s string) string {
	return strings.Join(strings.Fields(s), " ")
}
