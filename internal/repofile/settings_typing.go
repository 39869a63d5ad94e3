package repofile

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"
	"regexp"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
)

// The plain scalars whose meaning depends on the YAML version that reads
// them. Settings files are read as YAML 1.1 (sigs.k8s.io/yaml), overlays as
// YAML 1.2 (kustomize): a value one of them reads otherwise is refused in
// both, with a request to quote it (internal/render/profile's typing check uses the
// same two lists).
var (
	// yaml11Booleans are the plain scalars YAML 1.1 reads as booleans and
	// YAML 1.2 as strings.
	yaml11Booleans = map[string]bool{
		"y": true, "Y": true, "yes": true, "Yes": true, "YES": true, "n": true, "N": true, "no": true, "No": true, "NO": true,
		"on": true, "On": true, "ON": true, "off": true, "Off": true, "OFF": true,
	}
	// differingNumber matches plain scalars YAML 1.1 and 1.2 read as
	// different numbers, or one as a number and the other as a string: a
	// leading zero (1.1 octal), 0o and 0b prefixes, digits grouped with
	// underscores.
	differingNumber = regexp.MustCompile(`^[-+]?(0[0-9_]+|0o[0-7_]+|0b[01_]+|[0-9][0-9]*_[0-9_]*(\.[0-9_]*)?)$`)
)

// IsYAML11Boolean reports whether value, a plain scalar, is a boolean in
// YAML 1.1 and a string in YAML 1.2 (yes, no, on, off, y, n).
func IsYAML11Boolean(value string) bool { return yaml11Booleans[value] }

// IsVersionDependentNumber reports whether value, a plain scalar, is a
// number YAML 1.1 and 1.2 read differently (0777, 0o17, 1_000).
func IsVersionDependentNumber(value string) bool { return differingNumber.MatchString(value) }

// checkDocuments refuses a settings file of more than one YAML document:
// the decoder reads the first only, and a second one (a copy pasted below a
// ---, a second landscape list) would be dropped in silence.
func checkDocuments(data []byte, kind string) (first *yaml.Node, problems []string) {
	decoder := yaml.NewDecoder(bytes.NewReader(data))
	var documents []*yaml.Node
	for {
		var document yaml.Node
		if err := decoder.Decode(&document); err != nil {
			if !errors.Is(err, io.EOF) {
				// Not YAML: the strict decoder says why.
				return nil, nil
			}
			break
		}
		if len(document.Content) == 0 || document.Content[0].ShortTag() == "!!null" {
			continue // empty: a --- at the start or the end
		}
		documents = append(documents, &document)
	}
	if len(documents) > 1 {
		return nil, []string{fmt.Sprintf("a second YAML document at line %d: a %s file is one document, and the rest would be ignored; "+
			"remove the --- before it and merge it into the first, or delete it", documents[1].Content[0].Line, kind)}
	}
	if len(documents) == 0 {
		return nil, nil
	}
	return documents[0].Content[0], nil
}

var jsonUnmarshaler = reflect.TypeFor[json.Unmarshaler]()

// checkTyping walks node, the file's document, along t, the Go type it is
// decoded into (its json tags name the fields), and reports every value
// whose type is not the field's, at its full path with list indices
// (landscapes[1].soak), and every unquoted value YAML reads otherwise than
// written (name: no, a boolean to YAML 1.1), asking to quote it. Unknown
// fields are left to the strict decoder, which reports them. A file read
// through a Reader is bounded with its aliases written out
// (ExpandedYAMLSize), so following aliases here is bounded too.
func checkTyping(node *yaml.Node, t reflect.Type, path string) []string {
	for node.Kind == yaml.AliasNode && node.Alias != nil {
		node = node.Alias
	}
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if node.Kind == yaml.ScalarNode && node.ShortTag() == "!!null" {
		return nil // a field left empty: its zero value, which the checks that follow judge
	}
	if t.Kind() == reflect.Interface || reflect.PointerTo(t).Implements(jsonUnmarshaler) {
		return nil // a shape of its own: the decoder judges it
	}
	switch t.Kind() {
	case reflect.Struct:
		if node.Kind == yaml.MappingNode {
			return checkFields(node, t, path)
		}
	case reflect.Slice:
		if node.Kind == yaml.SequenceNode {
			return checkItems(node, t, path)
		}
	case reflect.Map:
		if node.Kind == yaml.MappingNode {
			return checkEntries(node, t, path)
		}
	default:
		if node.Kind == yaml.ScalarNode {
			return checkScalar(node, t, path)
		}
	}
	return wrongType(node, t, path)
}

// checkFields checks mapping, a struct's fields, field by field; a key the
// struct has no field for is the strict decoder's to report.
func checkFields(mapping *yaml.Node, t reflect.Type, path string) []string {
	fields := jsonFields(t)
	problems := ambiguousKeys(mapping, func(key string) string { return childPath(path, key) })
	for i := 0; i+1 < len(mapping.Content); i += 2 {
		key := mapping.Content[i].Value
		if field, known := fields[key]; known {
			problems = append(problems, checkTyping(mapping.Content[i+1], field, childPath(path, key))...)
		}
	}
	return problems
}

// checkItems checks sequence, a slice, item by item.
func checkItems(sequence *yaml.Node, t reflect.Type, path string) []string {
	var problems []string //nolint:prealloc // not one per item: most lists have none
	for i, item := range sequence.Content {
		problems = append(problems, checkTyping(item, t.Elem(), fmt.Sprintf("%s[%d]", path, i))...)
	}
	return problems
}

// checkEntries checks mapping, a map, value by value, each at its key.
func checkEntries(mapping *yaml.Node, t reflect.Type, path string) []string {
	entryPath := func(key string) string { return fmt.Sprintf("%s[%s]", path, key) }
	problems := ambiguousKeys(mapping, entryPath)
	for i := 0; i+1 < len(mapping.Content); i += 2 {
		problems = append(problems, checkTyping(mapping.Content[i+1], t.Elem(), entryPath(mapping.Content[i].Value))...)
	}
	return problems
}

// checkScalar checks scalar, the value of a field of t, a type that is not
// a struct, slice or map: a value written as a string (quoted, a block
// scalar, explicitly tagged) fits a string field only; an unquoted value
// must not be read otherwise than written, and must be of the field's type.
func checkScalar(scalar *yaml.Node, t reflect.Type, path string) []string {
	if scalar.Style != 0 && scalar.Style != yaml.FlowStyle || scalar.Tag != "" && !strings.HasPrefix(scalar.Tag, "!!") {
		// Quoted, a block scalar, or explicitly tagged: a string as written.
		if t.Kind() == reflect.String {
			return nil
		}
		return wrongType(scalar, t, path)
	}
	if problems := checkReading(scalar, path); len(problems) > 0 {
		return problems
	}
	value := valueKind(scalar)
	switch t.Kind() {
	case reflect.String:
		if value != reflect.String {
			return problemAt(path, "Invalid value: %s as written: YAML reads it as a %s, and this field is a string; quote it: %s",
				scalar.Value, nodeTypeName(scalar), strconv.Quote(scalar.Value))
		}
	case reflect.Bool:
		if value != reflect.Bool {
			return wrongType(scalar, t, path)
		}
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		if value != reflect.Int {
			return wrongType(scalar, t, path)
		}
	case reflect.Float32, reflect.Float64:
		if value != reflect.Int && value != reflect.Float64 {
			return wrongType(scalar, t, path)
		}
	}
	return nil
}

// checkReading refuses scalar, an unquoted value, when YAML reads it
// otherwise than written: differently in YAML 1.1 and 1.2 (a boolean, a
// number), or as a timestamp.
func checkReading(scalar *yaml.Node, path string) []string {
	value, quoted := scalar.Value, strconv.Quote(scalar.Value)
	switch {
	case yaml11Booleans[value]:
		return problemAt(path, "Invalid value: %s as written: YAML 1.1, which reads this file, takes it as a boolean, YAML 1.2 as the string %s; "+
			"quote it (%s) or write true or false", value, quoted, quoted)
	case differingNumber.MatchString(value):
		return problemAt(path, "Invalid value: %s as written: YAML 1.1, which reads this file, and YAML 1.2 take it as different values; "+
			"quote it (%s) or write a plain decimal number", value, quoted)
	case scalar.ShortTag() == "!!timestamp":
		return problemAt(path, "Invalid value: %s as written: YAML types an unquoted date or time as a timestamp, which is converted silently; quote it: %s", value, quoted)
	}
	return nil
}

// problemAt is the problem format describes, at path.
func problemAt(path, format string, args ...any) []string {
	if path == "" {
		path = "(the document)"
	}
	return []string{path + ": " + fmt.Sprintf(format, args...)}
}

// wrongType is the problem of node, at path, not being of type t.
func wrongType(node *yaml.Node, t reflect.Type, path string) []string {
	return problemAt(path, "Invalid value: must be of type %s, not %s", typeName(t.Kind()), nodeTypeName(node))
}

// ambiguousKeys refuses the unquoted keys of mapping that YAML 1.1 reads
// as booleans (on: is the key "true" to it), which the decoder would
// otherwise report as an unknown field "true".
func ambiguousKeys(mapping *yaml.Node, pathOf func(key string) string) []string {
	var problems []string
	for i := 0; i+1 < len(mapping.Content); i += 2 {
		key := mapping.Content[i]
		if key.Kind == yaml.ScalarNode && key.Style == 0 && yaml11Booleans[key.Value] {
			quoted := strconv.Quote(key.Value)
			problems = append(problems, fmt.Sprintf("%s: Invalid key: %s as written: YAML 1.1, which reads this file, takes it as a boolean, YAML 1.2 as the string %s; quote it (%s)",
				pathOf(key.Value), key.Value, quoted, quoted))
		}
	}
	return problems
}

func childPath(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

// jsonFields are the fields of struct type t by the names its json tags
// give them.
func jsonFields(t reflect.Type) map[string]reflect.Type {
	fields := make(map[string]reflect.Type, t.NumField())
	for i := range t.NumField() {
		f := t.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		switch {
		case name == "-" || !f.IsExported():
			continue
		case name == "":
			name = f.Name
		}
		fields[name] = f.Type
	}
	return fields
}

// typeName names a Go type, by its kind, the way the file's author knows
// it.
func typeName(kind reflect.Kind) string {
	switch kind {
	case reflect.Slice:
		return "list"
	case reflect.Map, reflect.Struct:
		return "mapping"
	case reflect.Bool:
		return "boolean (true or false)"
	case reflect.String:
		return "string"
	case reflect.Float32, reflect.Float64:
		return "number"
	}
	return "integer"
}

// nodeTypeName names what YAML made of a value: as typeName names the kind
// it decodes into, but a boolean and a number are just that.
func nodeTypeName(node *yaml.Node) string {
	switch kind := valueKind(node); kind {
	case reflect.Int, reflect.Float64:
		return "number"
	case reflect.Bool:
		return "boolean"
	default:
		return typeName(kind)
	}
}

// valueKind is the kind of Go value YAML decodes node into: a list, a
// mapping, or a scalar as its tag types it (an integer, a float, a
// boolean); anything else is a string.
func valueKind(node *yaml.Node) reflect.Kind {
	switch node.Kind {
	case yaml.SequenceNode:
		return reflect.Slice
	case yaml.MappingNode:
		return reflect.Map
	}
	switch node.ShortTag() {
	case "!!int":
		return reflect.Int
	case "!!float":
		return reflect.Float64
	case "!!bool":
		return reflect.Bool
	}
	return reflect.String
}
