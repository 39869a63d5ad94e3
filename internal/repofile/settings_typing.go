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
// both, with a request to quote it (internal/profile's typing check uses the
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
	at := func(format string, args ...any) []string {
		p := path
		if p == "" {
			p = "(the document)"
		}
		return []string{p + ": " + fmt.Sprintf(format, args...)}
	}
	wrongType := func() []string {
		return at("Invalid value: must be of type %s, not %s", typeName(t), nodeTypeName(node))
	}
	switch t.Kind() {
	case reflect.Struct:
		if node.Kind != yaml.MappingNode {
			return wrongType()
		}
		fields := jsonFields(t)
		problems := ambiguousKeys(node, func(key string) string { return childPath(path, key) })
		for i := 0; i+1 < len(node.Content); i += 2 {
			key := node.Content[i].Value
			if field, known := fields[key]; known {
				problems = append(problems, checkTyping(node.Content[i+1], field, childPath(path, key))...)
			}
		}
		return problems
	case reflect.Slice:
		if node.Kind != yaml.SequenceNode {
			return wrongType()
		}
		var problems []string
		for i, item := range node.Content {
			problems = append(problems, checkTyping(item, t.Elem(), fmt.Sprintf("%s[%d]", path, i))...)
		}
		return problems
	case reflect.Map:
		if node.Kind != yaml.MappingNode {
			return wrongType()
		}
		entryPath := func(key string) string { return fmt.Sprintf("%s[%s]", path, key) }
		problems := ambiguousKeys(node, entryPath)
		for i := 0; i+1 < len(node.Content); i += 2 {
			problems = append(problems, checkTyping(node.Content[i+1], t.Elem(), entryPath(node.Content[i].Value))...)
		}
		return problems
	}
	if node.Kind != yaml.ScalarNode {
		return wrongType()
	}
	if node.Style != 0 && node.Style != yaml.FlowStyle || node.Tag != "" && !strings.HasPrefix(node.Tag, "!!") {
		// Quoted, a block scalar, or explicitly tagged: a string as written.
		if t.Kind() == reflect.String {
			return nil
		}
		return wrongType()
	}
	value, quoted := node.Value, strconv.Quote(node.Value)
	tag := node.ShortTag()
	switch {
	case yaml11Booleans[value]:
		return at("Invalid value: %s as written: YAML 1.1, which reads this file, takes it as a boolean, YAML 1.2 as the string %s; "+
			"quote it (%s) or write true or false", value, quoted, quoted)
	case differingNumber.MatchString(value):
		return at("Invalid value: %s as written: YAML 1.1, which reads this file, and YAML 1.2 take it as different values; "+
			"quote it (%s) or write a plain decimal number", value, quoted)
	case tag == "!!timestamp":
		return at("Invalid value: %s as written: YAML types an unquoted date or time as a timestamp, which is converted silently; quote it: %s", value, quoted)
	}
	switch t.Kind() {
	case reflect.String:
		if tag == "!!int" || tag == "!!float" || tag == "!!bool" {
			return at("Invalid value: %s as written: YAML reads it as a %s, and this field is a string; quote it: %s", value, nodeTypeName(node), quoted)
		}
	case reflect.Bool:
		if tag != "!!bool" {
			return wrongType()
		}
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		if tag != "!!int" {
			return wrongType()
		}
	case reflect.Float32, reflect.Float64:
		if tag != "!!int" && tag != "!!float" {
			return wrongType()
		}
	}
	return nil
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

// typeName names a field's Go type the way the file's author knows it.
func typeName(t reflect.Type) string {
	switch t.Kind() {
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

// nodeTypeName names what YAML made of a value.
func nodeTypeName(node *yaml.Node) string {
	switch node.Kind {
	case yaml.SequenceNode:
		return "list"
	case yaml.MappingNode:
		return "mapping"
	}
	switch node.ShortTag() {
	case "!!int", "!!float":
		return "number"
	case "!!bool":
		return "boolean"
	}
	return "string"
}
