package profile

import (
	"encoding/json"
	"reflect"
	"slices"

	"go.yaml.in/yaml/v3"
)

// repeatableLists are the lists of a profile that Gardener's API declares
// atomic and never checks for a repeated entry, while ours declares them a
// set (seedSelector.providerTypes, a zone's unavailableMachineTypes and
// unavailableVolumeTypes) or a list keyed by name (a region's
// accessRestrictions). Path segments are field names; "*" is every entry of
// a list.
//
// Ours keeps those declarations, because overlays' patches merge these
// lists by value or name (the build takes its merge keys from the CRDs,
// internal/render/mergekeys) and server-side apply addresses one entry; but
// the API server then refuses a repeat that Gardener accepts. A repeated
// entry means nothing more than one (a seed of a provider type, a
// restriction by its name), so the decoder drops every entry equal to an
// earlier one of its list before the object is checked: a file Gardener
// accepts is accepted by build, evaluate and the sync, and what is written
// is what Gardener means by it. Only exact repeats are dropped; two
// different entries with one name stay and are refused as the API server
// refuses them.
var repeatableLists = [][]string{
	{specField, "seedSelector", "providerTypes"},
	{specField, regionsField, everyEntry, "accessRestrictions"},
	{specField, regionsField, everyEntry, "zones", everyEntry, "unavailableMachineTypes"},
	{specField, regionsField, everyEntry, "zones", everyEntry, "unavailableVolumeTypes"},
}

const (
	specField    = "spec"
	regionsField = "regions"
	everyEntry   = "*"
)

// dropRepeatedEntries removes the repeats of repeatableLists from obj, an
// object as decoded from JSON, and reports whether it removed any.
func dropRepeatedEntries(obj map[string]any) bool {
	dropped := false
	for _, path := range repeatableLists {
		dropped = dropRepeatedAt(obj, path) || dropped
	}
	return dropped
}

func dropRepeatedAt(value any, path []string) bool {
	switch {
	case len(path) == 0:
		return false
	case path[0] == everyEntry:
		list, _ := value.([]any)
		dropped := false
		for _, entry := range list {
			dropped = dropRepeatedAt(entry, path[1:]) || dropped
		}
		return dropped
	}
	object, ok := value.(map[string]any)
	if !ok {
		return false
	}
	if len(path) > 1 {
		return dropRepeatedAt(object[path[0]], path[1:])
	}
	list, ok := object[path[0]].([]any)
	if !ok {
		return false
	}
	kept := make([]any, 0, len(list))
	for _, entry := range list {
		if !containsEqual(kept, entry) {
			kept = append(kept, entry)
		}
	}
	if len(kept) == len(list) {
		return false
	}
	object[path[0]] = kept
	return true
}

func containsEqual(list []any, value any) bool {
	for _, v := range list {
		if reflect.DeepEqual(v, value) {
			return true
		}
	}
	return false
}

// withoutRepeatedEntries drops the repeats of repeatableLists from obj and
// returns the JSON the typed decode reads: data itself when nothing was
// dropped, else obj encoded again.
func withoutRepeatedEntries(obj map[string]any, data []byte) ([]byte, error) {
	if !dropRepeatedEntries(obj) {
		return data, nil
	}
	return json.Marshal(obj)
}

// isRepeatableList reports whether fields, a path as field names with "*"
// for each list entry, is one of repeatableLists.
func isRepeatableList(fields []string) bool {
	return slices.ContainsFunc(repeatableLists, func(path []string) bool { return slices.Equal(path, fields) })
}

// sameYAMLValue reports whether two YAML nodes hold the same value, however
// each is written (flow or block style, quoting, comments).
func sameYAMLValue(a, b *yaml.Node) bool {
	var va, vb any
	return a.Decode(&va) == nil && b.Decode(&vb) == nil && reflect.DeepEqual(va, vb)
}
