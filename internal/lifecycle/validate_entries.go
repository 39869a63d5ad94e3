package lifecycle

import (
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"regexp"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/validation/field"

	v1alpha1 "github.com/profilesync/profilesync/api/v1alpha1"
)

// qualifiedNamePattern is the form Gardener requires of the names of machine
// images, machine and volume types, volume classes, capabilities and their
// values: alphanumerics, '-', '_' and '.', starting and ending with an
// alphanumeric. Unlike a Kubernetes qualified name it takes no "prefix/":
// these names end up in labels and in provider configuration, where a slash
// is not allowed.
var qualifiedNamePattern = regexp.MustCompile(`^[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$`)

// qualifiedNameMaxLength is the longest name qualifiedNamePattern may match.
const qualifiedNameMaxLength = 63

// ValidateQualifiedName refuses a non-empty name that is not a qualified name
// (qualifiedNamePattern, at most 63 characters). An empty name is left to the
// rule that requires one, so it is reported once.
func ValidateQualifiedName(name string, fldPath *field.Path) field.ErrorList {
	switch {
	case name == "":
		return nil
	case len(name) > qualifiedNameMaxLength:
		return field.ErrorList{field.TooLong(fldPath, name, qualifiedNameMaxLength)}
	case !qualifiedNamePattern.MatchString(name):
		return field.ErrorList{field.Invalid(fldPath, name,
			"must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (regex "+qualifiedNamePattern.String()+")")}
	}
	return nil
}

// ValidateCABundle refuses a caBundle that does not start with a PEM
// certificate. As in Gardener, only the first PEM block is read: it must be
// a CERTIFICATE that parses. A bundle that is set but empty is refused too.
func ValidateCABundle(caBundle *string, fldPath *field.Path) field.ErrorList {
	if caBundle == nil {
		return nil
	}
	block, _ := pem.Decode([]byte(*caBundle))
	detail := ""
	switch {
	case block == nil:
		detail = "not a PEM-encoded certificate: no PEM block found"
	case block.Type != "CERTIFICATE":
		detail = fmt.Sprintf("not a PEM-encoded certificate: the first PEM block is a %s", block.Type)
	default:
		if _, err := x509.ParseCertificate(block.Bytes); err != nil {
			detail = fmt.Sprintf("not a PEM-encoded certificate: %v", err)
		}
	}
	if detail == "" {
		return nil
	}
	// The bundle itself can be long; the message names the field instead.
	return field.ErrorList{field.Invalid(fldPath, "(PEM bundle)", detail)}
}

// ValidateMachineTypes checks machine types as Gardener does: a qualified
// name, distinct, cpu, gpu, memory and storage sizes not negative, and a
// machine creation timeout not negative.
// specPath is the path of the spec holding them.
func ValidateMachineTypes(types []v1alpha1.MachineType, specPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	firstIndexOf := make(map[string]int, len(types))
	for i := range types {
		t := &types[i]
		typePath := EntryPath(specPath, "machineTypes", i, t.Name)
		errs = append(errs, validateEntryName(t.Name, firstIndexOf, i, "machineTypes", "a machine type needs a name", typePath.Child("name"))...)
		errs = append(errs, validateNonNegative(t.CPU, typePath.Child("cpu"))...)
		errs = append(errs, validateNonNegative(t.GPU, typePath.Child("gpu"))...)
		errs = append(errs, validateNonNegative(t.Memory, typePath.Child("memory"))...)
		if t.Storage != nil {
			errs = append(errs, validateMachineTypeStorage(t.Storage, typePath.Child("storage"))...)
		}
		if mcm := t.MachineControllerManager; mcm != nil && mcm.MachineCreationTimeout != nil && mcm.MachineCreationTimeout.Duration < 0 {
			errs = append(errs, field.Invalid(typePath.Child("machineControllerManager", "machineCreationTimeout"),
				mcm.MachineCreationTimeout.Duration.String(), "may not be negative"))
		}
	}
	return errs
}

// validateMachineTypeStorage checks a machine type's disk: exactly one of
// size and minSize, not negative.
func validateMachineTypeStorage(storage *v1alpha1.MachineTypeStorage, fldPath *field.Path) field.ErrorList {
	switch {
	case storage.StorageSize == nil && storage.MinSize == nil:
		return field.ErrorList{field.Required(fldPath, "set size or minSize")}
	case storage.StorageSize != nil && storage.MinSize != nil:
		return field.ErrorList{field.Forbidden(fldPath.Child("minSize"), "may not be combined with size")}
	case storage.StorageSize != nil:
		return validateNonNegative(*storage.StorageSize, fldPath.Child("size"))
	default:
		return validateNonNegative(*storage.MinSize, fldPath.Child("minSize"))
	}
}

// ValidateVolumeTypes checks volume types as Gardener does: a qualified
// name, distinct, a class that is a qualified name and not empty, and a
// minSize not negative. specPath is the path of the spec holding them.
func ValidateVolumeTypes(types []v1alpha1.VolumeType, specPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	firstIndexOf := make(map[string]int, len(types))
	for i := range types {
		t := &types[i]
		typePath := EntryPath(specPath, "volumeTypes", i, t.Name)
		errs = append(errs, validateEntryName(t.Name, firstIndexOf, i, "volumeTypes", "a volume type needs a name", typePath.Child("name"))...)
		if t.Class == "" {
			errs = append(errs, field.Required(typePath.Child("class"), "a volume type needs a class"))
		}
		errs = append(errs, ValidateQualifiedName(t.Class, typePath.Child("class"))...)
		if t.MinSize != nil {
			errs = append(errs, validateNonNegative(*t.MinSize, typePath.Child("minSize"))...)
		}
	}
	return errs
}

// validateEntryName checks the name of the i-th entry of a named list: given,
// a qualified name, and not used by an earlier entry (firstIndexOf remembers
// the names seen).
func validateEntryName(name string, firstIndexOf map[string]int, i int, list, required string, namePath *field.Path) field.ErrorList {
	if name == "" {
		return field.ErrorList{field.Required(namePath, required)}
	}
	if first, seen := firstIndexOf[name]; seen {
		return field.ErrorList{field.Duplicate(namePath, fmt.Sprintf("%s (also %s[%d])", name, list, first))}
	}
	firstIndexOf[name] = i
	return ValidateQualifiedName(name, namePath)
}

func validateNonNegative(q resource.Quantity, fldPath *field.Path) field.ErrorList {
	if q.Sign() < 0 {
		return field.ErrorList{field.Invalid(fldPath, q.String(), "must be greater than or equal to 0")}
	}
	return nil
}

// reservedCapabilityPrefix starts the capability names Gardener reserves for
// capabilities of its own. Gardener's CloudProfile admission refuses every
// capability name with this prefix: Gardener defines no such capability yet,
// it only keeps the names free for the ones it will define (worker capability
// requirements such as an update or boot type, proposed by GEP-0054).
//
// Source: gardener/gardener#15146 "Reserve the gardener- capability-name
// prefix in CloudProfile admission" (opened in June 2026 and merged, after
// v1.137). An earlier list here allowed gardener-bootType,
// gardener-updateType and gardener-gpuSupport: names of a draft of that
// proposal (github.com/gardener/enhancements, geps/0040-worker-capabilities),
// which its later text (geps/0054-worker-capability-requirement, commit
// 23a997141e79ce5dd94ca05997ea9d480cbeada8, provisional) renamed, and which
// Gardener never defined.
const reservedCapabilityPrefix = "gardener-"

// validateCapabilityName refuses a capability name that is not a qualified
// name, or that uses Gardener's reserved prefix.
func validateCapabilityName(name string, fldPath *field.Path) field.ErrorList {
	if strings.HasPrefix(name, reservedCapabilityPrefix) {
		return field.ErrorList{field.Invalid(fldPath, name,
			fmt.Sprintf("names starting with %q are reserved for capabilities Gardener defines, and Gardener defines none yet",
				reservedCapabilityPrefix))}
	}
	return ValidateQualifiedName(name, fldPath)
}

// validateContainerRuntimes checks an image version's container runtime
// interfaces as Gardener does: each CRI once, and its container runtimes'
// types qualified names, each once per CRI. fldPath is the version's cri.
func validateContainerRuntimes(cris []v1alpha1.CRI, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	for i, cri := range cris {
		criPath := fldPath.Index(i)
		if slices.ContainsFunc(cris[:i], func(c v1alpha1.CRI) bool { return c.Name == cri.Name }) {
			errs = append(errs, field.Duplicate(criPath.Child("name"), cri.Name))
		}
		for j, runtime := range cri.ContainerRuntimes {
			typePath := criPath.Child("containerRuntimes").Index(j).Child("type")
			if slices.ContainsFunc(cri.ContainerRuntimes[:j], func(r v1alpha1.ContainerRuntime) bool { return r.Type == runtime.Type }) {
				errs = append(errs, field.Duplicate(typePath, runtime.Type))
				continue
			}
			errs = append(errs, ValidateQualifiedName(runtime.Type, typePath)...)
		}
	}
	return errs
}
