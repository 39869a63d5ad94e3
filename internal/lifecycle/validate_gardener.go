package lifecycle

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/Masterminds/semver/v3"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	v1alpha1 "github.com/profilesync/profilesync/api/v1alpha1"
)

// ArchitectureCapability is the capability every machineCapabilities
// definition must have: the CPU architectures of machine types and images.
const ArchitectureCapability = "architecture"

// validateGardenerFields checks the fields of a profile that do not take
// part in the version lifecycle but that Gardener validates: the capability
// model (machineCapabilities, machine types' capabilities, image versions'
// capabilityFlavors) and its agreement with the older architecture fields,
// bastion, limits, seedSelector, image versions' inPlaceUpdates and regions'
// accessRestrictions and labels. specPath is the spec's path; now is the
// moment the bastion's image must be supported at (validateBastion).
func validateGardenerFields(spec *v1alpha1.CloudProfileSpec, specPath *field.Path, now time.Time) field.ErrorList {
	definitions, errs := validateCapabilityDefinitions(spec.MachineCapabilities, specPath)
	for i := range spec.MachineTypes {
		t := &spec.MachineTypes[i]
		errs = append(errs, validateMachineTypeCapabilities(t, definitions, EntryPath(specPath, "machineTypes", i, t.Name))...)
	}
	for i := range spec.MachineImages {
		image := &spec.MachineImages[i]
		imagePath := EntryPath(specPath, "machineImages", i, image.Name)
		for j := range image.Versions {
			v := &image.Versions[j]
			versionPath := EntryPath(imagePath, versionsField, j, v.Version)
			errs = append(errs, validateImageVersionCapabilities(v, definitions, versionPath)...)
			errs = append(errs, validateInPlaceUpdates(v, versionPath.Child("inPlaceUpdates"))...)
		}
	}
	errs = append(errs, validateBastion(spec, definitions, specPath.Child("bastion"), now)...)
	errs = append(errs, ValidateLimits(spec.Limits, specPath.Child("limits"))...)
	if spec.SeedSelector != nil {
		selectorPath := specPath.Child("seedSelector")
		errs = append(errs, validateSeedSelectorLabels(&spec.SeedSelector.LabelSelector, selectorPath)...)
		errs = append(errs, validateDistinct(spec.SeedSelector.ProviderTypes, selectorPath.Child("providerTypes"))...)
	}
	for i := range spec.Regions {
		region := &spec.Regions[i]
		regionPath := EntryPath(specPath, "regions", i, region.Name)
		restrictions := make([]string, len(region.AccessRestrictions))
		for j, r := range region.AccessRestrictions {
			restrictions[j] = r.Name
		}
		errs = append(errs, validateDistinct(restrictions, regionPath.Child("accessRestrictions"))...)
		errs = append(errs, validateRegionLabels(region.Labels, regionPath.Child("labels"))...)
	}
	return errs
}

// validateSeedSelectorLabels checks seedSelector as a label selector,
// label values included: Gardener stopped allowing invalid label values in
// it (gardener/gardener#12708, also for existing profiles), since a value no
// label can have selects no seed.
func validateSeedSelectorLabels(selector *metav1.LabelSelector, fldPath *field.Path) field.ErrorList {
	return metav1validation.ValidateLabelSelector(selector, metav1validation.LabelSelectorValidationOptions{}, fldPath)
}

// validateRegionLabels refuses region labels that are not Kubernetes
// labels, as Gardener does: a key is a qualified name with an optional DNS
// subdomain prefix, a value at most 63 characters of alphanumerics, '-',
// '_' and '.', starting and ending with an alphanumeric.
func validateRegionLabels(labels map[string]string, fldPath *field.Path) field.ErrorList {
	return metav1validation.ValidateLabels(labels, fldPath)
}

// capabilityDefinitions are a profile's machineCapabilities by name; nil
// when the profile defines none, and then the architecture fields are the
// only description of machine types and images.
type capabilityDefinitions map[string][]string

func (d capabilityDefinitions) names() []string {
	names := make([]string, 0, len(d))
	for name := range d {
		names = append(names, name)
	}
	slices.Sort(names)
	return names
}

// validateCapabilityDefinitions checks spec.machineCapabilities as Gardener
// does: names are given and distinct, every capability has at least one
// value, no value is empty, and architecture is defined, with values among
// amd64 and arm64. A value listed twice is accepted, as in Gardener: it
// changes nothing. It returns the definitions for the checks of machine
// types and images. specPath is the spec's path.
func validateCapabilityDefinitions(defs []v1alpha1.CapabilityDefinition, specPath *field.Path) (capabilityDefinitions, field.ErrorList) {
	if len(defs) == 0 {
		return nil, nil
	}
	var errs field.ErrorList
	definitions := make(capabilityDefinitions, len(defs))
	for i, def := range defs {
		defPath := EntryPath(specPath, "machineCapabilities", i, def.Name)
		switch _, seen := definitions[def.Name]; {
		case def.Name == "":
			errs = append(errs, field.Required(defPath.Child("name"), "a capability needs a name"))
		case seen:
			errs = append(errs, field.Duplicate(defPath.Child("name"), def.Name))
		default:
			definitions[def.Name] = def.Values
			errs = append(errs, validateCapabilityName(def.Name, defPath.Child("name"))...)
		}
		if len(def.Values) == 0 {
			errs = append(errs, field.Required(defPath.Child("values"), fmt.Sprintf("capability %q needs at least one value", def.Name)))
		}
		for j, value := range def.Values {
			if value == "" {
				errs = append(errs, field.Required(defPath.Child("values").Index(j), "may not be empty"))
			}
			errs = append(errs, ValidateQualifiedName(value, defPath.Child("values").Index(j))...)
		}
		if def.Name == ArchitectureCapability {
			for j, arch := range def.Values {
				if !slices.Contains(architectures, arch) {
					errs = append(errs, field.NotSupported(defPath.Child("values").Index(j), arch, architectures))
				}
			}
		}
	}
	if _, ok := definitions[ArchitectureCapability]; !ok {
		errs = append(errs, field.Required(specPath.Child("machineCapabilities"),
			fmt.Sprintf("machineCapabilities must define the %s capability (values among %s)", ArchitectureCapability, strings.Join(architectures, ", "))))
	}
	return definitions, errs
}

// validateCapabilities checks one set of capabilities (a machine type's, or
// one flavor of an image version) against the definitions: every name is
// defined and every value is among the defined values of its name. As in
// Gardener, an empty list (the same as leaving the capability out: all the
// defined values) and a value listed twice are accepted.
func validateCapabilities(capabilities v1alpha1.Capabilities, definitions capabilityDefinitions, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	names := make([]string, 0, len(capabilities))
	for name := range capabilities {
		names = append(names, name)
	}
	slices.Sort(names) // maps have no order; messages must be stable
	for _, name := range names {
		values := capabilities[name]
		path := fldPath.Child(name)
		defined, ok := definitions[name]
		if !ok {
			errs = append(errs, field.NotSupported(fldPath.Key(name), name, definitions.names()))
			continue
		}
		for j, value := range values {
			if !slices.Contains(defined, value) {
				errs = append(errs, field.NotSupported(path.Index(j), value, defined))
			}
		}
	}
	return errs
}

// architecturesOf returns the architectures a set of capabilities provides:
// its own architecture values, or all the defined ones when it leaves the
// capability out or lists none.
func architecturesOf(capabilities v1alpha1.Capabilities, definitions capabilityDefinitions) []string {
	if archs := capabilities[ArchitectureCapability]; len(archs) > 0 {
		return archs
	}
	return definitions[ArchitectureCapability]
}

// capabilitiesWithoutDefinitions refuses capabilities written in a profile
// that defines none (no spec.machineCapabilities).
func capabilitiesWithoutDefinitions(written bool, path *field.Path) field.ErrorList {
	if !written {
		return nil
	}
	return field.ErrorList{field.Forbidden(path, "may be set only when spec.machineCapabilities defines the capabilities")}
}

// validateMachineTypeCapabilities checks a machine type's capabilities and
// their agreement with its architecture field, as Gardener does. Without
// machineCapabilities the type may not have capabilities. With them,
// capabilities.architecture names at most one architecture (a machine has
// one; leaving it out is allowed even when the profile offers several), and
// an architecture field must name the same one as a written
// capabilities.architecture.
func validateMachineTypeCapabilities(t *v1alpha1.MachineType, definitions capabilityDefinitions, typePath *field.Path) field.ErrorList {
	capabilitiesPath := typePath.Child("capabilities")
	if definitions == nil {
		return capabilitiesWithoutDefinitions(len(t.Capabilities) > 0, capabilitiesPath)
	}
	errs := validateCapabilities(t.Capabilities, definitions, capabilitiesPath)
	if _, ok := definitions[ArchitectureCapability]; !ok || len(errs) > 0 {
		return errs // the definitions or the capabilities are wrong already
	}
	switch written := t.Capabilities[ArchitectureCapability]; {
	case len(written) > 1:
		errs = append(errs, field.Invalid(capabilitiesPath.Child(ArchitectureCapability), strings.Join(written, ", "),
			"a machine type has one architecture: name at most one"))
	case len(written) == 1 && t.Architecture != nil && *t.Architecture != written[0]:
		errs = append(errs, field.Invalid(typePath.Child("architecture"), *t.Architecture,
			fmt.Sprintf("must agree with capabilities.%s (%s)", ArchitectureCapability, written[0])))
	}
	return errs
}

// MachineTypeArchitecture is the architecture of a machine type: the one
// its capabilities name when the profile defines machineCapabilities and
// they name exactly one, else its architecture field; empty when neither
// says.
func MachineTypeArchitecture(t *v1alpha1.MachineType, machineCapabilities []v1alpha1.CapabilityDefinition) string {
	definitions := make(capabilityDefinitions, len(machineCapabilities))
	for _, def := range machineCapabilities {
		definitions[def.Name] = def.Values
	}
	if len(machineCapabilities) > 0 {
		if archs := architecturesOf(t.Capabilities, definitions); len(archs) == 1 {
			return archs[0]
		}
	}
	if t.Architecture != nil {
		return *t.Architecture
	}
	return ""
}

// ImageVersionArchitectures are the architectures a machine image version
// is built for: with machineCapabilities, those its capabilityFlavors provide
// (all defined ones when it has no flavors); without, its architectures
// field.
func ImageVersionArchitectures(v *v1alpha1.MachineImageVersion, machineCapabilities []v1alpha1.CapabilityDefinition) []string {
	if len(machineCapabilities) == 0 {
		return v.Architectures
	}
	definitions := make(capabilityDefinitions, len(machineCapabilities))
	for _, def := range machineCapabilities {
		definitions[def.Name] = def.Values
	}
	return imageVersionArchitectures(v, definitions)
}

func imageVersionArchitectures(v *v1alpha1.MachineImageVersion, definitions capabilityDefinitions) []string {
	if len(v.CapabilityFlavors) == 0 {
		return definitions[ArchitectureCapability]
	}
	var archs []string
	for _, flavor := range v.CapabilityFlavors {
		for _, arch := range architecturesOf(flavor, definitions) {
			if !slices.Contains(archs, arch) {
				archs = append(archs, arch)
			}
		}
	}
	return archs
}

// validateImageVersionCapabilities checks an image version's
// capabilityFlavors and their agreement with its architectures field.
// Without machineCapabilities the version may not have flavors. With them,
// every flavor uses defined names and values and names its architecture
// (validateFlavorArchitectures), and architectures, where written, must be
// among those the flavors provide, as in Gardener (it may list fewer).
func validateImageVersionCapabilities(v *v1alpha1.MachineImageVersion, definitions capabilityDefinitions, versionPath *field.Path) field.ErrorList {
	flavorsPath := versionPath.Child("capabilityFlavors")
	if definitions == nil {
		return capabilitiesWithoutDefinitions(len(v.CapabilityFlavors) > 0, flavorsPath)
	}
	var errs field.ErrorList
	for i, flavor := range v.CapabilityFlavors {
		errs = append(errs, validateCapabilities(flavor, definitions, flavorsPath.Index(i))...)
	}
	if _, ok := definitions[ArchitectureCapability]; !ok || len(errs) > 0 {
		return errs // the definitions or the flavors are wrong already
	}
	if errs := validateFlavorArchitectures(v.CapabilityFlavors, definitions, flavorsPath); len(errs) > 0 {
		return errs
	}
	provided := imageVersionArchitectures(v, definitions)
	for i, arch := range v.Architectures {
		if !slices.Contains(provided, arch) {
			errs = append(errs, field.Invalid(versionPath.Child("architectures").Index(i), arch,
				fmt.Sprintf("must be among the architectures of capabilityFlavors (%s)", strings.Join(provided, ", "))))
		}
	}
	return errs
}

// validateFlavorArchitectures checks, as Gardener does, that an image
// version says which architecture each of its builds is for: when
// machineCapabilities defines several architectures the version needs at
// least one flavor and every flavor names its architecture, and no flavor
// names more than one. flavorsPath is the version's capabilityFlavors.
func validateFlavorArchitectures(flavors []v1alpha1.Capabilities, definitions capabilityDefinitions, flavorsPath *field.Path) field.ErrorList {
	defined := definitions[ArchitectureCapability]
	if len(defined) > 1 && len(flavors) == 0 {
		return field.ErrorList{field.Required(flavorsPath,
			fmt.Sprintf("spec.machineCapabilities defines the architectures %s, so an image version must list at least one flavor", strings.Join(defined, ", ")))}
	}
	var errs field.ErrorList
	for i, flavor := range flavors {
		archPath := flavorsPath.Index(i).Child(ArchitectureCapability)
		switch archs := flavor[ArchitectureCapability]; {
		case len(archs) > 1:
			errs = append(errs, field.Invalid(archPath, strings.Join(archs, ", "), "a flavor is built for one architecture: name exactly one"))
		case len(archs) == 0 && len(defined) > 1:
			errs = append(errs, field.Required(archPath,
				fmt.Sprintf("spec.machineCapabilities defines the architectures %s, so a flavor must name exactly one", strings.Join(defined, ", "))))
		}
	}
	return errs
}

// validateInPlaceUpdates checks that minVersionForUpdate is a semantic
// version. As in Gardener, it is not compared with the version it updates
// to: a minimum above it only means no in-place update reaches it.
func validateInPlaceUpdates(v *v1alpha1.MachineImageVersion, fldPath *field.Path) field.ErrorList {
	if v.InPlaceUpdates == nil || v.InPlaceUpdates.MinVersionForUpdate == nil {
		return nil
	}
	if _, err := semver.NewVersion(*v.InPlaceUpdates.MinVersionForUpdate); err != nil {
		return field.ErrorList{field.Invalid(fldPath.Child("minVersionForUpdate"), *v.InPlaceUpdates.MinVersionForUpdate,
			fmt.Sprintf("not a semantic version: %v", err))}
	}
	return nil
}

// validateBastion gives Gardener's verdict on the bastion
// (validateCloudProfileBastion of gardener/gardener's
// pkg/apis/core/validation/cloudprofile.go), in its words: the machine type
// and image are in the profile, and the named version of the image, or when
// none is named some version of it, is classified supported and built for
// the machine type's architecture (any architecture without a machine type).
//
// Supported is read at now, as the other time-dependent rules
// (ValidateCloudProfileSpecAt): a version whose supported stage has not
// started or is over is no bastion, so a profile can become invalid with
// time, as in Gardener. As in Gardener, only a declared classification
// counts (the classification field or a lifecycle stage): a version that
// declares none reads supported in the status but is no bastion. At no
// particular time (a zero now) every declared supported stage counts.
//
// Without machineCapabilities, Gardener defaults a machine type without an
// architecture, and an image version without architectures, to amd64 before
// it validates; the check judges them as Gardener does, so an arm64-only
// image is no bastion for a type that names no architecture.
func validateBastion(spec *v1alpha1.CloudProfileSpec, definitions capabilityDefinitions, fldPath *field.Path, now time.Time) field.ErrorList {
	bastion := spec.Bastion
	if bastion == nil {
		return nil
	}
	var errs field.ErrorList
	if bastion.MachineImage == nil && bastion.MachineType == nil {
		// Gardener's type and words; the value shown is the empty section as
		// written, not the Go struct.
		errs = append(errs, field.Invalid(fldPath, "{}", "bastion section needs a machine type or machine image"))
	}
	arch := ""
	if bastion.MachineType != nil {
		at := slices.IndexFunc(spec.MachineTypes, func(t v1alpha1.MachineType) bool { return t.Name == bastion.MachineType.Name })
		if at < 0 {
			errs = append(errs, field.Invalid(fldPath.Child("machineType", "name"), bastion.MachineType.Name, "machine type not found in spec.machineTypes"))
		} else {
			arch = MachineTypeArchitecture(&spec.MachineTypes[at], spec.MachineCapabilities)
			if arch == "" && definitions == nil {
				arch = defaultArchitecture
			}
		}
	}
	if bastion.MachineImage == nil {
		return errs
	}
	imagePath := fldPath.Child("machineImage")
	at := slices.IndexFunc(spec.MachineImages, func(i v1alpha1.MachineImage) bool { return i.Name == bastion.MachineImage.Name })
	if at < 0 {
		return append(errs, field.Invalid(imagePath.Child("name"), bastion.MachineImage.Name, "image name not found in spec.machineImages"))
	}
	versions := spec.MachineImages[at].Versions
	checkedPath := imagePath.Child("name")
	if bastion.MachineImage.Version != nil {
		checkedPath = imagePath.Child("version")
		vi := slices.IndexFunc(versions, func(v v1alpha1.MachineImageVersion) bool { return v.Version == *bastion.MachineImage.Version })
		if vi < 0 {
			return append(errs, field.Invalid(checkedPath, *bastion.MachineImage.Version, "image version not found in spec.machineImages"))
		}
		versions = versions[vi : vi+1]
	}
	for i := range versions {
		if declaredSupportedAt(&versions[i].ExpirableVersion, now) && builtFor(&versions[i], definitions, arch) {
			return errs
		}
	}
	shownArch := arch
	if shownArch == "" {
		shownArch = "<nil>"
	}
	return append(errs, field.Invalid(checkedPath, bastion.MachineImage.Name,
		fmt.Sprintf("no image with classification supported and arch %q found", shownArch)).WithOrigin(WriteTimeOrigin))
}

// builtFor reports whether an image version is built for arch, with
// Gardener's defaulting (validateBastion); an empty arch (no machine type,
// or one without an architecture under machineCapabilities) accepts any.
func builtFor(v *v1alpha1.MachineImageVersion, definitions capabilityDefinitions, arch string) bool {
	if arch == "" {
		return true
	}
	archs := v.Architectures
	if definitions != nil {
		archs = imageVersionArchitectures(v, definitions)
	} else if len(archs) == 0 {
		archs = []string{defaultArchitecture}
	}
	return slices.Contains(archs, arch)
}

// declaredSupportedAt reports whether v declares a supported classification
// (the classification field or a lifecycle stage) that is current at now; at
// a zero now, whether it declares one at all.
func declaredSupportedAt(v *v1alpha1.ExpirableVersion, now time.Time) bool {
	if now.IsZero() {
		_, _, ok := declaredSupportedWindow(v)
		return ok
	}
	if len(v.Lifecycle) == 0 && v.Classification == nil {
		return false
	}
	return ClassificationAt(*v, now) == v1alpha1.ClassificationSupported
}

// ValidateLimits checks a profile's limits: maxNodesTotal, when set, is
// positive.
func ValidateLimits(limits *v1alpha1.Limits, fldPath *field.Path) field.ErrorList {
	if limits == nil || limits.MaxNodesTotal == nil || *limits.MaxNodesTotal > 0 {
		return nil
	}
	return field.ErrorList{field.Invalid(fldPath.Child("maxNodesTotal"), *limits.MaxNodesTotal, "must be greater than 0")}
}

// validateDistinct checks that a list of strings declared a set has no
// repeated entry, as the API server checks seedSelector.providerTypes and
// regions' accessRestrictions, which our API declares a set and a list keyed
// by name. Gardener keeps both atomic and accepts a repeat, which means
// nothing more than one: the profile decoder drops an equal repeat before a
// spec gets here (profile.repeatableLists), so a file Gardener accepts
// passes, and this refuses only a spec built in code. An empty entry is
// accepted, as Gardener accepts it (its validation checks neither list): it
// names no seed's type, and no restriction a cluster requests, and dropping
// it would change what a list of only "" means to the scheduler.
func validateDistinct(values []string, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	for i, value := range values {
		if slices.Contains(values[:i], value) {
			errs = append(errs, field.Duplicate(fldPath.Index(i), value))
		}
	}
	return errs
}
