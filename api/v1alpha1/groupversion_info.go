// Package v1alpha1 contains the API of ProfileSync: CloudProfile and
// NamespacedCloudProfile, which mirror Gardener's core.gardener.cloud/v1beta1
// shapes so a Gardener profile works after changing only its apiVersion, and
// ProfileSync, which keeps them in sync with a Git repository.
//
// +kubebuilder:object:generate=true
// +groupName=core.profilesync.io
package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

var (
	// GroupVersion is the group and version of every kind in this package.
	GroupVersion = schema.GroupVersion{Group: "core.profilesync.io", Version: "v1alpha1"}

	// SchemeBuilder registers the kinds of this package with a runtime.Scheme.
	// It is apimachinery's, not controller-runtime's, so that the pure packages
	// importing these types do not pull in controller-runtime.
	SchemeBuilder = runtime.NewSchemeBuilder(addKnownTypes)

	// AddToScheme adds the kinds of this package to a runtime.Scheme.
	AddToScheme = SchemeBuilder.AddToScheme
)

func addKnownTypes(scheme *runtime.Scheme) error {
	scheme.AddKnownTypes(GroupVersion,
		&CloudProfile{}, &CloudProfileList{},
		&NamespacedCloudProfile{}, &NamespacedCloudProfileList{},
		&ProfileSync{}, &ProfileSyncList{},
		&VersionUpdate{}, &VersionUpdateList{},
	)
	metav1.AddToGroupVersion(scheme, GroupVersion)
	return nil
}
