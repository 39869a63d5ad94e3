package lifecycle

import (
	"fmt"
	"time"

	v1alpha1 "github.com/profilesync/profilesync/api/v1alpha1"
)

// MaintenanceStep is one move of a cluster by a maintenance run.
type MaintenanceStep struct {
	// Version is the version the cluster is moved to, as the profile
	// writes it.
	Version string
	// Forced is true when the forced path chose Version (docs/semantics.md §4): the
	// automatic path found nothing, so the cluster crossed to the next
	// minor (for an image: the next group of its update strategy).
	Forced bool
}

// ForcedChain returns the moves a cluster on subject goes through at time at
// when it takes no automatic updates: nothing while its version is live;
// once the version is expired (or gone), maintenance runs move it (the
// automatic path first, else the forced one) until it reaches a version that
// is not expired. Gardener's maintenance repeats exactly so, which is how a
// cluster can be forced across several minors in a row. The chain is
// computed as of at: every run is assumed to happen then.
//
// The error is maintenance's: a current version that does not parse, or an
// expired version with nowhere to go (wrapping errNoSuitableVersion and, for
// an image with update strategy major, ErrNoForcedUpdatePath); the steps
// found before it are returned with it.
func ForcedChain(spec *v1alpha1.CloudProfileSpec, subject UpdateSubject, at time.Time) ([]MaintenanceStep, error) {
	if spec == nil {
		return nil, fmt.Errorf("%s: %w: there is no profile", subject, errNoSuitableVersion)
	}
	var steps []MaintenanceStep
	// Every step moves to a higher version of the profile, so a chain has at
	// most as many steps as the profile has versions; the bound only guards
	// against a bug turning into an endless loop.
	limit := len(spec.Kubernetes.Versions) + 1
	if image := MachineImageOf(spec, subject.MachineImage); image != nil {
		limit = len(image.Versions) + 1
	}
	for range limit {
		if leave, _ := mustLeave(spec, subject, at); !leave {
			return steps, nil
		}
		decision, err := maintenance(spec, subject, at)
		if err != nil {
			return steps, err
		}
		if decision.Target == "" {
			return steps, nil
		}
		steps = append(steps, MaintenanceStep{Version: decision.Target, Forced: decision.Forced})
		subject.Version = decision.Target
	}
	return steps, fmt.Errorf("%s: the maintenance chain did not end after %d steps", subject, limit)
}
