package profile

import (
	"time"

	v1alpha1 "github.com/profilesync/profilesync/api/v1alpha1"
)

// NextChange is the earliest instant after the time the set was validated
// at from which validating the same objects against the same parents could
// conclude differently; ok is false when no instant could, and the
// set's verdict stands whatever the time.
//
// Every rule of the validation that reads the time
// (lifecycle.ValidateCloudProfileSpecAt: "one supported version per minor"
// and the overlaps of supported windows) compares it with a lifecycle
// stage's start or a version's expirationDate, and only with those. So the
// verdict cannot change before the first of them, of any spec the
// validation read (the CloudProfiles', the NamespacedCloudProfiles' own and
// merged specs, and every parent resolved), that lies after the set's time.
// The sync remembers a valid set's verdict until then.
func (s *Set) NextChange() (at time.Time, ok bool) {
	next := instantAfter{after: s.at}
	for _, o := range s.Objects {
		if o.CloudProfile != nil {
			next.spec(&o.CloudProfile.Spec)
			continue
		}
		ncp := o.NamespacedCloudProfile
		next.namespaced(&ncp.Spec)
		next.spec(s.merged[ncp])
	}
	for _, parent := range s.parents {
		next.spec(parent)
	}
	return next.at, next.ok
}

// instantAfter keeps the earliest lifecycle instant (a stage's start, an
// expirationDate) strictly after after among those it is shown, and the
// latest not after it (for the validation memo's instantCell).
type instantAfter struct {
	after time.Time
	at    time.Time
	ok    bool
	// before is the latest instant not after after, when hasBefore.
	before    time.Time
	hasBefore bool
}

// namespaced shows n the instants a NamespacedCloudProfile's own spec
// writes (its overrides and added versions).
func (n *instantAfter) namespaced(ncp *v1alpha1.NamespacedCloudProfileSpec) {
	if ncp.Kubernetes != nil {
		n.versions(ncp.Kubernetes.Versions)
	}
	for _, image := range ncp.MachineImages {
		n.imageVersions(image.Versions)
	}
}

func (n *instantAfter) spec(spec *v1alpha1.CloudProfileSpec) {
	if spec == nil {
		return
	}
	n.versions(spec.Kubernetes.Versions)
	for _, image := range spec.MachineImages {
		n.imageVersions(image.Versions)
	}
}

func (n *instantAfter) imageVersions(versions []v1alpha1.MachineImageVersion) {
	for i := range versions {
		n.version(&versions[i].ExpirableVersion)
	}
}

func (n *instantAfter) versions(versions []v1alpha1.ExpirableVersion) {
	for i := range versions {
		n.version(&versions[i])
	}
}

func (n *instantAfter) version(v *v1alpha1.ExpirableVersion) {
	if v.ExpirationDate != nil {
		n.consider(v.ExpirationDate.Time)
	}
	for _, stage := range v.Lifecycle {
		if stage.StartTime != nil {
			n.consider(stage.StartTime.Time)
		}
	}
}

func (n *instantAfter) consider(t time.Time) {
	if !t.After(n.after) {
		if !n.hasBefore || t.After(n.before) {
			n.before, n.hasBefore = t, true
		}
		return
	}
	if !n.ok || t.Before(n.at) {
		n.at, n.ok = t, true
	}
}
