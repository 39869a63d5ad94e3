package profile

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	apiyaml "k8s.io/apimachinery/pkg/util/yaml"
	strictjson "sigs.k8s.io/json"
	"sigs.k8s.io/yaml"

	v1alpha1 "github.com/profilesync/profilesync/api/v1alpha1"
	"github.com/profilesync/profilesync/internal/render/merge"
	"github.com/profilesync/profilesync/internal/repofile"
)

// GardenerGroupVersion is Gardener's API version of CloudProfile and
// NamespacedCloudProfile. Profiles written for Gardener are read as ours
// unchanged, because our shapes follow Gardener's (api/v1alpha1).
const GardenerGroupVersion = "core.gardener.cloud/v1beta1"

// acceptedAPIVersions are the apiVersions Decode reads as ours.
var acceptedAPIVersions = []string{v1alpha1.GroupVersion.String(), GardenerGroupVersion}

// Document is one YAML document of the input together with the file it came
// from, which every problem found in it names.
type Document struct {
	// File names the document's source for messages: a path relative to the
	// repository root after Build, as given on the command line otherwise.
	File string
	// Data is the document, YAML or JSON: a build renders each object as
	// canonical JSON, which DecodeDocuments reads without a YAML parse.
	Data []byte
	// SetBy are the fields of the object that patches of an overlay set,
	// with the patch that set each (see FieldSource); empty for an object
	// as its file holds it.
	SetBy []FieldSource `json:",omitempty"`
}

// Object is one decoded profile: exactly one of CloudProfile and
// NamespacedCloudProfile is set.
type Object struct {
	// File is the source of the object, as in Document.File.
	File string
	// SetBy are the fields patches set, as in Document.SetBy: problems of
	// those fields name the patch.
	SetBy                  []FieldSource
	CloudProfile           *v1alpha1.CloudProfile
	NamespacedCloudProfile *v1alpha1.NamespacedCloudProfile
}

// Kind is CloudProfile or NamespacedCloudProfile.
func (o Object) Kind() string {
	if o.NamespacedCloudProfile != nil {
		return v1alpha1.NamespacedCloudProfileKind
	}
	return v1alpha1.CloudProfileKind
}

// Namespace is the object's metadata.namespace.
func (o Object) Namespace() string {
	if o.NamespacedCloudProfile != nil {
		return o.NamespacedCloudProfile.Namespace
	}
	return o.CloudProfile.Namespace
}

// Name is the object's metadata.name.
func (o Object) Name() string {
	if o.NamespacedCloudProfile != nil {
		return o.NamespacedCloudProfile.Name
	}
	return o.CloudProfile.Name
}

// Ref names the object as KIND/NAME, or KIND/NAMESPACE/NAME when it has a
// namespace, as problems and the timeline show it.
func (o Object) Ref() string {
	return ObjectRef(o.Kind(), o.Namespace(), o.Name())
}

func ObjectRef(kind, namespace, name string) string {
	if namespace == "" {
		return kind + "/" + name
	}
	return kind + "/" + namespace + "/" + name
}

// problem returns a Problem located at this object.
func (o Object) problem(fieldPath, message string) Problem {
	return o.ProblemAt(fieldPath, message)
}

// ProblemAt returns a Problem located at the field fieldPath of this
// object: in the file of the patch that set the field when a patch did
// (see FieldSource), else in the object's file.
func (o Object) ProblemAt(fieldPath, message string) Problem {
	return attributed(Problem{File: o.File, Kind: o.Kind(), Namespace: o.Namespace(), Name: o.Name(), Field: fieldPath, Message: message}, o.SetBy)
}

// Problem is one thing wrong with (or, as a warning, worth saying about) the
// input, located as precisely as it is known.
type Problem struct {
	File string
	// Kind, Namespace and Name identify the object; Kind is empty when the
	// problem concerns a whole document that could not be read as a profile.
	Kind, Namespace, Name string
	// Field is the field path, for example spec.kubernetes.versions[3].version;
	// empty when the problem concerns the whole object.
	Field   string
	Message string
	// Origin is the file the object was read from, when File is rather
	// the file of the patch of an overlay that set the field; SetBy then
	// names that patch in File, when there is more to say (FieldSource.Patch).
	Origin, SetBy string
}

// String formats the problem as one line "FILE: KIND/NAME: FIELD: message"
// (KIND/NAMESPACE/NAME for a namespaced object); parts that are not known are
// left out. A problem of a field a patch set ends in "(set by this patch,
// on the object of ORIGIN)", naming the patch's entry when File holds more
// than one.
func (p Problem) String() string {
	var b strings.Builder
	if p.File != "" {
		b.WriteString(p.File)
		b.WriteString(": ")
	}
	if p.Kind != "" {
		b.WriteString(ObjectRef(p.Kind, p.Namespace, p.Name))
		b.WriteString(": ")
	}
	if p.Field != "" {
		b.WriteString(p.Field)
		b.WriteString(": ")
	}
	b.WriteString(p.Message)
	if p.Origin != "" {
		setBy := "this patch"
		if p.SetBy != "" {
			setBy = p.SetBy
		}
		b.WriteString(" (set by " + setBy + ", on the object of " + p.Origin + ")")
	}
	// Names and messages come from the input, and a YAML scalar may span
	// lines; a problem is always exactly one.
	return repofile.OneLine(b.String())
}

// Problems is a list of problems; as an error it reads one problem per line.
type Problems []Problem

func (ps Problems) Error() string { return strings.Join(ps.Lines(), "\n") }

// Lines are the problems as the CLI prints them and the diff reports them,
// one line each.
func (ps Problems) Lines() []string {
	lines := make([]string, len(ps))
	for i, p := range ps {
		lines[i] = p.String()
	}
	return lines
}

// fieldErrorProblems turns field errors into problems of o. The field path
// goes into Field and the rest of the error into Message, so that the line
// reads "FILE: KIND/NAME: spec.x: Invalid value: ...".
func (o Object) fieldErrorProblems(errs field.ErrorList) Problems {
	problems := make(Problems, 0, len(errs))
	for _, e := range errs {
		problems = append(problems, o.problem(e.Field, e.ErrorBody()))
	}
	return problems
}

// SplitDocuments splits a multi-document YAML stream (documents separated
// by "---" lines) read from r into documents of file. Empty documents (only
// separators, comments and whitespace, as a leading, trailing or doubled
// "---" leaves) are dropped.
func SplitDocuments(file string, r io.Reader) ([]Document, error) {
	reader := apiyaml.NewYAMLReader(bufio.NewReader(r))
	var docs []Document
	for {
		data, err := reader.Read()
		if errors.Is(err, io.EOF) {
			return docs, nil
		}
		if err != nil {
			return nil, fmt.Errorf("%s: reading YAML documents: %w", file, err)
		}
		if isBlankDocument(data) {
			continue
		}
		docs = append(docs, Document{File: file, Data: data})
	}
}

// isBlankDocument reports whether data has nothing but blank lines,
// comments, document separators and document end markers. The YAML reader
// keeps a separator line in the document that follows it, so "---" twice
// yields a document of just "---".
func isBlankDocument(data []byte) bool {
	for _, line := range bytes.Split(data, []byte("\n")) {
		line = bytes.TrimSpace(line)
		for _, marker := range [][]byte{[]byte("---"), []byte("...")} {
			if rest, ok := bytes.CutPrefix(line, marker); ok && (len(rest) == 0 || rest[0] == ' ' || rest[0] == '\t' || rest[0] == '#') {
				line = bytes.TrimSpace(rest)
			}
		}
		if len(line) > 0 && line[0] != '#' {
			return false
		}
	}
	return true
}

// DecodeDocuments decodes every document into a profile, keeping the input
// order, and returns every problem found; a document with a problem yields no
// object, and so never reaches the lifecycle rules of Validate. An empty
// document (null, or nothing but comments) is skipped, as kubectl does.
//
// Each document is first checked as the API server checks a custom resource
// on create, with the schema of the CRDs this binary carries (config/crd):
// types, formats, enums, patterns, lengths, list bounds and unique list
// keys, with the API server's messages and field paths; then its metadata,
// with apimachinery's ValidateObjectMeta (name, namespace, labels,
// annotations), and labels of the domain the sync writes are refused. CEL
// rules are left to Validate, which states each with the versions
// involved.
//
// Decoding is strict: a field our API does not have is a problem naming the
// field, never silently dropped; so is a field given twice, and a kind other
// than CloudProfile or NamespacedCloudProfile. Both our apiVersion and
// Gardener's core.gardener.cloud/v1beta1 are accepted and checked against
// the same schema; the objects returned always carry ours, because that is
// what the cluster will hold.
//
// Nothing is defaulted into the objects: the API server's one default that
// matters (a machine image without updateStrategy means major) is applied
// where it is needed, by lifecycle for update paths and by Set.Evaluate for the
// parent of a namespaced merge, so that printed specs stay as written.
func DecodeDocuments(docs []Document) ([]Object, Problems) {
	var objects []Object
	var problems Problems
	for _, decoded := range decodeEach(docs, func(int) bool { return true }) {
		problems = append(problems, decoded.problems...)
		if decoded.object != nil && len(decoded.problems) == 0 {
			objects = append(objects, *decoded.object)
		}
	}
	return objects, problems
}

// decodedDocument is what decodeDocument made of one document.
type decodedDocument struct {
	object   *Object
	problems Problems
}

// decodeEach decodes the documents that wanted selects, each on its own,
// on as many goroutines as the process has CPUs, and returns the results in
// the documents' order (a document not wanted has an empty result). A
// document's decoding reads nothing but the document and the CRD schemas,
// which are read-only once loaded, so the results are those of decoding
// one after another (TestDecodingOnEveryCPUGivesWhatDecodingInOrderGives);
// the order of the problems is the documents'. A sync decodes while the
// API server has nothing to do for it, so the CPUs are otherwise idle: the
// first sync of the bench landscape decodes 110 documents of 2.3 MB
// (docs/performance.md, "Decoding on every CPU").
func decodeEach(docs []Document, wanted func(i int) bool) []decodedDocument {
	results := make([]decodedDocument, len(docs))
	var next atomic.Int64
	var workers sync.WaitGroup
	for range min(runtime.GOMAXPROCS(0), len(docs)) {
		workers.Go(func() {
			for i := int(next.Add(1) - 1); i < len(docs); i = int(next.Add(1) - 1) {
				if wanted(i) {
					results[i].object, results[i].problems = decodeDocument(docs[i], i+1)
				}
			}
		})
	}
	workers.Wait()
	return results
}

// rfc3339Hint says what a time must look like, in the API's terms.
const rfc3339Hint = "must be an RFC 3339 date-time, for example 2025-06-01T00:00:00Z"

const unknownFieldMessage = "unknown field: the API has no such field (check spelling and indentation)"

// decodeDocument decodes doc, the n-th document of the input (counted for
// messages about documents that have no kind and name to name them by). It
// returns no object and no problem for an empty document.
func decodeDocument(doc Document, n int) (*Object, Problems) {
	documentProblem := func(format string, args ...any) Problems {
		return Problems{{File: doc.File, Message: fmt.Sprintf("document %d: ", n) + fmt.Sprintf(format, args...)}}
	}
	data, content, err := unstructuredContent(doc.Data)
	if err != nil {
		return nil, documentProblem("not valid YAML: %v", err)
	}
	if content == nil {
		return nil, nil
	}
	obj, ok := content.(map[string]any)
	if !ok {
		return nil, documentProblem("not a Kubernetes object: expected a mapping with apiVersion, kind and metadata, found %s", jsonKindOf(content))
	}
	header := readHeader(obj)
	if data, err = withoutRepeatedEntries(obj, data); err != nil {
		return nil, documentProblem("Internal error: encoding the object without its repeated set entries: %v", err)
	}

	object := &Object{File: doc.File, SetBy: doc.SetBy}
	var into any
	switch header.kind {
	case v1alpha1.CloudProfileKind:
		object.CloudProfile = &v1alpha1.CloudProfile{}
		into = object.CloudProfile
	case v1alpha1.NamespacedCloudProfileKind:
		object.NamespacedCloudProfile = &v1alpha1.NamespacedCloudProfile{}
		into = object.NamespacedCloudProfile
	case "":
		if _, isString := obj["kind"].(string); obj["kind"] != nil && !isString {
			return nil, documentProblem("kind must be a string, CloudProfile or NamespacedCloudProfile, not %s", jsonKindOf(obj["kind"]))
		}
		return nil, documentProblem("kind is missing: expected CloudProfile or NamespacedCloudProfile")
	default:
		return nil, Problems{{
			File: doc.File, Kind: header.kind, Namespace: header.namespace, Name: header.name,
			Message: fmt.Sprintf("unsupported kind %s (apiVersion %q): only CloudProfile and NamespacedCloudProfile of %s are read",
				header.kind, header.apiVersion, strings.Join(acceptedAPIVersions, " or ")),
		}}
	}
	located := func(fieldPath, message string) Problem {
		return attributed(Problem{File: doc.File, Kind: header.kind, Namespace: header.namespace, Name: header.name, Field: fieldPath, Message: message}, doc.SetBy)
	}
	locatedErrors := func(errs field.ErrorList) Problems {
		problems := make(Problems, 0, len(errs))
		for _, e := range errs {
			problems = append(problems, located(e.Field, e.ErrorBody()))
		}
		return problems
	}

	var problems Problems
	// An apiVersion of another type than string is the schema's to report.
	if _, isString := obj["apiVersion"].(string); (isString || obj["apiVersion"] == nil) && !isAcceptedAPIVersion(header.apiVersion) {
		problems = append(problems, locatedErrors(field.ErrorList{field.NotSupported(field.NewPath("apiVersion"), header.apiVersion, acceptedAPIVersions)})...)
	}
	schema, err := schemaOf(header.kind)
	if err != nil {
		return nil, append(problems, located("", fmt.Sprintf("Internal error: cannot check the object against its CRD: %v", err)))
	}

	// Checks that read the object apart from the typed decode below report
	// unknown fields too, because the typed decode stops naming them at the
	// first value of the wrong type.
	var unknownFields []string
	explained := false
	switch metadata := obj["metadata"].(type) {
	case map[string]any:
		meta, metaUnknown, failedField, failure := decodeObjectMeta(metadata)
		if meta != nil {
			problems = append(problems, locatedErrors(validateObjectMeta(meta, object.NamespacedCloudProfile != nil))...)
		} else {
			problems = append(problems, located(failedField, failure))
			explained = true
		}
		unknownFields = append(unknownFields, metaUnknown...)
	case nil:
		problems = append(problems, located("metadata.name", "Required value: every profile needs a name"))
	}
	schemaErrs, pruned := schema.check(obj)
	for _, e := range schemaErrs {
		e.Field = nameEntries(e.Field, obj)
	}
	problems = append(problems, locatedErrors(schemaErrs)...)
	unknownFields = append(unknownFields, pruned...)
	explained = explained || len(schemaErrs) > 0

	strictErrs, err := strictjson.UnmarshalStrict(data, into)
	named := make(map[string]bool, len(strictErrs))
	for _, strictErr := range strictErrs {
		problem := strictProblem(strictErr, located)
		named[problem.Field] = true
		problems = append(problems, problem)
	}
	for _, path := range unknownFields {
		if !named[path] {
			named[path] = true
			problems = append(problems, located(path, unknownFieldMessage))
		}
	}
	// A value the checks above found wrong also fails the typed decode;
	// only an error they cannot explain is reported.
	if err != nil && !explained {
		path, message := describeDecodeError(err)
		problems = append(problems, located(path, message))
	}
	if len(problems) > 0 {
		return nil, problems
	}
	// Gardener's apiVersion is read as ours: the object is applied as ours.
	if object.CloudProfile != nil {
		object.CloudProfile.APIVersion = v1alpha1.GroupVersion.String()
	} else {
		object.NamespacedCloudProfile.APIVersion = v1alpha1.GroupVersion.String()
	}
	return object, nil
}

// unstructuredContent returns a document as JSON and as the API server's
// unstructured form of it: integers stay int64, so that the schema tells an
// integer from a number as the API server does.
//
// A document in canonical JSON, as a build renders every object (see
// isCanonicalJSON), is read as it is; any other document, YAML or JSON,
// is converted from YAML, as a person may write it. Both read the same
// document to the same JSON and the same content (TestJSONAndYAMLOfAnObjectDecodeAlike,
// FuzzCanonicalJSONDecodesLikeYAML), so only the cost differs: the
// conversion from YAML took a quarter of the decode of a large profile.
func unstructuredContent(document []byte) (data []byte, content any, err error) {
	if content, ok := canonicalJSONContent(document); ok {
		return document, content, nil
	}
	if data, err = yaml.YAMLToJSONStrict(document); err != nil {
		return nil, nil, err
	}
	if err := strictjson.UnmarshalCaseSensitivePreserveInts(data, &content); err != nil {
		return nil, nil, err
	}
	return data, content, nil
}

// canonicalJSONContent decodes document when it is a JSON object in
// canonical form: what encoding/json writes for the content it decodes to,
// byte for byte (no space between tokens, keys sorted and given once,
// numbers and strings written as json.Marshal writes them). That is the
// form yaml.YAMLToJSONStrict gives any document, so the YAML path would
// return the same bytes and content; JSON in any other form (indented, keys
// in another order, 1.0 for 1, a key given twice) is left to the YAML
// path, whose problems stay what they were.
func canonicalJSONContent(document []byte) (any, bool) {
	// Canonical JSON starts with its brace: YAML, and JSON after a space,
	// are not decoded twice.
	if len(document) == 0 || document[0] != '{' {
		return nil, false
	}
	var content any
	strictErrs, err := strictjson.UnmarshalStrict(document, &content, strictjson.DisallowDuplicateFields)
	if err != nil || len(strictErrs) > 0 {
		return nil, false
	}
	canonical, err := json.Marshal(content)
	if err != nil || !bytes.Equal(canonical, document) {
		return nil, false
	}
	return content, true
}

// header is what decodeDocument reads first, to decide which type a
// document is and to name it in problems; fields of another type than
// string are left empty.
type header struct {
	apiVersion, kind, name, namespace string
}

func readHeader(obj map[string]any) header {
	var h header
	h.apiVersion, _ = obj["apiVersion"].(string)
	h.kind, _ = obj["kind"].(string)
	if metadata, ok := obj["metadata"].(map[string]any); ok {
		h.name, _ = metadata["name"].(string)
		h.namespace, _ = metadata["namespace"].(string)
	}
	return h
}

// jsonKindOf names the kind of a JSON value as the API's schema does.
func jsonKindOf(value any) string {
	switch value.(type) {
	case nil:
		return "null"
	case map[string]any:
		return "an object"
	case []any:
		return "an array"
	case string:
		return "a string"
	case bool:
		return "a boolean"
	case int64:
		return "an integer"
	default:
		return "a number"
	}
}

// strictProblem turns an unknown or duplicate field reported by the strict
// decoder into a problem at that field.
func strictProblem(err error, located func(fieldPath, message string) Problem) Problem {
	var withPath interface{ FieldPath() string }
	if !errors.As(err, &withPath) {
		return located("", err.Error())
	}
	kind, _, _ := strings.Cut(err.Error(), " \"")
	switch kind {
	case "unknown field":
		return located(withPath.FieldPath(), unknownFieldMessage)
	case "duplicate field":
		return located(withPath.FieldPath(), "duplicate field: given more than once in the same object")
	}
	return located(withPath.FieldPath(), err.Error())
}

// describeDecodeError phrases an error of the typed decode in the API's
// terms: the field path it knows (without list indices) and a message that
// names JSON types and RFC 3339, never Go types or Go time layouts.
func describeDecodeError(err error) (fieldPath, message string) {
	var parseErr *time.ParseError
	if errors.As(err, &parseErr) {
		return "", fmt.Sprintf("Invalid value: %q: %s", parseErr.Value, rfc3339Hint)
	}
	if value, goType, path, ok := unmarshalTypeError(err); ok {
		return path, fmt.Sprintf("Invalid value: %q: must be of type %s", jsonTypeName(value), apiTypeName(goType))
	}
	return "", "Invalid value: " + strings.TrimPrefix(err.Error(), "json: ")
}

// unmarshalTypeError reads encoding/json's UnmarshalTypeError, or the copy
// sigs.k8s.io/json returns from its internal fork of encoding/json, which
// cannot be named outside that module but has the same fields.
func unmarshalTypeError(err error) (value string, goType reflect.Type, fieldPath string, ok bool) {
	var stdErr *json.UnmarshalTypeError
	if errors.As(err, &stdErr) {
		return stdErr.Value, stdErr.Type, stdErr.Field, true
	}
	v := reflect.ValueOf(err)
	if v.Kind() != reflect.Pointer || v.IsNil() || v.Elem().Kind() != reflect.Struct || v.Elem().Type().Name() != "UnmarshalTypeError" {
		return "", nil, "", false
	}
	fields := v.Elem()
	valueField, typeField, pathField := fields.FieldByName("Value"), fields.FieldByName("Type"), fields.FieldByName("Field")
	if !valueField.IsValid() || valueField.Kind() != reflect.String || !typeField.IsValid() || !pathField.IsValid() || pathField.Kind() != reflect.String {
		return "", nil, "", false
	}
	goType, _ = typeField.Interface().(reflect.Type)
	return valueField.String(), goType, pathField.String(), goType != nil
}

// Type names of the schema, as messages name them, and the field of an
// object that names its kind.
const (
	schemaTypeString  = "string"
	schemaTypeBoolean = "boolean"
	KindField         = "kind"
)

// MetadataField is the field of an object that holds its metadata.
const MetadataField = "metadata"

// jsonTypeName turns encoding/json's description of a value ("number 1.5",
// "bool") into the schema's type name.
func jsonTypeName(value string) string {
	value, _, _ = strings.Cut(value, " ")
	if value == "bool" {
		return schemaTypeBoolean
	}
	return value
}

// apiTypeName is the schema's type name of what a Go type reads.
func apiTypeName(t reflect.Type) string {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t == reflect.TypeOf(metav1.Time{}) {
		return "string (an RFC 3339 date-time)"
	}
	switch t.Kind() {
	case reflect.String:
		return schemaTypeString
	case reflect.Bool:
		return schemaTypeBoolean
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "integer"
	case reflect.Float32, reflect.Float64:
		return "number"
	case reflect.Slice, reflect.Array:
		if t.Elem().Kind() == reflect.Uint8 {
			return "string"
		}
		return "array"
	default:
		return "object"
	}
}

func isAcceptedAPIVersion(apiVersion string) bool {
	for _, accepted := range acceptedAPIVersions {
		if apiVersion == accepted {
			return true
		}
	}
	return false
}

// EncodeDocuments writes objects as one YAML stream, documents separated by
// "---", in the order given. Fields that only a cluster fills
// (metadata.creationTimestamp, status.conditions, status.observedGeneration)
// are left out when empty, so the output is what Git holds plus the status.
func EncodeDocuments(w io.Writer, objects []Object) error {
	for i, o := range objects {
		var value any = o.CloudProfile
		if o.NamespacedCloudProfile != nil {
			value = o.NamespacedCloudProfile
		}
		data, err := json.Marshal(value)
		if err != nil {
			return fmt.Errorf("encoding %s: %w", o.File+": "+o.Ref(), err)
		}
		var generic map[string]any
		if err := json.Unmarshal(data, &generic); err != nil {
			return fmt.Errorf("encoding %s: %w", o.File+": "+o.Ref(), err)
		}
		if metadata, ok := generic["metadata"].(map[string]any); ok && metadata["creationTimestamp"] == nil {
			delete(metadata, "creationTimestamp")
		}
		out, err := yaml.Marshal(generic)
		if err != nil {
			return fmt.Errorf("encoding %s: %w", o.File+": "+o.Ref(), err)
		}
		if i > 0 {
			if _, err := io.WriteString(w, "---\n"); err != nil {
				return err
			}
		}
		if _, err := w.Write(out); err != nil {
			return err
		}
	}
	return nil
}

// pathToken is one step of a field path: a field name or a list index.
var pathToken = regexp.MustCompile(`([^.\[\]]+)|\[([0-9]+)\]`)

// entryKeys are the fields that name an entry of a profile's lists, in the
// order they are tried: images and types have a name, versions a version.
var entryKeys = []string{"name", merge.VersionKey}

// nameEntries rewrites a field path into obj, as the CRD schema reports it
// (spec.machineImages[0].versions[4].version), so that every index into a
// list of named entries also names the entry, as lifecycle.EntryPath does for
// the rules of lifecycle and merge: spec.machineImages[0] (gardenlinux).versions[4] (1592.9.0).version.
// An entry is named by its name, else its version; a path that leaves obj
// (a field the object lacks) is named as far as it goes.
func nameEntries(path string, obj map[string]any) string {
	var b strings.Builder
	var at any = obj
	last := 0
	for _, m := range pathToken.FindAllStringSubmatchIndex(path, -1) {
		b.WriteString(path[last:m[1]])
		last = m[1]
		if m[2] >= 0 { // a field name
			fields, _ := at.(map[string]any)
			at = fields[path[m[2]:m[3]]]
			continue
		}
		list, _ := at.([]any)
		i, err := strconv.Atoi(path[m[4]:m[5]])
		if err != nil || i >= len(list) {
			at = nil
			continue
		}
		at = list[i]
		if entry, ok := at.(map[string]any); ok {
			for _, key := range entryKeys {
				if value, ok := entry[key].(string); ok && value != "" {
					b.WriteString(" (" + value + ")")
					break
				}
			}
		}
	}
	b.WriteString(path[last:])
	return b.String()
}
