package lifecycle

import (
	"errors"
	"testing"

	. "github.com/onsi/gomega"

	v1alpha1 "github.com/profilesync/profilesync/api/v1alpha1"
)

func TestForcedChain(t *testing.T) {
	expiredPast := func(version string) v1alpha1.ExpirableVersion { return withDeprecatedAPI(version, "", past) }
	patch := strategy(v1alpha1.UpdateStrategyPatch)
	tests := []struct {
		name    string
		spec    *v1alpha1.CloudProfileSpec
		subject UpdateSubject
		want    []MaintenanceStep
	}{
		{
			name:    "a live version is not moved",
			spec:    kubernetesProfile(plain("1.29.1"), plain("1.29.2"), plain("1.30.0")),
			subject: UpdateSubject{Version: "1.29.1"},
		},
		{
			name:    "an expired version with a live patch above it stays in its minor",
			spec:    kubernetesProfile(expiredPast("1.29.1"), plain("1.29.2"), plain("1.30.0")),
			subject: UpdateSubject{Version: "1.29.1"},
			want:    []MaintenanceStep{{Version: "1.29.2"}},
		},
		{
			name:    "an expired minor forces clusters across one minor",
			spec:    kubernetesProfile(expiredPast("1.29.1"), expiredPast("1.29.2"), plain("1.30.0"), plain("1.31.0")),
			subject: UpdateSubject{Version: "1.29.1"},
			want:    []MaintenanceStep{{Version: "1.30.0", Forced: true}},
		},
		{
			name:    "two expired minors force clusters across two minors, one at a time",
			spec:    kubernetesProfile(expiredPast("1.29.2"), expiredPast("1.30.4"), plain("1.31.0"), plain("1.31.1")),
			subject: UpdateSubject{Version: "1.29.2"},
			want:    []MaintenanceStep{{Version: "1.30.4", Forced: true}, {Version: "1.31.1", Forced: true}},
		},
		{
			name:    "a version gone from the profile is left like an expired one",
			spec:    kubernetesProfile(plain("1.30.0")),
			subject: UpdateSubject{Version: "1.29.9"},
			want:    []MaintenanceStep{{Version: "1.30.0", Forced: true}},
		},
		{
			name:    "an image with strategy patch is forced to the next minor",
			spec:    imageProfile(patch, expiredPast("1.1.0"), expiredPast("1.2.0"), plain("1.3.0")),
			subject: UpdateSubject{MachineImage: "os", Version: "1.1.0"},
			want:    []MaintenanceStep{{Version: "1.2.0", Forced: true}, {Version: "1.3.0", Forced: true}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			steps, err := ForcedChain(tt.spec, tt.subject, updateNow)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(steps).To(Equal(tt.want))
		})
	}
}

func TestForcedChainWithNowhereToGo(t *testing.T) {
	g := NewWithT(t)
	spec := kubernetesProfile(withDeprecatedAPI("1.29.1", "", past), withDeprecatedAPI("1.30.0", "", past), plain("1.32.0"))
	steps, err := ForcedChain(spec, UpdateSubject{Version: "1.29.1"}, updateNow)
	g.Expect(steps).To(Equal([]MaintenanceStep{{Version: "1.30.0", Forced: true}}), "the steps found before the dead end")
	g.Expect(errors.Is(err, errNoSuitableVersion)).To(BeTrue(), "%v", err)

	major := strategy(v1alpha1.UpdateStrategyMajor)
	_, err = ForcedChain(imageProfile(major, withDeprecatedAPI("1.0.0", "", past), withDeprecatedAPI("2.0.0", "", past)), UpdateSubject{MachineImage: "os", Version: "2.0.0"}, updateNow)
	g.Expect(errors.Is(err, ErrNoForcedUpdatePath)).To(BeTrue(), "%v", err)

	_, err = ForcedChain(nil, UpdateSubject{Version: "1.29.1"}, updateNow)
	g.Expect(errors.Is(err, errNoSuitableVersion)).To(BeTrue(), "%v", err)
}
