package lifecycle

import (
	"testing"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/util/validation/field"

	v1alpha1 "github.com/profilesync/profilesync/api/v1alpha1"
)

func TestValidateUpdate(t *testing.T) {
	now := at("2024-06-01T00:00:00Z")
	profile := func(kubernetes v1alpha1.ExpirableVersion, image v1alpha1.ExpirableVersion) *v1alpha1.CloudProfileSpec {
		return &v1alpha1.CloudProfileSpec{
			Type:          "aws",
			Kubernetes:    v1alpha1.KubernetesSettings{Versions: []v1alpha1.ExpirableVersion{plain("1.31.0"), kubernetes}},
			MachineImages: []v1alpha1.MachineImage{{Name: "suse", Versions: imageVersions(plain("15.5"), image)}},
		}
	}
	offered := withLifecycle("1.30.0", stage(preview, "2024-05-01T00:00:00Z"))
	postponed := withLifecycle("1.30.0", stage(preview, "2024-07-01T00:00:00Z"))
	offeredImage := withLifecycle("15.4", stage(supported, "2024-05-01T00:00:00Z"))
	postponedImage := withLifecycle("15.4", stage(supported, "2024-07-01T00:00:00Z"))

	tests := []struct {
		name       string
		old, new   *v1alpha1.CloudProfileSpec
		wantErrors []string
	}{
		{
			name: "an unchanged profile passes",
			old:  profile(offered, offeredImage),
			new:  profile(offered, offeredImage),
		},
		{
			name:       "a Kubernetes version that left unavailable may not become unavailable again",
			old:        profile(offered, offeredImage),
			new:        profile(postponed, offeredImage),
			wantErrors: []string{"FieldValueForbidden spec.kubernetes.versions[1] (1.30.0).lifecycle"},
		},
		{
			name:       "a machine image version that left unavailable may not become unavailable again",
			old:        profile(offered, offeredImage),
			new:        profile(offered, postponedImage),
			wantErrors: []string{"FieldValueForbidden spec.machineImages[0] (suse).versions[1] (15.4).lifecycle"},
		},
		{
			name: "a still unavailable version may be postponed further",
			old:  profile(withLifecycle("1.30.0", stage(preview, "2024-06-15T00:00:00Z")), postponedImage),
			new:  profile(postponed, withLifecycle("15.4", stage(supported, "2024-08-01T00:00:00Z"))),
		},
		{
			name: "an unavailable version may be brought forward",
			old:  profile(postponed, postponedImage),
			new:  profile(offered, offeredImage),
		},
		{
			name: "a new version may start unavailable",
			old:  profile(plain("1.29.0"), plain("15.3")),
			new:  profile(postponed, postponedImage),
		},
		{
			name: "an expired version may be moved to a later expiry",
			old:  profile(withDeprecatedAPI("1.30.0", "", "2024-05-01T00:00:00Z"), offeredImage),
			new:  profile(withDeprecatedAPI("1.30.0", "", "2024-12-01T00:00:00Z"), offeredImage),
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			errs := ValidateUpdate(tt.old, tt.new, now, field.NewPath("spec"))
			if len(tt.wantErrors) == 0 {
				g.Expect(errs).To(BeEmpty())
				return
			}
			g.Expect(errorsOf(errs)).To(ConsistOf(tt.wantErrors))
		})
	}
}

func TestValidateUpdateOfMaxNodesTotal(t *testing.T) {
	now := at("2024-06-01T00:00:00Z")
	profile := func(maxNodesTotal *int32) *v1alpha1.CloudProfileSpec {
		spec := &v1alpha1.CloudProfileSpec{Kubernetes: v1alpha1.KubernetesSettings{Versions: []v1alpha1.ExpirableVersion{plain("1.31.0")}}}
		if maxNodesTotal != nil {
			spec.Limits = &v1alpha1.Limits{MaxNodesTotal: maxNodesTotal}
		}
		return spec
	}
	tests := []struct {
		name       string
		old, new   *int32
		wantErrors []string
	}{
		{name: "an unchanged limit passes", old: new(int32(100)), new: new(int32(100))},
		{name: "a limit may be raised", old: new(int32(100)), new: new(int32(200))},
		{
			name:       "a limit may not be lowered, as in Gardener",
			old:        new(int32(100)),
			new:        new(int32(99)),
			wantErrors: []string{"FieldValueInvalid spec.limits.maxNodesTotal"},
		},
		{name: "a limit may be set where there was none", old: nil, new: new(int32(10))},
		{name: "a limit may be removed", old: new(int32(10)), new: nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			errs := ValidateUpdate(profile(tt.old), profile(tt.new), now, field.NewPath("spec"))
			g.Expect(errorsOf(errs)).To(ConsistOf(tt.wantErrors))
		})
	}
	g := NewWithT(t)
	errs := ValidateUpdate(profile(new(int32(100))), profile(new(int32(50))), now, field.NewPath("spec"))
	g.Expect(errs).To(HaveLen(1))
	g.Expect(errs[0].Error()).To(Equal("spec.limits.maxNodesTotal: Invalid value: 50: may not be lowered (from 100): clusters may already have as many nodes as the old limit allows"))
}

func TestValidateUpdateMessageNamesTheVersion(t *testing.T) {
	g := NewWithT(t)
	now := at("2024-06-01T00:00:00Z")
	old := &v1alpha1.CloudProfileSpec{Kubernetes: v1alpha1.KubernetesSettings{Versions: []v1alpha1.ExpirableVersion{plain("1.30.0")}}}
	updated := &v1alpha1.CloudProfileSpec{Kubernetes: v1alpha1.KubernetesSettings{Versions: []v1alpha1.ExpirableVersion{
		withLifecycle("1.30.0", stage(supported, "2030-01-01T00:00:00Z")),
	}}}
	errs := ValidateUpdate(old, updated, now, field.NewPath("spec"))
	g.Expect(errs).To(HaveLen(1))
	g.Expect(errs[0].Detail).To(ContainSubstring("version 1.30.0 is supported now and may not be made unavailable again"))
	g.Expect(ValidateUpdate(nil, updated, now, nil)).To(BeEmpty())
}
