package prdiff

import (
	"time"

	"github.com/profilesync/profilesync/internal/render/profile"
)

// LandscapeSides is one landscape of a pull request on both sides, each as
// Set.Evaluate returns it. A side the landscape is missing from, or cannot be
// built in, has no objects.
type LandscapeSides struct {
	// Name names the overlay, e.g. "dev".
	Name       string
	Base, Head []profile.Object
}

// Compare assembles the report of a pull request whose revisions base and
// head label: the diff of every landscape at now over horizon (Diff), in the
// order given. The rollout order's findings and the versioning policy's are
// the caller's to add, since they read the repository's files.
func Compare(base, head string, landscapes []LandscapeSides, now time.Time, horizon time.Duration) Report {
	report := Report{Base: base, Head: head, Landscapes: make([]LandscapeDiff, len(landscapes))}
	for i, l := range landscapes {
		report.Landscapes[i] = Diff(l.Name, l.Base, l.Head, now, horizon)
	}
	return report
}
