package cli

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	v1alpha1 "github.com/profilesync/profilesync/api/v1alpha1"
	"github.com/profilesync/profilesync/internal/markdown"
	"github.com/profilesync/profilesync/internal/rollout"
)

// rolloutStatus is the report of 'rollout status', as --output json writes
// it.
type rolloutStatus struct {
	At         time.Time         `json:"at"`
	Repository string            `json:"repository"`
	Branch     string            `json:"branch"`
	Tip        string            `json:"tip"`
	Landscapes []landscapeStatus `json:"landscapes"`
	// Versions is the rollout matrix.
	Versions []versionRollout `json:"versions"`
}

// landscapeStatus is one landscape of the rollout file.
type landscapeStatus struct {
	Name  string   `json:"name"`
	Path  string   `json:"path"`
	After []string `json:"after,omitempty"`
	Soak  string   `json:"soak,omitempty"`
	// Applied is its newest applied or hotfix record; nil without one.
	Applied *appliedRevision `json:"applied"`
	// Refused is a refusal newer than Applied.
	Refused *refusedRevision `json:"refused,omitempty"`
	// Held is the hold it recorded (spec.rollout.hold) and has not
	// released: it takes nothing, and Waiting is what it holds back.
	Held *heldRevision `json:"held,omitempty"`
	// Candidates counts the commits of the branch after Applied.
	Candidates int `json:"candidates"`
	// Takes is the newest candidate that qualifies now: the operator takes
	// it at its next sync.
	Takes *candidateStatus `json:"takes,omitempty"`
	// Waiting is the candidate newer than Takes that it waits for.
	Waiting *candidateStatus `json:"waiting,omitempty"`
	// Overlay is the revision its versions are read from.
	Overlay overlaySource `json:"overlay"`
	// Unverified are its upstreams' records left out because their
	// signature did not verify (--upstream-keys).
	Unverified []unverifiedRecord `json:"unverified,omitempty"`
	Warnings   []string           `json:"warnings,omitempty"`
}

// recordSignature is what the check of a record's signature found
// (--upstream-keys): verified, by whom, or why not.
type recordSignature struct {
	Verified bool   `json:"verified"`
	Signer   string `json:"signer,omitempty"`
	Failure  string `json:"failure,omitempty"`
	Detail   string `json:"detail,omitempty"`
}

func signatureOf(s rollout.RecordSignature) recordSignature {
	return recordSignature{Verified: s.Verified, Signer: s.Signer, Failure: s.Failure, Detail: s.Detail}
}

// unverifiedRecord is an upstream record left out for its signature.
type unverifiedRecord struct {
	Landscape string          `json:"landscape"`
	Record    string          `json:"record"`
	Kind      string          `json:"kind"`
	Revision  string          `json:"revision"`
	Signature recordSignature `json:"signature"`
}

type appliedRevision struct {
	Revision  string     `json:"revision"`
	Kind      string     `json:"kind"`
	AppliedAt time.Time  `json:"appliedAt"`
	ReadyAt   *time.Time `json:"readyAt"`
	// Record is the record commit.
	Record string `json:"record"`
	// Signature is the record's signature as --upstream-keys checked it;
	// nil without it.
	Signature *recordSignature `json:"signature,omitempty"`
}

type refusedRevision struct {
	Revision  string    `json:"revision"`
	RefusedAt time.Time `json:"refusedAt"`
	Reason    string    `json:"reason"`
	Record    string    `json:"record"`
}

// heldRevision is a landscape's recorded hold: the revision it stays at
// and since when.
type heldRevision struct {
	Revision string    `json:"revision"`
	Since    time.Time `json:"since"`
	Record   string    `json:"record"`
}

// candidateStatus is a candidate and what the upstreams hold of it.
type candidateStatus struct {
	Revision string `json:"revision"`
	// EligibleAt is when it qualifies (qualified, for Takes); nil when an
	// upstream does not hold it or refused it, and for a landscape without
	// upstreams, which takes every commit at once.
	EligibleAt *time.Time   `json:"eligibleAt"`
	Holds      []holdStatus `json:"holds,omitempty"`
}

type holdStatus struct {
	Landscape string     `json:"landscape"`
	Running   string     `json:"running"`
	Holds     bool       `json:"holds"`
	Since     *time.Time `json:"since,omitempty"`
	Refused   bool       `json:"refused,omitempty"`
}

const (
	overlayFromRecord = "record"
	overlayFromTip    = "tip"
)

// overlaySource says which revision a landscape's versions are read from:
// that of its record, or the tip of the branch when it has none.
type overlaySource struct {
	Revision string `json:"revision"`
	From     string `json:"from"`
}

// versionRollout is one row of the rollout matrix: a version of a profile in
// every landscape, in the rollout file's order.
type versionRollout struct {
	Profile string `json:"profile"`
	// MachineImage is the image's name; empty for Kubernetes.
	MachineImage string               `json:"machineImage,omitempty"`
	Version      string               `json:"version"`
	Landscapes   []versionInLandscape `json:"landscapes"`
}

type versionInLandscape struct {
	Landscape string `json:"landscape"`
	// Listed is false when the landscape's profile does not list it. A
	// landscape without the profile has no entry.
	Listed         bool                           `json:"listed"`
	Classification v1alpha1.VersionClassification `json:"classification,omitempty"`
	Stages         []stageStart                   `json:"stages,omitempty"`
}

// stageStart is when a version enters a stage; At is nil for a stage in
// effect from the beginning.
type stageStart struct {
	Classification v1alpha1.VersionClassification `json:"classification"`
	At             *time.Time                     `json:"at"`
}

func (f diffFormat) writeRolloutStatus(w io.Writer, status rolloutStatus) error {
	var err error
	switch f {
	case diffFormatJSON:
		encoder := json.NewEncoder(w)
		encoder.SetIndent("", "  ")
		err = encoder.Encode(status)
	case diffFormatMarkdown:
		err = writeRolloutStatusMarkdown(w, status)
	default:
		err = writeRolloutStatusTable(w, status)
	}
	if err != nil {
		return fmt.Errorf("rollout status: %w", err)
	}
	return nil
}

// matrixStages are the columns of the matrix: the stages after
// unavailable, in lifecycle order.
var matrixStages = rollout.LagClassifications

func writeRolloutStatusTable(w io.Writer, status rolloutStatus) error {
	fmt.Fprintf(w, "Rollout of %s, branch %s at %s; at %s\n\n", status.Repository, status.Branch, shortCommit(status.Tip), formatTime(status.At))
	table := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(table, "LANDSCAPE\tAFTER\tSOAK\tRUNS\tSINCE\tNEXT")
	for _, l := range status.Landscapes {
		fmt.Fprintf(table, "%s\t%s\t%s\t%s\t%s\t%s\n", l.Name, orDash(strings.Join(l.After, ",")), orDash(l.Soak), runsCell(l), sinceCell(l), nextCell(l))
	}
	if err := table.Flush(); err != nil {
		return err
	}
	if notes := statusNotes(status); len(notes) > 0 {
		fmt.Fprintln(w)
		for _, note := range notes {
			fmt.Fprintln(w, note)
		}
	}
	fmt.Fprintln(w)
	if len(status.Versions) == 0 {
		fmt.Fprintln(w, "No versions: no landscape's overlay could be read.")
		return nil
	}
	table = tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	header := []string{"PROFILE", "KIND OF VERSION", "VERSION", "LANDSCAPE", "NOW"}
	for _, s := range matrixStages {
		header = append(header, strings.ToUpper(string(s)))
	}
	fmt.Fprintln(table, strings.Join(header, "\t"))
	for _, v := range status.Versions {
		for i, in := range v.Landscapes {
			profile, subject, version := v.Profile, subjectOf(v), v.Version
			if i > 0 {
				profile, subject, version = "", "", ""
			}
			fmt.Fprintln(table, strings.Join(append([]string{profile, subject, version, in.Landscape}, matrixCells(in)...), "\t"))
		}
	}
	return table.Flush()
}

// writeRolloutStatusMarkdown writes the report as a pull-request comment,
// whole or, when out fails, with the error. Every text from the repository
// (the branch, names, a refusal's reason) goes through internal/markdown: it
// cannot leave its code span or cell, make markup or HTML, or mention
// anyone.
func writeRolloutStatusMarkdown(out io.Writer, status rolloutStatus) error {
	var w strings.Builder
	fmt.Fprintf(&w, "### Rollout of %s at %s\n\n", markdown.Code(status.Branch), markdown.Code(shortCommit(status.Tip)))
	fmt.Fprintf(&w, "%s, at %s.\n\n", markdown.Text(status.Repository), formatTime(status.At))
	fmt.Fprintln(&w, "| Landscape | After | Soak | Runs | Since | Next |")
	fmt.Fprintln(&w, "|---|---|---|---|---|---|")
	for _, l := range status.Landscapes {
		fmt.Fprintf(&w, "| %s | %s | %s | %s | %s | %s |\n", markdown.Cell(l.Name), markdown.Cell(orDash(strings.Join(l.After, ", "))), markdown.Cell(orDash(l.Soak)),
			markdown.Cell(runsCell(l)), markdown.Cell(sinceCell(l)), markdown.Cell(nextCell(l)))
	}
	if notes := statusNotes(status); len(notes) > 0 {
		fmt.Fprintln(&w)
		for _, note := range notes {
			fmt.Fprintf(&w, "- %s\n", markdown.Text(note))
		}
	}
	fmt.Fprintln(&w)
	fmt.Fprintln(&w, "#### Versions")
	fmt.Fprintln(&w)
	if len(status.Versions) == 0 {
		fmt.Fprintln(&w, "No versions: no landscape's overlay could be read.")
		_, err := io.WriteString(out, w.String())
		return err
	}
	header := "| Profile | Kind of version | Version | Landscape | Now |"
	rule := "|---|---|---|---|---|"
	for _, s := range matrixStages {
		header += " " + strings.ToUpper(string(s[:1])) + string(s[1:]) + " |"
		rule += "---|"
	}
	fmt.Fprintln(&w, header)
	fmt.Fprintln(&w, rule)
	for _, v := range status.Versions {
		for i, in := range v.Landscapes {
			profile, subject, version := markdown.Cell(v.Profile), markdown.Cell(subjectOf(v)), markdown.Cell(v.Version)
			if i > 0 {
				profile, subject, version = "", "", ""
			}
			cells := matrixCells(in)
			for len(cells) <= len(matrixStages) {
				cells = append(cells, "")
			}
			for i := range cells {
				cells[i] = markdown.Cell(cells[i])
			}
			fmt.Fprintf(&w, "| %s | %s | %s | %s | %s |\n", profile, subject, version, markdown.Cell(in.Landscape), strings.Join(cells, " | "))
		}
	}
	_, err := io.WriteString(out, w.String())
	return err
}

// runsCell is what a landscape runs, in one cell.
func runsCell(l landscapeStatus) string {
	if l.Applied == nil {
		return "no record"
	}
	runs := shortCommit(l.Applied.Revision)
	if l.Applied.Kind == string(rollout.RecordHotfix) {
		runs += " (hotfix)"
	}
	if s := l.Applied.Signature; s != nil && !s.Verified {
		runs += " (unverified)"
	}
	return runs
}

func sinceCell(l landscapeStatus) string {
	if l.Applied == nil {
		return "-"
	}
	return formatTime(l.Applied.AppliedAt)
}

// nextCell is what a landscape takes or waits for, in one cell.
func nextCell(l landscapeStatus) string {
	var parts []string
	if l.Held != nil {
		parts = append(parts, "held")
		if c := l.Waiting; c != nil {
			parts = append(parts, shortCommit(c.Revision)+" held back")
		}
		return strings.Join(parts, "; ")
	}
	if l.Takes != nil {
		parts = append(parts, "takes "+shortCommit(l.Takes.Revision)+" now")
	}
	if c := l.Waiting; c != nil {
		switch {
		case c.EligibleAt != nil:
			parts = append(parts, fmt.Sprintf("%s eligible at %s", shortCommit(c.Revision), formatTime(*c.EligibleAt)))
		default:
			parts = append(parts, fmt.Sprintf("%s waits for %s", shortCommit(c.Revision), strings.Join(notHolding(c.Holds), ", ")))
		}
	}
	if len(parts) == 0 {
		if l.Candidates == 0 && l.Applied != nil {
			return "up to date"
		}
		return "-"
	}
	return strings.Join(parts, "; ")
}

// notHolding names the upstreams that keep a candidate from qualifying.
func notHolding(holds []holdStatus) []string {
	var names []string
	for _, h := range holds {
		if !h.Holds || h.Refused {
			names = append(names, h.Landscape)
		}
	}
	return names
}

// statusNotes explain the table, one sentence per line: which upstream
// holds what since when, refusals, landscapes read at the tip.
func statusNotes(status rolloutStatus) []string {
	var notes []string
	for _, l := range status.Landscapes {
		if l.Applied == nil {
			notes = append(notes, fmt.Sprintf("%s has no record: its versions are those of the tip of %s (%s).", l.Name, status.Branch, shortCommit(status.Tip)))
		}
		if r := l.Refused; r != nil {
			notes = append(notes, fmt.Sprintf("%s refused %s at %s (%s).", l.Name, shortCommit(r.Revision), formatTime(r.RefusedAt), r.Reason))
		}
		if h := l.Held; h != nil {
			notes = append(notes, fmt.Sprintf("%s is held at %s since %s (spec.rollout.hold): it takes nothing until the hold is released.",
				l.Name, shortCommit(h.Revision), formatTime(h.Since)))
		}
		if c := l.Takes; c != nil && len(c.Holds) > 0 {
			notes = append(notes, fmt.Sprintf("%s may take %s since %s: %s.", l.Name, shortCommit(c.Revision), formatTime(*c.EligibleAt), describeHolds(c.Holds, l.Soak)))
		}
		if c := l.Waiting; c != nil && len(c.Holds) > 0 {
			verb := "waits for"
			if l.Held != nil {
				verb = "holds back"
			}
			notes = append(notes, fmt.Sprintf("%s %s %s: %s.", l.Name, verb, shortCommit(c.Revision), describeHolds(c.Holds, l.Soak)))
		}
		if s := signatureOfApplied(l); s != nil && !s.Verified {
			notes = append(notes, fmt.Sprintf("%s's record of %s (%s) is unverified: %s.", l.Name, shortCommit(l.Applied.Revision), shortCommit(l.Applied.Record), describeSignature(*s)))
		}
		for _, u := range l.Unverified {
			notes = append(notes, fmt.Sprintf("%s ignores the %s record of %s by %s (%s): %s.", l.Name, u.Kind, shortCommit(u.Revision), u.Landscape, shortCommit(u.Record), describeSignature(u.Signature)))
		}
	}
	return notes
}

func signatureOfApplied(l landscapeStatus) *recordSignature {
	if l.Applied == nil {
		return nil
	}
	return l.Applied.Signature
}

// describeSignature says why a record's signature does not verify.
func describeSignature(s recordSignature) string {
	if s.Signer == "" {
		return s.Failure
	}
	return fmt.Sprintf("%s, signed by %s: %s", s.Failure, s.Signer, s.Detail)
}

func describeHolds(holds []holdStatus, soak string) string {
	parts := make([]string, len(holds))
	for i, h := range holds {
		switch {
		case h.Refused:
			parts[i] = h.Landscape + " refused it"
		case h.Holds:
			parts[i] = fmt.Sprintf("%s has held it since %s", h.Landscape, formatTime(*h.Since))
		case h.Running == "":
			parts[i] = h.Landscape + " has no record"
		default:
			parts[i] = fmt.Sprintf("%s runs %s, which does not contain it", h.Landscape, shortCommit(h.Running))
		}
	}
	if soak != "" {
		return strings.Join(parts, ", ") + ", soak " + soak
	}
	return strings.Join(parts, ", ")
}

// matrixCells are a version's classification now and the start of each
// stage of matrixStages in one landscape; only "not listed" when its
// profile there does not list it.
func matrixCells(in versionInLandscape) []string {
	if !in.Listed {
		return []string{"not listed"}
	}
	cells := []string{string(in.Classification)}
	for _, stage := range matrixStages {
		cell := "-"
		for _, s := range in.Stages {
			if s.Classification != stage {
				continue
			}
			cell = "from the start"
			if s.At != nil {
				cell = formatTime(*s.At)
			}
		}
		cells = append(cells, cell)
	}
	return cells
}

func subjectOf(v versionRollout) string {
	if v.MachineImage == "" {
		return "kubernetes"
	}
	return v.MachineImage
}

func formatTime(t time.Time) string { return t.UTC().Format(time.RFC3339) }

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
