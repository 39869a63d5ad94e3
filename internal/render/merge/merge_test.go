package merge

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"

	v1alpha1 "github.com/profilesync/profilesync/api/v1alpha1"
)

func TestMergeNamespacedMachineAndVolumeTypes(t *testing.T) {
	tests := []struct {
		name             string
		machineTypes     []v1alpha1.MachineType
		volumeTypes      []v1alpha1.VolumeType
		wantMachineTypes []v1alpha1.MachineType
		wantVolumeTypes  []v1alpha1.VolumeType
		wantErrs         []string
	}{
		{
			name:             "a machine type with a parent's name replaces it in place",
			machineTypes:     []v1alpha1.MachineType{machineType("m5.large", "8")},
			wantMachineTypes: []v1alpha1.MachineType{machineType("m5.large", "8")},
			wantVolumeTypes:  profile().VolumeTypes,
		},
		{
			name:             "machine types with new names are appended in override order",
			machineTypes:     []v1alpha1.MachineType{machineType("m5.xlarge", "8"), machineType("c5.large", "2")},
			wantMachineTypes: []v1alpha1.MachineType{machineType("m5.large", "4"), machineType("m5.xlarge", "8"), machineType("c5.large", "2")},
			wantVolumeTypes:  profile().VolumeTypes,
		},
		{
			name:         "a machine type named twice in the override is an error",
			machineTypes: []v1alpha1.MachineType{machineType("m5.xlarge", "8"), machineType("m5.xlarge", "16")},
			wantErrs:     []string{"spec.machineTypes[1] (m5.xlarge).name: Duplicate value"},
		},
		{
			name:             "a volume type with a parent's name replaces it and new ones are appended",
			volumeTypes:      []v1alpha1.VolumeType{{Name: "io2", Class: "premium"}, {Name: "gp3", Class: "fast", Usable: ptr.To(false)}},
			wantMachineTypes: profile().MachineTypes,
			wantVolumeTypes:  []v1alpha1.VolumeType{{Name: "gp3", Class: "fast", Usable: ptr.To(false)}, {Name: "io2", Class: "premium"}},
		},
		{
			name:        "a volume type named twice in the override is an error",
			volumeTypes: []v1alpha1.VolumeType{{Name: "io2", Class: "premium"}, {Name: "io2", Class: "standard"}},
			wantErrs:    []string{"spec.volumeTypes[1] (io2).name: Duplicate value"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			ncp := namespaced()
			ncp.MachineTypes = tt.machineTypes
			ncp.VolumeTypes = tt.volumeTypes

			merged, errs := Namespaced(profile(), ncp)

			g.Expect(errorFields(errs)).To(Equal(tt.wantErrs))
			if tt.wantErrs != nil {
				g.Expect(merged).To(BeNil())
				return
			}
			g.Expect(merged.MachineTypes).To(Equal(tt.wantMachineTypes))
			g.Expect(merged.VolumeTypes).To(Equal(tt.wantVolumeTypes))
		})
	}
}

func TestMergeNamespacedCABundle(t *testing.T) {
	parentPEM := strings.TrimSuffix(testCertificate(t, "parent"), "\n")
	overridePEM := testCertificate(t, "override")
	tests := []struct {
		name     string
		parent   *string
		override *string
		want     *string
	}{
		{
			name:   "the override's bundle follows the parent's on a new line",
			parent: ptr.To(parentPEM), override: ptr.To(overridePEM),
			want: ptr.To(parentPEM + "\n" + overridePEM),
		},
		{
			name:   "no newline is added after a parent's bundle that ends in one",
			parent: ptr.To(parentPEM + "\n"), override: ptr.To(overridePEM),
			want: ptr.To(parentPEM + "\n" + overridePEM),
		},
		{
			name:   "a parent's bundle alone is kept",
			parent: ptr.To(parentPEM), override: nil,
			want: ptr.To(parentPEM),
		},
		{
			name:   "an override's bundle alone is used",
			parent: nil, override: ptr.To(overridePEM),
			want: ptr.To(overridePEM),
		},
		{
			name: "no bundle on either side stays unset",
			want: nil,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			parent := profile()
			parent.CABundle = tt.parent
			ncp := namespaced()
			ncp.CABundle = tt.override

			merged, errs := Namespaced(parent, ncp)

			g.Expect(errs).To(BeEmpty())
			g.Expect(merged.CABundle).To(Equal(tt.want))
		})
	}
}

func TestMergeNamespacedParentReference(t *testing.T) {
	tests := []struct {
		name     string
		parent   *v1alpha1.CloudProfileSpec
		ncp      *v1alpha1.NamespacedCloudProfileSpec
		wantErrs []string
	}{
		{
			name:   "a namespaced profile referencing its CloudProfile by kind and name merges",
			parent: profile(),
			ncp:    namespaced(),
		},
		{
			name:   "a parent of another kind is an error",
			parent: profile(),
			ncp: &v1alpha1.NamespacedCloudProfileSpec{
				Parent: v1alpha1.CloudProfileReference{Kind: v1alpha1.NamespacedCloudProfileKind, Name: "local"},
			},
			wantErrs: []string{"spec.parent.kind: Unsupported value"},
		},
		{
			name:     "a parent without a name is an error",
			parent:   profile(),
			ncp:      &v1alpha1.NamespacedCloudProfileSpec{Parent: v1alpha1.CloudProfileReference{Kind: v1alpha1.CloudProfileKind}},
			wantErrs: []string{"spec.parent.name: Required value"},
		},
		{
			name:     "a missing parent is an error naming the reference",
			parent:   nil,
			ncp:      namespaced(),
			wantErrs: []string{"spec.parent.name: Not found"},
		},
		{
			name:     "a missing namespaced spec is an error",
			parent:   profile(),
			ncp:      nil,
			wantErrs: []string{"spec: Required value"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)

			merged, errs := Namespaced(tt.parent, tt.ncp)

			g.Expect(errorFields(errs)).To(Equal(tt.wantErrs))
			if tt.wantErrs != nil {
				g.Expect(merged).To(BeNil())
				return
			}
			g.Expect(merged).To(Equal(tt.parent), "an override without entries renders the parent unchanged")
		})
	}
}

func TestMergeNamespacedKeepsParentOnlyFields(t *testing.T) {
	g := NewWithT(t)
	parent := profile()
	parent.ProviderConfig = &runtime.RawExtension{Raw: []byte(`{"apiVersion":"local/v1","kind":"CloudProfileConfig"}`)}
	ncp := namespaced()
	ncp.MachineTypes = []v1alpha1.MachineType{machineType("m5.xlarge", "8")}

	merged, errs := Namespaced(parent, ncp)

	g.Expect(errs).To(BeEmpty())
	g.Expect(merged.Type).To(Equal(parent.Type))
	g.Expect(merged.Regions).To(Equal(parent.Regions))
	g.Expect(merged.ProviderConfig).To(Equal(parent.ProviderConfig))
}

// TestMergeNamespacedRequiresTheListsInTheMergedSpec: the merged spec needs
// a machine image, a machine type and a region, like every profile. Regions
// come only from the parent; an image or a type the parent lacks may come
// from the override.
func TestMergeNamespacedRequiresTheListsInTheMergedSpec(t *testing.T) {
	tests := []struct {
		name       string
		change     func(parent *v1alpha1.CloudProfileSpec, ncp *v1alpha1.NamespacedCloudProfileSpec)
		wantErrors []string
	}{
		{
			name:       "a parent without regions",
			change:     func(parent *v1alpha1.CloudProfileSpec, _ *v1alpha1.NamespacedCloudProfileSpec) { parent.Regions = nil },
			wantErrors: []string{"status.cloudProfileSpec.regions: Required value"},
		},
		{
			name: "a parent without machine types or images, the override adds none",
			change: func(parent *v1alpha1.CloudProfileSpec, _ *v1alpha1.NamespacedCloudProfileSpec) {
				parent.MachineTypes, parent.MachineImages = nil, nil
			},
			wantErrors: []string{"status.cloudProfileSpec.machineImages: Required value", "status.cloudProfileSpec.machineTypes: Required value"},
		},
		{
			name: "a parent without machine types or images, the override adds one of each",
			change: func(parent *v1alpha1.CloudProfileSpec, ncp *v1alpha1.NamespacedCloudProfileSpec) {
				parent.MachineTypes, parent.MachineImages = nil, nil
				ncp.MachineTypes = []v1alpha1.MachineType{machineType("m5.xlarge", "8")}
				ncp.MachineImages = []v1alpha1.NamespacedMachineImage{{
					Name:           "ubuntu",
					UpdateStrategy: strategy(v1alpha1.UpdateStrategyMajor),
					Versions:       []v1alpha1.MachineImageVersion{addedImageVersion(plainVersion("24.4.0"))},
				}}
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			parent, ncp := profile(), namespaced()
			tt.change(parent, ncp)

			merged, errs := Namespaced(parent, ncp)

			g.Expect(errorFields(errs)).To(ConsistOf(tt.wantErrors))
			if len(tt.wantErrors) == 0 {
				g.Expect(merged.MachineTypes).To(HaveLen(1))
				g.Expect(merged.MachineImages).To(HaveLen(1))
			}
		})
	}
}

func TestMergeNamespacedLeavesInputsUnchanged(t *testing.T) {
	g := NewWithT(t)
	parent := profile()
	parent.Kubernetes.Versions = withNewest(staged("1.30.0", stage(supported, ""), stage(deprecated, "2025-01-01T00:00:00Z")))
	parent.CABundle = ptr.To(testCertificate(t, "parent"))
	ncp := namespaced()
	ncp.Kubernetes = &v1alpha1.KubernetesSettings{Versions: []v1alpha1.ExpirableVersion{
		staged("1.30.0", stage(supported, "2024-01-01T00:00:00Z"), stage(deprecated, "2026-01-01T00:00:00Z")),
	}}
	ncp.MachineImages = []v1alpha1.NamespacedMachineImage{{
		Name:           "gardenlinux",
		UpdateStrategy: strategy(v1alpha1.UpdateStrategyPatch),
		Versions:       []v1alpha1.MachineImageVersion{addedImageVersion(plainVersion("1443.2.0"))},
	}}
	ncp.MachineTypes = []v1alpha1.MachineType{machineType("m5.large", "8")}
	ncp.CABundle = ptr.To(testCertificate(t, "override"))
	parentBefore, ncpBefore := parent.DeepCopy(), ncp.DeepCopy()

	merged, errs := Namespaced(parent, ncp)
	g.Expect(errs).To(BeEmpty())
	merged.Kubernetes.Versions[0].Lifecycle[0].StartTime.Time = merged.Kubernetes.Versions[0].Lifecycle[0].StartTime.AddDate(1, 0, 0)
	merged.MachineImages[0].Versions[1].Version = "changed"
	merged.MachineTypes[0].CPU = resource.MustParse("64")

	g.Expect(parent).To(Equal(parentBefore), "the merge and later edits of its result must not reach the parent")
	g.Expect(ncp).To(Equal(ncpBefore), "the merge and later edits of its result must not reach the override")
}

// TestMergeNamespacedGEP25Rendering checks the example of GEP-25 "Rendering"
// against the result the GEP writes down, with two differences docs/semantics.md §3
// decides: entries the override adds are appended after the parent's (the GEP
// lists the new image version and volume type first), and the merged spec is
// validated, which rejects the GEP's parent as written because its highest
// Kubernetes version expires.
func TestMergeNamespacedGEP25Rendering(t *testing.T) {
	parent := func() *v1alpha1.CloudProfileSpec {
		return &v1alpha1.CloudProfileSpec{
			Type: "aws",
			Kubernetes: v1alpha1.KubernetesSettings{Versions: []v1alpha1.ExpirableVersion{
				plainVersion("1.27.1"), plainVersion("1.26.3"), plainVersion("1.25.8"), plainVersion("1.24.6"),
				deprecatedAPIVersion("1.28.6", "", "2023-02-02T01:02:03Z"),
			}},
			MachineImages: []v1alpha1.MachineImage{{Name: "suse-chost", Versions: []v1alpha1.MachineImageVersion{
				imageVersion(plainVersion("15.4")), imageVersion(plainVersion("14.4")), imageVersion(plainVersion("13.6")),
			}}},
			MachineTypes: []v1alpha1.MachineType{{Name: "m5.large", CPU: resource.MustParse("4"), GPU: resource.MustParse("0"), Memory: resource.MustParse("8Gi")}},
			VolumeTypes:  []v1alpha1.VolumeType{{Name: "gp3", Class: "standard", Usable: ptr.To(true)}},
			// The GEP leaves out regions, which Gardener requires.
			Regions: []v1alpha1.Region{{Name: "eu-west-1"}},
		}
	}
	ncp := &v1alpha1.NamespacedCloudProfileSpec{
		Parent:     v1alpha1.CloudProfileReference{Kind: v1alpha1.CloudProfileKind, Name: "aws-central-cloud-profile"},
		Kubernetes: &v1alpha1.KubernetesSettings{Versions: []v1alpha1.ExpirableVersion{deprecatedAPIVersion("1.28.6", "", "2024-06-06T01:02:03Z")}},
		MachineImages: []v1alpha1.NamespacedMachineImage{{Name: "suse-chost", Versions: []v1alpha1.MachineImageVersion{
			imageVersion(deprecatedAPIVersion("16.4", "", "2023-08-08T23:59:59Z")),
		}}},
		MachineTypes: []v1alpha1.MachineType{{Name: "m5.xlarge", CPU: resource.MustParse("8"), GPU: resource.MustParse("0"), Memory: resource.MustParse("16Gi")}},
		VolumeTypes:  []v1alpha1.VolumeType{{Name: "ab6", Class: "premium", Usable: ptr.To(true)}},
	}
	wantMerged := func() *v1alpha1.CloudProfileSpec {
		return &v1alpha1.CloudProfileSpec{
			Type: "aws",
			Kubernetes: v1alpha1.KubernetesSettings{Versions: []v1alpha1.ExpirableVersion{
				plainVersion("1.27.1"), plainVersion("1.26.3"), plainVersion("1.25.8"), plainVersion("1.24.6"),
				deprecatedAPIVersion("1.28.6", "", "2024-06-06T01:02:03Z"),
			}},
			MachineImages: []v1alpha1.MachineImage{{Name: "suse-chost", Versions: []v1alpha1.MachineImageVersion{
				imageVersion(plainVersion("15.4")), imageVersion(plainVersion("14.4")), imageVersion(plainVersion("13.6")),
				imageVersion(deprecatedAPIVersion("16.4", "", "2023-08-08T23:59:59Z")),
			}}},
			MachineTypes: []v1alpha1.MachineType{
				{Name: "m5.large", CPU: resource.MustParse("4"), GPU: resource.MustParse("0"), Memory: resource.MustParse("8Gi")},
				{Name: "m5.xlarge", CPU: resource.MustParse("8"), GPU: resource.MustParse("0"), Memory: resource.MustParse("16Gi")},
			},
			VolumeTypes: []v1alpha1.VolumeType{
				{Name: "gp3", Class: "standard", Usable: ptr.To(true)},
				{Name: "ab6", Class: "premium", Usable: ptr.To(true)},
			},
			Regions: []v1alpha1.Region{{Name: "eu-west-1"}},
		}
	}

	t.Run("the merge produces the GEP's rendered spec", func(t *testing.T) {
		g := NewWithT(t)
		merged, errs := mergeOverrides(parent(), ncp)
		g.Expect(errs).To(BeEmpty())
		g.Expect(merged).To(Equal(wantMerged()))
	})

	t.Run("the merged spec is rejected because the GEP's highest Kubernetes version expires", func(t *testing.T) {
		g := NewWithT(t)
		merged, errs := Namespaced(parent(), ncp)
		g.Expect(errorFields(errs)).To(Equal([]string{
			"spec.machineImages[0] (suse-chost).versions[0] (16.4).cri: Required value",
			"spec.machineImages[0] (suse-chost).versions[0] (16.4).architectures: Required value",
			"status.cloudProfileSpec.kubernetes.versions[4] (1.28.6).expirationDate: Forbidden",
		}), "Gardener refuses the GEP's added image version too: it has neither cri nor architectures")
		g.Expect(merged).To(BeNil())
	})

	t.Run("with a newer non-expiring Kubernetes version in the parent and the added version's cri and architectures, the GEP's rendering is accepted", func(t *testing.T) {
		g := NewWithT(t)
		withNewer := parent()
		withNewer.Kubernetes.Versions = append(withNewer.Kubernetes.Versions, plainVersion("1.29.0"))
		complete := ncp.DeepCopy()
		complete.MachineImages[0].Versions[0] = addedImageVersion(deprecatedAPIVersion("16.4", "", "2023-08-08T23:59:59Z"))
		want := wantMerged()
		want.Kubernetes.Versions = append(want.Kubernetes.Versions, plainVersion("1.29.0"))
		want.MachineImages[0].Versions[3] = addedImageVersion(deprecatedAPIVersion("16.4", "", "2023-08-08T23:59:59Z"))

		merged, errs := Namespaced(withNewer, complete)
		g.Expect(errs).To(BeEmpty())
		g.Expect(merged).To(Equal(want))
	})
}

// TestMergeByKey checks the matching every list of an override goes through.
func TestMergeByKey(t *testing.T) {
	type entry struct{ key, value string }
	keyOf := func(e entry) string { return e.key }
	tests := []struct {
		name       string
		parent     []entry
		overrides  []entry
		wantCalls  []string
		wantErrors []string
	}{
		{
			name:      "an override of a parent entry gets the parent entry's index",
			parent:    []entry{{"a", "1"}, {"b", "2"}},
			overrides: []entry{{"b", "3"}},
			wantCalls: []string{"b@spec.list[0] (b)->1"},
		},
		{
			name:      "an override the parent lacks gets -1, in override order",
			parent:    []entry{{"a", "1"}},
			overrides: []entry{{"c", "3"}, {"a", "4"}},
			wantCalls: []string{"c@spec.list[0] (c)->-1", "a@spec.list[1] (a)->0"},
		},
		{
			name:       "a key twice in the overrides is a Duplicate and the later entry is not applied",
			parent:     []entry{{"a", "1"}},
			overrides:  []entry{{"a", "2"}, {"b", "3"}, {"a", "4"}},
			wantCalls:  []string{"a@spec.list[0] (a)->0", "b@spec.list[1] (b)->-1"},
			wantErrors: []string{`spec.list[2] (a).key: Duplicate value: "a"`},
		},
		{
			name:      "a key twice in the parent matches its later entry",
			parent:    []entry{{"a", "1"}, {"a", "2"}},
			overrides: []entry{{"a", "3"}},
			wantCalls: []string{"a@spec.list[0] (a)->1"},
		},
		{
			name:      "no overrides, no calls",
			parent:    []entry{{"a", "1"}},
			overrides: nil,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			m := &merge{}
			var calls []string
			mergeByKey(m, tt.parent, keyOf, tt.overrides, keyOf, "key", field.NewPath("spec"), "list",
				func(o entry, path *field.Path, parentIndex int) {
					calls = append(calls, fmt.Sprintf("%s@%s->%d", o.key, path, parentIndex))
				})
			g.Expect(calls).To(Equal(tt.wantCalls))
			var errs []string
			for _, e := range m.errs {
				errs = append(errs, e.Error())
			}
			g.Expect(errs).To(Equal(tt.wantErrors))
		})
	}
}

// testCertificate reads the PEM certificate testdata/certificates/NAME.pem.
func testCertificate(t testing.TB, name string) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", "certificates", name+".pem"))
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

func TestMergeNamespacedRefusesAnOverrideCABundleThatIsNoCertificate(t *testing.T) {
	for _, bundle := range []string{"", "not a certificate"} {
		t.Run(fmt.Sprintf("%q", bundle), func(t *testing.T) {
			g := NewWithT(t)
			parent := profile()
			parent.CABundle = ptr.To(testCertificate(t, "parent"))
			ncp := namespaced()
			ncp.CABundle = ptr.To(bundle)

			merged, errs := Namespaced(parent, ncp)

			g.Expect(merged).To(BeNil())
			g.Expect(errs).To(HaveLen(1))
			g.Expect(errs[0].Field).To(Equal("spec.caBundle"))
			g.Expect(errs[0].Detail).To(HavePrefix("not a PEM-encoded certificate"))
		})
	}
}

func TestExplainMissingParent(t *testing.T) {
	parentName := field.NewPath("spec", "parent", "name")
	tests := []struct {
		name string
		err  *field.Error
		want string
	}{
		{
			name: "a bare Not found of the parent's name says where the parent was looked for",
			err:  field.NotFound(parentName, "aws"),
			want: `spec.parent.name: Not found: "aws": no CloudProfile of that name in the cluster`,
		},
		{
			name: "a Not found of the parent's name that explains itself is kept",
			err:  &field.Error{Type: field.ErrorTypeNotFound, Field: "spec.parent.name", BadValue: "aws", Detail: "somewhere else"},
			want: `spec.parent.name: Not found: "aws": somewhere else`,
		},
		{
			name: "a Not found of another field is kept",
			err:  field.NotFound(field.NewPath("spec", "kubernetes", "versions").Index(0).Child("version"), "1.99.0"),
			want: `spec.kubernetes.versions[0].version: Not found: "1.99.0"`,
		},
		{
			name: "another error of the parent's name is kept",
			err:  field.Required(parentName, "the parent CloudProfile must be named"),
			want: `spec.parent.name: Required value: the parent CloudProfile must be named`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			errs := ExplainMissingParent(field.ErrorList{tt.err}, "in the cluster")
			g.Expect(errs).To(HaveLen(1))
			g.Expect(errs[0].Error()).To(Equal(tt.want))
		})
	}
}
