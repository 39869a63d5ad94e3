package profile

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"

	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	strictjson "sigs.k8s.io/json"

	v1alpha1 "github.com/profilesync/profilesync/api/v1alpha1"
)

var metadataPath = field.NewPath("metadata")

// decodeObjectMeta reads metadata, the object's metadata as decoded from
// JSON, on its own: the CRD schema says nothing about metadata beyond
// "object", so its fields are checked here, and reading it apart from the
// rest means a mistake elsewhere in the object does not hide one here.
// unknownFields are full paths. When metadata cannot be read at all (a value
// of the wrong type), meta is nil and failure says why, at failedField.
func decodeObjectMeta(metadata map[string]any) (meta *metav1.ObjectMeta, unknownFields []string, failedField, failure string) {
	data, err := json.Marshal(metadata)
	if err != nil {
		return nil, nil, metadataPath.String(), fmt.Sprintf("Internal error: encoding metadata: %v", err)
	}
	// metav1.Time reports a bad time without saying where.
	for _, key := range []string{"creationTimestamp", "deletionTimestamp"} {
		if value, ok := metadata[key].(string); ok {
			if _, err := time.Parse(time.RFC3339, value); err != nil {
				return nil, nil, metadataPath.Child(key).String(), fmt.Sprintf("Invalid value: %q: %s", value, rfc3339Hint)
			}
		}
	}
	meta = &metav1.ObjectMeta{}
	strictErrs, err := strictjson.UnmarshalStrict(data, meta)
	if err != nil {
		path, message := describeDecodeError(err)
		return nil, nil, metadataPath.String() + dotted(path), message
	}
	for _, strictErr := range strictErrs {
		if withPath, ok := strictErr.(strictjson.FieldError); ok {
			unknownFields = append(unknownFields, metadataPath.String()+dotted(withPath.FieldPath()))
		}
	}
	return meta, unknownFields, "", ""
}

// dotted prefixes a non-empty relative path with the dot that joins it.
func dotted(path string) string {
	if path == "" || strings.HasPrefix(path, "[") {
		return path
	}
	return "." + path
}

// validateObjectMeta checks metadata as the API server does for a custom
// resource (apimachinery's ValidateObjectMeta: the name a DNS-1123
// subdomain, the namespace a DNS-1123 label, label and annotation syntax,
// annotations at most 256 KiB together, owner references and finalizers) and
// refuses labels of the domain the sync writes itself.
//
// The namespace of a namespaced profile is checked when it is given.
// Whether one is required or forbidden is left to Validate, which says so
// in its own words: a NamespacedCloudProfile without one gets the
// ProfileSync's namespace in the sync (ApplyDefaultNamespace), and the
// namespace of a cluster-scoped CloudProfile is an error there, though the
// API server would only drop it. A missing name keeps our own message.
func validateObjectMeta(meta *metav1.ObjectMeta, namespaced bool) field.ErrorList {
	// The API server sets generation itself before it validates a new
	// object, so whatever Git says there is never refused.
	asCreated := *meta
	asCreated.Generation = 0
	if !namespaced {
		asCreated.Namespace = ""
	}
	var errs field.ErrorList
	for _, e := range apivalidation.ValidateObjectMeta(&asCreated, asCreated.Namespace != "", apivalidation.NameIsDNSSubdomain, metadataPath) {
		if e.Type == field.ErrorTypeRequired && e.Field == "metadata.name" {
			continue
		}
		errs = append(errs, e)
	}
	if meta.Name == "" {
		errs = append(errs, field.Required(metadataPath.Child("name"), "every profile needs a name"))
	}
	labelsPath := metadataPath.Child("labels")
	for key := range meta.Labels {
		if IsReservedLabel(key) {
			errs = append(errs, field.Forbidden(labelsPath.Key(key), fmt.Sprintf(
				"the %s/ domain is reserved: the sync sets %s and %s itself to mark the objects it owns",
				v1alpha1.ReservedLabelDomain, v1alpha1.OwnerNameLabel, v1alpha1.OwnerNamespaceLabel)))
		}
	}
	annotationsPath := metadataPath.Child("annotations")
	for key := range meta.Annotations {
		if IsReservedLabel(key) {
			errs = append(errs, field.Forbidden(annotationsPath.Key(key), fmt.Sprintf(
				"the %s/ domain is reserved: the sync sets %s itself to record what it applied",
				v1alpha1.ReservedLabelDomain, v1alpha1.AppliedDigestAnnotation)))
		}
	}
	sortFieldErrors(errs)
	return errs
}

// IsReservedLabel reports whether key is in the reserved domain or one of
// its subdomains, as kubernetes.io reserves its own.
func IsReservedLabel(key string) bool {
	prefix, _, found := strings.Cut(key, "/")
	if !found {
		return false
	}
	prefix = strings.ToLower(prefix)
	return prefix == v1alpha1.ReservedLabelDomain || strings.HasSuffix(prefix, "."+v1alpha1.ReservedLabelDomain)
}
