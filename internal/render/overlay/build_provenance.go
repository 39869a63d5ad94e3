package overlay

import (
	"fmt"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"

	"sigs.k8s.io/kustomize/api/resmap"
	"sigs.k8s.io/kustomize/api/types"
	"sigs.k8s.io/kustomize/kyaml/openapi"
	kyaml "sigs.k8s.io/kustomize/kyaml/yaml"
	"sigs.k8s.io/yaml"

	"github.com/profilesync/profilesync/internal/render/profile"
)

// patchStep is one patch entry of one kustomization of the build.
type patchStep struct {
	kustomization string // absolute path
	json6902      bool   // an entry of patchesJson6902 rather than of patches
	index         int
	patch         types.Patch
	// order is where kustomize applies the entry among the build's
	// patches: a base's before those of the overlay that lists it, a
	// kustomization's in the order it lists them.
	order int
}

// patchedKustomization is a kustomization of the build that has patches.
type patchedKustomization struct {
	top     bool
	content types.Kustomization
}

// fieldSources finds, for every object of the build, the fields that
// patches set and the patch that set each (profile.FieldSource), so that a
// problem of such a field names the patch rather than the base file, where
// the value is not.
//
// kustomize says which file an object came from (its origin annotation),
// but not which patch set which field, so the patches are applied again in
// the build's own accounting: the target is built once with none of them,
// then with each one more, in the order kustomize applies them (a base's
// before the overlay's that lists it, a kustomization's patches in order,
// its patchesJson6902 after them), and each build is compared with the next
// field by field, list entries matched by their merge keys. A field that
// one more patch adds or changes was set by that patch; a later patch that
// sets it again, or sets an entry holding it, takes it over. A patch that
// sets a field to the value it had sets nothing: the value is its file's.
// A component's patches are steps too, named by the component's files.
//
// It costs one build of the target per patch entry. Like the warnings, it
// never fails the build: when one of its builds fails (or ctx ends), it
// returns nothing, and problems name the object's file as before. The
// caller must not hold kustomizeRuns.
func (r *buildFS) fieldSources(target string, docs []profile.Document) (sources [][]profile.FieldSource) {
	defer func() {
		if recover() != nil {
			sources = nil // kustomize panicked: no field is attributed
		}
	}()
	kustomizationPath, content, err := topKustomization(newBuildFS(r.ctx, r.root, r.limits), target)
	if err != nil {
		return nil
	}
	kustomizations := make(map[string]*patchedKustomization)
	steps := r.patchSteps(kustomizationPath, content, true, kustomizations, nil)
	if len(steps) == 0 {
		return nil
	}
	final, err := builtNodes(docs)
	if err != nil {
		return nil
	}
	replay := patchReplay{target: target, kustomizationPath: kustomizationPath, topContent: content, kustomizations: kustomizations, steps: steps}
	kustomizeRuns.Lock()
	defer kustomizeRuns.Unlock()
	before, err := r.buildWithFirstPatches(replay, 0)
	if err != nil {
		return nil
	}
	recorded := make(map[string]*objectSources)
	for n := range steps {
		after := final
		if n+1 < len(steps) {
			if after, err = r.buildWithFirstPatches(replay, n+1); err != nil {
				return nil
			}
		}
		for id, node := range after {
			schema := openapi.SchemaForResourceType(kyaml.TypeMeta{APIVersion: stringAt(node, "apiVersion"), Kind: stringAt(node, "kind")})
			if schema == nil {
				continue
			}
			sourcesOf := recorded[id]
			if sourcesOf == nil {
				sourcesOf = &objectSources{}
				recorded[id] = sourcesOf
			}
			changedFields(before[id], node, schema, nil, func(path keyedPath) { sourcesOf.set(path, n) })
		}
		before = after
	}
	sources = make([][]profile.FieldSource, len(docs))
	for i, doc := range docs {
		node, err := kyaml.Parse(string(doc.Data))
		if err != nil {
			continue
		}
		sources[i] = r.describeSources(node.YNode(), recorded[objectID(node.YNode())], steps)
	}
	return sources
}

// describeSources names, in the built object node, the fields recorded
// and the patch of steps that set each (see describe), in the order of
// the fields in node.
func (r *buildFS) describeSources(node *kyaml.Node, recorded *objectSources, steps []patchStep) []profile.FieldSource {
	if recorded == nil {
		return nil
	}
	type resolved struct {
		source   recordedSource
		field    string
		position []int
	}
	var fields []resolved
	for _, s := range recorded.sorted() {
		field, position, ok := s.path.resolve(node)
		if !ok {
			continue // a later patch deleted it
		}
		fields = append(fields, resolved{source: s, field: field, position: position})
	}
	// By the patch, in kustomize's order, then as the object writes them.
	slices.SortStableFunc(fields, func(a, b resolved) int {
		if order := steps[a.source.step].order - steps[b.source.step].order; order != 0 {
			return order
		}
		return slices.Compare(a.position, b.position)
	})
	var out []profile.FieldSource
	for _, f := range fields {
		out = append(out, r.describe(steps[f.source.step], f.source.path, f.field))
	}
	return out
}

// patchSteps lists the patch entries of the kustomization at path (content)
// and of the kustomizations it builds on, in the order kustomize applies
// them, and records in kustomizations those that have patches. chain are
// the kustomizations that lead to it.
func (r *buildFS) patchSteps(path string, content []byte, top bool, kustomizations map[string]*patchedKustomization, chain []string) []patchStep {
	if slices.Contains(chain, path) || len(chain) >= maxPlanDepth {
		return nil
	}
	var k types.Kustomization
	if err := k.Unmarshal(content); err != nil {
		return nil
	}
	k.FixKustomization()
	dir := filepath.Dir(path)
	var steps []patchStep
	// A component's patches apply to what the kustomization that lists it
	// has accumulated, once its resources and the components before it are
	// in: they come after those steps and before that kustomization's own.
	for _, entry := range k.Resources {
		steps = append(steps, r.directorySteps(dir, entry, kustomizations, append(slices.Clip(chain), path))...)
	}
	for _, entry := range k.Components {
		steps = append(steps, r.directorySteps(dir, entry, kustomizations, append(slices.Clip(chain), path))...)
	}
	for i, patch := range k.Patches {
		steps = append(steps, patchStep{kustomization: path, index: i, patch: patch})
	}
	for i, patch := range k.PatchesJson6902 {
		steps = append(steps, patchStep{kustomization: path, json6902: true, index: i, patch: patch})
	}
	if top {
		for i := range steps {
			steps[i].order = i
		}
	}
	if len(k.Patches)+len(k.PatchesJson6902) > 0 {
		kustomizations[path] = &patchedKustomization{top: top, content: k}
	}
	return steps
}

// directorySteps are the patch steps of a resources or components entry
// that is a directory with a kustomization; none for a file.
func (r *buildFS) directorySteps(dir, entry string, kustomizations map[string]*patchedKustomization, chain []string) []patchStep {
	if entry == "" || isNetworkLocation(entry) || filepath.IsAbs(entry) || !r.IsDir(filepath.Join(dir, entry)) {
		return nil
	}
	confirmed, _, err := r.CleanedAbs(filepath.Join(dir, entry))
	if err != nil {
		return nil
	}
	for _, name := range kustomizationFileNames {
		path := filepath.Join(string(confirmed), name)
		if !r.Exists(path) {
			continue
		}
		content, err := newBuildFS(r.ctx, r.root, r.limits).ReadFile(path)
		if err != nil {
			return nil
		}
		return r.patchSteps(path, content, false, kustomizations, chain)
	}
	return nil
}

// patchReplay is what fieldSources builds again: the target, its
// kustomization (path and content), the kustomizations of the build that
// have patches, and the patch steps in the order kustomize applies them.
type patchReplay struct {
	target, kustomizationPath string
	topContent                []byte
	kustomizations            map[string]*patchedKustomization
	steps                     []patchStep
}

// buildWithFirstPatches builds target with only the first n of steps in
// their kustomizations, and returns the objects by objectID. The caller
// holds kustomizeRuns.
func (r *buildFS) buildWithFirstPatches(replay patchReplay, n int) (map[string]*kyaml.Node, error) {
	build := newBuildFS(r.ctx, r.root, r.limits)
	topContent, steps := replay.topContent, replay.steps
	for path, patched := range replay.kustomizations {
		k := patched.content
		k.Patches, k.PatchesJson6902 = nil, nil
		for _, step := range steps[:n] {
			if step.kustomization != path {
				continue
			}
			if step.json6902 {
				k.PatchesJson6902 = append(k.PatchesJson6902, step.patch)
			} else {
				k.Patches = append(k.Patches, step.patch)
			}
		}
		if k.CheckEmpty() != nil {
			// A component of nothing but patches, without them: kustomize
			// refuses an empty kustomization, and a name changes nothing.
			k.MetaData = &types.ObjectMeta{Name: "without-its-patches"}
		}
		content, err := yaml.Marshal(k)
		if err != nil {
			return nil, fmt.Errorf("encoding %s with its first patches: %w", r.display(path), err)
		}
		if patched.top {
			topContent = content
		} else {
			build.virtual[path] = content
		}
	}
	built, err := build.kustomize(replay.target, replay.kustomizationPath, topContent)
	if err != nil {
		return nil, err
	}
	return resourceNodes(built)
}

// resourceNodes are the objects of a build by objectID.
func resourceNodes(built resmap.ResMap) (map[string]*kyaml.Node, error) {
	nodes := make(map[string]*kyaml.Node, built.Size())
	for _, res := range built.Resources() {
		if err := res.SetOrigin(nil); err != nil {
			return nil, err
		}
		node := res.YNode()
		nodes[objectID(node)] = node
	}
	return nodes, nil
}

// builtNodes are the documents of the build by objectID.
func builtNodes(docs []profile.Document) (map[string]*kyaml.Node, error) {
	nodes := make(map[string]*kyaml.Node, len(docs))
	for _, doc := range docs {
		node, err := kyaml.Parse(string(doc.Data))
		if err != nil {
			return nil, err
		}
		nodes[objectID(node.YNode())] = node.YNode()
	}
	return nodes, nil
}

// objectID identifies an object of a build by kind, namespace and name.
func objectID(node *kyaml.Node) string {
	metadata := mappingValue(node, "metadata")
	return stringAt(node, "kind") + "/" + stringAt(metadata, "namespace") + "/" + stringAt(metadata, "name")
}

// stringAt is the scalar value of field in a mapping, or "".
func stringAt(node *kyaml.Node, field string) string {
	if v := mappingValue(node, field); v != nil && v.Kind == kyaml.ScalarNode {
		return v.Value
	}
	return ""
}

// keyedStep is one step of a keyedPath: a field of a mapping, or the entry
// of a keyed list whose merge keys have the values key.
type keyedStep struct {
	field string
	keys  []string // the list's merge keys; nil for a field
	key   string   // entryKey of the entry
}

// keyedPath is a field's path with list entries named by their merge keys,
// so that it names the same field in every build, wherever a patch moved
// the entry.
type keyedPath []keyedStep

// String is the path in a form only used to tell paths apart.
func (p keyedPath) String() string {
	var b strings.Builder
	for _, step := range p {
		if step.keys == nil {
			b.WriteString("." + step.field)
		} else {
			b.WriteString("[" + strconv.Quote(step.key) + "]")
		}
	}
	return b.String()
}

// named is the path with each list entry named by its keys' values, as
// FieldSource.KeyedField has it: spec.kubernetes.versions (1.30.0).expirationDate.
func (p keyedPath) named() string {
	var b strings.Builder
	for _, step := range p {
		if step.keys == nil {
			if b.Len() > 0 {
				b.WriteByte('.')
			}
			b.WriteString(step.field)
			continue
		}
		b.WriteString(" (" + strings.Join(strings.Split(step.key, "\x00"), ", ") + ")")
	}
	return b.String()
}

// resolve returns the path in node as problems name fields, list entries by
// their index (spec.kubernetes.versions[3].expirationDate), and where it
// is in node: the index of each step in its mapping or list, which orders
// fields as node writes them; false when node has no such field.
func (p keyedPath) resolve(node *kyaml.Node) (string, []int, bool) {
	var b strings.Builder
	position := make([]int, 0, len(p))
	for _, step := range p {
		if step.keys == nil {
			if node == nil || node.Kind != kyaml.MappingNode {
				return "", nil, false
			}
			index := -1
			for i := 0; i+1 < len(node.Content); i += 2 {
				if node.Content[i].Value == step.field {
					index = i
					break
				}
			}
			if index < 0 {
				return "", nil, false
			}
			node = node.Content[index+1]
			position = append(position, index/2)
			if b.Len() > 0 {
				b.WriteByte('.')
			}
			b.WriteString(step.field)
			continue
		}
		if node == nil || node.Kind != kyaml.SequenceNode {
			return "", nil, false
		}
		index := slices.IndexFunc(node.Content, func(entry *kyaml.Node) bool { return entryKey(entry, step.keys) == step.key })
		if index < 0 {
			return "", nil, false
		}
		node = node.Content[index]
		position = append(position, index)
		b.WriteString("[" + strconv.Itoa(index) + "]")
	}
	return b.String(), position, true
}

// changedFields calls record with the path of every field of after that
// before lacks or holds with another value: the field itself where it is a
// scalar, a list without merge keys, or missing in before; the fields below
// it otherwise. Entries of keyed lists are matched by their keys.
func changedFields(before, after *kyaml.Node, schema *openapi.ResourceSchema, path keyedPath, record func(keyedPath)) {
	if after == nil {
		return
	}
	if before == nil || before.Kind != after.Kind {
		record(path)
		return
	}
	switch after.Kind {
	case kyaml.MappingNode:
		for i := 0; i+1 < len(after.Content); i += 2 {
			field := after.Content[i].Value
			var fieldSchema *openapi.ResourceSchema
			if schema != nil {
				fieldSchema = schema.Field(field)
			}
			changedFields(mappingValue(before, field), after.Content[i+1], fieldSchema, append(slices.Clip(path), keyedStep{field: field}), record)
		}
	case kyaml.SequenceNode:
		var keys []string
		if schema != nil {
			keys = mergeKeys(schema)
		}
		if keys == nil {
			if !sameNode(before, after) {
				record(path)
			}
			return
		}
		for _, entry := range after.Content {
			key := entryKey(entry, keys)
			var matched *kyaml.Node
			if index := slices.IndexFunc(before.Content, func(candidate *kyaml.Node) bool { return entryKey(candidate, keys) == key }); index >= 0 {
				matched = before.Content[index]
			}
			changedFields(matched, entry, schema.Elements(), append(slices.Clip(path), keyedStep{keys: keys, key: key}), record)
		}
	default:
		if !sameNode(before, after) {
			record(path)
		}
	}
}

// sameNode reports whether two nodes hold the same YAML value, whatever
// their style: a build writes a flow list as a block and quotes scalars its
// own way, which sets no field.
func sameNode(a, b *kyaml.Node) bool {
	var aValue, bValue any
	if a.Decode(&aValue) != nil || b.Decode(&bValue) != nil {
		return false
	}
	return reflect.DeepEqual(aValue, bValue)
}

// objectSources are the fields patches set in one object, with the step
// that set each last.
type objectSources struct {
	byPath map[string]recordedSource
	order  []string
}

type recordedSource struct {
	path keyedPath
	step int
}

// set records that step set the field at path, and with it everything
// below: what an earlier step set there is its no longer.
func (o *objectSources) set(path keyedPath, step int) {
	if len(path) == 0 {
		return // a whole object is not a patch's doing
	}
	if o.byPath == nil {
		o.byPath = make(map[string]recordedSource)
	}
	key := path.String()
	for _, other := range o.order {
		if other != key && strings.HasPrefix(other, key) && (other[len(key)] == '.' || other[len(key)] == '[') {
			delete(o.byPath, other)
		}
	}
	if _, seen := o.byPath[key]; !seen {
		o.order = append(o.order, key)
	}
	o.byPath[key] = recordedSource{path: path, step: step}
	o.order = slices.DeleteFunc(o.order, func(k string) bool { _, kept := o.byPath[k]; return !kept })
}

// sorted returns the recorded sources in the order they were first seen.
func (o *objectSources) sorted() []recordedSource {
	out := make([]recordedSource, 0, len(o.order))
	for _, key := range o.order {
		out = append(out, o.byPath[key])
	}
	return out
}

// describe names the patch of step for a problem of field (the path as
// problems name it): the file that holds it and, in Patch, its entry in
// the kustomization when it is written inline, and the entry of the patch
// that names the list entry holding the field by its key.
func (r *buildFS) describe(step patchStep, path keyedPath, field string) profile.FieldSource {
	source := profile.FieldSource{Field: field, KeyedField: path.named(), File: r.display(step.kustomization)}
	var parts []string
	text := step.patch.Patch
	if step.patch.Path != "" {
		abs := filepath.Join(filepath.Dir(step.kustomization), step.patch.Path)
		source.File = r.display(abs)
		content, err := newBuildFS(r.ctx, r.root, r.limits).ReadFile(abs)
		if err != nil {
			return source
		}
		text = string(content)
	} else {
		list := "patches"
		if step.json6902 {
			list = "patchesJson6902"
		}
		parts = append(parts, fmt.Sprintf("%s[%d]", list, step.index))
	}
	if entry := patchEntryOf(text, path); entry != "" {
		if step.patch.Path != "" {
			parts = append(parts, "the patch's entry "+entry)
		} else {
			parts = append(parts, "entry "+entry)
		}
	}
	source.Patch = strings.Join(parts, ", ")
	return source
}

// patchEntryOf names the entry of a strategic-merge patch that holds the
// field at path: the path down to the last keyed list entry on it that the
// patch names, list entries by their key values
// (spec.machineImages (ubuntu).versions (22.4.0)); "" when the patch is no
// strategic-merge patch, names no list entry on the path, or holds several
// objects that could be the one.
func patchEntryOf(text string, path keyedPath) string {
	patches, err := resmapFactory().RF().SliceFromBytes([]byte(text))
	if err != nil || len(patches) != 1 {
		return ""
	}
	node := patches[0].YNode()
	var b strings.Builder
	named := ""
	for _, step := range path {
		if step.keys == nil {
			if node = mappingValue(node, step.field); node == nil {
				break
			}
			if b.Len() > 0 {
				b.WriteByte('.')
			}
			b.WriteString(step.field)
			continue
		}
		if node == nil || node.Kind != kyaml.SequenceNode {
			break
		}
		index := slices.IndexFunc(node.Content, func(entry *kyaml.Node) bool { return entryKey(entry, step.keys) == step.key })
		if index < 0 {
			break
		}
		node = node.Content[index]
		b.WriteString(" (" + strings.Join(strings.Split(step.key, "\x00"), ", ") + ")")
		named = b.String()
	}
	return named
}
