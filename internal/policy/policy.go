// Package policy is a landscape's versioning policy: the rules an operator
// writes down in the profiles repository (profilesync-policy.yaml) about
// which versions are supported, for how long a minor stays in preview, how
// older patches are deprecated and expire, how much notice a change gives and
// how far an expiry forces clusters. It checks built profiles against them
// at a time t and, with the previous state of the profiles, checks a change.
//
// The rules read the profiles through internal/lifecycle (classification at
// t, stages, the maintenance chain of update paths), so a version means the
// same thing to the policy as to the controllers. The package is pure: no
// Kubernetes client, time is always a parameter. The CLI (build, diff,
// timeline) and the ProfileSync controller call it.
//
// docs/policy.md describes the file and every rule for operators.
package policy

import (
	"fmt"
	"time"

	"github.com/profilesync/profilesync/internal/repofile"
)

// APIVersion and Kind identify the policy file's schema.
const (
	APIVersion = "policy.profilesync.io/v1alpha1"
	Kind       = "VersioningPolicy"
)

// Severity says what a finding does: an error refuses the change (the CLI
// exits non-zero, the operator refuses the revision), a warning is only
// reported. It is the settings files' one severity (repofile.Severity),
// which the rollout file's lags share.
type Severity = repofile.Severity

const (
	// SeverityWarning findings are reported; they refuse nothing.
	SeverityWarning = repofile.SeverityWarning
	// SeverityError findings refuse the change.
	SeverityError = repofile.SeverityError
)

// Policy is a decoded policy file.
type Policy struct {
	// APIVersion is policy.profilesync.io/v1alpha1.
	APIVersion string `json:"apiVersion"`
	// Kind is VersioningPolicy.
	Kind string `json:"kind"`
	// Rules are the rules the operator turned on; a rule left out is off.
	Rules Rules `json:"rules"`
}

// Rules are the policy's rules, each off when nil.
type Rules struct {
	// Supported: the newest minors each have exactly one supported patch.
	Supported *SupportedRule `json:"supported,omitempty"`
	// Preview: how many minors may be in preview, and for how long.
	Preview *PreviewRule `json:"preview,omitempty"`
	// Deprecation: older patches are deprecated, deprecated versions expire.
	Deprecation *DeprecationRule `json:"deprecation,omitempty"`
	// Notice: how far ahead a deprecation or expiry must be announced.
	Notice *NoticeRule `json:"notice,omitempty"`
	// ForcedUpdates: expiries that force clusters across minors.
	ForcedUpdates *ForcedUpdatesRule `json:"forcedUpdates,omitempty"`
}

// SupportedRule: the newest Minors released Kubernetes minors each have
// exactly one supported patch at any time. With MachineImageGroups, the
// newest that many groups of every machine image likewise have exactly one
// supported version, a group being what the image's update strategy keeps a
// cluster within (see groupsOf).
type SupportedRule struct {
	// Severity is warning or error.
	Severity Severity `json:"severity"`
	// Minors is how many of the newest released Kubernetes minors must each
	// have exactly one supported patch; at least 1.
	Minors int `json:"minors"`
	// MachineImageGroups is the same for the groups of each machine image;
	// 0 (the default) leaves machine images unchecked.
	MachineImageGroups int `json:"machineImageGroups,omitempty"`
}

// PreviewRule limits Kubernetes minors in preview (minors with a preview
// version and no version that reached supported yet).
type PreviewRule struct {
	// Severity is warning or error.
	Severity Severity `json:"severity"`
	// MaxMinors is how many minors may be in preview at once; unset means
	// any number.
	MaxMinors *int `json:"maxMinors,omitempty"`
	// MaxDays is how many days a minor may stay in preview before one of
	// its versions becomes supported; unset means any time.
	MaxDays *int `json:"maxDays,omitempty"`
}

// DeprecationRule: every patch of a Kubernetes minor below its latest
// released patch is deprecated or has a date at which it will be, and every
// version that is deprecated at some point has an expiry.
type DeprecationRule struct {
	// Severity is warning or error.
	Severity Severity `json:"severity"`
	// OlderPatches asks every patch below the latest released patch of its
	// minor to be deprecated or to have its deprecation scheduled.
	OlderPatches bool `json:"olderPatches,omitempty"`
	// RequireExpiry asks every version that is ever deprecated to expire
	// at some date.
	RequireExpiry bool `json:"requireExpiry,omitempty"`
	// MachineImages applies both to machine image versions too, grouped by
	// the image's update strategy.
	MachineImages bool `json:"machineImages,omitempty"`
}

// NoticeRule: a change may not schedule a version's deprecation or expiry,
// nor bring one forward, sooner than Days days after the commit that makes
// the change. It needs the profiles before the change, so 'diff' and the
// operator check it, 'build' does not.
type NoticeRule struct {
	// Severity is warning or error.
	Severity Severity `json:"severity"`
	// Days is the notice in days; at least 1.
	Days int `json:"days"`
}

// ForcedUpdatesRule reports every scheduled expiry that forces clusters off
// a version across a minor (for a machine image: across the group its update
// strategy keeps clusters within), naming the chain of forced moves. Across
// one minor the finding has Severity; across more than one it is always an
// error, as is an expiry that leaves clusters on Kubernetes with nowhere to
// go.
type ForcedUpdatesRule struct {
	// Severity is warning or error, for an expiry forcing clusters across
	// one minor.
	Severity Severity `json:"severity"`
}

// day is the unit of the rules' durations.
const day = 24 * time.Hour

// days returns n days.
func days(n int) time.Duration { return time.Duration(n) * day }

// formatDuration writes d in days (and hours when not whole), like 30d or
// 4d15h, the form 'diff' uses for shifts.
func formatDuration(d time.Duration) string {
	sign := ""
	if d < 0 {
		sign, d = "-", -d
	}
	whole, rest := d/day, (d%day).Round(time.Hour)/time.Hour
	switch {
	case rest == 24:
		return fmt.Sprintf("%s%dd", sign, whole+1)
	case rest == 0:
		return fmt.Sprintf("%s%dd", sign, whole)
	case whole == 0:
		return fmt.Sprintf("%s%dh", sign, rest)
	}
	return fmt.Sprintf("%s%dd%dh", sign, whole, rest)
}

// formatTime writes t in RFC 3339, UTC, as the rest of the output does.
func formatTime(t time.Time) string { return t.UTC().Format(time.RFC3339) }
