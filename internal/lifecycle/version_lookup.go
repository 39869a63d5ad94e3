package lifecycle

import "github.com/Masterminds/semver/v3"

// IndexOfVersion finds version among n versions, at(i) being the i-th as
// written: the entry written exactly as version when there is one, else the
// first entry that is the same semantic version (a cluster on 1.7 is on a
// profile's 1.7.0), else -1.
//
// The exact entry comes first because a profile may list both 1.7 and 1.7.0:
// Gardener compares versions as strings, accepts such a pair, and finds a
// cluster's version in the profile by its string (helper
// FindMachineImageVersion), so each entry means itself and a cluster on
// 24.4.0 is judged by 24.4.0's classification, never by 24.4's. The semver
// match is only a fallback for a version the profile does not write as asked.
func IndexOfVersion(n int, at func(int) string, version string) int {
	if version == "" {
		return -1
	}
	for i := range n {
		if at(i) == version {
			return i
		}
	}
	want, err := semver.NewVersion(version)
	if err != nil {
		return -1
	}
	for i := range n {
		if have, err := semver.NewVersion(at(i)); err == nil && have.Equal(want) {
			return i
		}
	}
	return -1
}
