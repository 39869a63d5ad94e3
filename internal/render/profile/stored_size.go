package profile

import (
	"encoding/json"
	"fmt"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/managedfields"
	"k8s.io/kube-openapi/pkg/validation/spec"

	v1alpha1 "github.com/profilesync/profilesync/api/v1alpha1"
	"github.com/profilesync/profilesync/internal/lifecycle"
)

// MaxStoredSize is the largest a profile may be as the API server stores it,
// in bytes. Every write of an object is one etcd request holding the whole
// object: its JSON (custom resources are stored as JSON) with metadata,
// managedFields and status. Three limits apply to that request, and the
// strictest default is etcd's --max-request-bytes of 1.5 MiB, which etcd
// refuses with "etcdserver: request is too large" (the API server's etcd
// client sends at most 2 MiB, its request bodies are at most 3 MiB).
// The estimate of storedSize leaves out what only the cluster knows; 128 KiB
// of the 1.5 MiB are kept for it: uid, resourceVersion, timestamps and the
// managedFields entries' headers (under 1 KiB), the sync's owner labels
// (under 1 KiB), the conditions (three, whose messages the API server caps at
// 32 KiB each) and the etcd transaction around the object (its key, under
// 1 KiB).
const MaxStoredSize = 1536<<10 - 128<<10

// storedSizeInstant is the instant at which storedSize classifies versions
// for the status: at the Unix epoch every stage that has a start time is
// still to come, so versions are mostly unavailable, the longest
// classification, and the estimate errs on the large side. The status is
// written at whatever time the controllers reconcile; its size varies with
// the time only by the length of the classification names.
var storedSizeInstant = time.Unix(0, 0).UTC()

// storedSizeProblem refuses o when it would not fit the API server's storage
// (MaxStoredSize) once written with the status the controllers give it. A
// profile over the bound is accepted by every other rule but its write fails
// in etcd, for this revision and every retry of it.
//
// The size is estimated as the API server will store the object: the JSON
// of metadata and spec as the sync applies them, the status the controllers
// write (for a NamespacedCloudProfile, merged is status.cloudProfileSpec: its
// profile merged with the parent, often far larger than its own spec), and
// the managedFields of both writers, computed from the CRD schema as the API
// server computes them. merged is nil for a CloudProfile, or when the merge
// failed (the set has a problem for that already); mergedFrom is the
// digest of the parent's spec merged (specDigest), by which the size is
// remembered across validations (storedSizeMemo).
func storedSizeProblem(o Object, merged *v1alpha1.CloudProfileSpec, mergedFrom string) (Problem, bool) {
	size, err := storedSizes.size(o, merged, mergedFrom)
	if err != nil {
		return o.problem("", fmt.Sprintf("Internal error: cannot estimate its size as the API server stores it: %v", err)), true
	}
	if size <= MaxStoredSize {
		return Problem{}, false
	}
	message := fmt.Sprintf("Too long: %d bytes as the API server would store it (JSON with metadata, managedFields and status), "+
		"more than the %d it can store (etcd's default request limit of 1.5 MiB less 128 KiB for server metadata)",
		size, MaxStoredSize)
	if merged == nil {
		return o.problem("", message+": split the profile or shorten it"), true
	}
	mergedJSON, err := json.Marshal(merged)
	if err != nil {
		return o.problem("", message+": shorten the parent or this profile"), true
	}
	return o.problem("", fmt.Sprintf("%s; %d bytes of it are status.cloudProfileSpec, the profile merged with its parent CloudProfile %q, which its status holds: shorten the parent or this profile",
		message, len(mergedJSON), o.NamespacedCloudProfile.Spec.Parent.Name)), true
}

// storedSize returns the estimate of storedSizeProblem in bytes.
func storedSize(o Object, merged *v1alpha1.CloudProfileSpec) (int64, error) {
	stored, applied, statusWrite := storedForms(o, merged)
	converter, err := storedSizeTypeConverter()
	if err != nil {
		return 0, err
	}
	appliedFields, err := managedFieldsSize(converter, applied)
	if err != nil {
		return 0, err
	}
	statusFields, err := managedFieldsSize(converter, statusWrite)
	if err != nil {
		return 0, err
	}
	storedJSON, err := json.Marshal(stored)
	if err != nil {
		return 0, fmt.Errorf("encoding as JSON: %w", err)
	}
	return int64(len(storedJSON)) + appliedFields + statusFields, nil
}

// storedForms returns o three ways: as the API server stores it (with the
// status the controllers write), as the sync applies it (metadata and spec),
// and as the status writer sends it (its identity and status): the last two
// are what the two field managers own.
func storedForms(o Object, merged *v1alpha1.CloudProfileSpec) (stored, applied, statusWrite runtime.Object) {
	typeMeta := metav1.TypeMeta{APIVersion: v1alpha1.GroupVersion.String(), Kind: o.Kind()}
	if cp := o.CloudProfile; cp != nil {
		status := v1alpha1.CloudProfileStatus{ProfileVersionsStatus: lifecycle.Status(&cp.Spec, storedSizeInstant)}
		appliedCP := &v1alpha1.CloudProfile{TypeMeta: typeMeta, ObjectMeta: cp.ObjectMeta, Spec: cp.Spec}
		storedCP := &v1alpha1.CloudProfile{TypeMeta: typeMeta, ObjectMeta: cp.ObjectMeta, Spec: cp.Spec, Status: status}
		statusCP := &v1alpha1.CloudProfile{TypeMeta: typeMeta, ObjectMeta: identityOf(cp.ObjectMeta), Status: status}
		return storedCP, appliedCP, statusCP
	}
	ncp := o.NamespacedCloudProfile
	var status v1alpha1.NamespacedCloudProfileStatus
	if merged != nil {
		status = namespacedStatusOf(merged, storedSizeInstant)
	}
	appliedNCP := &v1alpha1.NamespacedCloudProfile{TypeMeta: typeMeta, ObjectMeta: ncp.ObjectMeta, Spec: ncp.Spec}
	storedNCP := &v1alpha1.NamespacedCloudProfile{TypeMeta: typeMeta, ObjectMeta: ncp.ObjectMeta, Spec: ncp.Spec, Status: status}
	statusNCP := &v1alpha1.NamespacedCloudProfile{TypeMeta: typeMeta, ObjectMeta: identityOf(ncp.ObjectMeta), Status: status}
	return storedNCP, appliedNCP, statusNCP
}

// identityOf is the part of meta that a status write names.
func identityOf(meta metav1.ObjectMeta) metav1.ObjectMeta {
	return metav1.ObjectMeta{Name: meta.Name, Namespace: meta.Namespace}
}

// managedFieldsSize is the size of the fieldsV1 the API server records for a
// manager that wrote every field of object.
func managedFieldsSize(converter managedfields.TypeConverter, object runtime.Object) (int64, error) {
	typed, err := converter.ObjectToTyped(object)
	if err != nil {
		return 0, fmt.Errorf("reading against the CRD schema: %w", err)
	}
	fields, err := typed.ToFieldSet()
	if err != nil {
		return 0, fmt.Errorf("listing the fields: %w", err)
	}
	encoded, err := fields.ToJSON()
	if err != nil {
		return 0, fmt.Errorf("encoding the managed fields: %w", err)
	}
	return int64(len(encoded)), nil
}

// storedSizeTypeConverter reads profiles with the field types the API server
// uses for their managedFields: the OpenAPI model of each kind that
// apiextensions-apiserver builds from the CRD's structural schema for
// server-side apply (controller/openapi/builder), built here from the CRDs
// compiled into the binary. Only metadata differs: the API server refers to
// ObjectMeta's model, which a pure package cannot load; metadata here is an
// object of any fields, whose managedFields are the same for what a profile
// from Git has there (name, namespace, labels and annotations).
var storedSizeTypeConverter = sync.OnceValues(func() (managedfields.TypeConverter, error) {
	models := make(map[string]*spec.Schema, len(OpenAPIKinds))
	for _, kind := range OpenAPIKinds {
		compiled, err := schemaOf(kind)
		if err != nil {
			return nil, err
		}
		model := compiled.structural.ToKubeOpenAPI()
		model.SetProperty("metadata", spec.Schema{
			SchemaProps:      spec.SchemaProps{Type: []string{"object"}},
			VendorExtensible: spec.VendorExtensible{Extensions: spec.Extensions{"x-kubernetes-preserve-unknown-fields": true}},
		})
		model.SetProperty("apiVersion", *spec.StringProperty())
		model.SetProperty("kind", *spec.StringProperty())
		model.AddExtension("x-kubernetes-group-version-kind", []any{map[string]any{
			"group": v1alpha1.GroupVersion.Group, "version": v1alpha1.GroupVersion.Version, "kind": kind,
		}})
		models[v1alpha1.GroupVersion.Group+"."+v1alpha1.GroupVersion.Version+"."+kind] = model
	}
	converter, err := managedfields.NewTypeConverter(models, false)
	if err != nil {
		return nil, fmt.Errorf("building the managedFields type converter: %w", err)
	}
	return converter, nil
})
