package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// CloudProfileKind is the kind of a CloudProfile.
const CloudProfileKind = "CloudProfile"

// CloudProfileSpec is the catalogue of what clusters of one provider may use.
type CloudProfileSpec struct {
	// type is the provider type, for example aws or openstack.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	Type string `json:"type"`

	// kubernetes lists the Kubernetes versions clusters may run.
	// +required
	// +kubebuilder:validation:XValidation:rule="has(self.versions) && size(self.versions) > 0",message="at least one Kubernetes version is required"
	Kubernetes KubernetesSettings `json:"kubernetes"`

	// machineImages lists the operating system images machines may boot.
	// A profile needs at least a machine image, as in Gardener: the sync, the
	// CLI and the CloudProfile controller refuse one without (the schema
	// leaves it optional so that such a profile gets a condition saying so).
	// +optional
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MaxItems=50
	MachineImages []MachineImage `json:"machineImages,omitempty"`

	// machineTypes lists the machine sizes clusters may request.
	// A profile needs at least a machine type, as in Gardener: the sync, the
	// CLI and the CloudProfile controller refuse one without (the schema
	// leaves it optional so that such a profile gets a condition saying so).
	// +optional
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MaxItems=1000
	MachineTypes []MachineType `json:"machineTypes,omitempty"`

	// volumeTypes lists the volume kinds clusters may request.
	// +optional
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MaxItems=200
	VolumeTypes []VolumeType `json:"volumeTypes,omitempty"`

	// regions lists the provider regions clusters may be placed in.
	// A profile needs at least a region, as in Gardener: the sync, the
	// CLI and the CloudProfile controller refuse one without (the schema
	// leaves it optional so that such a profile gets a condition saying so).
	// +optional
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MaxItems=200
	Regions []Region `json:"regions,omitempty"`

	// caBundle is a PEM bundle of certificate authorities clusters should trust
	// when talking to the provider.
	// +optional
	// +kubebuilder:validation:MaxLength=1048576
	CABundle *string `json:"caBundle,omitempty"`

	// providerConfig is provider-specific configuration, passed through unchanged.
	// Any JSON value is accepted, not only an object: Gardener's field is a
	// RawExtension, and its own example profile holds a placeholder string.
	// +optional
	// +kubebuilder:validation:Schemaless
	// +kubebuilder:pruning:PreserveUnknownFields
	ProviderConfig *runtime.RawExtension `json:"providerConfig,omitempty"`

	// seedSelector selects the seeds whose clusters may use this profile: by
	// their labels, and by provider type when clusters may run on seeds of
	// another provider. Unset means every seed of the profile's type.
	// +optional
	SeedSelector *SeedSelector `json:"seedSelector,omitempty"`

	// bastion names the machine type and image of bastion hosts. Both must be
	// in this profile, and the image must be built for the type's architecture.
	// +optional
	Bastion *Bastion `json:"bastion,omitempty"`

	// limits are operational limits of clusters using this profile.
	// +optional
	Limits *Limits `json:"limits,omitempty"`

	// machineCapabilities defines every capability that machine types and
	// machine image versions may name, each with its possible values, most
	// preferred first. When set it must define architecture; machine types'
	// capabilities and image versions' capabilityFlavors may then use only
	// these names and values.
	// +optional
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MaxItems=32
	MachineCapabilities []CapabilityDefinition `json:"machineCapabilities,omitempty"`

	// controlPlane holds settings for the control planes of clusters using
	// this profile.
	// +optional
	ControlPlane *ControlPlane `json:"controlPlane,omitempty"`
}

// ControlPlane holds settings for the control planes of clusters using a
// profile.
type ControlPlane struct {
	// allowZonePinning lets clusters pin their control plane to zones of
	// their seed (a cluster's spec.controlPlane.zones). Enable it only for
	// providers whose zone names mean the same physical zone in every
	// account; unset means false.
	// +optional
	AllowZonePinning *bool `json:"allowZonePinning,omitempty"`
}

// CloudProfileStatus is what the CloudProfile controller observed.
type CloudProfileStatus struct {
	// observedGeneration is the generation the status was computed from.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// conditions are Ready, Reconciling and Stalled (kstatus-compatible).
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`

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

// CloudProfile is a cluster-wide catalogue of Kubernetes versions, machine
// images, machine types and volume types. Its spec comes from Git; its status
// shows every version's classification now and when the next one changes.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:scope=Cluster,shortName=cpfl;cprofile,categories=profilesync-all
// +kubebuilder:printcolumn:name="Type",type=string,JSONPath=`.spec.type`
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Next Transition",type=string,JSONPath=`.status.nextTransitionTime`
// +kubebuilder:printcolumn:name="Held Until",type=string,JSONPath=`.status.heldUntil`
// +kubebuilder:printcolumn:name="Status",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].message`,priority=1
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type CloudProfile struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// spec is the profile as written in Git.
	// +required
	Spec CloudProfileSpec `json:"spec"`

	// status is computed by the CloudProfile controller.
	// +optional
	Status CloudProfileStatus `json:"status,omitempty"`
}

// GetConditions returns the conditions of the CloudProfile.
func (in *CloudProfile) GetConditions() []metav1.Condition { return in.Status.Conditions }

// SetConditions sets the conditions of the CloudProfile.
func (in *CloudProfile) SetConditions(conditions []metav1.Condition) {
	in.Status.Conditions = conditions
}

// +kubebuilder:object:root=true

// CloudProfileList is a list of CloudProfiles.
type CloudProfileList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []CloudProfile `json:"items"`
}
