package lifecycle

import (
	"fmt"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"

	v1alpha1 "github.com/profilesync/profilesync/api/v1alpha1"
)

// fuzzEpoch anchors fuzzed times; offsets are small so that nearby start
// times and the evaluation time collide often, which is where bugs hide.
var fuzzEpoch = at("2024-01-01T00:00:00Z")

// fuzzClassifications includes values that are invalid in a spec: the
// classification functions must not panic on them either.
var fuzzClassifications = []v1alpha1.VersionClassification{unavailable, preview, supported, deprecated, expired, "bogus"}

// byteReader hands out fuzz bytes, returning zeros once they run out.
type byteReader struct{ data []byte }

func (r *byteReader) next() byte {
	if len(r.data) == 0 {
		return 0
	}
	b := r.data[0]
	r.data = r.data[1:]
	return b
}

func (r *byteReader) empty() bool { return len(r.data) == 0 }

// fuzzTime is a start time within a few days of fuzzEpoch, or nil.
func (r *byteReader) fuzzTime() *metav1.Time {
	b := r.next()
	if b%8 == 0 {
		return nil
	}
	return &metav1.Time{Time: fuzzEpoch.Add(time.Duration(int8(b)) * 6 * time.Hour)}
}

func (r *byteReader) classification() v1alpha1.VersionClassification {
	return fuzzClassifications[int(r.next())%len(fuzzClassifications)]
}

// expirableVersion builds a version in one of three shapes: plain, deprecated
// API, or lifecycle of up to 5 stages in any order.
func (r *byteReader) expirableVersion(version string) v1alpha1.ExpirableVersion {
	v := v1alpha1.ExpirableVersion{Version: version}
	shape := r.next()
	if shape&1 != 0 {
		c := r.classification()
		v.Classification = &c
	}
	if shape&2 != 0 {
		v.ExpirationDate = r.fuzzTime()
	}
	if shape&4 != 0 {
		for range int(r.next()) % 6 {
			v.Lifecycle = append(v.Lifecycle, v1alpha1.LifecycleStage{Classification: r.classification(), StartTime: r.fuzzTime()})
		}
	}
	return v
}

// fuzzVersionStrings mixes valid, short, duplicate-by-semver and invalid forms.
var fuzzVersionStrings = []string{"1.29.0", "1.29.1", "1.30.0", "1.30.1", "1.31.0", "2.0.0", "1.7", "1.7.0", "1", "v1.29.0", "", "x.y", "1.30.0-rc.1", "99999999999999999999.0.0"}

func (r *byteReader) versionString() string {
	return fuzzVersionStrings[int(r.next())%len(fuzzVersionStrings)]
}

var fuzzStrategies = []string{"", "patch", "minor", "major", "sideways"}

// specFromBytes builds an arbitrary, often invalid, profile from fuzz bytes.
func specFromBytes(data []byte) *v1alpha1.CloudProfileSpec {
	r := &byteReader{data: data}
	spec := &v1alpha1.CloudProfileSpec{}
	if r.next()%4 != 0 {
		spec.Type = "aws"
	}
	for range int(r.next()) % 8 {
		spec.Kubernetes.Versions = append(spec.Kubernetes.Versions, r.expirableVersion(r.versionString()))
	}
	for i := range int(r.next()) % 4 {
		image := v1alpha1.MachineImage{Name: fmt.Sprintf("image-%d", int(r.next())%3)}
		if i == 0 && r.next()%5 == 0 {
			image.Name = ""
		}
		if s := fuzzStrategies[int(r.next())%len(fuzzStrategies)]; s != "" {
			image.UpdateStrategy = strategy(v1alpha1.MachineImageUpdateStrategy(s))
		}
		for range int(r.next()) % 6 {
			v := v1alpha1.MachineImageVersion{ExpirableVersion: r.expirableVersion(r.versionString())}
			switch r.next() % 4 {
			case 1:
				v.Architectures = []string{"amd64", "arm64"}
			case 2:
				v.Architectures = []string{"riscv64", "amd64", "amd64"}
			}
			switch r.next() % 4 {
			case 1:
				c := ">= 1.28, < 2"
				v.KubeletVersionConstraint = &c
			case 2:
				c := ">= one"
				v.KubeletVersionConstraint = &c
			}
			image.Versions = append(image.Versions, v)
		}
		spec.MachineImages = append(spec.MachineImages, image)
		if r.empty() {
			break
		}
	}
	return spec
}

// FuzzClassification checks that ClassificationAt and NextTransition agree on
// arbitrary versions: at the returned time the classification is next, and
// nothing changes strictly between t and then (checked just after t, at the
// midpoint and just before). Without a next transition the classification
// stays the same forever.
func FuzzClassification(f *testing.F) {
	f.Add([]byte{4, 4, 1, 0, 2, 8, 3, 16, 4, 24}, int16(2)) // a four-stage lifecycle
	f.Add([]byte{3, 2, 20}, int16(10))                      // deprecated API with expirationDate
	f.Add([]byte{4, 3, 2, 40, 3, 40, 4, 40}, int16(40))     // equal start times
	f.Add([]byte{4, 3, 4, 40, 2, 8, 3, 200}, int16(0))      // decreasing start times, out of rank order
	f.Add([]byte{0}, int16(0))                              // plain version
	f.Add([]byte{4, 2, 1, 100, 2, 120}, int16(-50))         // all stages in the future
	f.Add([]byte{7, 5, 30, 4, 5, 0, 5, 1, 0, 0}, int16(-8)) // everything at once, invalid values
	f.Fuzz(func(t *testing.T, data []byte, offset int16) {
		r := &byteReader{data: data}
		v := r.expirableVersion("1.30.0")
		now := fuzzEpoch.Add(time.Duration(offset) * time.Hour)

		current := ClassificationAt(v, now)
		nextAt, next, ok := NextTransition(v, now)

		status := Status(&v1alpha1.CloudProfileSpec{Kubernetes: v1alpha1.KubernetesSettings{Versions: []v1alpha1.ExpirableVersion{v}}}, now)
		got := status.Kubernetes.Versions[0]
		if got.Classification != current {
			t.Fatalf("Status says %q, ClassificationAt says %q", got.Classification, current)
		}
		if (got.NextTransitionTime != nil) != ok {
			t.Fatalf("Status next transition %v disagrees with NextTransition ok=%v", got.NextTransitionTime, ok)
		}

		if !ok {
			for _, later := range []time.Duration{time.Nanosecond, time.Hour, 24 * 365 * 100 * time.Hour} {
				if c := ClassificationAt(v, now.Add(later)); c != current {
					t.Fatalf("no transition after %v was reported, but the classification at +%v is %q, not %q", now, later, c, current)
				}
			}
			return
		}
		if !nextAt.After(now) {
			t.Fatalf("next transition %v is not after %v", nextAt, now)
		}
		if *got.NextClassification != next || !got.NextTransitionTime.Time.Equal(nextAt) {
			t.Fatalf("Status next (%q at %v) disagrees with NextTransition (%q at %v)", *got.NextClassification, got.NextTransitionTime, next, nextAt)
		}
		if c := ClassificationAt(v, nextAt); c != next {
			t.Fatalf("classification at the next transition %v is %q, NextTransition said %q", nextAt, c, next)
		}
		gap := nextAt.Sub(now)
		for _, between := range []time.Time{now.Add(time.Nanosecond), now.Add(gap / 2), nextAt.Add(-time.Nanosecond)} {
			if !between.After(now) || !between.Before(nextAt) {
				continue
			}
			if c := ClassificationAt(v, between); c != current {
				t.Fatalf("classification changed from %q to %q at %v, before the reported transition at %v", current, c, between, nextAt)
			}
		}
	})
}

// FuzzTransitions checks that Transitions walks a window the way
// ClassificationAt sees it: in time order, inside the window, each
// transition from the classification just before it to the one at it, the
// first from the classification at from, and none left out before until.
func FuzzTransitions(f *testing.F) {
	f.Add([]byte{4, 4, 1, 0, 2, 8, 3, 16, 4, 24}, int16(-100), uint16(0)) // a four-stage lifecycle, no end
	f.Add([]byte{4, 4, 1, 0, 2, 8, 3, 16, 4, 24}, int16(0), uint16(96))   // the window ends at a stage start
	f.Add([]byte{3, 2, 20}, int16(10), uint16(1000))                      // deprecated API with expirationDate
	f.Add([]byte{4, 3, 2, 40, 3, 40, 4, 40}, int16(0), uint16(240))       // equal start times
	f.Add([]byte{4, 3, 4, 40, 2, 8, 3, 200}, int16(-500), uint16(2000))   // decreasing start times
	f.Fuzz(func(t *testing.T, data []byte, offset int16, window uint16) {
		r := &byteReader{data: data}
		v := r.expirableVersion("1.30.0")
		from := fuzzEpoch.Add(time.Duration(offset) * time.Hour)
		var until time.Time
		if window != 0 {
			until = from.Add(time.Duration(window) * time.Hour)
		}

		previous := from
		current := ClassificationAt(v, from)
		for _, tr := range Transitions(v, from, until) {
			if !tr.At.After(previous) || (!until.IsZero() && tr.At.After(until)) {
				t.Fatalf("transition at %v is not after %v or not in the window [%v, %v]", tr.At, previous, from, until)
			}
			if tr.From != current || tr.From != ClassificationAt(v, tr.At.Add(-time.Nanosecond)) {
				t.Fatalf("transition at %v is from %q; the classification before it is %q", tr.At, tr.From, current)
			}
			if c := ClassificationAt(v, tr.At); tr.To != c {
				t.Fatalf("transition at %v is to %q; the classification then is %q", tr.At, tr.To, c)
			}
			if next, _, _ := NextTransition(v, previous); !next.Equal(tr.At) {
				t.Fatalf("after %v the next transition is at %v, Transitions lists %v", previous, next, tr.At)
			}
			previous, current = tr.At, tr.To
		}
		if next, _, ok := NextTransition(v, previous); ok && (until.IsZero() || !next.After(until)) {
			t.Fatalf("the transition at %v, inside the window ending %v, is missing", next, until)
		}
	})
}

// FuzzValidate builds arbitrary profiles and runs everything that reads a
// profile on them: none may panic, every error must carry a field path below
// spec, and every warning must be "PATH: message".
func FuzzValidate(f *testing.F) {
	f.Add([]byte{})
	f.Add([]byte{1, 3, 0, 0, 2, 0, 4, 2, 2, 8, 3, 16, 1, 0, 1, 3, 2, 7, 0})
	f.Add([]byte{1, 5, 6, 3, 8, 7, 1, 2, 1, 4, 3, 1, 40, 2, 40, 3, 3, 8, 1, 1, 0, 3, 2, 9, 1, 2, 2, 1, 2})
	f.Add([]byte{0, 7, 13, 7, 5, 9, 4, 4, 4, 1, 8, 2, 16, 3, 24, 4, 32, 2, 2, 4, 4, 6, 1, 1, 2, 2, 7, 0, 0})
	f.Fuzz(func(t *testing.T, data []byte) {
		spec := specFromBytes(data)
		now := fuzzEpoch
		root := field.NewPath("spec")

		errs, warnings := ValidateCloudProfileSpec(spec, root)
		for _, err := range errs {
			if len(err.Field) < len("spec") || err.Field[:4] != "spec" {
				t.Fatalf("error without a path below spec: %v", err)
			}
		}
		for _, w := range warnings {
			if len(w) < 6 || w[:5] != "spec." {
				t.Fatalf("warning without a path: %q", w)
			}
		}

		_ = Status(spec, now)
		_, _ = nextProfileTransition(spec, now)
		_ = ValidateUpdate(specFromBytes(append([]byte{1}, data...)), spec, now, root)

		for _, v := range spec.Kubernetes.Versions {
			_, _ = maintenance(spec, UpdateSubject{Version: v.Version}, now)
			_, _ = Paths(spec, UpdateSubject{Version: v.Version}, now)
		}
		for _, image := range spec.MachineImages {
			for _, v := range image.Versions {
				_, _ = maintenance(spec, UpdateSubject{MachineImage: image.Name, Version: v.Version}, now)
				_, _ = Paths(spec, UpdateSubject{MachineImage: image.Name, Version: v.Version}, now)
			}
		}
	})
}
