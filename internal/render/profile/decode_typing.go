package profile

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"go.yaml.in/yaml/v3"
	structuralschema "k8s.io/apiextensions-apiserver/pkg/apiserver/schema"
	sigsyaml "sigs.k8s.io/yaml"

	"github.com/profilesync/profilesync/internal/repofile"
)

// CheckYAMLTyping reads a source file of profiles or patches as the sync
// reads it (YAML 1.2, as kustomize does) and refuses every unquoted value
// whose meaning is not the one written:
//
//   - a date or time, which YAML types as a timestamp, unless it is an
//     RFC 3339 time (with seconds and a zone) that every reader passes on as
//     written (timestampReadAsWritten): kustomize silently rewrites
//     2025-03-01 to 2025-03-01T00:00:00Z, and a time without a zone or with
//     a space is no time the API takes;
//   - a value where YAML 1.1 and 1.2 differ (yes, on, off, 0777, 1_000):
//     a reader of the other version means something else;
//   - a number or boolean where the profile's schema has a string
//     (version: 1.30 is the number 1.3), named as written.
//
// Each refusal says to quote the value. Content that is not YAML is left to
// the decoder, which reports it.
func CheckYAMLTyping(file string, content []byte) Problems {
	problems, _, _ := CheckYAMLTypingAndCount(file, content)
	return problems
}

// CheckYAMLTypingAndCount is CheckYAMLTyping that also returns, from the same
// parse, the objects kustomize makes of content (countObjects) and the
// parser's error when content is not YAML, for a reader that reports it
// itself: the build reads every file once.
func CheckYAMLTypingAndCount(file string, content []byte) (problems Problems, objects int64, err error) {
	if problem, ok := CheckYAMLText(file, content); !ok {
		return Problems{problem}, 0, nil
	}
	decoder := yaml.NewDecoder(bytes.NewReader(content))
	for {
		var document yaml.Node
		if err := decoder.Decode(&document); err != nil {
			if !errors.Is(err, io.EOF) {
				return problems, objects, err
			}
			return problems, objects, nil
		}
		objects += DocumentObjects(&document)
		problems = append(problems, checkDocumentTyping(file, &document)...)
	}
}

// CheckDocumentsTypingAndCount is CheckYAMLTypingAndCount on documents
// already parsed from file, one parse of the file's text that the caller
// keeps for itself: the same problems, in the same order, and the same
// count, when documents are the documents a single decoder reads from the
// content (the caller's to ensure). CheckYAMLText is the caller's as well.
// The typing check's messages name no line or column (only CheckYAMLText's
// and the parser's do), so documents parsed one at a time, whose lines
// restart, give the same messages.
func CheckDocumentsTypingAndCount(file string, documents []*yaml.Node) (problems Problems, objects int64) {
	for _, document := range documents {
		objects += DocumentObjects(document)
		problems = append(problems, checkDocumentTyping(file, document)...)
	}
	return problems, objects
}

// checkDocumentTyping is the typing check of one parsed document.
func checkDocumentTyping(file string, document *yaml.Node) Problems {
	check := typingCheck{file: file}
	if len(document.Content) == 1 && document.Content[0].Kind == yaml.MappingNode {
		check.readHeader(document.Content[0])
		if s, err := schemaOf(check.kind); err == nil && (check.kind == "CloudProfile" || check.kind == "NamespacedCloudProfile") {
			check.walk(document.Content[0], s.structural, "", nil)
		} else {
			check.walk(document.Content[0], nil, "", nil)
		}
	}
	return check.problems
}

// CheckYAMLText refuses content that is not YAML text, with the first
// place it breaks: bytes that are not UTF-8, or a control character YAML
// allows nowhere, a NUL byte among them. The YAML parsers say only
// "control characters are not allowed", and kustomize names the file as
// the kustomization that listed it wrote it. Content in UTF-16 (it starts
// with a byte order mark) is left to the parser.
func CheckYAMLText(file string, content []byte) (Problem, bool) {
	if bytes.HasPrefix(content, []byte{0xfe, 0xff}) || bytes.HasPrefix(content, []byte{0xff, 0xfe}) {
		return Problem{}, true
	}
	line, column := 1, 1
	for offset := 0; offset < len(content); {
		r, size := utf8.DecodeRune(content[offset:])
		var message string
		switch {
		case r == utf8.RuneError && size <= 1:
			message = fmt.Sprintf("the byte 0x%02x is not UTF-8: a YAML file is UTF-8 text; save it as UTF-8", content[offset])
		case r == 0:
			message = "a NUL byte: YAML allows no control characters; remove it"
		case !isYAMLPrintable(r):
			message = fmt.Sprintf("the control character %U: YAML allows no control characters; remove it", r)
		}
		if message != "" {
			return Problem{File: file, Message: fmt.Sprintf("line %d, column %d: %s", line, column, message)}, false
		}
		if r == '\n' {
			line, column = line+1, 1
		} else {
			column++
		}
		offset += size
	}
	return Problem{}, true
}

// isYAMLPrintable reports whether YAML 1.2 allows r in a stream (its
// c-printable production).
func isYAMLPrintable(r rune) bool {
	switch {
	case r == '\t', r == '\n', r == '\r', r == 0x85:
		return true
	case r >= 0x20 && r <= 0x7e, r >= 0xa0 && r <= 0xd7ff, r >= 0xe000 && r <= 0xfffd, r >= 0x10000 && r <= 0x10ffff:
		return true
	}
	return false
}

type typingCheck struct {
	file                  string
	kind, namespace, name string
	problems              Problems
}

func (c *typingCheck) readHeader(mapping *yaml.Node) {
	for i := 0; i+1 < len(mapping.Content); i += 2 {
		switch key, value := mapping.Content[i].Value, mapping.Content[i+1]; key {
		case KindField:
			c.kind = value.Value
		case MetadataField:
			for j := 0; j+1 < len(value.Content); j += 2 {
				switch value.Content[j].Value {
				case "name":
					c.name = value.Content[j+1].Value
				case "namespace":
					c.namespace = value.Content[j+1].Value
				}
			}
		}
	}
}

func (c *typingCheck) refuse(path, message string) {
	p := Problem{File: c.file, Field: path, Message: message}
	if c.kind == "CloudProfile" || c.kind == "NamespacedCloudProfile" {
		p.Kind, p.Namespace, p.Name = c.kind, c.namespace, c.name
	}
	c.problems = append(c.problems, p)
}

// walk checks node, at path, against schema (nil when unknown). fields is
// path as field names, "*" for each list entry (repeatableLists' form).
func (c *typingCheck) walk(node *yaml.Node, schema *structuralschema.Structural, path string, fields []string) {
	switch node.Kind {
	case yaml.MappingNode:
		for i := 0; i+1 < len(node.Content); i += 2 {
			key := node.Content[i].Value
			var child *structuralschema.Structural
			if schema != nil {
				if s, ok := schema.Properties[key]; ok {
					child = &s
				} else if schema.AdditionalProperties != nil {
					child = schema.AdditionalProperties.Structural
				}
			}
			childPath := key
			if path != "" {
				childPath = path + "." + key
			}
			c.walk(node.Content[i+1], child, childPath, append(fields, key))
		}
	case yaml.SequenceNode:
		var items *structuralschema.Structural
		if schema != nil {
			items = schema.Items
			c.uniqueKeys(node, schema, path, isRepeatableList(fields))
		}
		for i, item := range node.Content {
			c.walk(item, items, entryPath(path, i, item), append(fields, everyEntry))
		}
	case yaml.ScalarNode:
		c.scalar(node, schema, path)
	}
}

// uniqueKeys refuses an entry of a keyed list (x-kubernetes-list-type: map:
// versions by version, stages by classification, ...) whose key an earlier
// entry has. The decoder refuses it too, but a strategic-merge patch of an
// overlay merges such entries into one first, silently keeping the last: the
// author's mistake would change what applies instead of being reported.
//
// In a list of repeatableLists (Gardener keeps it atomic and accepts a
// repeat), an entry equal to the earlier entry of its key is no mistake: it
// means nothing more than one, merging the two changes nothing, and the
// decoder drops it (dropRepeatedEntries).
func (c *typingCheck) uniqueKeys(list *yaml.Node, schema *structuralschema.Structural, path string, repeatable bool) {
	if schema.XListType == nil || *schema.XListType != ListTypeMap || len(schema.XListMapKeys) == 0 {
		return
	}
	seen := map[string]*yaml.Node{}
	for i, item := range list.Content {
		if item.Kind != yaml.MappingNode {
			continue
		}
		key := make(map[string]string, len(schema.XListMapKeys))
		for j := 0; j+1 < len(item.Content); j += 2 {
			if slices.Contains(schema.XListMapKeys, item.Content[j].Value) {
				key[item.Content[j].Value] = item.Content[j+1].Value
			}
		}
		written, err := json.Marshal(key)
		if err != nil || len(key) == 0 {
			continue
		}
		earlier, repeated := seen[string(written)]
		switch {
		case !repeated:
			seen[string(written)] = item
		case repeatable && sameYAMLValue(earlier, item):
		default:
			c.refuse(entryPath(path, i, item), fmt.Sprintf("Duplicate value: %s: each key may appear once in this list", written))
		}
	}
}

// entryPath is the path of the i-th entry of the list at path, named as the
// decoder names it (nameEntries): by its name, else its version, when that
// is a string.
func entryPath(path string, i int, entry *yaml.Node) string {
	indexed := fmt.Sprintf("%s[%d]", path, i)
	if entry.Kind != yaml.MappingNode {
		return indexed
	}
	for _, key := range entryKeys {
		for j := 0; j+1 < len(entry.Content); j += 2 {
			if value := entry.Content[j+1]; entry.Content[j].Value == key && value.ShortTag() == "!!str" && value.Value != "" {
				return indexed + " (" + value.Value + ")"
			}
		}
	}
	return indexed
}

func (c *typingCheck) scalar(node *yaml.Node, schema *structuralschema.Structural, path string) {
	if node.Style != 0 && node.Style != yaml.FlowStyle || node.Tag != "" && !strings.HasPrefix(node.Tag, "!!") {
		return // quoted, a block scalar, or explicitly tagged: written as meant
	}
	value := node.Value
	quoted := strconv.Quote(value)
	switch tag := node.ShortTag(); {
	case tag == "!!timestamp" && !timestampReadAsWritten(node):
		c.refuse(path, fmt.Sprintf("Invalid value: %s as written: YAML types an unquoted date or time as a timestamp, which is converted silently; quote it: %s", value, quoted))
	case repofile.IsYAML11Boolean(value):
		c.refuse(path, fmt.Sprintf("Invalid value: %s as written: YAML 1.2, which the sync reads, takes it as the string %s, "+
			"YAML 1.1 as a boolean; quote it (%s) or write true or false", value, quoted, quoted))
	case repofile.IsVersionDependentNumber(value):
		c.refuse(path, fmt.Sprintf("Invalid value: %s as written: YAML 1.1 and YAML 1.2, which the sync reads, take it as different values; quote it (%s) or write a plain decimal number", value, quoted))
	case schema != nil && schema.Type == schemaTypeString && (tag == "!!int" || tag == "!!float" || tag == "!!bool"):
		c.refuse(path, fmt.Sprintf("Invalid value: %s as written: YAML reads it as a %s, and this field is a string; quote it: %s", value, yamlTypeName(tag), quoted))
	}
}

// timestampReadAsWritten reports whether node, an unquoted scalar YAML types
// as a timestamp, means what is written to every reader of the file: it is
// an RFC 3339 time with seconds and a zone (what the API's time fields take,
// so Gardener stores it unchanged), kubectl's reader (sigs.k8s.io/yaml, YAML
// 1.1 to JSON) passes it on as the same string, and so does the sync's
// (kustomize decodes the YAML 1.2 node to JSON). Gardener's own example
// profile writes expirationDate: 2025-11-30T01:02:03Z so; a date without a
// time, which kustomize turns into midnight UTC, is not read as written.
func timestampReadAsWritten(node *yaml.Node) bool {
	value := node.Value
	if _, err := time.Parse(time.RFC3339, value); err != nil {
		return false
	}
	written, err := json.Marshal(value)
	if err != nil {
		return false
	}
	byKubectl, err := sigsyaml.YAMLToJSON([]byte(value))
	if err != nil || !bytes.Equal(bytes.TrimSpace(byKubectl), written) {
		return false
	}
	var decoded any
	if err := node.Decode(&decoded); err != nil {
		return false
	}
	byKustomize, err := json.Marshal(decoded)
	return err == nil && bytes.Equal(byKustomize, written)
}

func yamlTypeName(tag string) string {
	switch tag {
	case "!!int", "!!float":
		return "number"
	case "!!bool":
		return schemaTypeBoolean
	}
	return strings.TrimPrefix(tag, "!!")
}

// DocumentObjects is how many objects kustomize makes of one YAML document:
// none of an empty one, the items of a List, else one.
func DocumentObjects(document *yaml.Node) int64 {
	if len(document.Content) == 0 || document.Content[0].Kind != yaml.MappingNode {
		if len(document.Content) > 0 && document.Content[0].Tag != "!!null" {
			return 1
		}
		return 0
	}
	return objectsOf(document.Content[0])
}

// objectsOf is 1 for an object, and the number of items for a List.
func objectsOf(object *yaml.Node) int64 {
	var kind, items *yaml.Node
	for i := 0; i+1 < len(object.Content); i += 2 {
		switch object.Content[i].Value {
		case KindField:
			kind = object.Content[i+1]
		case "items":
			items = object.Content[i+1]
		}
	}
	if kind != nil && kind.Value == "List" && items != nil && items.Kind == yaml.SequenceNode {
		return int64(len(items.Content))
	}
	return 1
}
