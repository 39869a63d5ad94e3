package lifecycle

import (
	"encoding/json"
	"errors"
	"testing"

	. "github.com/onsi/gomega"

	v1alpha1 "github.com/profilesync/profilesync/api/v1alpha1"
)

var updateNow = at("2024-06-01T00:00:00Z")

const (
	past   = "2024-01-01T00:00:00Z"
	future = "2030-01-01T00:00:00Z"
)

// kubernetesProfile lists Kubernetes versions for update tests.
func kubernetesProfile(versions ...v1alpha1.ExpirableVersion) *v1alpha1.CloudProfileSpec {
	return &v1alpha1.CloudProfileSpec{Type: "aws", Kubernetes: v1alpha1.KubernetesSettings{Versions: versions}}
}

// imageProfile has one machine image "os" with the given strategy (nil: default).
func imageProfile(s *v1alpha1.MachineImageUpdateStrategy, versions ...v1alpha1.ExpirableVersion) *v1alpha1.CloudProfileSpec {
	return &v1alpha1.CloudProfileSpec{
		Type:          "aws",
		Kubernetes:    v1alpha1.KubernetesSettings{Versions: []v1alpha1.ExpirableVersion{plain("1.30.0")}},
		MachineImages: []v1alpha1.MachineImage{{Name: "os", UpdateStrategy: s, Versions: imageVersions(versions...)}},
	}
}

// unavailableUntilFuture is a version whose only stage starts in the future.
func unavailableUntilFuture(version string) v1alpha1.ExpirableVersion {
	return withLifecycle(version, stage(supported, future))
}

type updateCase struct {
	name    string
	spec    *v1alpha1.CloudProfileSpec
	current string
	want    string // empty: no target
}

func runUpdateCases(t *testing.T, tests []updateCase, update func(*v1alpha1.CloudProfileSpec, string) (string, bool, error)) {
	t.Helper()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			target, ok, err := update(tt.spec, tt.current)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(ok).To(Equal(tt.want != ""))
			g.Expect(target).To(Equal(tt.want))
		})
	}
}

func TestKubernetesAutoUpdate(t *testing.T) {
	runUpdateCases(t, []updateCase{
		{"the highest supported patch of the same minor is picked", kubernetesProfile(plain("1.29.1"), plain("1.29.2"), plain("1.29.3"), plain("1.30.0")), "1.29.1", "1.29.3"},
		{"a supported patch beats a higher deprecated one", kubernetesProfile(plain("1.29.1"), plain("1.29.2"), withDeprecatedAPI("1.29.3", deprecated, "")), "1.29.1", "1.29.2"},
		{"the highest deprecated patch is picked when no supported one is higher", kubernetesProfile(plain("1.29.1"), withDeprecatedAPI("1.29.2", deprecated, ""), withDeprecatedAPI("1.29.3", deprecated, "")), "1.29.1", "1.29.3"},
		{"an expired patch is never an auto update target", kubernetesProfile(plain("1.29.1"), withDeprecatedAPI("1.29.2", "", past)), "1.29.1", ""},
		{"a preview patch is never an auto update target", kubernetesProfile(plain("1.29.1"), withDeprecatedAPI("1.29.2", preview, "")), "1.29.1", ""},
		{"an unavailable patch is never an auto update target (ours)", kubernetesProfile(plain("1.29.1"), unavailableUntilFuture("1.29.2")), "1.29.1", ""},
		{"a patch whose supported stage started exactly now is a target", kubernetesProfile(plain("1.29.1"), withLifecycle("1.29.2", stage(preview, ""), stage(supported, "2024-06-01T00:00:00Z"))), "1.29.1", "1.29.2"},
		{"auto update never leaves the minor", kubernetesProfile(plain("1.29.3"), plain("1.30.0")), "1.29.3", ""},
		{"only higher versions are targets", kubernetesProfile(plain("1.29.1"), plain("1.29.3")), "1.29.3", ""},
		{"a current version missing from the profile still finds higher patches", kubernetesProfile(plain("1.29.3")), "1.29.2", "1.29.3"},
	}, func(spec *v1alpha1.CloudProfileSpec, current string) (string, bool, error) {
		return KubernetesAutoUpdate(spec, current, updateNow)
	})
}

func TestKubernetesForcedUpdate(t *testing.T) {
	runUpdateCases(t, []updateCase{
		{"the highest version of the next minor is picked", kubernetesProfile(plain("1.29.1"), plain("1.30.1"), plain("1.30.2"), plain("1.31.0")), "1.29.1", "1.30.2"},
		{"a non-expired version of the next minor beats a higher expired one", kubernetesProfile(plain("1.29.1"), plain("1.30.1"), withDeprecatedAPI("1.30.2", "", past), plain("1.31.0")), "1.29.1", "1.30.1"},
		{"the highest expired version of the next minor is picked when all are expired", kubernetesProfile(plain("1.29.1"), withDeprecatedAPI("1.30.1", "", past), withDeprecatedAPI("1.30.2", "", past), plain("1.31.0")), "1.29.1", "1.30.2"},
		{"a deprecated version of the next minor is a forced target", kubernetesProfile(plain("1.29.1"), withDeprecatedAPI("1.30.1", deprecated, ""), plain("1.31.0")), "1.29.1", "1.30.1"},
		{"no minor is skipped", kubernetesProfile(plain("1.29.1"), plain("1.31.0")), "1.29.1", ""},
		{"a preview version of the next minor is not a forced target", kubernetesProfile(plain("1.29.1"), withDeprecatedAPI("1.30.0", preview, ""), plain("1.31.0")), "1.29.1", ""},
		{"an unavailable version of the next minor is not a forced target (ours)", kubernetesProfile(plain("1.29.1"), unavailableUntilFuture("1.30.0"), plain("1.31.0")), "1.29.1", ""},
		{"the next minor stays within the major", kubernetesProfile(plain("1.29.1"), plain("2.0.0")), "1.29.1", ""},
	}, func(spec *v1alpha1.CloudProfileSpec, current string) (string, bool, error) {
		return KubernetesForcedUpdate(spec, current, updateNow)
	})
}

func TestMachineImageAutoUpdate(t *testing.T) {
	patch, minor, major := strategy(v1alpha1.UpdateStrategyPatch), strategy(v1alpha1.UpdateStrategyMinor), strategy(v1alpha1.UpdateStrategyMajor)
	runUpdateCases(t, []updateCase{
		{"strategy patch picks the highest patch of the minor", imageProfile(patch, plain("1.1.0"), plain("1.1.5"), plain("1.2.0")), "1.1.0", "1.1.5"},
		{"strategy patch never leaves the minor", imageProfile(patch, plain("1.1.0"), plain("1.2.0")), "1.1.0", ""},
		{"strategy minor takes a patch first", imageProfile(minor, plain("1.1.0"), plain("1.1.5"), plain("1.3.0")), "1.1.0", "1.1.5"},
		{"strategy minor then moves within the major", imageProfile(minor, plain("1.1.5"), plain("1.2.0"), plain("1.3.0"), plain("2.0.0")), "1.1.5", "1.3.0"},
		{"strategy minor prefers a supported version over a higher deprecated one", imageProfile(minor, plain("1.1.5"), plain("1.2.0"), withDeprecatedAPI("1.3.0", deprecated, "")), "1.1.5", "1.2.0"},
		{"strategy minor never leaves the major", imageProfile(minor, plain("1.1.5"), plain("2.0.0")), "1.1.5", ""},
		{"strategy major takes a patch first", imageProfile(major, plain("1.1.0"), plain("1.1.5"), plain("2.0.0")), "1.1.0", "1.1.5"},
		{"strategy major then moves anywhere", imageProfile(major, plain("1.1.5"), plain("1.2.0"), plain("3.0.0")), "1.1.5", "3.0.0"},
		{"an unset strategy means major", imageProfile(nil, plain("1.1.5"), plain("3.0.0")), "1.1.5", "3.0.0"},
		{"short versions are compared as semver and returned as written", imageProfile(major, plain("1.1"), plain("1.7"), plain("1.10")), "1.1", "1.10"},
		{"expired, preview and unavailable versions are never auto update targets", imageProfile(major, plain("1.0.0"), withDeprecatedAPI("2.0.0", "", past), withDeprecatedAPI("3.0.0", preview, ""), unavailableUntilFuture("4.0.0")), "1.0.0", ""},
	}, func(spec *v1alpha1.CloudProfileSpec, current string) (string, bool, error) {
		return MachineImageAutoUpdate(spec, "os", current, updateNow)
	})
}

func TestMachineImageForcedUpdate(t *testing.T) {
	patch, minor := strategy(v1alpha1.UpdateStrategyPatch), strategy(v1alpha1.UpdateStrategyMinor)
	runUpdateCases(t, []updateCase{
		{"strategy patch goes to the highest version of the lowest higher minor", imageProfile(patch, plain("1.1.0"), plain("1.3.0"), plain("1.3.2"), plain("1.4.0")), "1.1.0", "1.3.2"},
		{"strategy patch skips a minor that has only preview versions", imageProfile(patch, plain("1.1.0"), withDeprecatedAPI("1.2.0", preview, ""), plain("1.3.0")), "1.1.0", "1.3.0"},
		{"strategy patch skips a minor that has only unavailable versions (ours)", imageProfile(patch, plain("1.1.0"), unavailableUntilFuture("1.2.0"), plain("1.3.0")), "1.1.0", "1.3.0"},
		{"an expired version of the next minor beats skipping the minor", imageProfile(patch, plain("1.1.0"), withDeprecatedAPI("1.2.0", "", past), plain("1.3.0")), "1.1.0", "1.2.0"},
		{"a non-expired version of the next minor beats a higher expired one", imageProfile(patch, plain("1.1.0"), plain("1.2.0"), withDeprecatedAPI("1.2.1", "", past)), "1.1.0", "1.2.0"},
		{"strategy patch stays in the major", imageProfile(patch, plain("1.1.0"), plain("2.0.0")), "1.1.0", ""},
		{"strategy minor goes to the highest version of the lowest higher major", imageProfile(minor, plain("1.1.0"), plain("2.0.0"), plain("2.5.1"), plain("3.0.0")), "1.1.0", "2.5.1"},
		{"strategy minor skips a major that has only preview versions", imageProfile(minor, plain("1.1.0"), withDeprecatedAPI("2.0.0", preview, ""), plain("3.1.0")), "1.1.0", "3.1.0"},
		{"strategy minor finds nothing when no higher major exists", imageProfile(minor, plain("1.1.0"), plain("1.9.0")), "1.1.0", ""},
	}, func(spec *v1alpha1.CloudProfileSpec, current string) (string, bool, error) {
		return MachineImageForcedUpdate(spec, "os", current, updateNow)
	})
}

func TestMachineImageForcedUpdateStrategyMajorHasNoPath(t *testing.T) {
	g := NewWithT(t)
	for _, s := range []*v1alpha1.MachineImageUpdateStrategy{nil, strategy(v1alpha1.UpdateStrategyMajor)} {
		_, ok, err := MachineImageForcedUpdate(imageProfile(s, withDeprecatedAPI("1.0.0", "", past)), "os", "1.0.0", updateNow)
		g.Expect(ok).To(BeFalse())
		g.Expect(errors.Is(err, ErrNoForcedUpdatePath)).To(BeTrue())
		g.Expect(err.Error()).To(ContainSubstring("migrate clusters to another machine image"))
	}
}

func TestUpdateErrors(t *testing.T) {
	g := NewWithT(t)
	spec := imageProfile(nil, plain("1.0.0"))

	_, _, err := MachineImageAutoUpdate(spec, "windows", "1.0.0", updateNow)
	g.Expect(errors.Is(err, ErrUnknownMachineImage)).To(BeTrue())
	g.Expect(err.Error()).To(ContainSubstring(`machine image windows version 1.0.0`))

	_, _, err = MachineImageForcedUpdate(spec, "os", "latest", updateNow)
	g.Expect(err).To(MatchError(ContainSubstring("machine image os version latest: the current version is not a semantic version")))

	_, _, err = KubernetesAutoUpdate(spec, "one", updateNow)
	g.Expect(err).To(MatchError(ContainSubstring("Kubernetes version one")))

	_, _, err = KubernetesForcedUpdate(spec, "", updateNow)
	g.Expect(err).To(HaveOccurred())
}

func TestMaintenance(t *testing.T) {
	patch := strategy(v1alpha1.UpdateStrategyPatch)
	tests := []struct {
		name      string
		spec      *v1alpha1.CloudProfileSpec
		subject   UpdateSubject
		want      maintenanceDecision
		wantError []error
	}{
		{
			name:    "the auto path is taken first",
			spec:    kubernetesProfile(withDeprecatedAPI("1.29.1", "", past), plain("1.29.2"), plain("1.30.0")),
			subject: UpdateSubject{Version: "1.29.1"},
			want:    maintenanceDecision{Target: "1.29.2"},
		},
		{
			name:    "an expired version with no auto target takes the forced path",
			spec:    kubernetesProfile(withDeprecatedAPI("1.29.2", "", past), plain("1.30.0")),
			subject: UpdateSubject{Version: "1.29.2"},
			want:    maintenanceDecision{Target: "1.30.0", Forced: true},
		},
		{
			name:    "a version that is not expired and has no auto target stays",
			spec:    kubernetesProfile(withDeprecatedAPI("1.29.2", deprecated, ""), plain("1.30.0")),
			subject: UpdateSubject{Version: "1.29.2"},
			want:    maintenanceDecision{},
		},
		{
			name:    "a version no longer in the profile is forced off",
			spec:    kubernetesProfile(plain("1.30.0")),
			subject: UpdateSubject{Version: "1.29.2"},
			want:    maintenanceDecision{Target: "1.30.0", Forced: true},
		},
		{
			name:      "an expired version with nowhere to go is a profile error",
			spec:      kubernetesProfile(withDeprecatedAPI("1.29.2", "", past), plain("1.31.0")),
			subject:   UpdateSubject{Version: "1.29.2"},
			wantError: []error{errNoSuitableVersion},
		},
		{
			name:    "an expired image version takes the forced path of its strategy",
			spec:    imageProfile(patch, withDeprecatedAPI("1.1.0", "", past), plain("1.2.0")),
			subject: UpdateSubject{MachineImage: "os", Version: "1.1.0"},
			want:    maintenanceDecision{Target: "1.2.0", Forced: true},
		},
		{
			name:    "an image version written short matches the profile by semver",
			spec:    imageProfile(patch, withDeprecatedAPI("1.1.0", "", past), plain("1.2.0")),
			subject: UpdateSubject{MachineImage: "os", Version: "1.1"},
			want:    maintenanceDecision{Target: "1.2.0", Forced: true},
		},
		{
			name:      "an expired image version of strategy major at end of life tells the operator to migrate",
			spec:      imageProfile(nil, withDeprecatedAPI("1.1.0", "", past)),
			subject:   UpdateSubject{MachineImage: "os", Version: "1.1.0"},
			wantError: []error{errNoSuitableVersion, ErrNoForcedUpdatePath},
		},
		{
			name:      "an unknown image is an error",
			spec:      imageProfile(nil, plain("1.1.0")),
			subject:   UpdateSubject{MachineImage: "windows", Version: "1.1.0"},
			wantError: []error{ErrUnknownMachineImage},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			got, err := maintenance(tt.spec, tt.subject, updateNow)
			if len(tt.wantError) > 0 {
				for _, want := range tt.wantError {
					g.Expect(errors.Is(err, want)).To(BeTrue(), "error %v should wrap %v", err, want)
				}
				g.Expect(got).To(BeZero())
				return
			}
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(got).To(Equal(tt.want))
		})
	}
}

func TestMaintenanceErrorExplainsTheMissingMinor(t *testing.T) {
	g := NewWithT(t)
	_, err := maintenance(kubernetesProfile(withDeprecatedAPI("1.29.2", "", past), plain("1.31.0")), UpdateSubject{Version: "1.29.2"}, updateNow)
	g.Expect(err).To(MatchError("Kubernetes version 1.29.2 is expired and the profile offers no suitable version to move to " +
		"(no supported, deprecated or expired version of the next minor 1.30; Kubernetes minors may not be skipped)"))
}

func TestPaths(t *testing.T) {
	g := NewWithT(t)

	k8s := kubernetesProfile(plain("1.29.1"), plain("1.29.2"), plain("1.30.4"))
	paths, err := Paths(k8s, UpdateSubject{Version: "1.29.1"}, updateNow)
	g.Expect(err).NotTo(HaveOccurred())
	out, err := json.Marshal(paths)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(string(out)).To(Equal(`{"auto":"1.29.2","force":"1.30.4"}`))

	paths, err = Paths(k8s, UpdateSubject{Version: "1.30.4"}, updateNow)
	g.Expect(err).NotTo(HaveOccurred())
	out, err = json.Marshal(paths)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(string(out)).To(Equal(`{"auto":null,"force":null}`))

	image := imageProfile(nil, plain("1.0.0"), plain("2.0.0"))
	paths, err = Paths(image, UpdateSubject{MachineImage: "os", Version: "1.0.0"}, updateNow)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(paths.Auto).To(HaveValue(Equal("2.0.0")))
	g.Expect(paths.Force).To(BeNil())

	_, err = Paths(image, UpdateSubject{MachineImage: "windows", Version: "1.0.0"}, updateNow)
	g.Expect(errors.Is(err, ErrUnknownMachineImage)).To(BeTrue())
}
