package propose

import (
	"fmt"
	"slices"

	"github.com/Masterminds/semver/v3"

	v1alpha1 "github.com/profilesync/profilesync/api/v1alpha1"
	"github.com/profilesync/profilesync/internal/render/profile"
)

// Action is what an edit does to one version of a list.
type Action string

const (
	// AddVersion adds a version that the list does not hold yet.
	AddVersion Action = "add"
	// SetLifecycle replaces a listed version's lifecycle (and drops the
	// deprecated classification and expirationDate, which lifecycle
	// replaces).
	SetLifecycle Action = "lifecycle"
	// RemoveVersion removes a listed version.
	RemoveVersion Action = "remove"
)

// Edit is one change of one version, in the file and the object where the
// version lives.
type Edit struct {
	// Target is the list: a CloudProfile's Kubernetes versions, or one of
	// its machine images' versions.
	Target Feed
	Action Action
	// Version is the version as the list writes it (for AddVersion, as the
	// edit writes it).
	Version string
	// Lifecycle is the version's whole lifecycle after the edit, for
	// AddVersion and SetLifecycle.
	Lifecycle []v1alpha1.LifecycleStage
	// Template is, for a machine image version the edit adds, the listed
	// version whose other fields (architectures, cri, kubelet constraint)
	// the new version copies; empty when there is none.
	Template string
	// Reason says why, in the words of the commit message.
	Reason string
}

// list is the versions an edit's target names in spec, each as its
// ExpirableVersion, with the machine image entry when it is one.
type list struct {
	kubernetes *[]v1alpha1.ExpirableVersion
	image      *v1alpha1.MachineImage
}

func (l list) len() int {
	if l.image != nil {
		return len(l.image.Versions)
	}
	return len(*l.kubernetes)
}

func (l list) at(i int) *v1alpha1.ExpirableVersion {
	if l.image != nil {
		return &l.image.Versions[i].ExpirableVersion
	}
	return &(*l.kubernetes)[i]
}

func (l list) versions() []string {
	out := make([]string, l.len())
	for i := range out {
		out[i] = l.at(i).Version
	}
	return out
}

// insertionIndex puts a new version next to the highest of versions below
// it: after it in a list written in ascending order, before it in a
// descending one; at the start or the end when none is below it. The edit
// of a file and of the decoded profiles put it at the same place.
func insertionIndex(versions []string, version string) int {
	v, err := semver.NewVersion(version)
	if err != nil {
		return len(versions)
	}
	parsed := make([]*semver.Version, len(versions))
	for i, written := range versions {
		parsed[i], _ = semver.NewVersion(written)
	}
	ascending, descending := 0, 0
	for i := 1; i < len(parsed); i++ {
		if parsed[i-1] == nil || parsed[i] == nil {
			continue
		}
		if parsed[i-1].LessThan(parsed[i]) {
			ascending++
		} else {
			descending++
		}
	}
	below := -1
	for i, p := range parsed {
		if p != nil && p.LessThan(v) && (below < 0 || p.GreaterThan(parsed[below])) {
			below = i
		}
	}
	switch {
	case below < 0 && descending > ascending:
		return len(versions)
	case below < 0:
		return 0
	case descending > ascending:
		return below
	}
	return below + 1
}

// canonicalVersions are the listed versions that are semver, each in its
// canonical form (1877.3 as 1877.3.0): a release is listed when its
// canonical form is among them.
func (l list) canonicalVersions() map[string]bool {
	out := make(map[string]bool, l.len())
	for i := range l.len() {
		if v, err := semver.NewVersion(l.at(i).Version); err == nil {
			out[v.String()] = true
		}
	}
	return out
}

// index returns the position of the version equal, as semver, to version
// (1877.3 and 1877.3.0 are one), or -1.
func (l list) index(version string) int {
	want, err := semver.NewVersion(version)
	for i := range l.len() {
		written := l.at(i).Version
		if written == version {
			return i
		}
		if err == nil {
			if have, err := semver.NewVersion(written); err == nil && have.Equal(want) {
				return i
			}
		}
	}
	return -1
}

// listOf finds target's list among objects: the CloudProfile named
// target.CloudProfile read from target.File. Its error says what is missing
// in words that follow targetLabel.
func listOf(objects []profile.Object, target Feed) (list, error) {
	for _, o := range objects {
		cp := o.CloudProfile
		if cp == nil || cp.Name != target.CloudProfile || o.File != target.File {
			continue
		}
		if target.MachineImage == "" {
			return list{kubernetes: &cp.Spec.Kubernetes.Versions}, nil
		}
		for i := range cp.Spec.MachineImages {
			if cp.Spec.MachineImages[i].Name == target.MachineImage {
				return list{image: &cp.Spec.MachineImages[i]}, nil
			}
		}
		return list{}, fmt.Errorf("the CloudProfile has no machine image %s", target.MachineImage)
	}
	return list{}, fmt.Errorf("the file holds no CloudProfile/%s", target.CloudProfile)
}

// ApplyEdits returns objects with edits made, as a sync would read the
// files the edits were written into: the objects edits touch are deep
// copies, the others are shared with objects. An edit that cannot be made
// (its list or version is not there, or is there already) is an error.
func ApplyEdits(objects []profile.Object, edits []Edit) ([]profile.Object, error) {
	out := slices.Clone(objects)
	copied := map[int]bool{}
	for _, e := range edits {
		i := slices.IndexFunc(out, func(o profile.Object) bool {
			return o.CloudProfile != nil && o.CloudProfile.Name == e.Target.CloudProfile && o.File == e.Target.File
		})
		if i >= 0 && !copied[i] {
			out[i] = profile.Object{File: out[i].File, CloudProfile: out[i].CloudProfile.DeepCopy()}
			copied[i] = true
		}
		if err := applyEdit(out, e); err != nil {
			return nil, err
		}
	}
	return out, nil
}

func applyEdit(objects []profile.Object, e Edit) error {
	l, err := listOf(objects, e.Target)
	if err != nil {
		return fmt.Errorf("%s: %w", targetLabel(e.Target), err)
	}
	i := l.index(e.Version)
	switch e.Action {
	case AddVersion:
		if i >= 0 {
			return fmt.Errorf("%s: %s is listed already", targetLabel(e.Target), e.Version)
		}
		added := v1alpha1.ExpirableVersion{Version: e.Version, Lifecycle: cloneStages(e.Lifecycle)}
		at := insertionIndex(l.versions(), e.Version)
		if l.image == nil {
			*l.kubernetes = slices.Insert(*l.kubernetes, at, added)
			return nil
		}
		entry := v1alpha1.MachineImageVersion{}
		if e.Template != "" {
			if t := l.index(e.Template); t >= 0 {
				l.image.Versions[t].DeepCopyInto(&entry)
			}
		}
		entry.ExpirableVersion = added
		l.image.Versions = slices.Insert(l.image.Versions, at, entry)
	case SetLifecycle:
		if i < 0 {
			return fmt.Errorf("%s: %s is not listed", targetLabel(e.Target), e.Version)
		}
		v := l.at(i)
		v.Classification, v.ExpirationDate = nil, nil
		v.Lifecycle = cloneStages(e.Lifecycle)
	case RemoveVersion:
		if i < 0 {
			return fmt.Errorf("%s: %s is not listed", targetLabel(e.Target), e.Version)
		}
		if l.image != nil {
			l.image.Versions = slices.Delete(l.image.Versions, i, i+1)
		} else {
			*l.kubernetes = slices.Delete(*l.kubernetes, i, i+1)
		}
	default:
		return fmt.Errorf("%s: %s: unknown action %q", targetLabel(e.Target), e.Version, e.Action)
	}
	return nil
}

func cloneStages(stages []v1alpha1.LifecycleStage) []v1alpha1.LifecycleStage {
	out := make([]v1alpha1.LifecycleStage, len(stages))
	for i := range stages {
		stages[i].DeepCopyInto(&out[i])
	}
	return out
}

// targetLabel names a list in messages: "CloudProfile/aws kubernetes",
// "CloudProfile/aws machine image gardenlinux".
func targetLabel(t Feed) string {
	if t.MachineImage == "" {
		return t.File + ": CloudProfile/" + t.CloudProfile + " kubernetes"
	}
	return t.File + ": CloudProfile/" + t.CloudProfile + " machine image " + t.MachineImage
}
