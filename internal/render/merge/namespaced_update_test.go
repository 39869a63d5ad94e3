package merge

import (
	"testing"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1alpha1 "github.com/profilesync/profilesync/api/v1alpha1"
)

// TestCheckNamespacedChangeRefusesAnExpiryMovedIntoThePastAsGardener runs
// Gardener's update rule of the NamespacedCloudProfile admission: an
// override the profile already has may not get an expirationDate in the
// past unless the live merged status already expires the version then; an
// override new to the profile, or a version only the profile has, is not
// refused (Gardener's API server drops such an expired entry on its own).
func TestCheckNamespacedChangeRefusesAnExpiryMovedIntoThePastAsGardener(t *testing.T) {
	now := time.Date(2025, 6, 1, 0, 0, 0, 0, time.UTC)
	past, earlier, future := "2025-03-01T00:00:00Z", "2025-01-01T00:00:00Z", "2026-01-01T00:00:00Z"
	expiring := func(version, date string) v1alpha1.ExpirableVersion {
		at, err := time.Parse(time.RFC3339, date)
		if err != nil {
			t.Fatal(err)
		}
		return v1alpha1.ExpirableVersion{Version: version, ExpirationDate: &metav1.Time{Time: at}}
	}
	parent := &v1alpha1.CloudProfileSpec{
		Kubernetes: v1alpha1.KubernetesSettings{Versions: []v1alpha1.ExpirableVersion{{Version: "1.31.0"}, {Version: "1.30.0"}}},
		MachineImages: []v1alpha1.MachineImage{{Name: "ubuntu", Versions: []v1alpha1.MachineImageVersion{
			{ExpirableVersion: v1alpha1.ExpirableVersion{Version: "24.4.0"}},
		}}},
	}
	kubernetesOverride := func(versions ...v1alpha1.ExpirableVersion) v1alpha1.NamespacedCloudProfileSpec {
		return v1alpha1.NamespacedCloudProfileSpec{Kubernetes: &v1alpha1.KubernetesSettings{Versions: versions}}
	}
	imageOverride := func(versions ...v1alpha1.ExpirableVersion) v1alpha1.NamespacedCloudProfileSpec {
		image := v1alpha1.NamespacedMachineImage{Name: "ubuntu"}
		for _, v := range versions {
			image.Versions = append(image.Versions, v1alpha1.MachineImageVersion{ExpirableVersion: v})
		}
		return v1alpha1.NamespacedCloudProfileSpec{MachineImages: []v1alpha1.NamespacedMachineImage{image}}
	}
	mergedKubernetes := func(versions ...v1alpha1.ExpirableVersion) *v1alpha1.CloudProfileSpec {
		return &v1alpha1.CloudProfileSpec{Kubernetes: v1alpha1.KubernetesSettings{Versions: versions}}
	}
	mergedImage := func(versions ...v1alpha1.ExpirableVersion) *v1alpha1.CloudProfileSpec {
		image := v1alpha1.MachineImage{Name: "ubuntu"}
		for _, v := range versions {
			image.Versions = append(image.Versions, v1alpha1.MachineImageVersion{ExpirableVersion: v})
		}
		return &v1alpha1.CloudProfileSpec{MachineImages: []v1alpha1.MachineImage{image}}
	}
	tests := []struct {
		name    string
		live    *v1alpha1.NamespacedCloudProfile
		updated v1alpha1.NamespacedCloudProfileSpec
		want    []string
	}{
		{
			name: "an override moved into the past is refused in Gardener's words",
			live: &v1alpha1.NamespacedCloudProfile{Spec: kubernetesOverride(expiring("1.30.0", future)),
				Status: v1alpha1.NamespacedCloudProfileStatus{CloudProfileSpec: mergedKubernetes(expiring("1.30.0", future))}},
			updated: kubernetesOverride(expiring("1.30.0", past)),
			want:    []string{`spec.kubernetes.versions[0] (1.30.0).expirationDate: Invalid value: "2025-03-01T00:00:00Z": expiration date for version "1.30.0" is in the past`},
		},
		{
			name: "an override whose date has passed, unchanged, is accepted",
			live: &v1alpha1.NamespacedCloudProfile{Spec: kubernetesOverride(expiring("1.30.0", past)),
				Status: v1alpha1.NamespacedCloudProfileStatus{CloudProfileSpec: mergedKubernetes(expiring("1.30.0", past))}},
			updated: kubernetesOverride(expiring("1.30.0", past)),
		},
		{
			name: "an override whose merged lifecycle already expires then is accepted",
			live: &v1alpha1.NamespacedCloudProfile{Spec: kubernetesOverride(expiring("1.30.0", past)),
				Status: v1alpha1.NamespacedCloudProfileStatus{CloudProfileSpec: mergedKubernetes(v1alpha1.ExpirableVersion{Version: "1.30.0", Lifecycle: []v1alpha1.LifecycleStage{
					{Classification: v1alpha1.ClassificationSupported},
					{Classification: v1alpha1.ClassificationExpired, StartTime: expiring("", past).ExpirationDate},
				}})}},
			updated: kubernetesOverride(expiring("1.30.0", past)),
		},
		{
			name: "an override moved from one past date to another is refused",
			live: &v1alpha1.NamespacedCloudProfile{Spec: kubernetesOverride(expiring("1.30.0", past)),
				Status: v1alpha1.NamespacedCloudProfileStatus{CloudProfileSpec: mergedKubernetes(expiring("1.30.0", past))}},
			updated: kubernetesOverride(expiring("1.30.0", earlier)),
			want:    []string{`spec.kubernetes.versions[0] (1.30.0).expirationDate: Invalid value: "2025-01-01T00:00:00Z": expiration date for version "1.30.0" is in the past`},
		},
		{
			name:    "an existing override with a past date and no merged status yet is refused, as Gardener finds no merged expiry",
			live:    &v1alpha1.NamespacedCloudProfile{Spec: kubernetesOverride(expiring("1.30.0", future))},
			updated: kubernetesOverride(expiring("1.30.0", past)),
			want:    []string{`spec.kubernetes.versions[0] (1.30.0).expirationDate: Invalid value: "2025-03-01T00:00:00Z": expiration date for version "1.30.0" is in the past`},
		},
		{
			name:    "an override new to the profile with a past date is not this rule's",
			live:    &v1alpha1.NamespacedCloudProfile{Spec: kubernetesOverride(expiring("1.31.0", future))},
			updated: kubernetesOverride(expiring("1.31.0", future), expiring("1.30.0", past)),
		},
		{
			name: "a machine image override moved into the past is refused at its entry",
			live: &v1alpha1.NamespacedCloudProfile{Spec: imageOverride(expiring("24.4.0", future)),
				Status: v1alpha1.NamespacedCloudProfileStatus{CloudProfileSpec: mergedImage(expiring("24.4.0", future))}},
			updated: imageOverride(expiring("24.4.0", past)),
			want:    []string{`spec.machineImages[0] (ubuntu).versions[0] (24.4.0).expirationDate: Invalid value: "2025-03-01T00:00:00Z": expiration date for version "24.4.0" is in the past`},
		},
		{
			name:    "a machine image version only the profile has is its own, not an override, and not checked",
			live:    &v1alpha1.NamespacedCloudProfile{Spec: imageOverride(expiring("22.4.0", future))},
			updated: imageOverride(expiring("22.4.0", past)),
		},
		{
			name:    "a spec written again as it is passes, though its expiry is past and no status merged it yet, as in Gardener",
			live:    &v1alpha1.NamespacedCloudProfile{Spec: kubernetesOverride(expiring("1.30.0", past))},
			updated: kubernetesOverride(expiring("1.30.0", past)),
		},
		{
			name:    "a create has no live object and nothing to compare",
			updated: kubernetesOverride(expiring("1.30.0", past)),
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			errs := CheckNamespacedChange(tt.live, parent, &tt.updated, now)
			lines := make([]string, len(errs))
			for i, e := range errs {
				lines[i] = e.Error()
			}
			g.Expect(lines).To(ConsistOf(tt.want))
		})
	}
}
