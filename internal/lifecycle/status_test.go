package lifecycle

import (
	"testing"
	"time"

	. "github.com/onsi/gomega"

	v1alpha1 "github.com/profilesync/profilesync/api/v1alpha1"
)

func classificationPtr(c v1alpha1.VersionClassification) *v1alpha1.VersionClassification { return &c }

func TestStatusGEP32Example(t *testing.T) {
	g := NewWithT(t)
	spec := &v1alpha1.CloudProfileSpec{Type: "local", Kubernetes: v1alpha1.KubernetesSettings{Versions: gep32KubernetesVersions()}}

	status := Status(spec, gep32Now)

	g.Expect(status.Kubernetes).NotTo(BeNil())
	g.Expect(status.Kubernetes.Versions).To(Equal([]v1alpha1.VersionStatus{
		{Version: "1.30.6", Classification: supported, NextClassification: classificationPtr(deprecated), NextTransitionTime: metaAt("2025-03-01T00:00:00Z")},
		{Version: "1.27.0", Classification: supported},
		{Version: "1.28.0", Classification: supported},
		{Version: "1.18.0", Classification: expired},
		{Version: "2.0.0", Classification: unavailable, NextClassification: classificationPtr(preview), NextTransitionTime: metaAt("2036-02-07T06:28:16Z")},
	}))
	g.Expect(status.MachineImages).To(BeNil())
	g.Expect(status.NextTransitionTime).To(Equal(metaAt("2025-03-01T00:00:00Z")))
}

func TestStatus(t *testing.T) {
	now := at("2024-06-01T00:00:00Z")
	tests := []struct {
		name string
		spec *v1alpha1.CloudProfileSpec
		want v1alpha1.ProfileVersionsStatus
	}{
		{
			name: "a nil spec gives an empty status",
			spec: nil,
			want: v1alpha1.ProfileVersionsStatus{},
		},
		{
			name: "a spec without versions or images omits every list",
			spec: &v1alpha1.CloudProfileSpec{Type: "aws"},
			want: v1alpha1.ProfileVersionsStatus{},
		},
		{
			name: "machine images are listed in spec order with their names, and Kubernetes is omitted when it has no versions",
			spec: &v1alpha1.CloudProfileSpec{
				MachineImages: []v1alpha1.MachineImage{
					{Name: "suse", Versions: imageVersions(withDeprecatedAPI("15.3", deprecated, "2024-07-01T00:00:00Z"), plain("15.4"))},
					{Name: "gardenlinux", Versions: imageVersions(withLifecycle("1443.3", stage(preview, "2024-06-01T00:00:00Z"), stage(supported, "2024-06-15T00:00:00Z")))},
				},
			},
			want: v1alpha1.ProfileVersionsStatus{
				MachineImages: []v1alpha1.MachineImageStatus{
					{Name: "suse", Versions: []v1alpha1.VersionStatus{
						{Version: "15.3", Classification: deprecated, NextClassification: classificationPtr(expired), NextTransitionTime: metaAt("2024-07-01T00:00:00Z")},
						{Version: "15.4", Classification: supported},
					}},
					{Name: "gardenlinux", Versions: []v1alpha1.VersionStatus{
						{Version: "1443.3", Classification: preview, NextClassification: classificationPtr(supported), NextTransitionTime: metaAt("2024-06-15T00:00:00Z")},
					}},
				},
				NextTransitionTime: metaAt("2024-06-15T00:00:00Z"),
			},
		},
		{
			name: "an image without versions is listed without a versions list",
			spec: &v1alpha1.CloudProfileSpec{MachineImages: []v1alpha1.MachineImage{{Name: "empty"}}},
			want: v1alpha1.ProfileVersionsStatus{MachineImages: []v1alpha1.MachineImageStatus{{Name: "empty"}}},
		},
		{
			name: "the top-level next transition is the earliest over Kubernetes and images",
			spec: &v1alpha1.CloudProfileSpec{
				Kubernetes: v1alpha1.KubernetesSettings{Versions: []v1alpha1.ExpirableVersion{
					withDeprecatedAPI("1.30.0", supported, "2024-09-01T00:00:00Z"),
				}},
				MachineImages: []v1alpha1.MachineImage{
					{Name: "suse", Versions: imageVersions(withDeprecatedAPI("15.3", "", "2024-08-01T00:00:00Z"))},
				},
			},
			want: v1alpha1.ProfileVersionsStatus{
				Kubernetes: &v1alpha1.KubernetesStatus{Versions: []v1alpha1.VersionStatus{
					{Version: "1.30.0", Classification: supported, NextClassification: classificationPtr(expired), NextTransitionTime: metaAt("2024-09-01T00:00:00Z")},
				}},
				MachineImages: []v1alpha1.MachineImageStatus{
					{Name: "suse", Versions: []v1alpha1.VersionStatus{
						{Version: "15.3", Classification: supported, NextClassification: classificationPtr(expired), NextTransitionTime: metaAt("2024-08-01T00:00:00Z")},
					}},
				},
				NextTransitionTime: metaAt("2024-08-01T00:00:00Z"),
			},
		},
		{
			name: "a stage starting exactly now is current and not scheduled",
			spec: &v1alpha1.CloudProfileSpec{Kubernetes: v1alpha1.KubernetesSettings{Versions: []v1alpha1.ExpirableVersion{
				withLifecycle("1.30.0", stage(preview, ""), stage(supported, "2024-06-01T00:00:00Z")),
			}}},
			want: v1alpha1.ProfileVersionsStatus{Kubernetes: &v1alpha1.KubernetesStatus{Versions: []v1alpha1.VersionStatus{
				{Version: "1.30.0", Classification: supported},
			}}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			got := Status(tt.spec, now)
			g.Expect(got).To(Equal(tt.want))

			at, ok := nextProfileTransition(tt.spec, now)
			if tt.want.NextTransitionTime == nil {
				g.Expect(ok).To(BeFalse())
			} else {
				g.Expect(ok).To(BeTrue())
				g.Expect(at).To(BeTemporally("==", tt.want.NextTransitionTime.Time))
			}
		})
	}
}

func TestStatusNextTransitionDoesNotAliasAVersion(t *testing.T) {
	g := NewWithT(t)
	spec := &v1alpha1.CloudProfileSpec{Kubernetes: v1alpha1.KubernetesSettings{Versions: []v1alpha1.ExpirableVersion{
		withDeprecatedAPI("1.30.0", supported, "2024-09-01T00:00:00Z"),
	}}}
	status := Status(spec, at("2024-06-01T00:00:00Z"))
	status.NextTransitionTime.Time = time.Time{}
	g.Expect(status.Kubernetes.Versions[0].NextTransitionTime).To(Equal(metaAt("2024-09-01T00:00:00Z")))
}

func TestStatusAppendingToOneListDoesNotOverwriteTheNext(t *testing.T) {
	g := NewWithT(t)
	spec := &v1alpha1.CloudProfileSpec{
		Kubernetes:    v1alpha1.KubernetesSettings{Versions: []v1alpha1.ExpirableVersion{plain("1.30.0")}},
		MachineImages: []v1alpha1.MachineImage{{Name: "suse", Versions: imageVersions(plain("15.4"))}},
	}
	status := Status(spec, at("2024-06-01T00:00:00Z"))
	_ = append(status.Kubernetes.Versions, v1alpha1.VersionStatus{Version: "9.9.9"})
	g.Expect(status.MachineImages[0].Versions[0].Version).To(Equal("15.4"))
}

func TestStatusAllocatesAConstantNumberOfTimes(t *testing.T) {
	g := NewWithT(t)
	now := at("2024-06-01T00:00:00Z")
	small := benchmarkProfile(10, 2, 5)
	large := benchmarkProfile(200, 10, 20)
	allocsSmall := testing.AllocsPerRun(20, func() { _ = Status(small, now) })
	allocsLarge := testing.AllocsPerRun(20, func() { _ = Status(large, now) })
	// Kubernetes status and its versions, the image list, one slice per image,
	// the two backing arrays and the top-level time.
	g.Expect(allocsSmall).To(BeNumerically("<=", 6+2))
	g.Expect(allocsLarge).To(BeNumerically("<=", 6+10))
}
