package repofile

import (
	"fmt"
	"reflect"
	"regexp"
	"strings"

	yamlv3 "go.yaml.in/yaml/v3"
	strictjson "sigs.k8s.io/json"
	"sigs.k8s.io/yaml"
)

// SettingsFile is one of the repository's settings files (the versioning
// policy, the rollout), as DecodeSettings names it in its messages.
type SettingsFile struct {
	// Kind is what the file holds, as its author calls it: "policy".
	Kind string
	// Shape is what the document must be: "a mapping with apiVersion, kind
	// and rules".
	Shape string
	// Docs is the page that lists the file's fields.
	Docs string
}

// DecodeError is everything wrong with a settings file, one problem per
// line, each naming the file and, where it is known, the field.
type DecodeError struct {
	File     string
	Problems []string
}

func (e *DecodeError) Error() string {
	lines := make([]string, len(e.Problems))
	for i, p := range e.Problems {
		lines[i] = e.File + ": " + p
	}
	return strings.Join(lines, "\n")
}

var (
	// sigs.k8s.io/json names an unknown field by its full path.
	unknownFieldPattern = regexp.MustCompile(`^unknown field "(.*)"$`)
	// A value of the wrong type: "json: cannot unmarshal string into Go
	// struct field NoticeRule.rules.notice.days of type int". The Go type
	// name before the path is ours, not the file's, and is dropped.
	typeErrorPattern = regexp.MustCompile(`cannot unmarshal (.+) into Go struct field [^.]+\.(\S+) of type (\S+)`)
)

// DecodeSettings decodes data, YAML, into v strictly, as settings files are
// read: unknown and duplicate fields and values of the wrong type are
// problems, each naming the field in the file's terms. decoded is false when
// v could not be filled at all (not YAML, not a mapping, a value of the
// wrong type): then the problems say why and v is not to be used. Otherwise
// v holds what the file says, and the caller checks its values and adds its
// own problems.
//
// The file is one YAML document: a second one is refused, not dropped. Every
// value of the wrong type is reported at its full path, list indices
// included (landscapes[1].soak), and every unquoted value that YAML 1.1 and
// 1.2 read differently (name: no) is refused with a request to quote it, as
// the profiles' are (internal/render/profile's typing check).
func (f SettingsFile) DecodeSettings(data []byte, v any) (problems []string, decoded bool) {
	document, problems := checkDocuments(data, f.Kind)
	if len(problems) > 0 {
		return problems, false
	}
	// A document that is not a mapping is said so below, in the file's terms.
	if document != nil && document.Kind == yamlv3.MappingNode {
		if problems := checkTyping(document, reflect.TypeOf(v), ""); len(problems) > 0 {
			return problems, false
		}
	}
	jsonData, err := yaml.YAMLToJSONStrict(data)
	if err != nil {
		return []string{"not valid YAML: " + OneLine(err.Error())}, false
	}
	strictErrs, err := strictjson.UnmarshalStrict(jsonData, v, strictjson.DisallowDuplicateFields, strictjson.DisallowUnknownFields)
	if err != nil {
		if m := typeErrorPattern.FindStringSubmatch(err.Error()); m != nil {
			return []string{fmt.Sprintf("%s: Invalid value: must be of type %s, not %s", m[2], jsonTypeName(m[3]), m[1])}, false
		}
		if strings.Contains(err.Error(), "Go value of type") {
			return []string{fmt.Sprintf("not a %s: expected %s", f.Kind, f.Shape)}, false
		}
		return []string{"not valid YAML: " + OneLine(err.Error())}, false
	}
	for _, e := range strictErrs {
		if m := unknownFieldPattern.FindStringSubmatch(e.Error()); m != nil {
			problems = append(problems, fmt.Sprintf("%s: unknown field: the %s has no such field (check spelling and indentation; %s lists the fields)", m[1], f.Kind, f.Docs))
			continue
		}
		problems = append(problems, OneLine(e.Error()))
	}
	return problems, true
}

// jsonTypeName names a Go type of a settings file's schema, as
// encoding/json spells it ("[]rollout.Landscape", "int"), the way the file's
// author knows it: as typeName names its kind.
func jsonTypeName(goType string) string {
	kind := reflect.Struct // anything else is a struct: rollout.Landscape
	switch {
	case strings.HasPrefix(goType, "[]"):
		kind = reflect.Slice
	case strings.HasPrefix(goType, "map["):
		kind = reflect.Map
	case strings.HasPrefix(goType, "int"), strings.HasPrefix(goType, "uint"):
		kind = reflect.Int
	case goType == "bool":
		kind = reflect.Bool
	case goType == "string", goType == "repofile.Severity":
		kind = reflect.String
	}
	return typeName(kind)
}

// OneLine joins the lines of a multi-line message (YAML parsers report
// several errors that way), each trimmed and empty ones dropped, so that
// every problem is exactly one line; a message that already is one line is
// left exactly as written, so a key or value it quotes keeps its spaces.
//
// The problems of profiles and the rows of the pull-request diff are made
// one line with it too; it lives here because repofile imports none of the
// packages that report problems.
func OneLine(message string) string {
	if !strings.Contains(message, "\n") {
		return message
	}
	var parts []string
	for _, line := range strings.Split(message, "\n") {
		if line = strings.TrimSpace(line); line != "" {
			parts = append(parts, line)
		}
	}
	return strings.Join(parts, " ")
}
