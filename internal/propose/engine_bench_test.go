package propose

import (
	"fmt"
	"testing"
	"time"

	v1alpha1 "github.com/profilesync/profilesync/api/v1alpha1"
	"github.com/profilesync/profilesync/internal/render/profile"
)

// benchmarkInput is a profile of versions Kubernetes versions (minors 1.0
// up, 20 patches each: the older patches deprecated and expiring, the
// newest supported) and tags releases, every one a patch of a listed minor
// or a newer minor, as kubernetes/kubernetes's tags are.
func benchmarkInput(versions, tags int) Input {
	now := at(now)
	minors := versions / 20
	var listed []v1alpha1.ExpirableVersion
	for m := range minors {
		for p := range 20 {
			name := fmt.Sprintf("1.%d.%d", m, p)
			if p == 19 {
				listed = append(listed, lc(name, stg(supported, "")))
				continue
			}
			listed = append(listed, lc(name, stg(supported, ""), stg(deprecated, "2026-01-01T00:00:00Z"), stg(expired, "2027-06-01T00:00:00Z")))
		}
	}
	var releases []Release
	for i := range tags {
		releases = append(releases, Release{Version: fmt.Sprintf("1.%d.%d", i%(minors+2), i/(minors+2)), Released: now.Add(-time.Duration(i%500) * time.Hour)})
	}
	return Input{
		Profiles:   []profile.Object{cloudProfile(listed...)},
		Policy:     strictPolicy(),
		Schedule:   schedule,
		Now:        now,
		Discovered: []Discovered{kubernetesReleases(0, releases...)},
	}
}

// BenchmarkProposeOn600VersionsAnd5000Tags is the proposal time of the
// issue's figure: a 600-version profile and 5,000 tags.
func BenchmarkProposeOn600VersionsAnd5000Tags(b *testing.B) {
	in := benchmarkInput(600, 5000)
	b.ReportAllocs()
	var proposals int
	for b.Loop() {
		result, err := Propose(in)
		if err != nil {
			b.Fatal(err)
		}
		proposals = len(result.Proposals) + len(result.Skipped)
	}
	b.ReportMetric(float64(proposals), "proposals+skips")
}

func BenchmarkProposeOn100VersionsAnd500Tags(b *testing.B) {
	in := benchmarkInput(100, 500)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Propose(in); err != nil {
			b.Fatal(err)
		}
	}
}
