package policy

import (
	"fmt"
	"slices"
	"time"

	"github.com/Masterminds/semver/v3"
	"k8s.io/apimachinery/pkg/util/validation/field"

	v1alpha1 "github.com/profilesync/profilesync/api/v1alpha1"
	"github.com/profilesync/profilesync/internal/lifecycle"
)

// version is one version of a profile as the rules read it.
type version struct {
	semver *semver.Version
	v      *v1alpha1.ExpirableVersion
	// path is the version's field path relative to the spec.
	path *field.Path
}

func (v version) String() string { return v.v.Version }

// classificationAt is the version's classification at t (lifecycle's rule).
func (v version) classificationAt(t time.Time) v1alpha1.VersionClassification {
	return lifecycle.ClassificationAt(*v.v, t)
}

// releasedAt reports whether the version has reached supported or a later
// stage at t.
func (v version) releasedAt(t time.Time) bool {
	return lifecycle.Rank(v.classificationAt(t)) >= lifecycle.Rank(v1alpha1.ClassificationSupported)
}

// reach finds the first stage of the version (in lifecycle form,
// lifecycle.Stages) that ranks at or above c: when the version becomes c or
// later. start is zero for a stage without start (since always); ok is
// false when the version never gets that far. index is the stage's index.
func (v version) reach(c v1alpha1.VersionClassification) (start time.Time, index int, ok bool) {
	for i, s := range lifecycle.Stages(*v.v) {
		if lifecycle.Rank(s.Classification) < lifecycle.Rank(c) {
			continue
		}
		if s.StartTime != nil {
			start = s.StartTime.Time
		}
		return start, i, true
	}
	return time.Time{}, 0, false
}

// stage returns the index-th stage in lifecycle form.
func (v version) stage(index int) v1alpha1.LifecycleStage {
	return lifecycle.Stages(*v.v)[index]
}

// stagePath is the field that sets the index-th stage (in lifecycle form):
// its startTime (or classification, when it has no start) in a lifecycle;
// for the deprecated API, classification for the first stage and
// expirationDate for the expired one.
func (v version) stagePath(index int) *field.Path {
	if len(v.v.Lifecycle) > 0 {
		stagePath := v.path.Child("lifecycle").Index(index)
		if v.v.Lifecycle[index].StartTime == nil {
			return stagePath.Child("classification")
		}
		return stagePath.Child("startTime")
	}
	if index > 0 {
		return v.path.Child("expirationDate")
	}
	return v.path.Child("classification")
}

// subject is one list of versions of a profile: the Kubernetes versions or
// one machine image's.
type subject struct {
	// image is the machine image's name, empty for Kubernetes.
	image    string
	strategy v1alpha1.MachineImageUpdateStrategy
	// path is the list's field path relative to the spec.
	path     *field.Path
	versions []version
}

func (s subject) kubernetes() bool { return s.image == "" }

// updateSubject names a version of this subject for lifecycle's update
// paths.
func (s subject) updateSubject(version string) lifecycle.UpdateSubject {
	return lifecycle.UpdateSubject{MachineImage: s.image, Version: version}
}

// subjectsOf lists the Kubernetes versions and every machine image of spec.
// Versions that are not semver take no part (validation reports them).
func subjectsOf(spec *v1alpha1.CloudProfileSpec) []subject {
	kubernetes := field.NewPath("kubernetes", "versions")
	subjects := make([]subject, 0, 1+len(spec.MachineImages))
	subjects = append(subjects, subject{path: kubernetes, versions: parseVersions(len(spec.Kubernetes.Versions), func(i int) (*v1alpha1.ExpirableVersion, *field.Path) {
		return &spec.Kubernetes.Versions[i], kubernetes.Index(i)
	})})
	images := field.NewPath("machineImages")
	for i := range spec.MachineImages {
		image := &spec.MachineImages[i]
		versionsPath := images.Index(i).Child("versions")
		subjects = append(subjects, subject{
			image:    image.Name,
			strategy: lifecycle.UpdateStrategyOrDefault(image.UpdateStrategy),
			path:     versionsPath,
			versions: parseVersions(len(image.Versions), func(j int) (*v1alpha1.ExpirableVersion, *field.Path) {
				return &image.Versions[j].ExpirableVersion, versionsPath.Index(j)
			}),
		})
	}
	return subjects
}

func parseVersions(n int, at func(int) (*v1alpha1.ExpirableVersion, *field.Path)) []version {
	versions := make([]version, 0, n)
	for i := range n {
		v, path := at(i)
		parsed, err := semver.NewVersion(v.Version)
		if err != nil {
			continue
		}
		versions = append(versions, version{semver: parsed, v: v, path: path})
	}
	return versions
}

// groupKey identifies a group of versions: for Kubernetes a minor; for a
// machine image what its update strategy keeps a cluster within without a
// forced update: a minor for patch, a major for minor, and the whole image
// for major (clusters may move to any version).
type groupKey struct {
	major, minor uint64
}

// group is the versions of one group, lowest first.
type group struct {
	key      groupKey
	label    string
	versions []version
}

// highest is the group's highest version.
func (g group) highest() version { return g.versions[len(g.versions)-1] }

// groupsOf groups the subject's versions, newest group first.
func groupsOf(s subject) []group {
	keyOf := func(v *semver.Version) groupKey {
		switch {
		case s.kubernetes() || s.strategy == v1alpha1.UpdateStrategyPatch:
			return groupKey{major: v.Major(), minor: v.Minor()}
		case s.strategy == v1alpha1.UpdateStrategyMinor:
			return groupKey{major: v.Major()}
		}
		return groupKey{}
	}
	byKey := map[groupKey]*group{}
	var groups []*group
	for _, v := range s.versions {
		key := keyOf(v.semver)
		g, ok := byKey[key]
		if !ok {
			g = &group{key: key, label: s.groupLabel(key)}
			byKey[key] = g
			groups = append(groups, g)
		}
		g.versions = append(g.versions, v)
	}
	out := make([]group, len(groups))
	for i, g := range groups {
		slices.SortStableFunc(g.versions, func(a, b version) int { return a.semver.Compare(b.semver) })
		out[i] = *g
	}
	slices.SortStableFunc(out, func(a, b group) int {
		if a.key.major != b.key.major {
			return compareDescending(a.key.major, b.key.major)
		}
		return compareDescending(a.key.minor, b.key.minor)
	})
	return out
}

func compareDescending(a, b uint64) int {
	switch {
	case a > b:
		return -1
	case a < b:
		return 1
	}
	return 0
}

// groupLabel names a group in messages: "minor 1.33", "gardenlinux 1877",
// "machine image ubuntu".
func (s subject) groupLabel(key groupKey) string {
	switch {
	case s.kubernetes():
		return fmt.Sprintf("minor %d.%d", key.major, key.minor)
	case s.strategy == v1alpha1.UpdateStrategyPatch:
		return fmt.Sprintf("%s %d.%d", s.image, key.major, key.minor)
	case s.strategy == v1alpha1.UpdateStrategyMinor:
		return fmt.Sprintf("%s %d", s.image, key.major)
	}
	return "machine image " + s.image
}

// versionLabel names one of the subject's versions in messages.
func (s subject) versionLabel(v string) string {
	if s.kubernetes() {
		return v
	}
	return s.image + " " + v
}

// groupUnit is what the forced path crosses between the subject's groups.
func (s subject) groupUnit(n int) string {
	unit := "minor"
	if !s.kubernetes() && s.strategy == v1alpha1.UpdateStrategyMinor {
		unit = "major"
	}
	if n == 1 {
		return unit
	}
	return unit + "s"
}
