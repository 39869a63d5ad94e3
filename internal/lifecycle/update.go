package lifecycle

import (
	"errors"
	"fmt"
	"time"

	"github.com/Masterminds/semver/v3"

	v1alpha1 "github.com/profilesync/profilesync/api/v1alpha1"
)

// Update paths (docs/semantics.md §4): which version a cluster on some version moves to
// during maintenance. Every function returns the version as written in the
// profile (an image version written 1.7 is returned as 1.7, not 1.7.0).
//
// Candidates are the profile's versions whose classification at now is
// supported, deprecated or expired. preview versions are never picked, as in
// Gardener; (ours) neither are unavailable ones, which Gardener does not
// filter, so that a cluster is never moved to a version that is not offered
// yet. Versions that do not parse as semver are ignored (validation reports
// them).

var (
	// errNoSuitableVersion is returned, wrapped, when a maintenance run must
	// move a cluster off an expired version and the profile offers nowhere
	// to go. It is a profile error: the operator has to add a version.
	errNoSuitableVersion = errors.New("no suitable version")

	// ErrNoForcedUpdatePath is returned, wrapped, for a forced update of a
	// machine image whose update strategy is major: that strategy means the
	// image has reached its end of life when its latest version expires, and
	// clusters have to be migrated to another image by their operators.
	ErrNoForcedUpdatePath = errors.New("no forced update path")

	// ErrUnknownMachineImage is returned, wrapped, when an update of a machine
	// image is asked for that the profile does not list.
	ErrUnknownMachineImage = errors.New("unknown machine image")
)

// UpdateSubject names what a cluster runs: a Kubernetes version when
// MachineImage is empty, otherwise a version of that machine image.
type UpdateSubject struct {
	// MachineImage is the machine image's name; empty means Kubernetes.
	MachineImage string
	// Version is the version the cluster runs now.
	Version string
}

// String names the subject for error messages, for example
// "machine image gardenlinux version 1443.3".
func (s UpdateSubject) String() string {
	if s.MachineImage == "" {
		return "Kubernetes version " + s.Version
	}
	return fmt.Sprintf("machine image %s version %s", s.MachineImage, s.Version)
}

// UpdatePaths are the two targets the CLI prints for a version, as
// {"auto": v|null, "force": v|null}. Force is computed as if the current
// version were expired, whatever its classification is.
type UpdatePaths struct {
	// Auto is the target of an automatic update, nil when there is none.
	Auto *string `json:"auto"`
	// Force is the target of a forced update, nil when there is none,
	// including for machine images with update strategy major, which have no
	// forced path (MachineImageForcedUpdate says why).
	Force *string `json:"force"`
}

// maintenanceDecision is the outcome of a maintenance run for one version.
type maintenanceDecision struct {
	// Target is the version to move to; empty when the cluster stays.
	Target string
	// Forced is true when Target was chosen by the forced path because the
	// current version is expired (or no longer in the profile).
	Forced bool
}

// KubernetesAutoUpdate returns the automatic update target for a cluster on
// Kubernetes version current: among candidates of the same major.minor that
// are higher than current and not expired, the highest supported one, else the
// highest deprecated one. ok is false when there is none. The error reports a
// current version that is not semver.
func KubernetesAutoUpdate(spec *v1alpha1.CloudProfileSpec, current string, now time.Time) (target string, ok bool, err error) {
	cur, err := parseCurrent(UpdateSubject{Version: current})
	if err != nil {
		return "", false, err
	}
	c := kubernetesCandidates(spec, now)
	target, ok = autoTarget(c, cur, sameMinorAs(cur))
	return target, ok, nil
}

// KubernetesForcedUpdate returns the forced update target for a cluster on
// Kubernetes version current, as if current were expired: the highest
// candidate of exactly the next minor (same major, minor+1), preferring a
// version that is not expired, else the highest expired one, which a later
// maintenance run moves on from. No minor is ever skipped, because Kubernetes
// does not support skipping one, so ok is false when the next minor has no
// candidate.
func KubernetesForcedUpdate(spec *v1alpha1.CloudProfileSpec, current string, now time.Time) (target string, ok bool, err error) {
	cur, err := parseCurrent(UpdateSubject{Version: current})
	if err != nil {
		return "", false, err
	}
	next := func(v *semver.Version) bool { return v.Major() == cur.Major() && v.Minor() == cur.Minor()+1 }
	target, ok = highestPreferringNotExpired(kubernetesCandidates(spec, now), next)
	return target, ok, nil
}

// MachineImageAutoUpdate returns the automatic update target for a cluster on
// version current of the machine image imageName. Candidates are higher than
// current and not expired; within a scope the highest supported one wins,
// else the highest deprecated one. The scope follows the image's update
// strategy: patch stays in current's major.minor; minor tries major.minor
// first and then the whole major; major (the default) tries major.minor first
// and then any version.
func MachineImageAutoUpdate(spec *v1alpha1.CloudProfileSpec, imageName, current string, now time.Time) (target string, ok bool, err error) {
	subject := UpdateSubject{MachineImage: imageName, Version: current}
	image, cur, err := lookUpMachineImage(spec, subject)
	if err != nil {
		return "", false, err
	}
	c := machineImageCandidates(image, now)
	if target, ok = autoTarget(c, cur, sameMinorAs(cur)); ok {
		return target, true, nil
	}
	switch UpdateStrategyOrDefault(image.UpdateStrategy) {
	case v1alpha1.UpdateStrategyMinor:
		target, ok = autoTarget(c, cur, func(v *semver.Version) bool { return v.Major() == cur.Major() })
	case v1alpha1.UpdateStrategyMajor:
		target, ok = autoTarget(c, cur, func(*semver.Version) bool { return true })
	}
	return target, ok, nil
}

// MachineImageForcedUpdate returns the forced update target for a cluster on
// version current of the machine image imageName, as if current were expired.
//
// With strategy patch it is the lowest higher minor of current's major that
// has any candidate, and in it the highest version that is not expired, else
// the highest expired one: an expired version of the next minor beats skipping
// that minor, and a later run moves on. With strategy minor it is likewise the
// lowest higher major. Strategy major has no forced path: the error wraps
// ErrNoForcedUpdatePath and tells the operator to migrate.
func MachineImageForcedUpdate(spec *v1alpha1.CloudProfileSpec, imageName, current string, now time.Time) (target string, ok bool, err error) {
	subject := UpdateSubject{MachineImage: imageName, Version: current}
	image, cur, err := lookUpMachineImage(spec, subject)
	if err != nil {
		return "", false, err
	}
	c := machineImageCandidates(image, now)
	switch strategy := UpdateStrategyOrDefault(image.UpdateStrategy); strategy {
	case v1alpha1.UpdateStrategyPatch:
		minor, found := lowestAbove(c, func(v *semver.Version) (uint64, bool) { return v.Minor(), v.Major() == cur.Major() }, cur.Minor())
		if !found {
			return "", false, nil
		}
		target, ok = highestPreferringNotExpired(c, func(v *semver.Version) bool { return v.Major() == cur.Major() && v.Minor() == minor })
	case v1alpha1.UpdateStrategyMinor:
		major, found := lowestAbove(c, func(v *semver.Version) (uint64, bool) { return v.Major(), true }, cur.Major())
		if !found {
			return "", false, nil
		}
		target, ok = highestPreferringNotExpired(c, func(v *semver.Version) bool { return v.Major() == major })
	default:
		return "", false, fmt.Errorf("%s: update strategy %s has %w: the image has reached its end of life; migrate clusters to another machine image",
			subject, strategy, ErrNoForcedUpdatePath)
	}
	return target, ok, nil
}

// maintenance decides what a maintenance run does with subject (docs/semantics.md §4):
// the automatic path first; only when it finds nothing and the current version
// is expired, the forced path. A current version the profile no longer lists
// counts as expired, since clusters must leave it. An expired version with no
// forced target is a profile error wrapping errNoSuitableVersion (and, for
// strategy major, ErrNoForcedUpdatePath). A zero decision with a nil error
// means the cluster stays where it is.
func maintenance(spec *v1alpha1.CloudProfileSpec, subject UpdateSubject, now time.Time) (maintenanceDecision, error) {
	auto, forced := KubernetesAutoUpdate, KubernetesForcedUpdate
	if subject.MachineImage != "" {
		auto = func(spec *v1alpha1.CloudProfileSpec, current string, now time.Time) (string, bool, error) {
			return MachineImageAutoUpdate(spec, subject.MachineImage, current, now)
		}
		forced = func(spec *v1alpha1.CloudProfileSpec, current string, now time.Time) (string, bool, error) {
			return MachineImageForcedUpdate(spec, subject.MachineImage, current, now)
		}
	}

	target, ok, err := auto(spec, subject.Version, now)
	if err != nil {
		return maintenanceDecision{}, err
	}
	if ok {
		return maintenanceDecision{Target: target}, nil
	}
	leave, why := mustLeave(spec, subject, now)
	if !leave {
		return maintenanceDecision{}, nil
	}
	target, ok, err = forced(spec, subject.Version, now)
	if err != nil {
		return maintenanceDecision{}, fmt.Errorf("%w: %w", errNoSuitableVersion, err)
	}
	if !ok {
		return maintenanceDecision{}, fmt.Errorf("%s %s and the profile offers %w to move to (%s)",
			subject, why, errNoSuitableVersion, forcedScopeOf(spec, subject))
	}
	return maintenanceDecision{Target: target, Forced: true}, nil
}

// Paths returns both update targets of subject for display: Auto as a
// maintenance run would try first, and Force as if the version were expired.
// For a machine image with update strategy major Force is nil without an
// error; call MachineImageForcedUpdate for the reason.
func Paths(spec *v1alpha1.CloudProfileSpec, subject UpdateSubject, now time.Time) (UpdatePaths, error) {
	var paths UpdatePaths
	var auto, force string
	var okAuto, okForce bool
	var err error
	if subject.MachineImage == "" {
		if auto, okAuto, err = KubernetesAutoUpdate(spec, subject.Version, now); err != nil {
			return paths, err
		}
		if force, okForce, err = KubernetesForcedUpdate(spec, subject.Version, now); err != nil {
			return paths, err
		}
	} else {
		if auto, okAuto, err = MachineImageAutoUpdate(spec, subject.MachineImage, subject.Version, now); err != nil {
			return paths, err
		}
		force, okForce, err = MachineImageForcedUpdate(spec, subject.MachineImage, subject.Version, now)
		if err != nil && !errors.Is(err, ErrNoForcedUpdatePath) {
			return paths, err
		}
	}
	if okAuto {
		paths.Auto = &auto
	}
	if okForce {
		paths.Force = &force
	}
	return paths, nil
}

// candidate is a version an update may move to.
type candidate struct {
	written        string
	version        *semver.Version
	classification v1alpha1.VersionClassification
}

func (c candidate) expired() bool { return c.classification == v1alpha1.ClassificationExpired }

// appendCandidate adds v unless it is preview, unavailable or not semver.
func appendCandidate(c []candidate, v *v1alpha1.ExpirableVersion, now time.Time) []candidate {
	classification := ClassificationAt(*v, now)
	if classification == v1alpha1.ClassificationPreview || classification == v1alpha1.ClassificationUnavailable {
		return c
	}
	parsed, err := semver.NewVersion(v.Version)
	if err != nil {
		return c
	}
	return append(c, candidate{written: v.Version, version: parsed, classification: classification})
}

func kubernetesCandidates(spec *v1alpha1.CloudProfileSpec, now time.Time) []candidate {
	if spec == nil {
		return nil
	}
	c := make([]candidate, 0, len(spec.Kubernetes.Versions))
	for i := range spec.Kubernetes.Versions {
		c = appendCandidate(c, &spec.Kubernetes.Versions[i], now)
	}
	return c
}

func machineImageCandidates(image *v1alpha1.MachineImage, now time.Time) []candidate {
	c := make([]candidate, 0, len(image.Versions))
	for i := range image.Versions {
		c = appendCandidate(c, &image.Versions[i].ExpirableVersion, now)
	}
	return c
}

// autoTarget picks among candidates in scope that are higher than cur and not
// expired: the highest supported one, else the highest deprecated one.
func autoTarget(c []candidate, cur *semver.Version, inScope func(*semver.Version) bool) (string, bool) {
	var bestSupported, bestDeprecated *candidate
	for i := range c {
		cand := &c[i]
		if cand.expired() || !cand.version.GreaterThan(cur) || !inScope(cand.version) {
			continue
		}
		if cand.classification == v1alpha1.ClassificationDeprecated {
			bestDeprecated = higher(bestDeprecated, cand)
		} else {
			bestSupported = higher(bestSupported, cand)
		}
	}
	switch {
	case bestSupported != nil:
		return bestSupported.written, true
	case bestDeprecated != nil:
		return bestDeprecated.written, true
	}
	return "", false
}

// highestPreferringNotExpired picks among candidates in scope the highest one
// that is not expired, else the highest expired one.
func highestPreferringNotExpired(c []candidate, inScope func(*semver.Version) bool) (string, bool) {
	var bestLive, bestExpired *candidate
	for i := range c {
		cand := &c[i]
		if !inScope(cand.version) {
			continue
		}
		if cand.expired() {
			bestExpired = higher(bestExpired, cand)
		} else {
			bestLive = higher(bestLive, cand)
		}
	}
	switch {
	case bestLive != nil:
		return bestLive.written, true
	case bestExpired != nil:
		return bestExpired.written, true
	}
	return "", false
}

// lowestAbove returns the lowest value of part(v) above floor among the
// candidates for which part applies: the next minor or major that has any
// candidate at all.
func lowestAbove(c []candidate, part func(*semver.Version) (uint64, bool), floor uint64) (uint64, bool) {
	var lowest uint64
	found := false
	for i := range c {
		value, applies := part(c[i].version)
		if applies && value > floor && (!found || value < lowest) {
			lowest, found = value, true
		}
	}
	return lowest, found
}

func higher(best, cand *candidate) *candidate {
	if best == nil || cand.version.GreaterThan(best.version) {
		return cand
	}
	return best
}

func sameMinorAs(cur *semver.Version) func(*semver.Version) bool {
	return func(v *semver.Version) bool { return v.Major() == cur.Major() && v.Minor() == cur.Minor() }
}

func parseCurrent(subject UpdateSubject) (*semver.Version, error) {
	cur, err := semver.NewVersion(subject.Version)
	if err != nil {
		return nil, fmt.Errorf("%s: the current version is not a semantic version: %w", subject, err)
	}
	return cur, nil
}

func lookUpMachineImage(spec *v1alpha1.CloudProfileSpec, subject UpdateSubject) (*v1alpha1.MachineImage, *semver.Version, error) {
	image := MachineImageOf(spec, subject.MachineImage)
	if image == nil {
		return nil, nil, fmt.Errorf("%s: %w %q in the profile", subject, ErrUnknownMachineImage, subject.MachineImage)
	}
	cur, err := parseCurrent(subject)
	return image, cur, err
}

// MachineImageOf is the machine image of spec named name; nil when spec
// has none of that name.
func MachineImageOf(spec *v1alpha1.CloudProfileSpec, name string) *v1alpha1.MachineImage {
	if spec == nil {
		return nil
	}
	for i := range spec.MachineImages {
		if spec.MachineImages[i].Name == name {
			return &spec.MachineImages[i]
		}
	}
	return nil
}

// mustLeave reports whether a cluster on subject must be moved even without
// an automatic update, and why: its version is expired, or the profile (or
// the image) no longer lists it. The cluster's version is found as
// IndexOfVersion finds it: the entry written as the cluster's version, else
// the same semantic version (a cluster on 1.7 is on the profile's 1.7.0).
func mustLeave(spec *v1alpha1.CloudProfileSpec, subject UpdateSubject, now time.Time) (bool, string) {
	const expired, gone = "is expired", "is no longer in the profile"
	if _, err := semver.NewVersion(subject.Version); err != nil || spec == nil {
		return true, gone
	}
	isExpired := func(v *v1alpha1.ExpirableVersion) (bool, string) {
		return ClassificationAt(*v, now) == v1alpha1.ClassificationExpired, expired
	}
	if subject.MachineImage == "" {
		versions := spec.Kubernetes.Versions
		if i := IndexOfVersion(len(versions), func(i int) string { return versions[i].Version }, subject.Version); i >= 0 {
			return isExpired(&versions[i])
		}
		return true, gone
	}
	if image := MachineImageOf(spec, subject.MachineImage); image != nil {
		versions := image.Versions
		if i := IndexOfVersion(len(versions), func(i int) string { return versions[i].Version }, subject.Version); i >= 0 {
			return isExpired(&versions[i].ExpirableVersion)
		}
	}
	return true, gone
}

// forcedScopeOf describes where the forced path looked, for the error of a
// maintenance run that found nothing.
func forcedScopeOf(spec *v1alpha1.CloudProfileSpec, subject UpdateSubject) string {
	cur, err := semver.NewVersion(subject.Version)
	if err != nil {
		return "the current version does not parse"
	}
	if subject.MachineImage == "" {
		return fmt.Sprintf("no supported, deprecated or expired version of the next minor %d.%d; Kubernetes minors may not be skipped", cur.Major(), cur.Minor()+1)
	}
	if image := MachineImageOf(spec, subject.MachineImage); image != nil && UpdateStrategyOrDefault(image.UpdateStrategy) == v1alpha1.UpdateStrategyPatch {
		return fmt.Sprintf("no supported, deprecated or expired version of a higher minor of major %d", cur.Major())
	}
	return fmt.Sprintf("no supported, deprecated or expired version of a major above %d", cur.Major())
}
