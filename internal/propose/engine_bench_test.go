package propose

import (
	"bytes"
	"fmt"
	"testing"
	"time"

	"sigs.k8s.io/yaml"

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

// BenchmarkEditFileOf600VersionsWithTheProposalsOf5000Tags is the second
// half of a proposal: writing the edits of
// BenchmarkProposeOn600VersionsAnd5000Tags into the profile's file with
// kyaml (the file parsed, every edit made in place, the file written
// back). The file is the benchmark's profile as YAML, decoded again so
// that the edits are those of the file.
func BenchmarkEditFileOf600VersionsWithTheProposalsOf5000Tags(b *testing.B) {
	in := benchmarkInput(600, 5000)
	object := in.Profiles[0].CloudProfile.DeepCopy()
	object.APIVersion = v1alpha1.GroupVersion.String()
	object.Kind = v1alpha1.CloudProfileKind
	data, err := yaml.Marshal(object)
	if err != nil {
		b.Fatal(err)
	}
	docs, err := profile.SplitDocuments(profilesFile, bytes.NewReader(data))
	if err != nil {
		b.Fatal(err)
	}
	objects, problems := profile.DecodeDocuments(docs)
	if len(problems) > 0 {
		b.Fatal(problems)
	}
	in.Profiles = objects
	result, err := Propose(in)
	if err != nil {
		b.Fatal(err)
	}
	edits := result.Edits()
	if len(edits) == 0 {
		b.Fatal("the benchmark proposes nothing to write")
	}
	b.ReportAllocs()
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		if _, err := EditFile(profilesFile, data, edits); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(len(edits)), "edits")
}
