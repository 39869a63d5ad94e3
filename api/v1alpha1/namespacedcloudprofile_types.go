package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// NamespacedCloudProfileKind is the kind of a NamespacedCloudProfile.
const NamespacedCloudProfileKind = "NamespacedCloudProfile"

// CloudProfileReference names the parent of a NamespacedCloudProfile.
type CloudProfileReference struct {
	// kind is the parent's kind; only CloudProfile is supported.
	// +required
	// +kubebuilder:validation:Enum=CloudProfile
	Kind string `json:"kind"`

	// name is the parent CloudProfile's name.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Name string `json:"name"`
}

// NamespacedMachineImage extends or overrides a machine image of the parent.
//
// Unlike MachineImage, versions may be empty (to change only updateStrategy)
// and updateStrategy has no default, so that an override that leaves it out
// keeps the parent's strategy.
type NamespacedMachineImage struct {
	// name is the image's name. A name the parent has overrides that image;
	// a new name adds a whole image, which then needs at least one version.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Name string `json:"name"`

	// versions override expiry of the parent's versions (expirationDate or
	// lifecycle start times only) or add new versions. null is the same as
	// leaving it out: Gardener writes an override that changes only
	// updateStrategy with versions: null.
	// +optional
	// +nullable
	// +listType=map
	// +listMapKey=version
	// +kubebuilder:validation:MaxItems=200
	Versions []MachineImageVersion `json:"versions,omitempty"`

	// updateStrategy replaces the parent image's update strategy when set.
	// +optional
	UpdateStrategy *MachineImageUpdateStrategy `json:"updateStrategy,omitempty"`
}

// NamespacedCloudProfileSpec is a project's extension of a parent CloudProfile.
// type, regions and providerConfig always come from the parent.
type NamespacedCloudProfileSpec struct {
	// parent is the CloudProfile this profile extends. It cannot be changed.
	// +required
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="parent is immutable"
	Parent CloudProfileReference `json:"parent"`

	// kubernetes overrides expiry of the parent's Kubernetes versions
	// (expirationDate or lifecycle start times); every version named must exist
	// in the parent.
	// +optional
	Kubernetes *KubernetesSettings `json:"kubernetes,omitempty"`

	// machineImages overrides the parent's machine images or adds new ones.
	// +optional
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MaxItems=50
	MachineImages []NamespacedMachineImage `json:"machineImages,omitempty"`

	// machineTypes replace the parent's machine types of the same name, or add new ones.
	// +optional
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MaxItems=1000
	MachineTypes []MachineType `json:"machineTypes,omitempty"`

	// volumeTypes replace the parent's volume types of the same name, or add new ones.
	// +optional
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MaxItems=200
	VolumeTypes []VolumeType `json:"volumeTypes,omitempty"`

	// caBundle is appended to the parent's caBundle.
	// +optional
	// +kubebuilder:validation:MaxLength=1048576
	CABundle *string `json:"caBundle,omitempty"`

	// limits are operational limits of clusters using this profile. A limit
	// the parent sets may only be made more restrictive.
	// +optional
	Limits *Limits `json:"limits,omitempty"`

	// providerConfig is provider-specific configuration for the provider's
	// extension, passed through unchanged. It is not merged into
	// status.cloudProfileSpec, whose providerConfig is the parent's: as in
	// Gardener, merging provider-specific configuration is the provider
	// extension's business. Any JSON value is accepted, as for a CloudProfile.
	// +optional
	// +kubebuilder:validation:Schemaless
	// +kubebuilder:pruning:PreserveUnknownFields
	ProviderConfig *runtime.RawExtension `json:"providerConfig,omitempty"`
}

// NamespacedCloudProfileStatus is what the NamespacedCloudProfile controller observed.
type NamespacedCloudProfileStatus struct {
	// observedGeneration is the generation the status was computed from.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// conditions are Ready, Reconciling and Stalled (kstatus-compatible).
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`

	// cloudProfileSpec is the parent's spec merged with this profile's
	// overrides: the profile clusters in this namespace see. It has the shape
	// of a CloudProfile's spec.
	//
	// The API server does not validate it: only the controller writes it,
	// from a merge it has validated with every rule of a CloudProfile, and
	// re-running the CRD's per-version rules on every status write made each
	// write of a large profile as expensive as applying the parent.
	// +optional
	// +kubebuilder:validation:Schemaless
	// +kubebuilder:validation:Type=object
	// +kubebuilder:pruning:PreserveUnknownFields
	CloudProfileSpec *CloudProfileSpec `json:"cloudProfileSpec,omitempty"`

	// heldUntil is when the hold of break glass on this profile expires,
	// shown only for a hold the sync honours: the status controller sets it
	// when the ProfileSync whose inventory lists the profile lists the hold
	// in its status.holds with the expiry the profile's
	// profilesync.io/hold-until annotation has now. A hold the sync refused
	// (for example one further ahead than the manager's --max-hold), ignores
	// (the profile is no ProfileSync's) or has not judged yet never shows
	// here, so the Held Until column never reads "held" for an object the
	// sync puts back.
	// +optional
	HeldUntil *metav1.Time `json:"heldUntil,omitempty"`

	ProfileVersionsStatus `json:",inline"`
}

// NamespacedCloudProfile extends a CloudProfile for one namespace (project):
// extra machine and volume types, later expiry of versions. The merged result
// is in status.cloudProfileSpec.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:scope=Namespaced,shortName=ncp;nscpfl,categories=profilesync-all
// +kubebuilder:printcolumn:name="Parent",type=string,JSONPath=`.spec.parent.name`
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Next Transition",type=string,JSONPath=`.status.nextTransitionTime`
// +kubebuilder:printcolumn:name="Held Until",type=string,JSONPath=`.status.heldUntil`
// +kubebuilder:printcolumn:name="Status",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].message`,priority=1
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type NamespacedCloudProfile struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// spec is the profile as written in Git.
	// +required
	Spec NamespacedCloudProfileSpec `json:"spec"`

	// status is computed by the NamespacedCloudProfile controller.
	// +optional
	Status NamespacedCloudProfileStatus `json:"status,omitempty"`
}

// GetConditions returns the conditions of the NamespacedCloudProfile.
func (in *NamespacedCloudProfile) GetConditions() []metav1.Condition {
	return in.Status.Conditions
}

// SetConditions sets the conditions of the NamespacedCloudProfile.
func (in *NamespacedCloudProfile) SetConditions(conditions []metav1.Condition) {
	in.Status.Conditions = conditions
}

// +kubebuilder:object:root=true

// NamespacedCloudProfileList is a list of NamespacedCloudProfiles.
type NamespacedCloudProfileList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []NamespacedCloudProfile `json:"items"`
}
