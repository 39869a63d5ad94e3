package propose

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1alpha1 "github.com/profilesync/profilesync/api/v1alpha1"
	"github.com/profilesync/profilesync/internal/policy"
	"github.com/profilesync/profilesync/internal/render/profile"
)

// fuzzBytes hands out the fuzzer's bytes as small choices; zeros once
// they run out.
type fuzzBytes struct{ data []byte }

func (b *fuzzBytes) next(n int) int {
	if len(b.data) == 0 || n <= 0 {
		return 0
	}
	v := int(b.data[0]) % n
	b.data = b.data[1:]
	return v
}

func (b *fuzzBytes) flag() bool { return b.next(2) == 1 }

// fuzzInput builds profiles, a policy, a schedule and releases from data:
// Kubernetes minors 1.30 to 1.35 with up to three patches each, and images
// by minor, each version with one of the lifecycles operators write, its
// dates within a year of now.
func fuzzInput(data []byte) Input {
	b := &fuzzBytes{data: data}
	now := at("2026-11-28T00:00:00Z").Add(time.Duration(b.next(48)) * time.Hour)
	date := func() *metav1.Time {
		t := metav1.NewTime(now.Add(time.Duration(b.next(25)*30-360) * day))
		return &t
	}
	version := func(name string) v1alpha1.ExpirableVersion {
		v := v1alpha1.ExpirableVersion{Version: name}
		switch b.next(6) {
		case 0: // supported forever
		case 1:
			v.Lifecycle = []v1alpha1.LifecycleStage{{Classification: supported}}
		case 2:
			v.Lifecycle = []v1alpha1.LifecycleStage{{Classification: preview}, {Classification: supported, StartTime: date()}}
		case 3:
			d := date()
			e := metav1.NewTime(d.Add(time.Duration(1+b.next(200)) * day))
			v.Lifecycle = []v1alpha1.LifecycleStage{{Classification: supported}, {Classification: deprecated, StartTime: d}, {Classification: expired, StartTime: &e}}
		case 4:
			v.Lifecycle = []v1alpha1.LifecycleStage{{Classification: preview}}
		case 5:
			v.ExpirationDate = date()
		}
		return v
	}
	var kubernetes []v1alpha1.ExpirableVersion
	for minor := 30; minor <= 35; minor++ {
		for patch := range b.next(4) {
			kubernetes = append(kubernetes, version(fmt.Sprintf("1.%d.%d", minor, patch*3)))
		}
	}
	o := cloudProfile(kubernetes...)
	image := &o.CloudProfile.Spec.MachineImages[0]
	for range b.next(3) {
		name := fmt.Sprintf("%d.%d.0", 1590+b.next(4), b.next(5))
		if !slices.ContainsFunc(image.Versions, func(v v1alpha1.MachineImageVersion) bool { return v.Version == name }) {
			image.Versions = append(image.Versions, v1alpha1.MachineImageVersion{ExpirableVersion: version(name)})
		}
	}
	profiles := []profile.Object{o}
	if b.flag() && len(kubernetes) > 0 {
		profiles = append(profiles, namespaced(v1alpha1.ExpirableVersion{Version: kubernetes[b.next(len(kubernetes))].Version,
			Lifecycle: []v1alpha1.LifecycleStage{{Classification: expired, StartTime: date()}}}))
	}

	severity := func() policy.Severity {
		if b.flag() {
			return policy.SeverityError
		}
		return policy.SeverityWarning
	}
	p := &policy.Policy{APIVersion: policy.APIVersion, Kind: policy.Kind}
	if b.flag() {
		p.Rules.Supported = &policy.SupportedRule{Severity: severity(), Minors: 1 + b.next(3), MachineImageGroups: b.next(2)}
	}
	if b.flag() {
		p.Rules.Preview = &policy.PreviewRule{Severity: severity(), MaxMinors: intPtr(b.next(3)), MaxDays: intPtr(b.next(60))}
	}
	if b.flag() {
		p.Rules.Deprecation = &policy.DeprecationRule{Severity: severity(), OlderPatches: true, RequireExpiry: b.flag(), MachineImages: b.flag()}
	}
	if b.flag() {
		p.Rules.Notice = &policy.NoticeRule{Severity: severity(), Days: 1 + b.next(45)}
	}
	if b.flag() {
		p.Rules.ForcedUpdates = &policy.ForcedUpdatesRule{Severity: severity()}
	}
	if p.Rules == (policy.Rules{}) {
		p = nil
	}

	releases := func(name func() string) []Release {
		var out []Release
		for range b.next(5) {
			out = append(out, Release{Version: name(), Released: now.Add(-time.Duration(b.next(240)) * time.Hour)})
		}
		return out
	}
	return Input{
		Profiles: profiles,
		Policy:   p,
		Schedule: Schedule{
			PreviewDuration:        time.Duration(b.next(60)) * day,
			ExpiryAfterDeprecation: time.Duration(1+b.next(200)) * day,
			RetirementAge:          time.Duration(b.next(200)) * day,
		},
		Now: now,
		Discovered: []Discovered{
			{Source: "kubernetes", Cooldown: time.Duration(b.next(4)) * day, Target: kubernetesFeed,
				Releases: releases(func() string { return fmt.Sprintf("1.%d.%d", 29+b.next(8), b.next(12)) })},
			{Source: "gardenlinux", Cooldown: time.Duration(b.next(4)) * day, Target: imageFeed,
				Releases: releases(func() string { return fmt.Sprintf("%d.%d", 1589+b.next(6), b.next(8)) })},
		},
	}
}

// FuzzProposalsPassThePolicy: for random profiles, policies, schedules and
// releases, every proposal leaves the profiles with no validation problem
// and no policy error that they did not have already, now and at each
// instant the proposal schedules; it changes only the versions its edits
// name; and running the engine on its own output proposes nothing new.
func FuzzProposalsPassThePolicy(f *testing.F) {
	f.Add([]byte{})
	f.Add([]byte{3, 2, 1, 1, 2, 3, 3, 0, 2, 1, 1, 1, 9, 1, 0, 1, 1, 1, 1, 30, 1, 1, 1, 1, 4, 5, 6, 7, 8, 9, 10, 11})
	f.Add([]byte("a profile with three minors and new releases of each of them, a strict policy and a short schedule"))
	f.Fuzz(func(t *testing.T, data []byte) {
		in := fuzzInput(data)
		result, err := Propose(in)
		if err != nil {
			t.Fatalf("Propose: %v", err)
		}
		state := in.Profiles
		for _, p := range result.Proposals {
			after, err := ApplyEdits(state, p.Edits)
			if err != nil {
				t.Fatalf("%s: %v", p.Summary, err)
			}
			checkPassesThePolicy(t, in, after, p)
			state = after
		}
		if !equality.Semantic.DeepEqual(state, result.Profiles) {
			t.Fatalf("the result's profiles are not its proposals' edits made")
		}
		checkTouchesOnlyWhatItNames(t, in.Profiles, result)

		again := in
		again.Profiles = result.Profiles
		second, err := Propose(again)
		if err != nil {
			t.Fatalf("Propose on its own output: %v", err)
		}
		if len(second.Proposals) > 0 {
			t.Fatalf("running on its own output proposes %q", second.Proposals[0].Summary)
		}
	})
}

// checkPassesThePolicy checks after against the base at now and at every
// stage start p writes, with the policy's own Check and the validation.
func checkPassesThePolicy(t *testing.T, in Input, after []profile.Object, p Proposal) {
	t.Helper()
	now := in.Now.UTC().Truncate(time.Second)
	instants := []time.Time{now}
	for _, e := range p.Edits {
		for _, s := range e.Lifecycle {
			if s.StartTime != nil && s.StartTime.After(now) {
				instants = append(instants, s.StartTime.Time)
			}
		}
	}
	baseNow, err := profile.Validate(in.Profiles, nil, now)
	if err != nil {
		t.Fatal(err)
	}
	afterNow, err := profile.Validate(after, nil, now)
	if err != nil {
		t.Fatal(err)
	}
	baseEvaluated, afterEvaluated := baseNow.Evaluate(), afterNow.Evaluate()
	for _, at := range instants {
		baseSet, _ := profile.Validate(in.Profiles, nil, at)
		afterSet, _ := profile.Validate(after, nil, at)
		if added := newProblems(afterSet.Problems, baseSet.Problems); len(added) > 0 {
			t.Fatalf("%s: at %s the validation refuses what it did not: %s", p.Summary, at, added[0])
		}
		if in.Policy == nil {
			continue
		}
		var base []profile.Object
		if at.Equal(now) {
			base = baseEvaluated // the notice rule, the change a commit at now
		}
		afterFindings := in.Policy.Check(afterEvaluated, base, now, now).Errors
		baseFindings := in.Policy.Check(baseEvaluated, nil, now, now).Errors
		if !at.Equal(now) {
			afterFindings = in.Policy.Check(afterEvaluated, nil, at, at).Errors
			baseFindings = in.Policy.Check(baseEvaluated, nil, at, at).Errors
		}
		if added := newProblems(afterFindings, baseFindings); len(added) > 0 {
			t.Fatalf("%s: at %s the policy refuses what it did not: %s", p.Summary, at, added[0])
		}
	}
}

func newProblems(after, base profile.Problems) []string {
	known := keys(base)
	var added []string
	for _, p := range after {
		if !known[key(p)] {
			added = append(added, p.String())
		}
	}
	return added
}

// checkTouchesOnlyWhatItNames compares every profile before and after with
// the versions the edits name taken out: nothing else may differ.
func checkTouchesOnlyWhatItNames(t *testing.T, before []profile.Object, result *Result) {
	t.Helper()
	named := map[Feed][]string{}
	for _, e := range result.Edits() {
		named[e.Target] = append(named[e.Target], e.Version)
	}
	without := func(objects []profile.Object) []profile.Object {
		out := make([]profile.Object, len(objects))
		for i, o := range objects {
			out[i] = o
			if o.CloudProfile == nil {
				continue
			}
			cp := o.CloudProfile.DeepCopy()
			out[i].CloudProfile = cp
			for target, versions := range named {
				if target.File != o.File || target.CloudProfile != cp.Name {
					continue
				}
				l, ok := specList(&cp.Spec, target)
				if !ok {
					continue
				}
				for _, v := range versions {
					if i := l.index(v); i >= 0 {
						if l.image != nil {
							l.image.Versions = slices.Delete(l.image.Versions, i, i+1)
						} else {
							*l.kubernetes = slices.Delete(*l.kubernetes, i, i+1)
						}
					}
				}
			}
		}
		return out
	}
	if !equality.Semantic.DeepEqual(without(before), without(result.Profiles)) {
		t.Fatalf("the proposals change more than the versions they name: %s", cmp.Diff(without(before), without(result.Profiles)))
	}
}
