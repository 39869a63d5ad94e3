package profile

import (
	"strings"
)

// FieldSource says that a patch of an overlay, not the file the object was
// read from, set a field of a built object: the build records one for
// every field whose value a patch changed (overlay.BuildWithWarnings), so
// that a problem of that field names the patch to edit.
type FieldSource struct {
	// Field is the field's path in the built object, list entries by their
	// index and without their names: spec.kubernetes.versions[3].expirationDate.
	// Everything below it was set by the same patch, unless another
	// FieldSource names a field below it.
	Field string `json:"field"`
	// KeyedField is the same field with each list entry named by its
	// merge keys instead of its index: spec.kubernetes.versions (1.30.0).expirationDate
	// (several keys are joined by ", "). It finds the field where the
	// indices are not the object's: in a NamespacedCloudProfile's merged
	// spec (status.cloudProfileSpec), whose lists hold the parent's entries
	// too.
	KeyedField string `json:"keyedField,omitempty"`
	// File holds the patch: its own file, or the kustomization that writes
	// it inline.
	File string `json:"file"`
	// Patch names the patch within File and the entry of it that set the
	// field, when there is more to say than the file: "patches[1]" for a
	// patch written inline, "entry spec.kubernetes.versions (1.30.0)" for a
	// strategic-merge patch that names a list entry by its key, or both.
	Patch string `json:"patch,omitempty"`
}

// SourceOf returns the source of the field at fieldPath (as problems name
// fields: spec.kubernetes.versions[3] (1.30.0).expirationDate) among
// sources: the one of the field itself or of the nearest field that holds
// it; false when no patch set it (the object's file holds the value).
func SourceOf(sources []FieldSource, fieldPath string) (FieldSource, bool) {
	if len(sources) == 0 || fieldPath == "" {
		return FieldSource{}, false
	}
	path := withoutEntryNames(fieldPath)
	var best FieldSource
	found := false
	for _, source := range sources {
		if holds(source.Field, path) && (!found || len(source.Field) > len(best.Field)) {
			best, found = source, true
		}
	}
	return best, found
}

// attributed returns p located at the patch that set its field, when
// sources say a patch did: the patch's file becomes the problem's file, and
// the object's file its origin. A problem of a NamespacedCloudProfile's
// merged spec is the patch's when the patch set that field of the
// profile's own spec (see mergedSourceOf).
func attributed(p Problem, sources []FieldSource) Problem {
	if p.Origin != "" {
		return p
	}
	source, ok := SourceOf(sources, p.Field)
	if !ok {
		source, ok = mergedSourceOf(sources, p.Field)
	}
	if !ok {
		return p
	}
	p.Origin, p.File, p.SetBy = p.File, source.File, source.Patch
	return p
}

// mergedSpecPrefix is where a NamespacedCloudProfile's problems name the
// fields of its merged spec (merge.MergedSpecPath).
const mergedSpecPrefix = "status.cloudProfileSpec."

// mergedSourceOf returns the source of a field of a NamespacedCloudProfile's
// merged spec (status.cloudProfileSpec.kubernetes.versions[4] (1.30.0).expirationDate)
// that a patch set in the profile's own spec: the merged spec takes the
// profile's value where the profile sets one, but lists its entries among
// the parent's, so the field is found by its entries' names
// (FieldSource.KeyedField), not their indices. An entry the problem does
// not name is matched by nothing below it; false when no source holds the
// field.
func mergedSourceOf(sources []FieldSource, fieldPath string) (FieldSource, bool) {
	rest, ok := strings.CutPrefix(fieldPath, mergedSpecPrefix)
	if !ok {
		return FieldSource{}, false
	}
	path := "spec." + withEntryNamesOnly(rest)
	var best FieldSource
	found := false
	for _, source := range sources {
		if source.KeyedField != "" && holdsKeyed(source.KeyedField, path) && (!found || len(source.KeyedField) > len(best.KeyedField)) {
			best, found = source, true
		}
	}
	return best, found
}

// withEntryNamesOnly drops the index of every list entry a path names:
// kubernetes.versions[3] (1.30.0).lifecycle[0] becomes
// kubernetes.versions (1.30.0).lifecycle[0]; an entry without a name keeps
// its index.
func withEntryNamesOnly(path string) string {
	var b strings.Builder
	for i := 0; i < len(path); i++ {
		if path[i] == '[' {
			if end := strings.IndexByte(path[i:], ']'); end > 0 && strings.HasPrefix(path[i+end+1:], " (") && nameEnd(path, i+end+3) >= 0 {
				i += end // the name follows
				continue
			}
		}
		b.WriteByte(path[i])
	}
	return b.String()
}

// holdsKeyed reports whether the keyed field holder is the keyed field at
// path or holds it.
func holdsKeyed(holder, path string) bool {
	if !strings.HasPrefix(path, holder) {
		return false
	}
	rest := path[len(holder):]
	return rest == "" || rest[0] == '.' || rest[0] == '[' || strings.HasPrefix(rest, " (")
}

// holds reports whether the field at holder is the field at path or holds
// it; both without entry names.
func holds(holder, path string) bool {
	if !strings.HasPrefix(path, holder) {
		return false
	}
	rest := path[len(holder):]
	return rest == "" || rest[0] == '.' || rest[0] == '['
}

// withoutEntryNames drops the names problems give list entries after their
// index: spec.versions[3] (1.30.0).lifecycle becomes spec.versions[3].lifecycle.
// A name runs from " (" right after "]" to the ")" that ends the path or
// comes before the next "." or "[", so a name may hold dots and brackets.
func withoutEntryNames(path string) string {
	var b strings.Builder
	for i := 0; i < len(path); i++ {
		b.WriteByte(path[i])
		if path[i] != ']' || !strings.HasPrefix(path[i+1:], " (") {
			continue
		}
		end := nameEnd(path, i+3)
		if end < 0 {
			continue
		}
		i = end
	}
	return b.String()
}

// nameEnd returns the index of the ")" that closes an entry name starting
// at from: the first one followed by the end, "." or "["; -1 when none is.
func nameEnd(path string, from int) int {
	for j := from; j < len(path); j++ {
		if path[j] != ')' {
			continue
		}
		if j+1 == len(path) || path[j+1] == '.' || path[j+1] == '[' {
			return j
		}
	}
	return -1
}
