package profile

import (
	"testing"

	. "github.com/onsi/gomega"

	v1alpha1 "github.com/profilesync/profilesync/api/v1alpha1"
)

// TestDecodeDropsARepeatedEntryOfAListGardenerKeepsAtomic: Gardener's API
// keeps seedSelector.providerTypes, regions' accessRestrictions and zones'
// unavailable types atomic and refuses no repeat; ours declares them sets
// (or keyed by name), whose repeats the API server refuses. A repeat means
// nothing more than one entry, so it is dropped and the file is accepted as
// Gardener accepts it; two different entries of one name still differ in
// meaning and stay refused.
func TestDecodeDropsARepeatedEntryOfAListGardenerKeepsAtomic(t *testing.T) {
	tests := []struct {
		name    string
		extra   string
		want    func(g Gomega, spec *v1alpha1.CloudProfileSpec)
		refused string
	}{
		{
			name:  "a repeated provider type of the seed selector is one",
			extra: "  seedSelector:\n    providerTypes: [aws, gcp, aws]\n",
			want: func(g Gomega, spec *v1alpha1.CloudProfileSpec) {
				g.Expect(spec.SeedSelector.ProviderTypes).To(Equal([]string{"aws", "gcp"}))
			},
		},
		{
			name:  "a repeated access restriction of a region is one",
			extra: "  regions:\n  - name: eu-1\n    accessRestrictions:\n    - name: eu-access-only\n    - name: eu-access-only\n",
			want: func(g Gomega, spec *v1alpha1.CloudProfileSpec) {
				g.Expect(spec.Regions[0].AccessRestrictions).To(Equal([]v1alpha1.AccessRestriction{{Name: "eu-access-only"}}))
			},
		},
		{
			name:  "a repeated unavailable machine or volume type of a zone is one",
			extra: "  regions:\n  - name: eu-1\n    zones:\n    - name: eu-1a\n      unavailableMachineTypes: [m5.large, m5.large]\n      unavailableVolumeTypes: [gp3, io1, gp3]\n",
			want: func(g Gomega, spec *v1alpha1.CloudProfileSpec) {
				g.Expect(spec.Regions[0].Zones[0].UnavailableMachineTypes).To(Equal([]string{"m5.large"}))
				g.Expect(spec.Regions[0].Zones[0].UnavailableVolumeTypes).To(Equal([]string{"gp3", "io1"}))
			},
		},
		{
			name:  "an empty provider type is kept and accepted, as Gardener accepts it",
			extra: "  seedSelector:\n    providerTypes: [\"\", aws, \"\"]\n",
			want: func(g Gomega, spec *v1alpha1.CloudProfileSpec) {
				g.Expect(spec.SeedSelector.ProviderTypes).To(Equal([]string{"", "aws"}))
			},
		},
		{
			name:  "an access restriction of an empty name is kept and accepted, as Gardener accepts it",
			extra: "  regions:\n  - name: eu-1\n    accessRestrictions:\n    - name: \"\"\n    - name: eu-access-only\n",
			want: func(g Gomega, spec *v1alpha1.CloudProfileSpec) {
				g.Expect(spec.Regions[0].AccessRestrictions).To(Equal([]v1alpha1.AccessRestriction{{Name: ""}, {Name: "eu-access-only"}}))
			},
		},
		{
			name:    "two different access restrictions of one name are still refused",
			extra:   "  regions:\n  - name: eu-1\n    accessRestrictions:\n    - name: eu-access-only\n    - {name: eu-access-only, options: {x: y}}\n",
			refused: "spec.regions[0] (eu-1).accessRestrictions[1]",
		},
		{
			name:    "a repeated region is still refused, as Gardener refuses it",
			extra:   "  regions:\n  - name: eu-1\n  - name: eu-1\n",
			refused: "spec.regions[1]",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			objects, problems := decodeString(t, "p.yaml", cloudProfileWith(tt.extra))
			if tt.refused != "" {
				g.Expect(problems.Lines()).To(ContainElement(ContainSubstring(tt.refused)))
				return
			}
			g.Expect(problems).To(BeEmpty())
			g.Expect(objects).To(HaveLen(1))
			tt.want(g, &objects[0].CloudProfile.Spec)
		})
	}
}

// TestTypingCheckLetsAnEqualRepeatOfAnAtomicListOfGardenerThrough: the
// check before an overlay's build refuses a key written twice in a keyed
// list, since a strategic-merge patch would silently merge the two; an
// equal repeat of a region's access restriction merges into what it meant,
// and the decoder drops it, so it passes, while a repeat in a list Gardener
// checks stays refused.
func TestTypingCheckLetsAnEqualRepeatOfAnAtomicListOfGardenerThrough(t *testing.T) {
	tests := []struct {
		name    string
		extra   string
		refused string
	}{
		{name: "an equal repeat of an access restriction passes", extra: "  regions:\n  - name: eu-1\n    accessRestrictions:\n    - name: eu-access-only\n    - {name: eu-access-only}\n"},
		{name: "a repeated region is refused", extra: "  regions:\n  - name: eu-1\n  - name: eu-1\n", refused: "spec.regions[1] (eu-1): Duplicate value"},
		{name: "an access restriction repeated with other content is refused", extra: "  regions:\n  - name: eu-1\n    accessRestrictions:\n    - name: eu-access-only\n    - {name: eu-access-only, options: {}}\n", refused: "accessRestrictions[1] (eu-access-only): Duplicate value"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			problems := CheckYAMLTyping("p.yaml", []byte(cloudProfileWith(tt.extra)))
			if tt.refused == "" {
				g.Expect(problems).To(BeEmpty())
				return
			}
			g.Expect(problems.Lines()).To(ContainElement(ContainSubstring(tt.refused)))
		})
	}
}
