package prdiff

import (
	"time"

	"github.com/profilesync/profilesync/internal/render"
)

// LandscapeSides is one landscape of a pull request on both sides, each as
// EvaluateSet returns it. A side the landscape is missing from, or cannot be
// built in, has no objects.
type LandscapeSides struct {
	// Name names the overlay, e.g. "dev".
	Name       string
	Base, Head []render.Object
}

// Compare assembles the report of a pull request whose revisions base and
// head label: the diff of every landscape at now over horizon (Diff), in the
// order given, and, when rollout holds the indexes of landscapes earliest
// first, the rollout order warnings of their heads (CheckRolloutOrder). The
// versioning policy's findings are the caller's to add, since reading a
// policy file is not pure.
func Compare(base, head string, landscapes []LandscapeSides, rollout []int, now time.Time, horizon time.Duration) Report {
	report := Report{Base: base, Head: head, Landscapes: make([]LandscapeDiff, len(landscapes))}
	for i, l := range landscapes {
		report.Landscapes[i] = Diff(l.Name, l.Base, l.Head, now, horizon)
	}
	if len(rollout) > 0 {
		ordered := make([]Landscape, len(rollout))
		for i, index := range rollout {
			ordered[i] = Landscape{Name: landscapes[index].Name, Objects: landscapes[index].Head}
		}
		report.RolloutWarnings = CheckRolloutOrder(ordered, now)
	}
	return report
}
