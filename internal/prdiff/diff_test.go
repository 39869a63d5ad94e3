package prdiff

import (
	"github.com/profilesync/profilesync/test/builders"

	"github.com/profilesync/profilesync/internal/render/profile"

	"testing"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1alpha1 "github.com/profilesync/profilesync/api/v1alpha1"
)

// diffNow is the time of the diff tests.
var diffNow = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func text(s string) *string { return &s }

func instant(value string) *time.Time { return &builders.Date(value).Time }

// cloudProfile wraps a spec as an evaluated CloudProfile object.
func cloudProfile(name string, spec *v1alpha1.CloudProfileSpec) profile.Object {
	return profile.Object{CloudProfile: &v1alpha1.CloudProfile{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: *spec}}
}

// withKubernetes is profile() with these Kubernetes versions (and the
// newest one, which no test touches).
func withKubernetes(versions ...v1alpha1.ExpirableVersion) *v1alpha1.CloudProfileSpec {
	spec := builders.Profile()
	spec.Kubernetes.Versions = builders.WithNewest(versions...)
	return spec
}

// withImageVersions is profile() whose gardenlinux image has these versions.
func withImageVersions(versions ...v1alpha1.ExpirableVersion) *v1alpha1.CloudProfileSpec {
	spec := builders.Profile()
	image := &spec.MachineImages[0]
	image.Versions = nil
	for _, v := range versions {
		image.Versions = append(image.Versions, v1alpha1.MachineImageVersion{ExpirableVersion: v, Architectures: []string{"amd64"}})
	}
	return spec
}

// TestDiffOfOneProfile diffs one CloudProfile at diffNow over a horizon of
// 90 days (until 2026-04-01).
func TestDiffOfOneProfile(t *testing.T) {
	supportedFromNow := builders.Staged("1.30.0", builders.Stage(v1alpha1.ClassificationSupported, ""))
	tests := []struct {
		name       string
		base, head *v1alpha1.CloudProfileSpec
		want       []Change
	}{
		{
			name: "identical specs have no changes",
			base: builders.Profile(), head: builders.Profile(),
		},
		{
			name: "a stage moved earlier is reported with its shift and the stretch in which classifications differ",
			base: withKubernetes(builders.Staged("1.30.0", builders.Stage(v1alpha1.ClassificationSupported, ""), builders.Stage(v1alpha1.ClassificationDeprecated, "2026-03-02T00:00:00Z"))),
			head: withKubernetes(builders.Staged("1.30.0", builders.Stage(v1alpha1.ClassificationSupported, ""), builders.Stage(v1alpha1.ClassificationDeprecated, "2026-01-01T00:00:00Z"))),
			want: []Change{
				{Kind: ChangeStageMoved, Version: "1.30.0", Stage: v1alpha1.ClassificationDeprecated,
					Base: text("2026-03-02T00:00:00Z"), Head: text("2026-01-01T00:00:00Z"), Shift: "-60d"},
				{Kind: ChangeClassification, Version: "1.30.0", Base: text("supported"), Head: text("deprecated"),
					From: instant("2026-01-01T00:00:00Z"), Until: instant("2026-03-02T00:00:00Z")},
			},
		},
		{
			name: "a stage moved later by part of a day shows hours",
			base: withKubernetes(builders.Staged("1.30.0", builders.Stage(v1alpha1.ClassificationPreview, ""), builders.Stage(v1alpha1.ClassificationSupported, "2026-02-01T00:00:00Z"))),
			head: withKubernetes(builders.Staged("1.30.0", builders.Stage(v1alpha1.ClassificationPreview, ""), builders.Stage(v1alpha1.ClassificationSupported, "2026-02-02T12:30:00Z"))),
			want: []Change{
				{Kind: ChangeStageMoved, Version: "1.30.0", Stage: v1alpha1.ClassificationSupported,
					Base: text("2026-02-01T00:00:00Z"), Head: text("2026-02-02T12:30:00Z"), Shift: "+1d12h30m"},
				{Kind: ChangeClassification, Version: "1.30.0", Base: text("supported"), Head: text("preview"),
					From: instant("2026-02-01T00:00:00Z"), Until: instant("2026-02-02T12:30:00Z")},
			},
		},
		{
			name: "a stage moved beyond the horizon is only reported as moved",
			base: withKubernetes(builders.Staged("1.30.0", builders.Stage(v1alpha1.ClassificationSupported, ""), builders.Stage(v1alpha1.ClassificationExpired, "2026-07-01T00:00:00Z"))),
			head: withKubernetes(builders.Staged("1.30.0", builders.Stage(v1alpha1.ClassificationSupported, ""), builders.Stage(v1alpha1.ClassificationExpired, "2026-08-01T00:00:00Z"))),
			want: []Change{
				{Kind: ChangeStageMoved, Version: "1.30.0", Stage: v1alpha1.ClassificationExpired,
					Base: text("2026-07-01T00:00:00Z"), Head: text("2026-08-01T00:00:00Z"), Shift: "+31d"},
			},
		},
		{
			name: "a stage added within the horizon changes the classification from its start on",
			base: withKubernetes(supportedFromNow),
			head: withKubernetes(builders.Staged("1.30.0", builders.Stage(v1alpha1.ClassificationSupported, ""), builders.Stage(v1alpha1.ClassificationExpired, "2026-03-01T00:00:00Z"))),
			want: []Change{
				{Kind: ChangeStageAdded, Version: "1.30.0", Stage: v1alpha1.ClassificationExpired, Head: text("2026-03-01T00:00:00Z")},
				{Kind: ChangeClassification, Version: "1.30.0", Base: text("supported"), Head: text("expired"), From: instant("2026-03-01T00:00:00Z")},
			},
		},
		{
			name: "a stage removed, and a start given to a stage that had none",
			base: withKubernetes(builders.Staged("1.30.0", builders.Stage(v1alpha1.ClassificationPreview, ""), builders.Stage(v1alpha1.ClassificationSupported, "2025-06-01T00:00:00Z"))),
			head: withKubernetes(builders.Staged("1.30.0", builders.Stage(v1alpha1.ClassificationSupported, "2025-06-01T00:00:00Z"))),
			want: []Change{
				{Kind: ChangeStageRemoved, Version: "1.30.0", Stage: v1alpha1.ClassificationPreview},
			},
		},
		{
			name: "a first stage given a start in the future makes the version unavailable until then",
			base: withKubernetes(supportedFromNow),
			head: withKubernetes(builders.Staged("1.30.0", builders.Stage(v1alpha1.ClassificationSupported, "2026-02-01T00:00:00Z"))),
			want: []Change{
				{Kind: ChangeStageMoved, Version: "1.30.0", Stage: v1alpha1.ClassificationSupported, Head: text("2026-02-01T00:00:00Z")},
				{Kind: ChangeClassification, Version: "1.30.0", Base: text("supported"), Head: text("unavailable"),
					From: instant("2026-01-01T00:00:00Z"), Until: instant("2026-02-01T00:00:00Z")},
			},
		},
		{
			name: "the deprecated API is compared field by field",
			base: withKubernetes(builders.DeprecatedAPIVersion("1.30.0", "", "")),
			head: withKubernetes(builders.DeprecatedAPIVersion("1.30.0", v1alpha1.ClassificationDeprecated, "2026-03-15T00:00:00Z")),
			want: []Change{
				{Kind: ChangeDeclaredClassification, Version: "1.30.0", Head: text("deprecated")},
				{Kind: ChangeExpirationDate, Version: "1.30.0", Head: text("2026-03-15T00:00:00Z")},
				{Kind: ChangeClassification, Version: "1.30.0", Base: text("supported"), Head: text("deprecated"),
					From: instant("2026-01-01T00:00:00Z"), Until: instant("2026-03-15T00:00:00Z")},
				{Kind: ChangeClassification, Version: "1.30.0", Base: text("supported"), Head: text("expired"),
					From: instant("2026-03-15T00:00:00Z")},
			},
		},
		{
			name: "an expirationDate moved reports its shift",
			base: withKubernetes(builders.DeprecatedAPIVersion("1.30.0", "", "2026-03-01T00:00:00Z")),
			head: withKubernetes(builders.DeprecatedAPIVersion("1.30.0", "", "2026-02-01T00:00:00Z")),
			want: []Change{
				{Kind: ChangeExpirationDate, Version: "1.30.0", Base: text("2026-03-01T00:00:00Z"), Head: text("2026-02-01T00:00:00Z"), Shift: "-28d"},
				{Kind: ChangeClassification, Version: "1.30.0", Base: text("supported"), Head: text("expired"),
					From: instant("2026-02-01T00:00:00Z"), Until: instant("2026-03-01T00:00:00Z")},
			},
		},
		{
			name: "rewriting the deprecated API as the same lifecycle is no change",
			base: withKubernetes(builders.DeprecatedAPIVersion("1.30.0", v1alpha1.ClassificationSupported, "2026-03-01T00:00:00Z")),
			head: withKubernetes(builders.Staged("1.30.0", builders.Stage(v1alpha1.ClassificationSupported, ""), builders.Stage(v1alpha1.ClassificationExpired, "2026-03-01T00:00:00Z"))),
		},
		{
			name: "rewriting the deprecated API as a different lifecycle reports the stages",
			base: withKubernetes(builders.DeprecatedAPIVersion("1.30.0", "", "2026-03-01T00:00:00Z")),
			head: withKubernetes(builders.Staged("1.30.0", builders.Stage(v1alpha1.ClassificationSupported, ""), builders.Stage(v1alpha1.ClassificationDeprecated, "2026-02-01T00:00:00Z"), builders.Stage(v1alpha1.ClassificationExpired, "2026-03-01T00:00:00Z"))),
			want: []Change{
				{Kind: ChangeStageAdded, Version: "1.30.0", Stage: v1alpha1.ClassificationDeprecated, Head: text("2026-02-01T00:00:00Z")},
				{Kind: ChangeClassification, Version: "1.30.0", Base: text("supported"), Head: text("deprecated"),
					From: instant("2026-02-01T00:00:00Z"), Until: instant("2026-03-01T00:00:00Z")},
			},
		},
		{
			name: "versions added and removed, with their classification now, in semver order",
			base: withKubernetes(builders.PlainVersion("1.9.0"), builders.Staged("1.30.0", builders.Stage(v1alpha1.ClassificationSupported, ""), builders.Stage(v1alpha1.ClassificationExpired, "2025-01-01T00:00:00Z"))),
			head: withKubernetes(builders.PlainVersion("1.9.0"), builders.Staged("1.10.0", builders.Stage(v1alpha1.ClassificationPreview, "2026-06-01T00:00:00Z"))),
			want: []Change{
				{Kind: ChangeVersionAdded, Version: "1.10.0", Head: text("unavailable")},
				{Kind: ChangeVersionRemoved, Version: "1.30.0", Base: text("expired")},
			},
		},
		{
			name: "a version added changes the automatic update of the older ones",
			base: withKubernetes(builders.PlainVersion("1.30.0")),
			head: withKubernetes(builders.PlainVersion("1.30.0"), builders.PlainVersion("1.30.1")),
			want: []Change{
				{Kind: ChangeUpdatePath, Version: "1.30.0", Path: UpdatePathAuto, Head: text("1.30.1")},
				{Kind: ChangeVersionAdded, Version: "1.30.1", Head: text("supported")},
			},
		},
		{
			name: "a version added in the next minor changes the forced update",
			base: withKubernetes(builders.PlainVersion("1.30.0"), builders.PlainVersion("1.31.0")),
			head: withKubernetes(builders.PlainVersion("1.30.0"), builders.PlainVersion("1.31.0"), builders.PlainVersion("1.31.2")),
			want: []Change{
				{Kind: ChangeUpdatePath, Version: "1.30.0", Path: UpdatePathForce, Base: text("1.31.0"), Head: text("1.31.2")},
				{Kind: ChangeUpdatePath, Version: "1.31.0", Path: UpdatePathAuto, Head: text("1.31.2")},
				{Kind: ChangeVersionAdded, Version: "1.31.2", Head: text("supported")},
			},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			diff := Diff("dev", []profile.Object{cloudProfile("aws", tc.base)}, []profile.Object{cloudProfile("aws", tc.head)}, diffNow, 90*24*time.Hour)
			if len(tc.want) == 0 {
				g.Expect(diff.Profiles).To(BeEmpty())
				g.Expect(diff.Unchanged).To(Equal(1))
				return
			}
			g.Expect(diff.Profiles).To(HaveLen(1))
			g.Expect(diff.Profiles[0].Status).To(Equal(ProfileChanged))
			g.Expect(diff.Profiles[0].Changes).To(Equal(tc.want))
		})
	}
}

func TestDiffOfMachineImages(t *testing.T) {
	tests := []struct {
		name       string
		base, head func() *v1alpha1.CloudProfileSpec
		want       []Change
	}{
		{
			name: "an image added and an image removed list their versions",
			base: builders.Profile,
			head: func() *v1alpha1.CloudProfileSpec {
				spec := builders.Profile()
				spec.MachineImages[0].Name = "flatcar"
				spec.MachineImages[0].Versions = append(spec.MachineImages[0].Versions, v1alpha1.MachineImageVersion{ExpirableVersion: builders.PlainVersion("1592.10.0")})
				return spec
			},
			want: []Change{
				{Kind: ChangeImageAdded, MachineImage: "flatcar", Head: text("1592.1.0, 1592.10.0")},
				{Kind: ChangeImageRemoved, MachineImage: "gardenlinux", Base: text("1592.1.0")},
			},
		},
		{
			name: "writing out the default update strategy is no change",
			base: func() *v1alpha1.CloudProfileSpec {
				spec := builders.Profile()
				spec.MachineImages[0].UpdateStrategy = nil
				return spec
			},
			head: func() *v1alpha1.CloudProfileSpec {
				spec := builders.Profile()
				spec.MachineImages[0].UpdateStrategy = builders.Strategy(v1alpha1.UpdateStrategyMajor)
				return spec
			},
		},
		{
			name: "an update strategy changed, and the forced update with it",
			base: func() *v1alpha1.CloudProfileSpec {
				return withImageVersions(builders.PlainVersion("1.2.0"), builders.PlainVersion("2.0.0"))
			},
			head: func() *v1alpha1.CloudProfileSpec {
				spec := withImageVersions(builders.PlainVersion("1.2.0"), builders.PlainVersion("2.0.0"))
				spec.MachineImages[0].UpdateStrategy = builders.Strategy(v1alpha1.UpdateStrategyPatch)
				return spec
			},
			want: []Change{
				{Kind: ChangeUpdateStrategy, MachineImage: "gardenlinux", Base: text("minor"), Head: text("patch")},
				{Kind: ChangeUpdatePath, MachineImage: "gardenlinux", Version: "1.2.0", Path: UpdatePathForce, Base: text("2.0.0")},
			},
		},
		{
			name: "image versions are compared like Kubernetes versions",
			base: func() *v1alpha1.CloudProfileSpec {
				return withImageVersions(builders.PlainVersion("1.2.0"), builders.DeprecatedAPIVersion("1.1.0", "", "2026-03-01T00:00:00Z"))
			},
			head: func() *v1alpha1.CloudProfileSpec {
				return withImageVersions(builders.PlainVersion("1.2.0"), builders.DeprecatedAPIVersion("1.1.0", "", ""))
			},
			want: []Change{
				{Kind: ChangeExpirationDate, MachineImage: "gardenlinux", Version: "1.1.0", Base: text("2026-03-01T00:00:00Z")},
				{Kind: ChangeClassification, MachineImage: "gardenlinux", Version: "1.1.0", Base: text("expired"), Head: text("supported"),
					From: instant("2026-03-01T00:00:00Z")},
			},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			diff := Diff("dev", []profile.Object{cloudProfile("aws", tc.base())}, []profile.Object{cloudProfile("aws", tc.head())}, diffNow, 0)
			if len(tc.want) == 0 {
				g.Expect(diff.Profiles).To(BeEmpty())
				return
			}
			g.Expect(diff.Profiles).To(HaveLen(1))
			g.Expect(diff.Profiles[0].Changes).To(Equal(tc.want))
		})
	}
}

func TestDiffOfASet(t *testing.T) {
	g := NewWithT(t)
	moved := withKubernetes(builders.Staged("1.30.0", builders.Stage(v1alpha1.ClassificationPreview, ""), builders.Stage(v1alpha1.ClassificationSupported, "2026-02-01T00:00:00Z")))
	base := []profile.Object{cloudProfile("zeta", builders.Profile()), cloudProfile("gone", builders.Profile()), namespacedWithMergedSpec(builders.Profile()), cloudProfile("aws", builders.Profile()), cloudProfile("aws", moved)}
	head := []profile.Object{namespacedWithMergedSpec(moved), cloudProfile("new", builders.Profile()), cloudProfile("aws", moved), cloudProfile("zeta", builders.Profile())}

	diff := Diff("staging", base, head, diffNow, 0)

	g.Expect(diff.Landscape).To(Equal("staging"))
	g.Expect(diff.Now).To(Equal(diffNow))
	g.Expect(diff.Until).To(Equal(diffNow.Add(DefaultHorizon)), "the horizon defaults to 180 days")
	var refs []string
	for _, p := range diff.Profiles {
		refs = append(refs, p.Ref()+" "+string(p.Status))
	}
	g.Expect(refs).To(Equal([]string{
		"CloudProfile/aws changed",
		"CloudProfile/gone removed",
		"CloudProfile/new added",
		"NamespacedCloudProfile/team/aws-team changed",
	}), "ordered by kind, namespace and name; the first of a duplicate counts; a namespaced profile by its merged spec")
	g.Expect(diff.Unchanged).To(Equal(1), "zeta")
	g.Expect(diff.Profiles[1].Changes).To(BeEmpty())
	g.Expect(diff.Profiles[1].Changes).NotTo(BeNil(), "an empty list, not null, in JSON")
	g.Expect(diff.Profiles[0].Changes).To(Equal(diff.Profiles[3].Changes))
}

func TestDiffOfEmptySetsIsEmpty(t *testing.T) {
	g := NewWithT(t)
	diff := Diff("dev", nil, nil, diffNow, 0)
	g.Expect(diff.Profiles).To(BeEmpty())
	g.Expect(diff.Profiles).NotTo(BeNil())
	g.Expect(diff.Unchanged).To(BeZero())
}

func TestFormatShift(t *testing.T) {
	tests := []struct {
		shift time.Duration
		want  string
	}{
		{-92 * 24 * time.Hour, "-92d"},
		{36 * time.Hour, "+1d12h"},
		{30 * time.Minute, "+30m"},
		{-(2*time.Hour + 5*time.Second), "-2h5s"},
		{500 * time.Millisecond, "+500ms"},
	}
	for _, tc := range tests {
		t.Run(tc.want, func(t *testing.T) {
			NewWithT(t).Expect(formatShift(tc.shift)).To(Equal(tc.want))
		})
	}
}
