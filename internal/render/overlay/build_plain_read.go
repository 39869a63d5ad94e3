package overlay

import (
	"bytes"
	"strings"

	"sigs.k8s.io/kustomize/api/konfig"
	"sigs.k8s.io/kustomize/api/resource"
	"sigs.k8s.io/kustomize/kyaml/kio"
	"sigs.k8s.io/kustomize/kyaml/resid"
	"sigs.k8s.io/kustomize/kyaml/yaml"
)

// readObjects parses a resource file into the objects kustomize's
// resource factory makes of it (Factory.SliceFromBytes), with kustomize's
// own reader, but without the step of that reader that resolves anchors,
// aliases and merge keys (RNode.DeAnchor) when the file has none of them.
// That step copies every mapping of every object, and each mapping again
// for each mapping above it: it was a third of the CPU of building the
// bench landscape (docs/performance.md, "Reading each file without
// kustomize's copy"), to give back the tree it was given.
//
// The step rebuilds each mapping by setting each of its keys, in order, on
// a copy of it: when no node is an alias or defines an anchor and no key
// is a merge key ("<<"), that gives back the mapping as parsed. readObjects
// reads with the factory itself when the file has any of them, and also
// when a mapping has a key that is not a scalar or repeats another's value
// (where the rebuild's outcome depends on how it matches keys), and for
// what the factory does after reading that readObjects does not repeat: an
// object without a kind or name (the factory's error), a list with an
// empty item, a List to expand, or an object marked as local
// configuration. FuzzReadObjectsReadsAsKustomizesFactory holds that both
// give the same objects and the same errors.
//
// parsed, when not nil, is content as kustomize's reader parses it, parsed
// already by the typing check (checkAndCountResourceFile): its documents
// are taken instead of parsing content again, and the caller gives them up.
func readObjects(factory *resource.Factory, content []byte, parsed *parsedResourceFile) ([]*resource.Resource, error) {
	var nodes []*yaml.RNode
	ok := false
	if parsed != nil {
		nodes, ok = parsed.objectNodes()
	}
	if !ok {
		resourceFileParses.Add(1)
		reader := &kio.ByteReader{OmitReaderAnnotations: true, Reader: bytes.NewReader(content)}
		var err error
		if nodes, err = reader.Read(); err != nil {
			return readByTheFactory(factory, content)
		}
	}
	for _, node := range nodes {
		if !readAsParsed(node) {
			return readByTheFactory(factory, content)
		}
	}
	return factory.ResourcesFromRNodes(nodes)
}

// readByTheFactory reads content with kustomize's resource factory, which
// parses it again.
func readByTheFactory(factory *resource.Factory, content []byte) ([]*resource.Resource, error) {
	resourceFileParses.Add(1)
	return factory.SliceFromBytes(content)
}

// readAsParsed reports whether the factory would keep node as the reader
// parsed it and make one object of it; see readObjects.
func readAsParsed(node *yaml.RNode) bool {
	if node.IsNilOrEmpty() || !withoutAnchors(node.YNode()) {
		return false
	}
	metadata, err := node.GetValidatedMetadata()
	if err != nil || strings.HasSuffix(metadata.Kind, "List") {
		return false
	}
	if _, local := metadata.Annotations[konfig.IgnoredByKustomizeAnnotation]; local {
		return false
	}
	nilEntry, _ := node.HasNilEntryInList()
	return !nilEntry
}

// withoutAnchors reports whether resolving the anchors, aliases and merge
// keys of the tree under node leaves it as it is: see readObjects.
func withoutAnchors(node *yaml.Node) bool {
	if node.Anchor != "" || node.Kind == yaml.AliasNode {
		return false
	}
	if node.Kind == yaml.MappingNode {
		if len(node.Content)%2 != 0 {
			return false
		}
		// Most mappings of a profile have a few keys; a long one (a hostile
		// file's) is checked with a set, not pair by pair.
		var keys map[string]bool
		if len(node.Content) > 32 {
			keys = make(map[string]bool, len(node.Content)/2)
		}
		for i := 0; i < len(node.Content); i += 2 {
			key := node.Content[i]
			if key.Kind != yaml.ScalarNode || key.Anchor != "" || key.Tag == yaml.MergeTag {
				return false
			}
			if keys != nil {
				if keys[key.Value] {
					return false
				}
				keys[key.Value] = true
			} else {
				for j := 0; j < i; j += 2 {
					if node.Content[j].Value == key.Value {
						return false
					}
				}
			}
			if !withoutAnchors(node.Content[i+1]) {
				return false
			}
		}
		return true
	}
	for _, child := range node.Content {
		if !withoutAnchors(child) {
			return false
		}
	}
	return true
}

// fileEntry is one entry of a resource file on the linear path: an object
// made of it, or a piece of it taken from the previous build (reused),
// whose documents come in its place; piece is the piece it was read from,
// when the file was read piece by piece.
type fileEntry struct {
	object *resource.Resource
	reused *ReusablePiece
	piece  int
}

// readEntries reads the objects of a use of a resource file, parsed being
// the planning's parse of it, if held. piecewise says that the entries
// name their pieces (file.read.pieces), which the next build may then
// reuse: when the file has at least two pieces and every object is made
// of its own piece's document (readPieces). Otherwise the file is read as
// readObjects reads it, as it was parsed, or parsed again where the
// planning took pieces of the previous build, whose documents it did not
// parse.
func (r *buildFS) readEntries(factory *resource.Factory, file plannedFile, parsed *parsedResourceFile) (entries []fileEntry, piecewise bool, err error) {
	if parsed != nil && len(parsed.pieces) >= 2 && len(file.read.pieces) == len(parsed.pieces) {
		entries, ok, made := readPieces(factory, parsed)
		if ok {
			return entries, true, nil
		}
		if made {
			parsed = nil // the factory took its documents
		}
	}
	if parsed != nil && parsed.reusesPieces() {
		parsed = nil
	}
	objects, err := readObjects(factory, r.served[file.abs], parsed)
	if err != nil {
		return nil, false, err
	}
	entries = make([]fileEntry, len(objects))
	for i, object := range objects {
		entries[i] = fileEntry{object: object, piece: -1}
	}
	return entries, false, nil
}

// readPieces makes the objects of a file of at least two pieces piece by
// piece, as objectNodes and readObjects make them, the pieces the planning
// took from the previous build in their places; ok is false where an
// object would not be its piece's document as parsed, or not of a kind the
// linear path builds (a List, which kustomize expands after the file's
// other objects, among them), and made says whether the factory was given
// the documents (which must then not be read again).
func readPieces(factory *resource.Factory, parsed *parsedResourceFile) (entries []fileEntry, ok, made bool) {
	var nodes []*yaml.RNode
	var at []int
	for i, piece := range parsed.pieces {
		if piece.reused != nil {
			entries = append(entries, fileEntry{reused: piece.reused, piece: i})
			continue
		}
		node := documentNode(parsed.documents[i])
		if node == nil {
			continue
		}
		meta, err := node.GetMeta()
		if err != nil || !readAsParsed(node) {
			return nil, false, false
		}
		group, version := resid.ParseGroupVersion(meta.APIVersion)
		if !plainKinds[typeMeta{group: group, version: version, kind: meta.Kind}] {
			return nil, false, false
		}
		entries = append(entries, fileEntry{piece: i})
		at, nodes = append(at, len(entries)-1), append(nodes, node)
	}
	objects, err := factory.ResourcesFromRNodes(nodes)
	if err != nil || len(objects) != len(nodes) {
		return nil, false, true
	}
	for j, object := range objects {
		entries[at[j]].object = object
	}
	return entries, true, true
}
