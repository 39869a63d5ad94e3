package lifecycle

import (
	"errors"
	"fmt"
	"strings"

	"github.com/Masterminds/semver/v3"

	v1alpha1 "github.com/profilesync/profilesync/api/v1alpha1"
)

// ErrUnlistedVersion is returned, wrapped, when the update paths of a
// version are asked for that the profile does not list: a question about a
// version no cluster can be created on has no useful answer ({"auto":null}
// for Kubernetes 1.99.0, a forced update across majors for an image version
// that never existed), so it is refused like an unknown machine image.
var ErrUnlistedVersion = errors.New("is not listed")

// listedShown is how many of a profile's versions an ErrUnlistedVersion
// message names: enough to spot a typo, short enough for one line.
const listedShown = 8

// CheckListed returns nil when spec lists subject's version, matched as
// mustLeave matches it (as written, or by semver: a cluster on 1.7 is on the
// profile's 1.7.0), else an error wrapping ErrUnlistedVersion (or
// ErrUnknownMachineImage) that names the versions the profile does list,
// highest first, up to listedShown of them.
func CheckListed(spec *v1alpha1.CloudProfileSpec, subject UpdateSubject) error {
	var versions []v1alpha1.ExpirableVersion
	if subject.MachineImage == "" {
		if spec != nil {
			versions = spec.Kubernetes.Versions
		}
	} else {
		image := MachineImageOf(spec, subject.MachineImage)
		if image == nil {
			return fmt.Errorf("%s: %w %q in the profile", subject, ErrUnknownMachineImage, subject.MachineImage)
		}
		for _, v := range image.Versions {
			versions = append(versions, v.ExpirableVersion)
		}
	}
	if IndexOfVersion(len(versions), func(i int) string { return versions[i].Version }, subject.Version) >= 0 {
		return nil
	}
	written := make([]string, 0, len(versions))
	parsed := make([]*semver.Version, 0, len(versions))
	for _, v := range versions {
		p, _ := semver.NewVersion(v.Version)
		written = append(written, v.Version)
		parsed = append(parsed, p)
	}
	return fmt.Errorf("%s %w in the profile, which lists %s", subject, ErrUnlistedVersion, describeListed(written, parsed))
}

// describeListed names the versions highest first (those that do not parse
// last, as written), at most listedShown, and how many more there are.
func describeListed(written []string, parsed []*semver.Version) string {
	if len(written) == 0 {
		return "none"
	}
	order := make([]int, len(written))
	for i := range order {
		order[i] = i
	}
	less := func(a, b int) bool {
		switch {
		case parsed[a] == nil || parsed[b] == nil:
			return parsed[a] != nil && parsed[b] == nil
		default:
			return parsed[a].GreaterThan(parsed[b])
		}
	}
	// Insertion sort keeps equal versions in the profile's order.
	for i := 1; i < len(order); i++ {
		for j := i; j > 0 && less(order[j], order[j-1]); j-- {
			order[j], order[j-1] = order[j-1], order[j]
		}
	}
	shown := make([]string, 0, listedShown)
	for _, i := range order[:min(len(order), listedShown)] {
		shown = append(shown, written[i])
	}
	out := strings.Join(shown, ", ")
	if more := len(order) - len(shown); more > 0 {
		out += fmt.Sprintf(" and %d more", more)
	}
	return out
}
