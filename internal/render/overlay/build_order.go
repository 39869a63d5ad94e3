package overlay

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"

	"sigs.k8s.io/kustomize/api/resource"
	"sigs.k8s.io/kustomize/kyaml/openapi"
	"sigs.k8s.io/kustomize/kyaml/yaml"
)

// restoreKeyedListOrder puts the entries of every keyed list of the built
// objects back in the order of the file each object was read from.
//
// kustomize merges a strategic-merge patch into a keyed list by moving the
// entries the patch names to the front of the list, in the patch's order
// (kubernetes-sigs/kustomize#5904). For a profile that is more than
// cosmetic: a patch that retimes the supported stage of a version would put
// it before the preview stage, and the lifecycle would be refused for its
// rank order; a patch that retimes one version would move it to the top of
// the list, so that every problem reported about the versions after it
// names another index than the file. So every entry the source file has
// goes back to its place in the file's order, and an entry the file lacks
// (one a patch added) stays right after the entry it follows in kustomize's
// result, or first when nothing precedes it: an entry added by a
// strategic-merge patch follows the one named before it in the patch, an
// entry a JSON patch inserts keeps the place it was inserted at, and one
// appended stays last. Only lists that kustomize merges by key (the schema
// in effect gives them a merge strategy and keys) are touched, and nothing
// but the order of their entries changes. An overlay cannot reorder the
// entries its base has, which costs nothing: the order of a keyed list means
// nothing but a lifecycle's rank order, which the API fixes anyway.
//
// An object is found in its file by kind and name, or as the only object of
// its kind there (a name prefix or suffix changes the name); an object that
// did not come from a file of the repository is left as kustomize built it.
// The caller holds kustomizeRuns: the keys are read from kustomize's schema.
func (r *buildFS) restoreKeyedListOrder(target string, resources []*resource.Resource) error {
	sources := make(map[string][]sourceObject)
	for _, res := range resources {
		origin, err := res.GetOrigin()
		if err != nil || origin == nil || origin.Path == "" || origin.Repo != "" {
			continue
		}
		schema := openapi.SchemaForResourceType(yaml.TypeMeta{APIVersion: res.GetApiVersion(), Kind: res.GetKind()})
		if schema == nil {
			continue
		}
		path := filepath.Join(target, origin.Path)
		objects, parsed := sources[path]
		if !parsed {
			sourcesReadForOrder.Add(1)
			content, err := r.sourceContent(path)
			if err == nil {
				objects, err = parseSourceObjects(content)
			}
			if err != nil {
				return fmt.Errorf("reading %s again to keep the order of its lists: %w", r.display(path), err)
			}
			sources[path] = objects
		}
		if source := findSourceObject(objects, res); source != nil {
			restoreOrder(res.YNode(), source, schema)
		}
	}
	return nil
}

// sourceContent returns the file at path as kustomize read it, or reads it
// when kustomize reached it by another path (through a symbolic link).
func (r *buildFS) sourceContent(path string) ([]byte, error) {
	if content, ok := r.served[filepath.Clean(path)]; ok {
		return content, nil
	}
	return r.ReadFile(path)
}

// sourcesReadForOrder counts the source files restoreKeyedListOrder read
// again in this process: what tells the tests that a build without patches
// reads none.
var sourcesReadForOrder atomic.Int64

// sourceObject is an object of a source file: its kind, its name and its
// YAML.
type sourceObject struct {
	kind, name string
	node       *yaml.Node
}

// parseSourceObjects reads the objects of a source file. Only their order
// is read from them, so a plain YAML parse does, which costs a fraction of
// kustomize's (about half of a build's time went into reading the sources
// again). A file with anchors and aliases, or with a List, is read the way
// kustomize reads it, which resolves the aliases and expands the List.
func parseSourceObjects(content []byte) ([]sourceObject, error) {
	decoder := yaml.NewDecoder(bytes.NewReader(content))
	var objects []sourceObject
	for {
		var doc yaml.Node
		err := decoder.Decode(&doc)
		if errors.Is(err, io.EOF) {
			return objects, nil
		}
		if err != nil {
			return nil, err
		}
		if len(doc.Content) == 0 {
			continue
		}
		root := doc.Content[0]
		kind := mappingValue(root, "kind")
		if hasAlias(root) || (kind != nil && strings.HasSuffix(kind.Value, "List")) {
			return parseSourceObjectsAsKustomize(content)
		}
		object := sourceObject{node: root}
		if kind != nil {
			object.kind = kind.Value
		}
		if name := mappingValue(mappingValue(root, "metadata"), "name"); name != nil {
			object.name = name.Value
		}
		objects = append(objects, object)
	}
}

// parseSourceObjectsAsKustomize reads the objects of a source file as
// kustomize does.
func parseSourceObjectsAsKustomize(content []byte) ([]sourceObject, error) {
	resources, err := resmapFactory().RF().SliceFromBytes(content)
	if err != nil {
		return nil, err
	}
	objects := make([]sourceObject, len(resources))
	for i, res := range resources {
		objects[i] = sourceObject{kind: res.GetKind(), name: res.GetName(), node: res.YNode()}
	}
	return objects, nil
}

// hasAlias tells whether node or any node below it is an alias.
func hasAlias(node *yaml.Node) bool {
	if node.Kind == yaml.AliasNode {
		return true
	}
	return slices.ContainsFunc(node.Content, hasAlias)
}

// findSourceObject finds res among the objects of its source file.
func findSourceObject(objects []sourceObject, res *resource.Resource) *yaml.Node {
	var sameKind []*yaml.Node
	for _, object := range objects {
		if object.kind != res.GetKind() {
			continue
		}
		if object.name == res.GetName() {
			return object.node
		}
		sameKind = append(sameKind, object.node)
	}
	if len(sameKind) == 1 {
		return sameKind[0]
	}
	return nil
}

// restoreOrder reorders the keyed lists of built after the order they have
// in source, the same value as written in the file, descending along
// schema.
func restoreOrder(built, source *yaml.Node, schema *openapi.ResourceSchema) {
	if schema == nil || source == nil {
		return
	}
	switch {
	case built.Kind == yaml.MappingNode && source.Kind == yaml.MappingNode:
		for i := 0; i+1 < len(built.Content); i += 2 {
			field := built.Content[i].Value
			restoreOrder(built.Content[i+1], mappingValue(source, field), schema.Field(field))
		}
	case built.Kind == yaml.SequenceNode && source.Kind == yaml.SequenceNode:
		keys := mergeKeys(schema)
		if keys == nil {
			return // replaced whole by a patch: its order is the patch's
		}
		elements := schema.Elements()
		sourceIndex := make(map[string]int, len(source.Content))
		for i, entry := range source.Content {
			if _, seen := sourceIndex[entryKey(entry, keys)]; !seen {
				sourceIndex[entryKey(entry, keys)] = i
			}
		}
		built.Content = inSourceOrder(built.Content, func(entry *yaml.Node) (int, bool) {
			i, ok := sourceIndex[entryKey(entry, keys)]
			return i, ok
		}, len(source.Content))
		for _, entry := range built.Content {
			if i, ok := sourceIndex[entryKey(entry, keys)]; ok {
				restoreOrder(entry, source.Content[i], elements)
			}
		}
	}
}

// inSourceOrder returns entries with those the source has (sourceIndex
// says where) in the source's order; every other entry follows the nearest
// entry before it that the source has, or comes first.
func inSourceOrder(entries []*yaml.Node, sourceIndex func(*yaml.Node) (int, bool), sourceLen int) []*yaml.Node {
	// following[i+1] are the added entries after the source's entry i;
	// following[0] those before any of the source's entries.
	following := make([][]*yaml.Node, sourceLen+1)
	fromSource := make([]*yaml.Node, sourceLen)
	present := make([]bool, sourceLen)
	anchor := 0
	for _, entry := range entries {
		i, ok := sourceIndex(entry)
		if !ok || present[i] {
			// An entry the source lacks, or a second entry of one key (which
			// the schema check refuses): it stays after its predecessor.
			following[anchor] = append(following[anchor], entry)
			continue
		}
		fromSource[i], present[i] = entry, true
		anchor = i + 1
	}
	ordered := make([]*yaml.Node, 0, len(entries))
	ordered = append(ordered, following[0]...)
	for i := range fromSource {
		if present[i] {
			ordered = append(ordered, fromSource[i])
		}
		ordered = append(ordered, following[i+1]...)
	}
	return ordered
}

// mergeKeys returns the keys by which kustomize merges the entries of the
// list schema describes, or nil when it replaces the list whole.
func mergeKeys(schema *openapi.ResourceSchema) []string {
	strategy, keys := schema.PatchStrategyAndKeyList()
	if !slices.Contains(strings.Split(strategy, ","), "merge") || len(keys) == 0 || keys[0] == "" {
		return nil
	}
	return keys
}

// entryKey identifies a list entry by the values of keys, as kustomize
// matches entries.
func entryKey(entry *yaml.Node, keys []string) string {
	values := make([]string, len(keys))
	for i, key := range keys {
		if value := mappingValue(entry, key); value != nil {
			values[i] = value.Value
		}
	}
	return strings.Join(values, "\x00")
}

// mappingValue returns the value of field in a mapping node, or nil.
func mappingValue(node *yaml.Node, field string) *yaml.Node {
	if node == nil || node.Kind != yaml.MappingNode {
		return nil
	}
	for i := 0; i+1 < len(node.Content); i += 2 {
		if node.Content[i].Value == field {
			return node.Content[i+1]
		}
	}
	return nil
}
