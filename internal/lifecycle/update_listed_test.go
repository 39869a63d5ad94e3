package lifecycle

import (
	"errors"
	"testing"

	. "github.com/onsi/gomega"

	v1alpha1 "github.com/profilesync/profilesync/api/v1alpha1"
)

func TestCheckListedRefusesVersionsTheProfileDoesNotList(t *testing.T) {
	minor := v1alpha1.UpdateStrategyMinor
	manyVersions := make([]v1alpha1.ExpirableVersion, 0, 10)
	for _, v := range []string{"1.30.0", "1.30.1", "1.30.2", "1.31.0", "1.31.1", "1.31.2", "1.32.0", "1.32.1", "1.32.2", "1.33.0"} {
		manyVersions = append(manyVersions, plain(v))
	}
	for _, tt := range []struct {
		name    string
		spec    *v1alpha1.CloudProfileSpec
		subject UpdateSubject
		wantErr string // empty: listed
		is      error
	}{
		{name: "a listed Kubernetes version is accepted", spec: kubernetesProfile(plain("1.31.6"), plain("1.32.2")), subject: UpdateSubject{Version: "1.32.2"}},
		{name: "a version written shorter matches by semver", spec: imageProfile(&minor, plain("1.7.0")), subject: UpdateSubject{MachineImage: "os", Version: "1.7"}},
		{
			name: "an unlisted Kubernetes version names the versions listed, highest first",
			spec: kubernetesProfile(plain("1.31.6"), plain("1.32.2")), subject: UpdateSubject{Version: "1.99.0"},
			wantErr: "Kubernetes version 1.99.0 is not listed in the profile, which lists 1.32.2, 1.31.6", is: ErrUnlistedVersion,
		},
		{
			name: "a long list is cut after eight versions",
			spec: kubernetesProfile(manyVersions...), subject: UpdateSubject{Version: "1.29.0"},
			wantErr: "Kubernetes version 1.29.0 is not listed in the profile, which lists 1.33.0, 1.32.2, 1.32.1, 1.32.0, 1.31.2, 1.31.1, 1.31.0, 1.30.2 and 2 more", is: ErrUnlistedVersion,
		},
		{
			name: "an unlisted machine image version names the image's versions",
			spec: imageProfile(&minor, plain("1443.10.0"), plain("1592.4.0")), subject: UpdateSubject{MachineImage: "os", Version: "9.9.9"},
			wantErr: "machine image os version 9.9.9 is not listed in the profile, which lists 1592.4.0, 1443.10.0", is: ErrUnlistedVersion,
		},
		{
			name: "an unknown machine image stays its own error",
			spec: imageProfile(&minor, plain("1443.10.0")), subject: UpdateSubject{MachineImage: "flatcar", Version: "1.0.0"},
			wantErr: `machine image flatcar version 1.0.0: unknown machine image "flatcar" in the profile`, is: ErrUnknownMachineImage,
		},
	} {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			err := CheckListed(tt.spec, tt.subject)
			if tt.wantErr == "" {
				g.Expect(err).NotTo(HaveOccurred())
				return
			}
			g.Expect(err).To(MatchError(tt.wantErr))
			g.Expect(errors.Is(err, tt.is)).To(BeTrue())
		})
	}
}
