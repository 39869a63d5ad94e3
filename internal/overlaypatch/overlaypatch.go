// Package overlaypatch writes the strategic-merge patch that makes an
// overlay build what the cluster holds: given an object as a landscape's
// overlay builds it and the live object, it returns a patch with only the
// spec fields that differ, lists keyed as the build merges them (the merge
// keys of mergekeys.OpenAPISchema: Kubernetes and image versions by version,
// lifecycle stages by classification, images, machine types and regions by
// name). A platform engineer adds it to the overlay as a patch file, and the
// emergency edit held in the cluster becomes a pull request without being
// typed again.
package overlaypatch

import (
	"encoding/json"
	"fmt"
	"reflect"
	"sync"

	"sigs.k8s.io/yaml"

	v1alpha1 "github.com/profilesync/profilesync/api/v1alpha1"
	"github.com/profilesync/profilesync/internal/render/mergekeys"
)

// patchDirective is the strategic-merge patch directive key; an entry of a
// keyed list with "$patch: delete" removes the entry of that key.
const patchDirective = "$patch"

// Object is one side of a profile: its identity and its spec as JSON values
// (runtime.DefaultUnstructuredConverter's form).
type Object struct {
	Kind, Namespace, Name string
	Spec                  map[string]any
}

// Patch returns the strategic-merge patch that, added to the overlay that
// builds built, makes it build live's spec: apiVersion, kind,
// metadata.name (and namespace) and, under spec, only what differs. changed
// is false when the specs are equal, and then there is no patch.
//
// Within a keyed list an entry live has and built lacks is written whole,
// after the key of the entry it follows (the build puts an entry a patch
// adds right after the one named before it in the patch, see overlay.Build),
// so a new lifecycle stage lands in its place; an entry built has and live
// lacks is deleted with "$patch: delete"; a changed entry is its keys and
// what changed. A field live lacks is null, which deletes it. Other lists are
// replaced whole, as the build replaces them.
func Patch(built, live Object) (patch map[string]any, changed bool, err error) {
	schema, err := kindSpecSchema(built.Kind)
	if err != nil {
		return nil, false, err
	}
	spec, changed := diff(schema, built.Spec, live.Spec)
	if !changed {
		return nil, false, nil
	}
	metadata := map[string]any{"name": built.Name}
	if built.Namespace != "" {
		metadata["namespace"] = built.Namespace
	}
	return map[string]any{
		"apiVersion": v1alpha1.GroupVersion.String(),
		"kind":       built.Kind,
		"metadata":   metadata,
		"spec":       spec,
	}, true, nil
}

// YAML writes a patch as a YAML document, keys sorted.
func YAML(patch map[string]any) ([]byte, error) {
	out, err := yaml.Marshal(patch)
	if err != nil {
		return nil, fmt.Errorf("writing the patch as YAML: %w", err)
	}
	return out, nil
}

// diff returns the patch of built to live at one node of schema, and whether
// they differ.
func diff(schema map[string]any, built, live any) (any, bool) {
	builtMap, builtIsMap := built.(map[string]any)
	liveMap, liveIsMap := live.(map[string]any)
	if builtIsMap && liveIsMap {
		return diffMaps(schema, builtMap, liveMap)
	}
	builtList, builtIsList := built.([]any)
	liveList, liveIsList := live.([]any)
	if keys := mergeKeys(schema); len(keys) > 0 && builtIsList && liveIsList {
		return diffKeyedLists(childSchema(schema, "items", ""), keys, builtList, liveList)
	}
	if reflect.DeepEqual(built, live) {
		return nil, false
	}
	return live, true
}

func diffMaps(schema map[string]any, built, live map[string]any) (any, bool) {
	patch := map[string]any{}
	for key, liveValue := range live {
		builtValue, ok := built[key]
		if !ok {
			patch[key] = liveValue
			continue
		}
		if sub, changed := diff(fieldSchema(schema, key), builtValue, liveValue); changed {
			patch[key] = sub
		}
	}
	for key := range built {
		if _, ok := live[key]; !ok {
			patch[key] = nil
		}
	}
	return patch, len(patch) > 0
}

// diffKeyedLists diffs two lists merged by keys; entries without every key
// (which the API refuses) count as different from any other.
func diffKeyedLists(itemSchema map[string]any, keys []string, built, live []any) (any, bool) {
	builtByKey := make(map[string]map[string]any, len(built))
	for _, entry := range built {
		if m, ok := entry.(map[string]any); ok {
			builtByKey[entryKey(m, keys)] = m
		}
	}
	var patch []any
	changed := false
	// named is the key of the entry the patch names last, so that an added
	// entry is written after the entry it follows in live.
	named := ""
	for i, entry := range live {
		liveEntry, ok := entry.(map[string]any)
		if !ok {
			return live, true
		}
		key := entryKey(liveEntry, keys)
		builtEntry, inBuilt := builtByKey[key]
		if !inBuilt {
			if i > 0 && named != entryKey(live[i-1].(map[string]any), keys) {
				patch = append(patch, keysOf(live[i-1].(map[string]any), keys))
			}
			patch = append(patch, liveEntry)
			named, changed = key, true
			continue
		}
		sub, entryChanged := diffMaps(itemSchema, builtEntry, liveEntry)
		if !entryChanged {
			continue
		}
		subMap := sub.(map[string]any)
		for k, v := range keysOf(liveEntry, keys) {
			subMap[k] = v
		}
		patch = append(patch, subMap)
		named, changed = key, true
	}
	liveKeys := make(map[string]bool, len(live))
	for _, entry := range live {
		liveKeys[entryKey(entry.(map[string]any), keys)] = true
	}
	for _, entry := range built {
		builtEntry, ok := entry.(map[string]any)
		if !ok || liveKeys[entryKey(builtEntry, keys)] {
			continue
		}
		deletion := keysOf(builtEntry, keys)
		deletion[patchDirective] = "delete"
		patch = append(patch, deletion)
		changed = true
	}
	return patch, changed
}

// entryKey identifies a keyed list's entry by the JSON of its keys' values.
func entryKey(entry map[string]any, keys []string) string {
	values := make([]any, len(keys))
	for i, k := range keys {
		values[i] = entry[k]
	}
	out, _ := json.Marshal(values)
	return string(out)
}

// keysOf is an entry with only its keys: in a patch, it names the entry.
func keysOf(entry map[string]any, keys []string) map[string]any {
	out := make(map[string]any, len(keys))
	for _, k := range keys {
		if v, ok := entry[k]; ok {
			out[k] = v
		}
	}
	return out
}

// mergeKeys are the keys a list of schema is merged by; none for a list the
// build replaces whole.
func mergeKeys(schema map[string]any) []string {
	if schema["x-kubernetes-patch-strategy"] != "merge" {
		return nil
	}
	raw, _ := schema["x-kubernetes-list-map-keys"].([]any)
	keys := make([]string, 0, len(raw))
	for _, k := range raw {
		if s, ok := k.(string); ok {
			keys = append(keys, s)
		}
	}
	return keys
}

// fieldSchema is the schema of a map's field: a property, else the schema of
// every value (additionalProperties); nil when the schema says nothing.
func fieldSchema(schema map[string]any, field string) map[string]any {
	if s := childSchema(schema, "properties", field); s != nil {
		return s
	}
	return childSchema(schema, "additionalProperties", "")
}

func childSchema(schema map[string]any, child, field string) map[string]any {
	node, _ := schema[child].(map[string]any)
	if field != "" {
		node, _ = node[field].(map[string]any)
	}
	return node
}

// specSchemas are the schemas of each kind's spec in mergekeys.OpenAPISchema,
// the schema the build merges by.
var specSchemas = sync.OnceValues(func() (map[string]map[string]any, error) {
	content, err := mergekeys.OpenAPISchema()
	if err != nil {
		return nil, err
	}
	var document struct {
		Definitions map[string]map[string]any `json:"definitions"`
	}
	if err := json.Unmarshal(content, &document); err != nil {
		return nil, fmt.Errorf("reading the build's OpenAPI schema: %w", err)
	}
	schemas := make(map[string]map[string]any)
	for _, definition := range document.Definitions {
		kinds, _ := definition["x-kubernetes-group-version-kind"].([]any)
		for _, k := range kinds {
			gvk, _ := k.(map[string]any)
			if gvk["group"] == v1alpha1.GroupVersion.Group {
				if kind, ok := gvk["kind"].(string); ok {
					schemas[kind] = childSchema(definition, "properties", "spec")
				}
			}
		}
	}
	return schemas, nil
})

func kindSpecSchema(kind string) (map[string]any, error) {
	schemas, err := specSchemas()
	if err != nil {
		return nil, err
	}
	schema, ok := schemas[kind]
	if !ok || schema == nil {
		return nil, fmt.Errorf("the build's OpenAPI schema has no spec of kind %q", kind)
	}
	return schema, nil
}
