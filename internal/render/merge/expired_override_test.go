package merge

import (
	"testing"
	"time"

	. "github.com/onsi/gomega"

	v1alpha1 "github.com/profilesync/profilesync/api/v1alpha1"
	"github.com/profilesync/profilesync/test/builders"
)

// TestAnOverrideExpiredWhenCreatedIsJudgedAsGardenerDropsIt: Gardener's API
// server drops every version of a NamespacedCloudProfile that is expired
// when the profile is created (dropInactiveVersions), before it validates,
// so an override of the parent's highest Kubernetes version with a past
// expirationDate is accepted; one with a future date is refused, as the
// highest version may not expire. The merged spec keeps the override as Git
// writes it.
func TestAnOverrideExpiredWhenCreatedIsJudgedAsGardenerDropsIt(t *testing.T) {
	now := builders.Time("2025-06-01T00:00:00Z")
	tests := []struct {
		name     string
		now      time.Time
		override v1alpha1.ExpirableVersion
		wantErr  string // a problem's field; empty: accepted
	}{
		{
			name:     "an override of the highest version expired at now is accepted, as Gardener drops it",
			now:      now,
			override: deprecatedAPIVersion(newestKubernetesVersion, "", "2025-01-01T00:00:00Z"),
		},
		{
			name:     "an override of the highest version expiring after now is refused, as the highest version may not expire",
			now:      now,
			override: deprecatedAPIVersion(newestKubernetesVersion, "", "2026-01-01T00:00:00Z"),
			wantErr:  "status.cloudProfileSpec.kubernetes.versions[1] (1.40.0).expirationDate",
		},
		{
			name:     "at no particular time nothing is dropped and the expired override is refused",
			override: deprecatedAPIVersion(newestKubernetesVersion, "", "2025-01-01T00:00:00Z"),
			wantErr:  "status.cloudProfileSpec.kubernetes.versions[1] (1.40.0).expirationDate",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			ncp := namespaced()
			ncp.Kubernetes = &v1alpha1.KubernetesSettings{Versions: []v1alpha1.ExpirableVersion{tt.override}}
			merged, errs := NamespacedAt(profile(), ncp, tt.now)
			if tt.wantErr != "" {
				g.Expect(errs).To(HaveLen(1))
				g.Expect(errs[0].Field).To(Equal(tt.wantErr))
				return
			}
			g.Expect(errs).To(BeEmpty())
			g.Expect(merged.Kubernetes.Versions[1]).To(Equal(tt.override), "the merged spec keeps the override as written")
		})
	}
}

// TestAnAddedImageVersionExpiredWhenCreatedIsNotRefusedForWhatItLacks:
// Gardener drops an added version that is expired when the namespaced
// profile is created before it validates, so the container runtime and
// architecture it lacks are not refused; a version that is not expired
// still is, and an added image all of whose versions are dropped needs no
// updateStrategy, as Gardener drops the image too.
func TestAnAddedImageVersionExpiredWhenCreatedIsNotRefusedForWhatItLacks(t *testing.T) {
	now := builders.Time("2025-06-01T00:00:00Z")
	tests := []struct {
		name     string
		now      time.Time
		images   []v1alpha1.NamespacedMachineImage
		wantErrs []string
	}{
		{
			name:   "a version added to a parent's image, expired at now, is accepted without cri and architectures",
			now:    now,
			images: []v1alpha1.NamespacedMachineImage{{Name: "gardenlinux", Versions: []v1alpha1.MachineImageVersion{{ExpirableVersion: deprecatedAPIVersion("1592.2.0", "", "2025-01-01T00:00:00Z")}}}},
		},
		{
			name:   "a version added to a parent's image expiring after now is refused for what it lacks",
			now:    now,
			images: []v1alpha1.NamespacedMachineImage{{Name: "gardenlinux", Versions: []v1alpha1.MachineImageVersion{{ExpirableVersion: deprecatedAPIVersion("1592.2.0", "", "2026-01-01T00:00:00Z")}}}},
			wantErrs: []string{
				"spec.machineImages[0] (gardenlinux).versions[0] (1592.2.0).cri: Required value",
				"spec.machineImages[0] (gardenlinux).versions[0] (1592.2.0).architectures: Required value",
			},
		},
		{
			name:   "an added image whose versions are all expired at now needs no updateStrategy",
			now:    now,
			images: []v1alpha1.NamespacedMachineImage{{Name: "ubuntu", Versions: []v1alpha1.MachineImageVersion{{ExpirableVersion: deprecatedAPIVersion("24.4.0", "", "2025-01-01T00:00:00Z")}}}},
		},
		{
			name:   "at no particular time nothing is dropped",
			images: []v1alpha1.NamespacedMachineImage{{Name: "ubuntu", Versions: []v1alpha1.MachineImageVersion{{ExpirableVersion: deprecatedAPIVersion("24.4.0", "", "2025-01-01T00:00:00Z")}}}},
			wantErrs: []string{
				"spec.machineImages[0] (ubuntu).updateStrategy: Required value",
				"spec.machineImages[0] (ubuntu).versions[0] (24.4.0).cri: Required value",
				"spec.machineImages[0] (ubuntu).versions[0] (24.4.0).architectures: Required value",
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			ncp := namespaced()
			ncp.MachineImages = tt.images
			merged, errs := NamespacedAt(profile(), ncp, tt.now)
			g.Expect(errorFields(errs)).To(ConsistOf(tt.wantErrs))
			if len(tt.wantErrs) == 0 {
				g.Expect(merged).NotTo(BeNil(), "the merged spec keeps the version as written")
			}
		})
	}
}
