package render

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation/field"
	apiyaml "k8s.io/apimachinery/pkg/util/yaml"
	strictjson "sigs.k8s.io/json"
	"sigs.k8s.io/yaml"

	v1alpha1 "github.com/profilesync/profilesync/api/v1alpha1"
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
	// Data is the document, YAML or JSON.
	Data []byte
}

// Object is one decoded profile: exactly one of CloudProfile and
// NamespacedCloudProfile is set.
type Object struct {
	// File is the source of the object, as in Document.File.
	File                   string
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
	return objectRef(o.Kind(), o.Namespace(), o.Name())
}

func objectRef(kind, namespace, name string) string {
	if namespace == "" {
		return kind + "/" + name
	}
	return kind + "/" + namespace + "/" + name
}

// problem returns a Problem located at this object.
func (o Object) problem(fieldPath, message string) Problem {
	return Problem{File: o.File, Kind: o.Kind(), Namespace: o.Namespace(), Name: o.Name(), Field: fieldPath, Message: message}
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
}

// String formats the problem as one line "FILE: KIND/NAME: FIELD: message"
// (KIND/NAMESPACE/NAME for a namespaced object); parts that are not known are
// left out.
func (p Problem) String() string {
	var b strings.Builder
	if p.File != "" {
		b.WriteString(p.File)
		b.WriteString(": ")
	}
	if p.Kind != "" {
		b.WriteString(objectRef(p.Kind, p.Namespace, p.Name))
		b.WriteString(": ")
	}
	if p.Field != "" {
		b.WriteString(p.Field)
		b.WriteString(": ")
	}
	b.WriteString(oneLine(p.Message))
	return b.String()
}

// oneLine joins the lines of a multi-line message (YAML parsers report
// several errors that way) so that every problem is exactly one line.
func oneLine(message string) string {
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

// Problems is a list of problems; as an error it reads one problem per line.
type Problems []Problem

func (ps Problems) Error() string {
	lines := make([]string, len(ps))
	for i, p := range ps {
		lines[i] = p.String()
	}
	return strings.Join(lines, "\n")
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
// by "---" lines) read from r into documents of file. Documents that hold
// nothing but comments and whitespace are dropped.
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

func isBlankDocument(data []byte) bool {
	for _, line := range bytes.Split(data, []byte("\n")) {
		line = bytes.TrimSpace(line)
		if len(line) > 0 && line[0] != '#' {
			return false
		}
	}
	return true
}

// typeHeader is what Decode reads first to decide which type a document is.
type typeHeader struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Metadata   struct {
		Name      string `json:"name"`
		Namespace string `json:"namespace"`
	} `json:"metadata"`
}

// DecodeDocuments decodes every document into a profile, keeping the input
// order, and returns every problem found; a document with a problem yields no
// object.
//
// Decoding is strict: a field our API does not have is a problem naming the
// field, never silently dropped; so is a field given twice, and a kind other
// than CloudProfile or NamespacedCloudProfile. Both our apiVersion and
// Gardener's core.gardener.cloud/v1beta1 are accepted; the objects returned
// always carry ours, because that is what the cluster will hold.
//
// Nothing is defaulted into the objects: the API server's one default that
// matters (a machine image without updateStrategy means major) is applied
// where it is needed, by lifecycle for update paths and by EvaluateSet for the
// parent of a namespaced merge, so that printed specs stay as written.
func DecodeDocuments(docs []Document) ([]Object, Problems) {
	var objects []Object
	var problems Problems
	for i, doc := range docs {
		object, docProblems := decodeDocument(doc, i+1)
		problems = append(problems, docProblems...)
		if len(docProblems) == 0 {
			objects = append(objects, object)
		}
	}
	return objects, problems
}

// decodeDocument decodes doc, the n-th document of the input (counted for
// messages about documents that have no kind and name to name them by).
func decodeDocument(doc Document, n int) (Object, Problems) {
	documentProblem := func(format string, args ...any) Problems {
		return Problems{{File: doc.File, Message: fmt.Sprintf("document %d: ", n) + fmt.Sprintf(format, args...)}}
	}
	data, err := yaml.YAMLToJSONStrict(doc.Data)
	if err != nil {
		return Object{}, documentProblem("not valid YAML: %v", err)
	}
	var header typeHeader
	if err := json.Unmarshal(data, &header); err != nil {
		return Object{}, documentProblem("not a Kubernetes object (apiVersion, kind, metadata): %v", err)
	}
	object := Object{File: doc.File}
	var into any
	switch header.Kind {
	case v1alpha1.CloudProfileKind:
		object.CloudProfile = &v1alpha1.CloudProfile{}
		into = object.CloudProfile
	case v1alpha1.NamespacedCloudProfileKind:
		object.NamespacedCloudProfile = &v1alpha1.NamespacedCloudProfile{}
		into = object.NamespacedCloudProfile
	case "":
		return Object{}, documentProblem("kind is missing: expected CloudProfile or NamespacedCloudProfile")
	default:
		return Object{}, Problems{{
			File: doc.File, Kind: header.Kind, Namespace: header.Metadata.Namespace, Name: header.Metadata.Name,
			Message: fmt.Sprintf("unsupported kind %s (apiVersion %q): only CloudProfile and NamespacedCloudProfile of %s are read",
				header.Kind, header.APIVersion, strings.Join(acceptedAPIVersions, " or ")),
		}}
	}
	located := func(fieldPath, message string) Problem {
		return Problem{File: doc.File, Kind: header.Kind, Namespace: header.Metadata.Namespace, Name: header.Metadata.Name, Field: fieldPath, Message: message}
	}
	var problems Problems
	if !isAcceptedAPIVersion(header.APIVersion) {
		problems = append(problems, located("apiVersion",
			fmt.Sprintf("Unsupported value: %q: supported values: %s", header.APIVersion, strings.Join(quoteAll(acceptedAPIVersions), ", "))))
	}

	strictErrs, err := strictjson.UnmarshalStrict(data, into)
	if err != nil {
		problems = append(problems, located("", fmt.Sprintf("cannot decode: %v", strings.TrimPrefix(err.Error(), "json: "))))
	}
	for _, strictErr := range strictErrs {
		problems = append(problems, strictProblem(strictErr, located))
	}
	if header.Metadata.Name == "" {
		problems = append(problems, located("metadata.name", "Required value: every profile needs a name"))
	}
	if len(problems) > 0 {
		return Object{}, problems
	}
	// Gardener's apiVersion is read as ours: the object is applied as ours.
	if object.CloudProfile != nil {
		object.CloudProfile.APIVersion = v1alpha1.GroupVersion.String()
	} else {
		object.NamespacedCloudProfile.APIVersion = v1alpha1.GroupVersion.String()
	}
	return object, nil
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
		return located(withPath.FieldPath(), "unknown field: the API has no such field (check spelling and indentation)")
	case "duplicate field":
		return located(withPath.FieldPath(), "duplicate field: given more than once in the same object")
	}
	return located(withPath.FieldPath(), err.Error())
}

func isAcceptedAPIVersion(apiVersion string) bool {
	for _, accepted := range acceptedAPIVersions {
		if apiVersion == accepted {
			return true
		}
	}
	return false
}

func quoteAll(values []string) []string {
	quoted := make([]string, len(values))
	for i, v := range values {
		quoted[i] = fmt.Sprintf("%q", v)
	}
	return quoted
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
