package v1alpha1

import (
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// The types in this file are shared by CloudProfile and NamespacedCloudProfile.
// Their JSON shapes follow Gardener's core.gardener.cloud/v1beta1 so that a
// profile written for Gardener is accepted after changing only its apiVersion.
//
// Validation here covers what a single object can check with CEL. Rules that
// compare versions with each other by semver or depend on the current time
// (the highest Kubernetes version may not expire, one supported version per
// minor, image version syntax, kubelet constraints) are enforced by
// internal/lifecycle, which the controllers, the sync and the CLI all call.

// VersionClassification is the classification of a version at a point in time.
// Stages rank unavailable < preview < supported < deprecated < expired.
type VersionClassification string

const (
	// ClassificationUnavailable marks a version that is planned but may not be
	// used yet. It is derived (every stage starts in the future), never declared.
	ClassificationUnavailable VersionClassification = "unavailable"
	// ClassificationPreview marks a version that may be used but is not yet
	// recommended; automatic updates never pick it.
	ClassificationPreview VersionClassification = "preview"
	// ClassificationSupported marks a version that is recommended.
	ClassificationSupported VersionClassification = "supported"
	// ClassificationDeprecated marks a version that still works but should be
	// left; automatic updates prefer any supported version over it.
	ClassificationDeprecated VersionClassification = "deprecated"
	// ClassificationExpired marks a version that may no longer be used; clusters
	// on it are force-updated.
	ClassificationExpired VersionClassification = "expired"
)

// LifecycleStage is one classification stage of a version and the time it starts.
type LifecycleStage struct {
	// classification is the stage that starts at startTime. The unavailable
	// stage is derived and may not be declared.
	// +required
	// +kubebuilder:validation:Enum=preview;supported;deprecated;expired
	Classification VersionClassification `json:"classification"`

	// startTime is when the stage starts. Only the first stage may omit it, which
	// means the stage has always been in effect.
	// +optional
	StartTime *metav1.Time `json:"startTime,omitempty"`
}

// ExpirableVersion is a version with a classification lifecycle.
//
// Either lifecycle, or the deprecated pair classification/expirationDate, or
// neither (which means supported forever) may be set.
// +kubebuilder:validation:XValidation:rule="!has(self.lifecycle) || (!has(self.classification) && !has(self.expirationDate))",message="lifecycle may not be combined with the deprecated fields classification and expirationDate"
type ExpirableVersion struct {
	// version is the version string.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=64
	Version string `json:"version"`

	// expirationDate is when the version expires.
	// Deprecated: use lifecycle with an expired stage.
	// +optional
	ExpirationDate *metav1.Time `json:"expirationDate,omitempty"`

	// classification is the classification of the version until expirationDate.
	// Deprecated: use lifecycle.
	// +optional
	// +kubebuilder:validation:Enum=unavailable;preview;supported;deprecated;expired
	// +kubebuilder:validation:XValidation:rule="self != 'expired'",message="classification may not be expired: set expirationDate, or use lifecycle with an expired stage"
	// +kubebuilder:validation:XValidation:rule="self != 'unavailable'",message="classification may not be unavailable: use lifecycle with stages that start in the future"
	Classification *VersionClassification `json:"classification,omitempty"`

	// lifecycle lists the classification stages of the version in rank order
	// (preview, supported, deprecated, expired; any may be left out), each with
	// the time it starts. A stage is current from its start time until the next
	// stage starts; before the first start the version is unavailable.
	// Stages are keyed by classification: each appears at most once, and a
	// kustomize strategic-merge patch changes a stage by naming its
	// classification. The API server refuses a stage twice as a duplicate
	// list key; no CEL rule repeats that check, since every rule here runs
	// over every version at every write of the object, status writes included
	// (docs/performance.md, "CEL rules").
	// +optional
	// +listType=map
	// +listMapKey=classification
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=4
	// +kubebuilder:validation:XValidation:rule="self.map(s, {'preview': 1, 'supported': 2, 'deprecated': 3, 'expired': 4}[s.classification]).isSorted()",message="lifecycle stages must be in the order preview, supported, deprecated, expired"
	// +kubebuilder:validation:XValidation:rule="self.all(s, has(s.startTime)) || (!has(self[0].startTime) && self.filter(s, !has(s.startTime)).size() == 1)",message="only the first lifecycle stage may omit startTime"
	// +kubebuilder:validation:XValidation:rule="self.filter(s, has(s.startTime)).map(s, s.startTime).isSorted()",message="lifecycle start times may not decrease"
	Lifecycle []LifecycleStage `json:"lifecycle,omitempty"`
}

// KubernetesSettings lists the Kubernetes versions that clusters may use.
// +kubebuilder:validation:XValidation:rule="!has(self.versions) || self.versions.all(v, v.version.matches('^[0-9]+[.][0-9]+[.][0-9]+$'))",message="Kubernetes versions must be MAJOR.MINOR.PATCH (digits only, no v prefix)"
type KubernetesSettings struct {
	// versions are the Kubernetes versions, each MAJOR.MINOR.PATCH and unique.
	// +optional
	// +listType=map
	// +listMapKey=version
	// +kubebuilder:validation:MaxItems=1000
	Versions []ExpirableVersion `json:"versions,omitempty"`
}

// MachineImageUpdateStrategy says how far automatic and forced updates of a
// machine image may move a cluster's image version.
// +kubebuilder:validation:Enum=patch;minor;major
type MachineImageUpdateStrategy string

const (
	// UpdateStrategyPatch keeps a cluster within its image's major.minor.
	UpdateStrategyPatch MachineImageUpdateStrategy = "patch"
	// UpdateStrategyMinor keeps a cluster within its image's major.
	UpdateStrategyMinor MachineImageUpdateStrategy = "minor"
	// UpdateStrategyMajor lets a cluster move to any higher image version.
	UpdateStrategyMajor MachineImageUpdateStrategy = "major"
)

// MachineImage is an operating system image that machines may boot.
type MachineImage struct {
	// name is the image's name, unique in the profile.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Name string `json:"name"`

	// versions are the image's versions. Short semver forms (1, 1.7) are allowed.
	// +required
	// +listType=map
	// +listMapKey=version
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=200
	Versions []MachineImageVersion `json:"versions"`

	// updateStrategy says how far updates of this image may move a cluster:
	// patch (same major.minor), minor (same major) or major (anywhere).
	// +optional
	// +kubebuilder:default=major
	UpdateStrategy *MachineImageUpdateStrategy `json:"updateStrategy,omitempty"`
}

// MachineImageVersion is one version of a machine image.
type MachineImageVersion struct {
	ExpirableVersion `json:",inline"`

	// cri lists the container runtime interfaces the version supports.
	// +optional
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MaxItems=8
	CRI []CRI `json:"cri,omitempty"`

	// architectures lists the CPU architectures the version is built for.
	// +optional
	// +listType=set
	// +kubebuilder:validation:MaxItems=2
	// +kubebuilder:validation:items:Enum=amd64;arm64
	Architectures []string `json:"architectures,omitempty"`

	// kubeletVersionConstraint is a semver constraint (for example ">= 1.26")
	// on the kubelet versions the image works with.
	// +optional
	// +kubebuilder:validation:MaxLength=128
	KubeletVersionConstraint *string `json:"kubeletVersionConstraint,omitempty"`

	// inPlaceUpdates says whether machines may be updated to this version in
	// place, without being replaced.
	// +optional
	InPlaceUpdates *InPlaceUpdates `json:"inPlaceUpdates,omitempty"`

	// capabilityFlavors lists the combinations of capabilities the version is
	// built for, one map of capability name to values per flavor. It may be
	// set only when the profile defines machineCapabilities; a capability a
	// flavor leaves out has all the values the profile defines.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=32
	CapabilityFlavors []Capabilities `json:"capabilityFlavors,omitempty"`
}

// InPlaceUpdates says whether a machine image version can be reached by an
// in-place update.
type InPlaceUpdates struct {
	// supported says whether machines may be updated to this version in place.
	// +required
	Supported bool `json:"supported"`

	// minVersionForUpdate is the lowest version of the image from which an
	// in-place update to this version is possible. It must be a semantic
	// version.
	// +optional
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=64
	MinVersionForUpdate *string `json:"minVersionForUpdate,omitempty"`
}

// CapabilityValues are the values of one capability, most preferred first.
// +kubebuilder:validation:MaxItems=64
// +kubebuilder:validation:items:MinLength=1
// +kubebuilder:validation:items:MaxLength=253
type CapabilityValues []string

// Capabilities maps capability names (for example architecture) to values.
type Capabilities map[string]CapabilityValues

// CapabilityDefinition is one capability a profile defines, with every value
// it may take.
type CapabilityDefinition struct {
	// name is the capability's name, for example architecture.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Name string `json:"name"`

	// values are the capability's possible values, most preferred first.
	// +required
	// +listType=atomic
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=64
	// +kubebuilder:validation:items:MinLength=1
	// +kubebuilder:validation:items:MaxLength=253
	Values []string `json:"values"`
}

// SeedSelector selects the seeds whose clusters may use a profile.
type SeedSelector struct {
	metav1.LabelSelector `json:",inline"`

	// providerTypes lists the provider types of seeds that may host clusters
	// of this profile; "*" means any. Unset means only seeds of the profile's
	// own type. An empty entry is allowed, as Gardener allows it: it names
	// no seed's type.
	// +optional
	// +listType=set
	// +kubebuilder:validation:MaxItems=64
	// +kubebuilder:validation:items:MaxLength=63
	ProviderTypes []string `json:"providerTypes,omitempty"`
}

// Bastion names the machine type and image of bastion hosts.
// +kubebuilder:validation:XValidation:rule="has(self.machineImage) || has(self.machineType)",message="bastion needs a machineImage or a machineType"
type Bastion struct {
	// machineImage is the image bastion hosts boot.
	// +optional
	MachineImage *BastionMachineImage `json:"machineImage,omitempty"`

	// machineType is the machine type of bastion hosts.
	// +optional
	MachineType *BastionMachineType `json:"machineType,omitempty"`
}

// BastionMachineImage is the machine image of bastion hosts.
type BastionMachineImage struct {
	// name is the name of one of the profile's machine images.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Name string `json:"name"`

	// version is one of that image's versions; unset means any supported one.
	// +optional
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=64
	Version *string `json:"version,omitempty"`
}

// BastionMachineType is the machine type of bastion hosts.
type BastionMachineType struct {
	// name is the name of one of the profile's machine types.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Name string `json:"name"`
}

// Limits are operational limits of the clusters using a profile.
type Limits struct {
	// maxNodesTotal is the most nodes a cluster may have at any time.
	// +optional
	// +kubebuilder:validation:Minimum=1
	MaxNodesTotal *int32 `json:"maxNodesTotal,omitempty"`
}

// CRIName is the name of a container runtime interface.
// +kubebuilder:validation:Enum=containerd
type CRIName string

// CRI is a container runtime interface supported by a machine image version.
type CRI struct {
	// name is the CRI's name.
	// +required
	Name CRIName `json:"name"`

	// containerRuntimes lists additional container runtimes available through this CRI.
	// +optional
	// +listType=map
	// +listMapKey=type
	// +kubebuilder:validation:MaxItems=16
	ContainerRuntimes []ContainerRuntime `json:"containerRuntimes,omitempty"`
}

// ContainerRuntime is a container runtime available through a CRI.
type ContainerRuntime struct {
	// type is the runtime's type, for example gvisor.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Type string `json:"type"`
}

// MachineType is a machine size that clusters may request.
type MachineType struct {
	// name is the machine type's name, unique in the profile.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Name string `json:"name"`

	// cpu is the number of CPUs.
	// +required
	CPU resource.Quantity `json:"cpu"`

	// gpu is the number of GPUs.
	// +required
	GPU resource.Quantity `json:"gpu"`

	// memory is the amount of memory.
	// +required
	Memory resource.Quantity `json:"memory"`

	// storage is the machine's disk, when the type has a fixed one.
	// +optional
	Storage *MachineTypeStorage `json:"storage,omitempty"`

	// usable says whether clusters may use the type; unset means usable.
	// +optional
	Usable *bool `json:"usable,omitempty"`

	// architecture is the type's CPU architecture. When the profile defines
	// machineCapabilities it must agree with capabilities.architecture.
	// +optional
	// +kubebuilder:validation:Enum=amd64;arm64
	Architecture *string `json:"architecture,omitempty"`

	// capabilities are the type's capabilities, each with values the profile's
	// machineCapabilities define. It may be set only when the profile defines
	// machineCapabilities; a capability left out has all the defined values.
	// +optional
	Capabilities Capabilities `json:"capabilities,omitempty"`

	// machineControllerManager holds settings of Gardener's machine controller
	// manager for machines of this type, overriding the defaults of the
	// cluster's worker pools.
	// +optional
	MachineControllerManager *MachineTypeMachineControllerManager `json:"machineControllerManager,omitempty"`
}

// MachineTypeMachineControllerManager holds settings of the machine controller
// manager for machines of one type.
type MachineTypeMachineControllerManager struct {
	// machineCreationTimeout is how long the machine controller manager waits
	// for a machine of this type to join the cluster before it replaces it,
	// for types that take longer to start than usual: a Go duration, for
	// example 20m or 1h30m, not negative (as Gardener validates it).
	// +optional
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:Pattern="^[-+]?((([0-9]+(\\.[0-9]*)?)|(\\.[0-9]+))(ns|us|µs|μs|ms|s|m|h))+$|^[-+]?0$"
	// +kubebuilder:validation:XValidation:rule="duration(self) >= duration('0s')",message="machineCreationTimeout may not be negative"
	MachineCreationTimeout *metav1.Duration `json:"machineCreationTimeout,omitempty"`
}

// MachineTypeStorage is the disk of a machine type.
type MachineTypeStorage struct {
	// class is the storage class of the disk.
	// +required
	// +kubebuilder:validation:MaxLength=253
	Class string `json:"class"`

	// size is the disk's size, when it is fixed.
	// +optional
	StorageSize *resource.Quantity `json:"size,omitempty"`

	// type is the disk's type.
	// +required
	// +kubebuilder:validation:MaxLength=253
	Type string `json:"type"`

	// minSize is the smallest disk clusters may request.
	// +optional
	MinSize *resource.Quantity `json:"minSize,omitempty"`
}

// VolumeType is a kind of volume that clusters may request.
type VolumeType struct {
	// name is the volume type's name, unique in the profile.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Name string `json:"name"`

	// class is the storage class of the volume type.
	// +required
	// +kubebuilder:validation:MaxLength=253
	Class string `json:"class"`

	// usable says whether clusters may use the type; unset means usable.
	// +optional
	Usable *bool `json:"usable,omitempty"`

	// minSize is the smallest volume clusters may request.
	// +optional
	MinSize *resource.Quantity `json:"minSize,omitempty"`
}

// Region is a region of the provider that clusters may be placed in.
type Region struct {
	// name is the region's name, unique in the profile.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Name string `json:"name"`

	// zones are the availability zones of the region.
	// +optional
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MaxItems=64
	Zones []AvailabilityZone `json:"zones,omitempty"`

	// labels are labels of the region, for scheduling decisions.
	// +optional
	Labels map[string]string `json:"labels,omitempty"`

	// accessRestrictions lists the access restrictions clusters in this
	// region may request.
	// +optional
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MaxItems=64
	AccessRestrictions []AccessRestriction `json:"accessRestrictions,omitempty"`
}

// AccessRestriction is an access restriction clusters of a region may request.
type AccessRestriction struct {
	// name is the access restriction's name, for example eu-access-only.
	// It may be empty, as Gardener allows it (a restriction no cluster
	// requests); it is still the entry's key.
	// +required
	// +kubebuilder:validation:MaxLength=253
	Name string `json:"name"`
}

// AvailabilityZone is an availability zone of a region.
type AvailabilityZone struct {
	// name is the zone's name.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Name string `json:"name"`

	// unavailableMachineTypes lists machine types not offered in this zone.
	// +optional
	// +listType=set
	// +kubebuilder:validation:MaxItems=1000
	UnavailableMachineTypes []string `json:"unavailableMachineTypes,omitempty"`

	// unavailableVolumeTypes lists volume types not offered in this zone.
	// +optional
	// +listType=set
	// +kubebuilder:validation:MaxItems=200
	UnavailableVolumeTypes []string `json:"unavailableVolumeTypes,omitempty"`
}

// VersionStatus is the classification of one version at the time the status was written.
type VersionStatus struct {
	// version is the version, as in the spec.
	// +required
	Version string `json:"version"`

	// classification is the version's classification now.
	// +required
	Classification VersionClassification `json:"classification"`

	// nextClassification is the classification that starts at nextTransitionTime.
	// +optional
	NextClassification *VersionClassification `json:"nextClassification,omitempty"`

	// nextTransitionTime is when the version's next lifecycle stage starts.
	// +optional
	NextTransitionTime *metav1.Time `json:"nextTransitionTime,omitempty"`
}

// KubernetesStatus is the classification of the Kubernetes versions.
type KubernetesStatus struct {
	// versions are the Kubernetes versions, in spec order.
	// +optional
	// +listType=atomic
	Versions []VersionStatus `json:"versions,omitempty"`
}

// MachineImageStatus is the classification of one machine image's versions.
type MachineImageStatus struct {
	// name is the image's name.
	// +required
	Name string `json:"name"`

	// versions are the image's versions, in spec order.
	// +optional
	// +listType=atomic
	Versions []VersionStatus `json:"versions,omitempty"`
}

// ProfileVersionsStatus is the part of a profile's status that the lifecycle
// engine computes: every version's classification at the time of writing and
// the next scheduled transition.
type ProfileVersionsStatus struct {
	// kubernetes is the classification of the Kubernetes versions.
	// +optional
	Kubernetes *KubernetesStatus `json:"kubernetes,omitempty"`

	// machineImages is the classification of the machine image versions, in spec order.
	// +optional
	// +listType=atomic
	MachineImages []MachineImageStatus `json:"machineImages,omitempty"`

	// nextTransitionTime is the earliest time at which any version's
	// classification changes. The controller wakes up at exactly that time.
	// +optional
	NextTransitionTime *metav1.Time `json:"nextTransitionTime,omitempty"`
}
