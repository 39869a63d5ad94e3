package merge

import (
	"testing"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"

	v1alpha1 "github.com/profilesync/profilesync/api/v1alpha1"
)

func TestMergeNamespacedLimits(t *testing.T) {
	tests := []struct {
		name          string
		parentMax     *int32
		overrideLimit *v1alpha1.Limits
		wantMax       *int32
		wantErrs      []string
	}{
		{name: "no limits on either side stay unset"},
		{name: "the parent's limit is kept without an override", parentMax: ptr.To(int32(100)), wantMax: ptr.To(int32(100))},
		{
			name: "an override may set a limit the parent lacks", overrideLimit: &v1alpha1.Limits{MaxNodesTotal: ptr.To(int32(50))},
			wantMax: ptr.To(int32(50)),
		},
		{
			name: "an override may lower the parent's limit", parentMax: ptr.To(int32(100)),
			overrideLimit: &v1alpha1.Limits{MaxNodesTotal: ptr.To(int32(50))}, wantMax: ptr.To(int32(50)),
		},
		{
			name: "an override may not raise the parent's limit", parentMax: ptr.To(int32(100)),
			overrideLimit: &v1alpha1.Limits{MaxNodesTotal: ptr.To(int32(200))},
			wantErrs:      []string{"spec.limits.maxNodesTotal: Forbidden"},
		},
		{
			name: "an override without maxNodesTotal keeps the parent's", parentMax: ptr.To(int32(100)),
			overrideLimit: &v1alpha1.Limits{}, wantMax: ptr.To(int32(100)),
		},
		{
			name: "a limit that is not positive is an error", overrideLimit: &v1alpha1.Limits{MaxNodesTotal: ptr.To(int32(0))},
			wantErrs: []string{"spec.limits.maxNodesTotal: Invalid value"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			parent := profile()
			if tt.parentMax != nil {
				parent.Limits = &v1alpha1.Limits{MaxNodesTotal: tt.parentMax}
			}
			ncp := namespaced()
			ncp.Limits = tt.overrideLimit
			merged, errs := Namespaced(parent, ncp)
			g.Expect(errorFields(errs)).To(Equal(tt.wantErrs))
			if len(tt.wantErrs) > 0 {
				return
			}
			if tt.wantMax == nil {
				g.Expect(merged.Limits == nil || merged.Limits.MaxNodesTotal == nil).To(BeTrue())
				return
			}
			g.Expect(merged.Limits.MaxNodesTotal).To(Equal(tt.wantMax))
		})
	}
}

// capabilityParent is profile() using the capability model.
func capabilityParent() *v1alpha1.CloudProfileSpec {
	parent := profile()
	parent.MachineCapabilities = []v1alpha1.CapabilityDefinition{{Name: "architecture", Values: []string{"amd64", "arm64"}}}
	parent.MachineTypes[0].Capabilities = v1alpha1.Capabilities{"architecture": {"amd64"}}
	parent.MachineImages[0].Versions[0].CapabilityFlavors = []v1alpha1.Capabilities{{"architecture": {"amd64"}}, {"architecture": {"arm64"}}}
	return parent
}

func TestMergeNamespacedGardenerFields(t *testing.T) {
	g := NewWithT(t)
	parent := capabilityParent()
	parent.SeedSelector = &v1alpha1.SeedSelector{ProviderTypes: []string{"local"}}
	parent.Bastion = &v1alpha1.Bastion{MachineType: &v1alpha1.BastionMachineType{Name: "m5.large"}}
	parent.ProviderConfig = &runtime.RawExtension{Raw: []byte(`{"parent":true}`)}
	allowZonePinning := true
	parent.ControlPlane = &v1alpha1.ControlPlane{AllowZonePinning: &allowZonePinning}
	ncp := namespaced()
	ncp.ProviderConfig = &runtime.RawExtension{Raw: []byte(`{"override":true}`)}
	added := machineType("m6g.large", "2")
	added.Capabilities = v1alpha1.Capabilities{"architecture": {"arm64"}}
	added.MachineControllerManager = &v1alpha1.MachineTypeMachineControllerManager{MachineCreationTimeout: &metav1.Duration{Duration: 20 * time.Minute}}
	ncp.MachineTypes = []v1alpha1.MachineType{added}

	merged, errs := Namespaced(parent, ncp)

	g.Expect(errs).To(BeEmpty())
	g.Expect(merged.MachineCapabilities).To(Equal(parent.MachineCapabilities), "capability definitions come from the parent")
	g.Expect(merged.SeedSelector).To(Equal(parent.SeedSelector))
	g.Expect(merged.Bastion).To(Equal(parent.Bastion))
	g.Expect(merged.ProviderConfig).To(Equal(parent.ProviderConfig), "providerConfig is the provider extension's to merge")
	g.Expect(merged.MachineTypes).To(HaveLen(2))
	g.Expect(merged.MachineTypes[1].Capabilities).To(Equal(added.Capabilities))
	g.Expect(merged.ControlPlane).To(Equal(parent.ControlPlane), "control plane settings come from the parent")
	g.Expect(merged.MachineTypes[1].MachineControllerManager).To(Equal(added.MachineControllerManager), "an added machine type keeps its own settings")
}

func TestMergeNamespacedImageVersionCapabilities(t *testing.T) {
	tests := []struct {
		name     string
		override v1alpha1.MachineImageVersion
		wantErrs []string
	}{
		{
			name: "repeating the parent's flavors is refused, as in Gardener",
			override: v1alpha1.MachineImageVersion{
				ExpirableVersion:  deprecatedAPIVersion("1592.1.0", "", "2030-01-01T00:00:00Z"),
				CapabilityFlavors: capabilityParent().MachineImages[0].Versions[0].CapabilityFlavors,
			},
			wantErrs: []string{"spec.machineImages[0] (gardenlinux).versions[0] (1592.1.0).capabilityFlavors: Forbidden"},
		},
		{
			name: "other flavors or in-place updates of a parent version are refused",
			override: v1alpha1.MachineImageVersion{
				ExpirableVersion:  deprecatedAPIVersion("1592.1.0", "", "2030-01-01T00:00:00Z"),
				CapabilityFlavors: []v1alpha1.Capabilities{{"architecture": {"amd64"}}},
				InPlaceUpdates:    &v1alpha1.InPlaceUpdates{Supported: true},
			},
			wantErrs: []string{
				"spec.machineImages[0] (gardenlinux).versions[0] (1592.1.0).capabilityFlavors: Forbidden",
				"spec.machineImages[0] (gardenlinux).versions[0] (1592.1.0).inPlaceUpdates: Forbidden",
			},
		},
		{
			name: "an added version's flavors are checked against the parent's definitions, naming the override",
			override: v1alpha1.MachineImageVersion{
				ExpirableVersion:  plainVersion("1592.2.0"),
				CRI:               []v1alpha1.CRI{{Name: "containerd"}},
				CapabilityFlavors: []v1alpha1.Capabilities{{"architecture": {"s390x"}}},
			},
			wantErrs: []string{"status.cloudProfileSpec.machineImages[0] (gardenlinux).versions[1] (1592.2.0).capabilityFlavors[0].architecture[0]: Unsupported value"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			ncp := namespaced()
			ncp.MachineImages = []v1alpha1.NamespacedMachineImage{{Name: "gardenlinux", Versions: []v1alpha1.MachineImageVersion{tt.override}}}
			_, errs := Namespaced(capabilityParent(), ncp)
			g.Expect(errorFields(errs)).To(Equal(tt.wantErrs))
		})
	}
}

func TestMergeNamespacedErrorsNameTheOverrideEntryThatCausedThem(t *testing.T) {
	tests := []struct {
		name   string
		change func(*v1alpha1.CloudProfileSpec, *v1alpha1.NamespacedCloudProfileSpec)
		want   []string
	}{
		{
			name: "a Kubernetes version override",
			change: func(_ *v1alpha1.CloudProfileSpec, ncp *v1alpha1.NamespacedCloudProfileSpec) {
				ncp.Kubernetes = &v1alpha1.KubernetesSettings{Versions: []v1alpha1.ExpirableVersion{deprecatedAPIVersion(newestKubernetesVersion, "", "2031-01-01T00:00:00Z")}}
			},
			want: []string{"status.cloudProfileSpec.kubernetes.versions[1] (1.40.0).expirationDate: Forbidden: 1.40.0 is the highest Kubernetes version and may not expire: " +
				"clusters must always have a version to move to (from spec.kubernetes.versions[0] (1.40.0))"},
		},
		{
			name: "an added machine image version",
			change: func(_ *v1alpha1.CloudProfileSpec, ncp *v1alpha1.NamespacedCloudProfileSpec) {
				ncp.MachineImages = []v1alpha1.NamespacedMachineImage{{Name: "gardenlinux", Versions: []v1alpha1.MachineImageVersion{
					{ExpirableVersion: plainVersion("1592.2.0"), CRI: []v1alpha1.CRI{{Name: "containerd"}}, Architectures: []string{"riscv64"}},
				}}}
			},
			want: []string{`status.cloudProfileSpec.machineImages[0] (gardenlinux).versions[1] (1592.2.0).architectures[0]: Unsupported value: "riscv64": ` +
				`supported values: "amd64", "arm64" (from spec.machineImages[0] (gardenlinux).versions[0] (1592.2.0))`},
		},
		{
			name: "an added machine type",
			change: func(parent *v1alpha1.CloudProfileSpec, ncp *v1alpha1.NamespacedCloudProfileSpec) {
				added := machineType("m6g.large", "2")
				added.Capabilities = v1alpha1.Capabilities{"architecture": {"arm64"}}
				ncp.MachineTypes = []v1alpha1.MachineType{added}
			},
			want: []string{`status.cloudProfileSpec.machineTypes[1] (m6g.large).capabilities: Forbidden: may be set only when spec.machineCapabilities defines the capabilities ` +
				`(from spec.machineTypes[0] (m6g.large))`},
		},
		{
			name: "a problem of the parent's own entries names no override",
			change: func(parent *v1alpha1.CloudProfileSpec, ncp *v1alpha1.NamespacedCloudProfileSpec) {
				parent.MachineTypes[0].Capabilities = v1alpha1.Capabilities{"architecture": {"amd64"}}
				ncp.MachineTypes = []v1alpha1.MachineType{machineType("m6g.large", "2")}
			},
			want: []string{`status.cloudProfileSpec.machineTypes[0] (m5.large).capabilities: Forbidden: may be set only when spec.machineCapabilities defines the capabilities`},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			parent, ncp := profile(), namespaced()
			tt.change(parent, ncp)
			_, errs := Namespaced(parent, ncp)
			var got []string
			for _, e := range errs {
				got = append(got, e.Error())
			}
			g.Expect(got).To(Equal(tt.want))
		})
	}
}
