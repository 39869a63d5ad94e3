package lifecycle

import (
	"testing"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/util/validation/field"

	v1alpha1 "github.com/profilesync/profilesync/api/v1alpha1"
)

func TestUpdateStrategyOrDefault(t *testing.T) {
	tests := []struct {
		name     string
		declared *v1alpha1.MachineImageUpdateStrategy
		want     v1alpha1.MachineImageUpdateStrategy
	}{
		{"an undeclared strategy is major", nil, v1alpha1.UpdateStrategyMajor},
		{"patch is kept", strategy(v1alpha1.UpdateStrategyPatch), v1alpha1.UpdateStrategyPatch},
		{"minor is kept", strategy(v1alpha1.UpdateStrategyMinor), v1alpha1.UpdateStrategyMinor},
		{"major is kept", strategy(v1alpha1.UpdateStrategyMajor), v1alpha1.UpdateStrategyMajor},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			NewWithT(t).Expect(UpdateStrategyOrDefault(tt.declared)).To(Equal(tt.want))
		})
	}
}

func TestValidateUpdateStrategy(t *testing.T) {
	path := field.NewPath("spec", "machineImages").Index(2).Child("updateStrategy")
	tests := []struct {
		name      string
		declared  *v1alpha1.MachineImageUpdateStrategy
		wantError string
	}{
		{name: "an undeclared strategy is valid", declared: nil},
		{name: "patch is valid", declared: strategy(v1alpha1.UpdateStrategyPatch)},
		{name: "minor is valid", declared: strategy(v1alpha1.UpdateStrategyMinor)},
		{name: "major is valid", declared: strategy(v1alpha1.UpdateStrategyMajor)},
		{
			name:      "any other strategy is not supported, naming the valid ones",
			declared:  strategy("latest"),
			wantError: `spec.machineImages[2].updateStrategy: Unsupported value: "latest": supported values: "patch", "minor", "major"`,
		},
		{
			name:      "the spelling counts",
			declared:  strategy("Major"),
			wantError: `spec.machineImages[2].updateStrategy: Unsupported value: "Major": supported values: "patch", "minor", "major"`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			errs := ValidateUpdateStrategy(tt.declared, path)
			if tt.wantError == "" {
				g.Expect(errs).To(BeEmpty())
				return
			}
			g.Expect(errs).To(HaveLen(1))
			g.Expect(errs[0].Error()).To(Equal(tt.wantError))
		})
	}
}
