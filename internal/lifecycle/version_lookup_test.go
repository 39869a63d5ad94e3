package lifecycle

import (
	"testing"

	. "github.com/onsi/gomega"

	v1alpha1 "github.com/profilesync/profilesync/api/v1alpha1"
)

func TestIndexOfVersionPrefersTheEntryWrittenAsAsked(t *testing.T) {
	tests := []struct {
		name     string
		versions []string
		version  string
		want     int
	}{
		{name: "24.4.0 next to an earlier 24.4 is the entry 24.4.0", versions: []string{"24.4", "24.4.0"}, version: "24.4.0", want: 1},
		{name: "24.4 next to an earlier 24.4.0 is the entry 24.4", versions: []string{"24.4.0", "24.4"}, version: "24.4", want: 1},
		{name: "a version written shorter is found by semver when not written as asked", versions: []string{"1.6.0", "1.7.0"}, version: "1.7", want: 1},
		{name: "a version written longer is found by semver when not written as asked", versions: []string{"1.7"}, version: "1.7.0", want: 0},
		{name: "of two semver matches, none written as asked, the first is taken", versions: []string{"1.7", "1.7.0"}, version: "v1.7.0", want: 0},
		{name: "a version that does not parse is found only as written", versions: []string{"latest"}, version: "latest", want: 0},
		{name: "a version that is not listed is not found", versions: []string{"1.6.0"}, version: "1.7.0", want: -1},
		{name: "an empty version names no entry", versions: []string{""}, version: "", want: -1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := IndexOfVersion(len(tt.versions), func(i int) string { return tt.versions[i] }, tt.version)
			NewWithT(t).Expect(got).To(Equal(tt.want))
		})
	}
}

// TestMustLeaveJudgesAClusterByTheEntryWrittenAsItsVersion: a profile may
// list 24.4 and 24.4.0 (Gardener accepts both, comparing strings, and finds a
// cluster's version by its string); a cluster on one of them is judged by
// its own entry's classification, whichever comes first in the list, as
// Gardener's maintenance judges it. (Kubernetes versions are always
// MAJOR.MINOR.PATCH, so two of them are never the same semantic version.)
func TestMustLeaveJudgesAClusterByTheEntryWrittenAsItsVersion(t *testing.T) {
	tests := []struct {
		name      string
		versions  []string
		expiredAt int // the index of the one expired entry
		subject   string
		wantLeave bool
	}{
		{name: "a cluster on 24.4.0 next to an earlier expired 24.4 stays", versions: []string{"24.4", "24.4.0"}, expiredAt: 0, subject: "24.4.0", wantLeave: false},
		{name: "a cluster on 24.4 next to an earlier expired 24.4.0 stays", versions: []string{"24.4.0", "24.4"}, expiredAt: 0, subject: "24.4", wantLeave: false},
		{name: "a cluster on the expired 24.4 next to a later 24.4.0 leaves", versions: []string{"24.4", "24.4.0"}, expiredAt: 0, subject: "24.4", wantLeave: true},
		{name: "a cluster on the expired 24.4.0 next to an earlier 24.4 leaves", versions: []string{"24.4", "24.4.0"}, expiredAt: 1, subject: "24.4.0", wantLeave: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			versions := make([]v1alpha1.ExpirableVersion, len(tt.versions))
			for i, v := range tt.versions {
				versions[i] = plain(v)
				if i == tt.expiredAt {
					versions[i] = withDeprecatedAPI(v, "", past)
				}
			}
			leave, why := mustLeave(imageProfile(nil, versions...), UpdateSubject{MachineImage: "os", Version: tt.subject}, updateNow)
			g.Expect(leave).To(Equal(tt.wantLeave), why)
			if tt.wantLeave {
				g.Expect(why).To(Equal("is expired"))
			}
		})
	}
}
