package syncplan

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	v1alpha1 "github.com/profilesync/profilesync/api/v1alpha1"
	"github.com/profilesync/profilesync/internal/render/profile"
)

// Drift is computed here and only here: what of Git a live object lacks
// (DriftedFields), the cheap check that it lacks nothing (upToDate), and,
// for a held object, which of the fields its hold recorded still differ
// (stillDrifted). The sync, its holds and `profilesync diff --cluster` all
// compare an object of Git as the API server stores it (AsStored): with the
// server's defaults, which the live object has and Git may leave out.

// AsStored is the object of Git as the API server stores it: a
// CloudProfile's spec with the server's defaults (profile.WithServerDefaults).
// A namespaced profile's spec has no defaults of its own. The object given
// is not changed.
func AsStored(o profile.Object) profile.Object {
	if o.CloudProfile == nil {
		return o
	}
	cp := o.CloudProfile.DeepCopy()
	cp.Spec = *profile.WithServerDefaults(&o.CloudProfile.Spec)
	o.CloudProfile = cp
	return o
}

// comparedSpecs returns what the sync compares for an object of Git with a
// live object: the object from Git, its spec with the API server's
// defaults, and the live spec.
func comparedSpecs(o profile.Object, live metav1.Object) (desired metav1.Object, desiredSpec, liveSpec any) {
	if cp := o.CloudProfile; cp != nil {
		return cp, profile.WithServerDefaults(&cp.Spec), &live.(*v1alpha1.CloudProfile).Spec
	}
	ncp := o.NamespacedCloudProfile
	return ncp, &ncp.Spec, &live.(*v1alpha1.NamespacedCloudProfile).Spec
}

// comparedSpecValues are comparedSpecs with both specs as plain values, as
// the field-by-field comparisons of package profile take them.
func comparedSpecValues(o profile.Object, live metav1.Object) (desired metav1.Object, desiredSpec, liveSpec map[string]any, err error) {
	desired, typedDesired, typedLive := comparedSpecs(o, live)
	if desiredSpec, err = runtime.DefaultUnstructuredConverter.ToUnstructured(typedDesired); err != nil {
		return nil, nil, nil, fmt.Errorf("convert %s: %w", o.Ref(), err)
	}
	if liveSpec, err = runtime.DefaultUnstructuredConverter.ToUnstructured(typedLive); err != nil {
		return nil, nil, nil, fmt.Errorf("convert live %s: %w", o.Ref(), err)
	}
	return desired, desiredSpec, liveSpec, nil
}

// upToDate is the cheap check that a live object already has what Git says:
// equal typed specs and every label and annotation of Git and of the owner
// present. Only when it says no does DriftedFields look closer.
func upToDate(o profile.Object, live metav1.Object, owner map[string]string) bool {
	desired, desiredSpec, liveSpec := comparedSpecs(o, live)
	return equality.Semantic.DeepEqual(desiredSpec, liveSpec) &&
		isSubset(owner, live.GetLabels()) &&
		isSubset(desired.GetLabels(), live.GetLabels()) &&
		isSubset(desired.GetAnnotations(), live.GetAnnotations())
}

// DriftedFields lists what of Git (o) the live object does not have: the
// spec fields Git sets that differ on the cluster, by their path
// (profile.DriftedFields, Git's spec with the server's defaults), and each
// label and annotation of Git (or owner label) that is missing or
// different. Fields only the cluster has are left to whoever set them.
// Empty means the object needs no write. live is a *v1alpha1.CloudProfile
// or *v1alpha1.NamespacedCloudProfile of o's kind.
func DriftedFields(o profile.Object, live metav1.Object, owner map[string]string) ([]string, error) {
	desired, desiredFields, liveFields, err := comparedSpecValues(o, live)
	if err != nil {
		return nil, err
	}
	fields, err := profile.DriftedFields(o.Kind(), "spec", desiredFields, liveFields)
	if err != nil {
		return nil, fmt.Errorf("compare %s: %w", o.Ref(), err)
	}
	fields = append(fields, driftedKeys("metadata.labels", owner, live.GetLabels())...)
	fields = append(fields, driftedKeys("metadata.labels", desired.GetLabels(), live.GetLabels())...)
	fields = append(fields, driftedKeys("metadata.annotations", desired.GetAnnotations(), live.GetAnnotations())...)
	return fields, nil
}

// stillDrifted are those of fields, recorded for a hold, on which the live
// object does not have what Git has (profile.DriftedAt; a label or
// annotation the same way). Empty means Git has caught up.
func stillDrifted(o profile.Object, live metav1.Object, fields []string) ([]string, error) {
	desired, desiredValues, liveValues, err := comparedSpecValues(o, live)
	if err != nil {
		return nil, err
	}
	var specFields []string
	for _, f := range fields {
		if f == "spec" || strings.HasPrefix(f, "spec.") {
			specFields = append(specFields, f)
		}
	}
	var specDrift []string
	if len(specFields) > 0 {
		if specDrift, err = profile.DriftedAt(o.Kind(), "spec", desiredValues, liveValues, specFields); err != nil {
			return nil, fmt.Errorf("compare %s: %w", o.Ref(), err)
		}
	}
	var drifted []string
	for _, f := range fields {
		switch {
		case slices.Contains(specDrift, f):
			drifted = append(drifted, f)
		case strings.HasPrefix(f, "metadata.labels"):
			if metadataDrifted(f, "metadata.labels", desired.GetLabels(), live.GetLabels()) {
				drifted = append(drifted, f)
			}
		case strings.HasPrefix(f, "metadata.annotations"):
			if metadataDrifted(f, "metadata.annotations", desired.GetAnnotations(), live.GetAnnotations()) {
				drifted = append(drifted, f)
			}
		}
	}
	return drifted, nil
}

// metadataDrifted tells whether field, path[key] or path as a whole, differs
// between Git (want) and the live object (have). A key Git no longer sets is
// caught up only when the live object lacks it too, as for the spec.
func metadataDrifted(field, path string, want, have map[string]string) bool {
	if field == path {
		return len(driftedKeys(path, want, have)) > 0
	}
	key := strings.TrimSuffix(strings.TrimPrefix(field, path+"["), "]")
	wanted, inGit := want[key]
	value, live := have[key]
	return inGit != live || wanted != value
}

// driftedKeys names the keys of want that have missing or other values.
func driftedKeys(path string, want, have map[string]string) []string {
	var keys []string
	for k, v := range want {
		if value, ok := have[k]; !ok || value != v {
			keys = append(keys, fmt.Sprintf("%s[%s]", path, k))
		}
	}
	sort.Strings(keys)
	return keys
}

func isSubset(want, have map[string]string) bool {
	for k, v := range want {
		if have[k] != v {
			return false
		}
	}
	return true
}

// maxListedFields bounds the fields a message names; a profile edited in
// many places would otherwise make an event of every version.
const maxListedFields = 10

// FieldList joins fields for a message, at most maxListedFields of them.
func FieldList(fields []string) string {
	if len(fields) <= maxListedFields {
		return strings.Join(fields, ", ")
	}
	return fmt.Sprintf("%s and %d more fields", strings.Join(fields[:maxListedFields], ", "), len(fields)-maxListedFields)
}
