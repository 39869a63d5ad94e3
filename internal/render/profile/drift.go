package profile

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"sort"
	"strconv"
	"strings"

	structuralschema "k8s.io/apiextensions-apiserver/pkg/apiserver/schema"
	"k8s.io/apimachinery/pkg/api/equality"
)

// DriftedFields lists the fields of desired (an object of kind, or a part
// of one at prefix, as unstructured data) that live does not have as
// desired has them: the fields Git sets that were changed or removed on the
// cluster. Fields only live has are not drift: Git does not own them, and
// server-side apply leaves them to whoever set them.
//
// A path names the field as the user wrote it: an entry of a keyed list by
// its index in desired and its key, "spec.kubernetes.versions[2]
// (1.33.7).lifecycle[0] (deprecated).startTime"; an atomic list (and a
// scalar) as a whole. Paths are in the order of desired's fields.

// ListTypeMap is the x-kubernetes-list-type of a list whose entries are
// keyed (by x-kubernetes-list-map-keys): versions by version, stages by
// classification, images, types and regions by name.
const ListTypeMap = "map"

func DriftedFields(kind, prefix string, desired, live map[string]any) ([]string, error) {
	s, err := schemaOf(kind)
	if err != nil {
		return nil, err
	}
	node := s.structural
	for _, name := range strings.Split(prefix, ".") {
		if node == nil {
			break
		}
		child, ok := node.Properties[name]
		if !ok {
			node = nil
			break
		}
		node = &child
	}
	var paths []string
	driftOf(node, prefix, desired, live, &paths)
	return paths, nil
}

func driftOf(node *structuralschema.Structural, path string, desired, live any, paths *[]string) {
	if equality.Semantic.DeepEqual(desired, live) {
		return
	}
	switch d := desired.(type) {
	case map[string]any:
		l, ok := live.(map[string]any)
		if !ok {
			*paths = append(*paths, path)
			return
		}
		keys := make([]string, 0, len(d))
		for k := range d {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			driftOf(propertyOf(node, k), path+"."+k, d[k], l[k], paths)
		}
	case []any:
		l, ok := live.([]any)
		keys := listMapKeys(node)
		if !ok || len(keys) == 0 {
			*paths = append(*paths, path)
			return
		}
		byKey := make(map[string]any, len(l))
		for _, entry := range l {
			if key, ok := keyOfEntry(entry, keys); ok {
				byKey[key] = entry
			}
		}
		for i, entry := range d {
			key, ok := keyOfEntry(entry, keys)
			entryPath := fmt.Sprintf("%s[%d]", path, i)
			if ok {
				entryPath += " (" + key + ")"
			}
			liveEntry, found := byKey[key]
			if !ok || !found {
				*paths = append(*paths, entryPath)
				continue
			}
			driftOf(node.Items, entryPath, entry, liveEntry, paths)
		}
	default:
		*paths = append(*paths, path)
	}
}

func propertyOf(node *structuralschema.Structural, name string) *structuralschema.Structural {
	if node == nil {
		return nil
	}
	if child, ok := node.Properties[name]; ok {
		return &child
	}
	if node.AdditionalProperties != nil {
		return node.AdditionalProperties.Structural
	}
	return nil
}

// listMapKeys are the keys of a list of type map, none for other lists.
func listMapKeys(node *structuralschema.Structural) []string {
	if node == nil || node.XListType == nil || *node.XListType != ListTypeMap || node.Items == nil {
		return nil
	}
	return node.XListMapKeys
}

// keyOfEntry is the key of a keyed list's entry as a user reads it: the
// values of the key fields, comma-separated.
func keyOfEntry(entry any, keys []string) (string, bool) {
	m, ok := entry.(map[string]any)
	if !ok {
		return "", false
	}
	values := make([]string, 0, len(keys))
	for _, k := range keys {
		switch v := m[k].(type) {
		case string:
			values = append(values, v)
		case int64:
			values = append(values, strconv.FormatInt(v, 10))
		case nil:
			// An absent key field: server-side apply takes its default.
		default:
			values = append(values, fmt.Sprint(v))
		}
	}
	return strings.Join(values, ","), len(values) > 0
}

// ContentDigest is a digest of what Git says of o: its labels, annotations
// and spec. Equal digests mean Git did not change the object.
func ContentDigest(o Object) (string, error) {
	var content struct {
		Labels      map[string]string `json:"labels,omitempty"`
		Annotations map[string]string `json:"annotations,omitempty"`
		Spec        any               `json:"spec"`
	}
	if cp := o.CloudProfile; cp != nil {
		content.Labels, content.Annotations, content.Spec = cp.Labels, cp.Annotations, &cp.Spec
	} else {
		ncp := o.NamespacedCloudProfile
		content.Labels, content.Annotations, content.Spec = ncp.Labels, ncp.Annotations, &ncp.Spec
	}
	data, err := json.Marshal(content)
	if err != nil {
		return "", fmt.Errorf("digest of %s: %w", o.Ref(), err)
	}
	sum := sha256.Sum256(data)
	return "sha256:" + hex.EncodeToString(sum[:]), nil
}

// DriftedAt lists those of paths (paths of DriftedFields under prefix, for
// an object of kind, perhaps of an earlier desired) on which live still does
// not have what desired has, in the order of paths. It answers whether Git
// has caught up with a hand edit whose fields were recorded: a path is
// resolved in desired and in live by the keys of its list entries, not their
// indexes, so Git inserting an entry before one that drifted moves nothing.
// A path is drifted when desired and live both have it and DriftedFields
// finds a difference below it, or when only one of them has it: a field Git
// no longer sets is caught up only when live lacks it too, since Git dropping
// a field someone changed by hand does not agree with the change. A path
// neither has is not drifted.
func DriftedAt(kind, prefix string, desired, live map[string]any, paths []string) ([]string, error) {
	s, err := schemaOf(kind)
	if err != nil {
		return nil, err
	}
	root := s.structural
	for _, name := range strings.Split(prefix, ".") {
		root = propertyOf(root, name)
	}
	var drifted []string
	for _, path := range paths {
		rest, ok := strings.CutPrefix(path, prefix)
		if !ok || !segmentEnd(rest) {
			return nil, fmt.Errorf("%s: field path %q is not under %s", kind, path, prefix)
		}
		d, node, inDesired := valueAt(root, rest, desired)
		l, _, inLive := valueAt(root, rest, live)
		switch {
		case !inDesired && !inLive:
		case inDesired != inLive:
			drifted = append(drifted, path)
		default:
			var below []string
			driftOf(node, path, d, l, &below)
			if len(below) > 0 {
				drifted = append(drifted, path)
			}
		}
	}
	return drifted, nil
}

// segmentEnd tells whether rest, what is left of a path, starts a new
// segment or is empty: after "spec.kubernetes", not after "spec.kube".
func segmentEnd(rest string) bool {
	return rest == "" || rest[0] == '.' || rest[0] == '['
}

// valueAt is the value at rest, the part of a DriftedFields path below
// value (of schema node), and its schema node; false when value does not
// have it. A map key and a list entry's key may contain the separators of
// a path (a version has dots), so every key that fits is tried, not a
// parse of rest.
func valueAt(node *structuralschema.Structural, rest string, value any) (any, *structuralschema.Structural, bool) {
	if value == nil {
		return nil, nil, false
	}
	if rest == "" {
		return value, node, true
	}
	switch v := value.(type) {
	case map[string]any:
		after, ok := strings.CutPrefix(rest, ".")
		if !ok {
			return nil, nil, false
		}
		keys := make([]string, 0, len(v))
		for k := range v {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			below, ok := strings.CutPrefix(after, k)
			if !ok || !segmentEnd(below) {
				continue
			}
			if found, child, ok := valueAt(propertyOf(node, k), below, v[k]); ok {
				return found, child, true
			}
		}
	case []any:
		// Only a keyed list has paths into its entries; any other is
		// compared whole.
		keys := listMapKeys(node)
		index, afterIndex, ok := cutIndex(rest)
		if len(keys) == 0 || !ok {
			return nil, nil, false
		}
		keyed, isKeyed := strings.CutPrefix(afterIndex, " (")
		for i, entry := range v {
			key, hasKey := keyOfEntry(entry, keys)
			var below string
			switch {
			case isKeyed && hasKey:
				var ok bool
				if below, ok = strings.CutPrefix(keyed, key+")"); !ok || !segmentEnd(below) {
					continue
				}
			case !isKeyed && !hasKey && i == index:
				below = afterIndex
			default:
				continue
			}
			if found, child, ok := valueAt(node.Items, below, entry); ok {
				return found, child, true
			}
		}
	}
	return nil, nil, false
}

// cutIndex cuts "[<index>]" off the front of rest.
func cutIndex(rest string) (int, string, bool) {
	inside, ok := strings.CutPrefix(rest, "[")
	if !ok {
		return 0, "", false
	}
	end := strings.IndexByte(inside, ']')
	if end <= 0 {
		return 0, "", false
	}
	index, err := strconv.Atoi(inside[:end])
	if err != nil || index < 0 {
		return 0, "", false
	}
	return index, inside[end+1:], true
}
