package overlay

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"

	"sigs.k8s.io/kustomize/api/filters/patchjson6902"
	"sigs.k8s.io/kustomize/api/resmap"
	"sigs.k8s.io/kustomize/api/resource"
	"sigs.k8s.io/kustomize/api/types"
	"sigs.k8s.io/kustomize/kyaml/openapi"
	kyaml "sigs.k8s.io/kustomize/kyaml/yaml"
	"sigs.k8s.io/yaml"

	"github.com/profilesync/profilesync/internal/render/profile"
)

// indexPatchWarnings finds the JSON patches of the build that address an
// entry of a keyed list by its index (.../versions/3/...), and names, for
// each, the entry that index selects today: a version inserted or removed
// in a base moves such a patch onto another entry without a word, while a
// strategic-merge patch that names the entry by its key keeps hitting it.
//
// The entry is the one kustomize's own patch would hit. kustomize applies a
// kustomization's patches to what its resources, generators and components
// produced, each patch to what the patches before it left. So for every
// kustomization the build read, the resources as they are before its first
// JSON patch are built again (the same kustomization without that patch,
// those after it and the transformers that run after patches), and its JSON
// patches are applied to them one operation at a time, each operation
// checked against what the ones before it left; the same for the legacy
// patchesJson6902, which kustomize applies after the namespace, name and
// label transformers. A strategic-merge patch between two JSON patches
// takes one more build, so a kustomization costs one build per run of
// consecutive JSON patches, and nothing without any. Targets are selected
// by kustomize's own selector, operations applied by kustomize's own JSON
// patch filter, and whether a list is keyed is read from the schema in
// effect, so the answer is kustomize's.
//
// Warnings never fail the build, so whatever stops the check (a
// kustomization that only builds as part of another, as a Component does;
// a panic in kustomize) skips the kustomization. The caller must not hold
// kustomizeRuns.
func (r *buildFS) indexPatchWarnings() profile.Problems {
	var kustomizations []string
	for path, verdict := range r.vetted {
		if verdict == nil {
			kustomizations = append(kustomizations, path)
		}
	}
	sort.Strings(kustomizations)
	var warnings profile.Problems
	seen := make(map[string]bool)
	for _, path := range kustomizations {
		if r.ctx.Err() != nil {
			break
		}
		for _, w := range r.kustomizationIndexPatchWarnings(path) {
			if line := w.String(); !seen[line] {
				seen[line] = true
				warnings = append(warnings, w)
			}
		}
	}
	return warnings
}

// patchPhase is one of the two places kustomize applies JSON patches of a
// kustomization.
type patchPhase struct {
	entries func(types.Kustomization) []types.Patch
	// upTo returns the kustomization as kustomize has applied it right
	// before entry n of the phase: the entries before n kept, and what runs
	// after them dropped.
	upTo func(k types.Kustomization, n int) types.Kustomization
}

var patchPhases = []patchPhase{{
	entries: func(k types.Kustomization) []types.Patch { return k.Patches },
	upTo: func(k types.Kustomization, n int) types.Kustomization {
		k.Patches = k.Patches[:n]
		k.Namespace, k.NamePrefix, k.NameSuffix = "", "", ""
		k.CommonLabels, k.Labels, k.CommonAnnotations = nil, nil, nil
		k.PatchesJson6902 = nil
		return withoutLateTransformers(k)
	},
}, {
	entries: func(k types.Kustomization) []types.Patch { return k.PatchesJson6902 },
	upTo: func(k types.Kustomization, n int) types.Kustomization {
		k.PatchesJson6902 = k.PatchesJson6902[:n]
		return withoutLateTransformers(k)
	},
}}

// withoutLateTransformers drops what kustomize runs after all patches.
func withoutLateTransformers(k types.Kustomization) types.Kustomization {
	k.Replicas, k.Images, k.ImageTags, k.Replacements = nil, nil, nil, nil
	k.Transformers, k.Validators = nil, nil
	return k
}

// kustomizationIndexPatchWarnings checks the JSON patches of the
// kustomization at path; see indexPatchWarnings.
func (r *buildFS) kustomizationIndexPatchWarnings(path string) (warnings profile.Problems) {
	defer func() {
		if recover() != nil {
			warnings = nil // kustomize panicked: this kustomization is not checked
		}
	}()
	// Read afresh: the build's copy of the top-level kustomization has the
	// build's options added, and a generated one has no patches.
	content, err := newBuildFS(r.ctx, r.root, r.limits).ReadFile(path)
	if err != nil {
		return nil
	}
	var k types.Kustomization
	if err := k.Unmarshal(content); err != nil {
		return nil
	}
	k.FixKustomization()
	if k.Kind == types.ComponentKind {
		return nil
	}
	check := patchCheck{fs: r, kustomization: path, dir: filepath.Dir(path)}
	for _, phase := range patchPhases {
		entries := phase.entries(k)
		for n := 0; n < len(entries); {
			if _, ok := check.jsonPatch(entries[n]); !ok {
				warnings = append(warnings, check.staleKeyedEntries(phase.upTo(k, n), entries[n])...)
				n++
				continue
			}
			runWarnings, next, err := check.run(phase.upTo(k, n), entries[n:])
			if err != nil {
				break // the rest of the phase cannot be followed
			}
			warnings = append(warnings, runWarnings...)
			n += max(next, 1) // a patch file that could not be read again is passed over
		}
	}
	return warnings
}

// run builds the objects as they are before entries[0], a JSON patch, and
// applies it and every JSON patch right after it to them in turn. It returns
// the warnings and how many entries it applied.
func (c patchCheck) run(before types.Kustomization, entries []types.Patch) (profile.Problems, int, error) {
	// The checks read the schema the build registered: no other build may
	// replace it until they are done.
	kustomizeRuns.Lock()
	defer kustomizeRuns.Unlock()
	state, err := c.build(before)
	if err != nil {
		return nil, 0, err
	}
	var warnings profile.Problems
	n := 0
	for ; n < len(entries); n++ {
		ops, ok := c.jsonPatch(entries[n])
		if !ok {
			break
		}
		warnings = append(warnings, c.apply(state, entries[n], ops)...)
	}
	return warnings, n, nil
}

// patchCheck checks the JSON patches of one kustomization.
type patchCheck struct {
	fs            *buildFS
	kustomization string // absolute path
	dir           string
}

// jsonPatch returns the operations of entry when kustomize reads it as a
// JSON patch: it does when the text does not parse as objects for a
// strategic merge and does parse as a list of operations.
func (c patchCheck) jsonPatch(entry types.Patch) ([]json.RawMessage, bool) {
	text := strings.TrimSpace(entry.Patch)
	if entry.Path != "" {
		content, err := newBuildFS(c.fs.ctx, c.fs.root, c.fs.limits).ReadFile(filepath.Join(c.dir, entry.Path))
		if err != nil {
			return nil, false
		}
		text = strings.TrimSpace(string(content))
	}
	if text == "" {
		return nil, false
	}
	if _, err := resmapFactory().RF().SliceFromBytes([]byte(text)); err == nil {
		return nil, false
	}
	data := []byte(text)
	if text[0] != '[' {
		var err error
		if data, err = yaml.YAMLToJSON(data); err != nil {
			return nil, false
		}
	}
	var ops []json.RawMessage
	if err := json.Unmarshal(data, &ops); err != nil || len(ops) == 0 {
		return nil, false
	}
	return ops, true
}

// build runs kustomize on the kustomization's directory with k in place of
// its kustomization file, on a file system of its own so that the build
// already done keeps its limits and records. The caller holds
// kustomizeRuns.
func (c patchCheck) build(k types.Kustomization) (resmap.ResMap, error) {
	content, err := yaml.Marshal(k)
	if err != nil {
		return nil, fmt.Errorf("encoding %s without its later patches: %w", c.fs.display(c.kustomization), err)
	}
	return newBuildFS(c.fs.ctx, c.fs.root, c.fs.limits).kustomize(c.dir, c.kustomization, content)
}

// apply applies the operations of one JSON patch entry to the objects of
// state it targets, one at a time, and returns a warning for each
// operation that addresses a keyed list by index. The caller holds
// kustomizeRuns.
func (c patchCheck) apply(state resmap.ResMap, entry types.Patch, ops []json.RawMessage) profile.Problems {
	if entry.Target == nil {
		return nil // kustomize refuses a JSON patch without a target
	}
	targets, err := state.Select(*entry.Target)
	if err != nil {
		return nil
	}
	var warnings profile.Problems
	for _, target := range targets {
		warnings = append(warnings, c.operationWarnings(target, entry, ops)...)
	}
	return warnings
}

// operationWarnings applies the operations of one JSON patch entry to one
// of its targets, one at a time, and returns a warning for each operation
// that addresses a keyed list by index. The caller holds kustomizeRuns.
func (c patchCheck) operationWarnings(target *resource.Resource, entry types.Patch, ops []json.RawMessage) profile.Problems {
	var warnings profile.Problems
	for _, op := range ops {
		var operation struct {
			Op   string `json:"op"`
			Path string `json:"path"`
			From string `json:"from"`
		}
		if err := json.Unmarshal(op, &operation); err != nil {
			break
		}
		for _, pointer := range []string{operation.From, operation.Path} {
			message := indexedKeyedEntries(target, pointer)
			if message == "" {
				continue
			}
			if operation.Op == "remove" && pointer == operation.Path {
				message += " ($patch: delete removes an entry)"
			}
			warnings = append(warnings, c.warning(target, entry, pointer, message))
		}
		if err := target.ApplyFilter(patchjson6902.Filter{Patch: "[" + string(op) + "]"}); err != nil {
			break // the build applied the patch, so this does not happen
		}
	}
	return warnings
}

func (c patchCheck) warning(target *resource.Resource, entry types.Patch, pointer, message string) profile.Problem {
	where := "patch " + pointer
	if entry.Path != "" {
		where += " in " + entry.Path
	}
	return profile.Problem{
		File: c.fs.display(c.kustomization),
		Kind: target.GetKind(), Namespace: target.GetNamespace(), Name: target.GetName(),
		Message: where + ": " + message,
	}
}

// indexedKeyedEntries follows the JSON pointer through res and, when it
// steps into a keyed list by index, says which entries the indices select
// and by which keys to name them instead; "" when it does not.
func indexedKeyedEntries(res *resource.Resource, pointer string) string {
	if !strings.HasPrefix(pointer, "/") {
		return ""
	}
	schema := openapi.SchemaForResourceType(kyaml.TypeMeta{APIVersion: res.GetApiVersion(), Kind: res.GetKind()})
	node := res.YNode()
	tokens := strings.Split(pointer[1:], "/")
	var entries, keys []string
	for i, token := range tokens {
		if schema == nil || node == nil {
			break
		}
		token = strings.ReplaceAll(strings.ReplaceAll(token, "~1", "/"), "~0", "~")
		if node.Kind == kyaml.MappingNode {
			node, schema = mappingValue(node, token), schema.Field(token)
			continue
		}
		if node.Kind != kyaml.SequenceNode {
			break
		}
		index, err := strconv.Atoi(token)
		if err != nil {
			break // "-" appends: no entry is addressed
		}
		if index < 0 {
			index += len(node.Content) // kustomize's JSON patch counts from the end
		}
		if index < 0 || index >= len(node.Content) {
			break
		}
		entry := node.Content[index]
		if listKeys := mergeKeys(schema); listKeys != nil {
			entries = append(entries, "/"+strings.Join(tokens[:i+1], "/")+" is "+describeEntry(entry, listKeys))
			keys = appendNew(keys, listKeys...)
		}
		node, schema = entry, schema.Elements()
	}
	if len(entries) == 0 {
		return ""
	}
	it := "it"
	if len(entries) > 1 {
		it = "them"
	}
	return fmt.Sprintf("%s; address %s by %s with a strategic-merge patch", andList(entries), it, andList(keys))
}

// describeEntry names a list entry by its key, or its keys with their names
// when there are several.
func describeEntry(entry *kyaml.Node, keys []string) string {
	if len(keys) == 1 {
		if value := mappingValue(entry, keys[0]); value != nil {
			return value.Value
		}
		return "an entry without " + keys[0]
	}
	parts := make([]string, len(keys))
	for i, key := range keys {
		value := ""
		if v := mappingValue(entry, key); v != nil {
			value = v.Value
		}
		parts[i] = key + "=" + value
	}
	return strings.Join(parts, ", ")
}

// appendNew appends the items list does not have yet.
func appendNew(list []string, items ...string) []string {
	for _, item := range items {
		if !slices.Contains(list, item) {
			list = append(list, item)
		}
	}
	return list
}

// andList joins items as "a", "a and b", "a, b and c".
func andList(items []string) string {
	if len(items) <= 1 {
		return strings.Join(items, "")
	}
	return strings.Join(items[:len(items)-1], ", ") + " and " + items[len(items)-1]
}

// staleKeyedEntries warns about the entries of a strategic-merge patch that
// name, by their key, a keyed list entry its target does not have (a
// version the base no longer lists, or lists under a new name), where that
// is a mistake kustomize passes over in silence: a $patch: delete of such
// an entry deletes nothing, and any other entry of it creates the entry
// from only what the patch says. A created entry is intended when it looks
// like the entries the list has (an overlay that adds a version writes it
// whole); it is partial, and warned about, when it lacks a field that every
// other entry of the list has (an image version without the architectures
// and cri its siblings all have): the sign of a patch written to change an
// entry that is no longer there. before is the kustomization as kustomize
// has applied it right before entry; only a patch that holds a list costs
// a build. The caller must not hold kustomizeRuns.
func (c patchCheck) staleKeyedEntries(before types.Kustomization, entry types.Patch) profile.Problems {
	text := entry.Patch
	if entry.Path != "" {
		content, err := newBuildFS(c.fs.ctx, c.fs.root, c.fs.limits).ReadFile(filepath.Join(c.dir, entry.Path))
		if err != nil {
			return nil
		}
		text = string(content)
	}
	patches, err := resmapFactory().RF().SliceFromBytes([]byte(text))
	if err != nil || !slices.ContainsFunc(patches, func(p *resource.Resource) bool { return holdsList(p.YNode()) }) {
		return nil
	}
	kustomizeRuns.Lock()
	defer kustomizeRuns.Unlock()
	state, err := c.build(before)
	if err != nil {
		return nil
	}
	var warnings profile.Problems
	for _, p := range patches {
		if !holdsList(p.YNode()) {
			continue
		}
		targets := state.Resources()
		if entry.Target != nil {
			if targets, err = state.Select(*entry.Target); err != nil {
				continue
			}
		}
		for _, target := range targets {
			if entry.Target == nil && (target.GetKind() != p.GetKind() || target.GetName() != p.GetName() ||
				p.GetNamespace() != "" && target.GetNamespace() != p.GetNamespace()) {
				continue
			}
			warnings = append(warnings, c.staleWarnings(target, entry, p)...)
		}
	}
	return warnings
}

// staleWarnings returns the warnings about the entries of patch, one
// object of a strategic-merge patch entry, that name an entry target (as
// the patch finds it) lacks; see staleKeyedEntries. The caller holds
// kustomizeRuns: the keys are read from kustomize's schema.
func (c patchCheck) staleWarnings(target *resource.Resource, entry types.Patch, patch *resource.Resource) profile.Problems {
	where := "strategic-merge patch"
	if entry.Path != "" {
		where += " " + entry.Path
	}
	schema := openapi.SchemaForResourceType(kyaml.TypeMeta{APIVersion: target.GetApiVersion(), Kind: target.GetKind()})
	messages := unmatchedEntries(patch.YNode(), target.YNode(), schema, "")
	warnings := make(profile.Problems, 0, len(messages))
	for _, message := range messages {
		warnings = append(warnings, profile.Problem{
			File: c.fs.display(c.kustomization),
			Kind: target.GetKind(), Namespace: target.GetNamespace(), Name: target.GetName(),
			Message: where + ": " + message,
		})
	}
	return warnings
}

// patchDirective is the strategic-merge patch's directive field.
const patchDirective = "$patch"

// holdsList reports whether node holds a list anywhere: only a list can
// hold a keyed entry.
func holdsList(node *kyaml.Node) bool {
	if node == nil {
		return false
	}
	return node.Kind == kyaml.SequenceNode || slices.ContainsFunc(node.Content, holdsList)
}

// unmatchedEntries follows patch through target (nil where target has
// nothing) and says, for each entry of a keyed list in patch whose key
// target's list lacks, when that is a mistake: a $patch: delete that
// deletes nothing, or an entry created without a field every other entry
// of the list has (see partialEntry). path is the JSON pointer of patch.
func unmatchedEntries(patch, target *kyaml.Node, schema *openapi.ResourceSchema, path string) []string {
	if patch == nil || schema == nil {
		return nil
	}
	var messages []string
	switch patch.Kind {
	case kyaml.MappingNode:
		for i := 0; i+1 < len(patch.Content); i += 2 {
			key := patch.Content[i].Value
			if strings.HasPrefix(key, "$") {
				continue
			}
			messages = append(messages, unmatchedEntries(patch.Content[i+1], mappingValue(target, key), schema.Field(key), path+"/"+key)...)
		}
	case kyaml.SequenceNode:
		keys := mergeKeys(schema)
		if keys == nil {
			return nil
		}
		for _, item := range patch.Content {
			if isDirectiveOnly(item) || strings.Trim(entryKey(item, keys), "\x00") == "" {
				continue // a list directive ($patch: replace), or an entry kustomize cannot match by key
			}
			var matched *kyaml.Node
			if target != nil {
				for _, candidate := range target.Content {
					if entryKey(candidate, keys) == entryKey(item, keys) {
						matched = candidate
						break
					}
				}
			}
			if v := mappingValue(item, patchDirective); v != nil && v.Value == "delete" {
				if matched == nil {
					messages = append(messages, fmt.Sprintf("$patch: delete of the %s entry %s deletes nothing: the target has no such entry; remove it from the patch",
						path, describeEntry(item, keys)))
				}
				continue
			}
			if matched == nil {
				if missing := partialEntry(item, target); len(missing) > 0 {
					messages = append(messages, fmt.Sprintf("the %s entry %s matches no entry of the target, so the patch creates it without %s, which every other entry of the list has; "+
						"if the base renamed or removed it, update the patch", path, describeEntry(item, keys), andList(missing)))
				}
			}
			// Inside an entry the patch creates, every list is new: only a
			// delete there (which deletes nothing) is worth a word.
			messages = append(messages, unmatchedEntries(item, matched, schema.Elements(), path+"/"+describeEntry(item, keys))...)
		}
	}
	return messages
}

// partialEntry returns the fields that every entry of siblings (the
// target's list, before the patch) has and created (the entry the patch
// creates) lacks, in the order of the first sibling; none when the list
// has no entry to compare with.
func partialEntry(created, siblings *kyaml.Node) []string {
	if siblings == nil || siblings.Kind != kyaml.SequenceNode || len(siblings.Content) == 0 {
		return nil
	}
	var missing []string
	first := siblings.Content[0]
	if first.Kind != kyaml.MappingNode {
		return nil
	}
	for i := 0; i+1 < len(first.Content); i += 2 {
		field := first.Content[i].Value
		if strings.HasPrefix(field, "$") || hasField(created, field) {
			continue
		}
		if !slices.ContainsFunc(siblings.Content, func(sibling *kyaml.Node) bool { return !hasField(sibling, field) }) {
			missing = append(missing, field)
		}
	}
	return missing
}

// hasField reports whether a mapping sets field to something other than null.
func hasField(node *kyaml.Node, field string) bool {
	v := mappingValue(node, field)
	return v != nil && (v.Kind != kyaml.ScalarNode || v.Tag != kyaml.NodeTagNull)
}

// isDirectiveOnly reports whether a list entry holds nothing but
// strategic-merge directives, as the entry "$patch: replace" does.
func isDirectiveOnly(item *kyaml.Node) bool {
	if item == nil || item.Kind != kyaml.MappingNode {
		return false
	}
	for i := 0; i < len(item.Content); i += 2 {
		if !strings.HasPrefix(item.Content[i].Value, "$") {
			return false
		}
	}
	return true
}
