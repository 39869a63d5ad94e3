package profile

import (
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	"k8s.io/apiextensions-apiserver/pkg/apis/apiextensions"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	structuralschema "k8s.io/apiextensions-apiserver/pkg/apiserver/schema"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/schema/listtype"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/schema/pruning"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/validation"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/validation/field"

	v1alpha1 "github.com/profilesync/profilesync/api/v1alpha1"
	"github.com/profilesync/profilesync/config/crd"
)

// crdSchema is the schema of one kind as the API server holds it, compiled
// once: the validator checks types, formats, enums, patterns, lengths and
// list bounds; the structural form drives pruning (unknown fields) and the
// uniqueness of list-type map and set entries.
type crdSchema struct {
	validator  validation.SchemaValidator
	structural *structuralschema.Structural
	typed      *typedNode
}

var (
	crdSchemasOnce sync.Once
	crdSchemas     map[string]*crdSchema
	crdSchemasErr  error
)

// OpenAPIKinds are the kinds the schema describes: the ones a build renders.
var OpenAPIKinds = []string{v1alpha1.CloudProfileKind, v1alpha1.NamespacedCloudProfileKind}

// schemaOf returns the CRD schema of kind (CloudProfile or
// NamespacedCloudProfile). The schemas come from the CRDs compiled into the
// binary (config/crd), the same files the cluster installs.
func schemaOf(kind string) (*crdSchema, error) {
	crdSchemasOnce.Do(func() {
		crdSchemas, crdSchemasErr = compileCRDSchemas()
	})
	if crdSchemasErr != nil {
		return nil, crdSchemasErr
	}
	s, ok := crdSchemas[kind]
	if !ok {
		return nil, fmt.Errorf("no CRD for kind %s of %s among the embedded CRDs", kind, v1alpha1.GroupVersion)
	}
	return s, nil
}

func compileCRDSchemas() (map[string]*crdSchema, error) {
	definitions, err := crd.Definitions()
	if err != nil {
		return nil, fmt.Errorf("loading the CRDs: %w", err)
	}
	schemas := make(map[string]*crdSchema)
	for _, definition := range definitions {
		if definition.Spec.Group != v1alpha1.GroupVersion.Group {
			continue
		}
		for _, version := range definition.Spec.Versions {
			if version.Name != v1alpha1.GroupVersion.Version || version.Schema == nil || version.Schema.OpenAPIV3Schema == nil {
				continue
			}
			s, err := compileCRDSchema(version.Schema.OpenAPIV3Schema)
			if err != nil {
				return nil, fmt.Errorf("compiling the schema of CRD %s version %s: %w", definition.Name, version.Name, err)
			}
			schemas[definition.Spec.Names.Kind] = s
		}
	}
	return schemas, nil
}

// compileCRDSchema converts a CRD's schema the way the API server does
// (apiextensions-apiserver's customresource handler): to the internal
// JSONSchemaProps, then to its OpenAPI validator and its structural schema.
func compileCRDSchema(schema *apiextensionsv1.JSONSchemaProps) (*crdSchema, error) {
	var internal apiextensions.JSONSchemaProps
	if err := apiextensionsv1.Convert_v1_JSONSchemaProps_To_apiextensions_JSONSchemaProps(schema, &internal, nil); err != nil {
		return nil, fmt.Errorf("converting to the internal schema: %w", err)
	}
	validator, _, err := validation.NewSchemaValidator(&internal)
	if err != nil {
		return nil, fmt.Errorf("building the validator: %w", err)
	}
	structural, err := structuralschema.NewStructural(&internal)
	if err != nil {
		return nil, fmt.Errorf("building the structural schema: %w", err)
	}
	return &crdSchema{validator: validator, structural: structural, typed: newTypedNode(structural)}, nil
}

// check validates obj, an object as decoded from JSON (integers as int64),
// in the order the API server does on create: unknown fields are pruned
// first and returned as paths, then what is left is checked against the
// schema and the list-type invariants. CEL rules (x-kubernetes-validations)
// are not run: Validate enforces each of them (lifecycle's rules, the
// namespaced merge) with messages that name the versions involved, and it
// only sees objects that pass this check. obj is modified: unknown fields
// are removed.
//
// It also reports values the schema lets through but our Go types cannot
// hold (see typedNode), so that the typed decode that follows never has to
// explain a value in Go's terms.
func (s *crdSchema) check(obj map[string]any) (errs field.ErrorList, unknownFields []string) {
	unknownFields = pruning.PruneWithOptions(obj, s.structural, true, structuralschema.UnknownFieldPathOptions{TrackUnknownFieldPaths: true})
	errs = append(errs, withoutRestatements(validation.ValidateCustomResource(nil, obj, s.validator))...)
	errs = append(errs, listtype.ValidateListSetsAndMaps(nil, s.structural, obj)...)
	errs = withoutStatusRules(errs)
	reported := make(map[string]bool, len(errs))
	for _, e := range errs {
		reported[e.Field] = true
	}
	errs = append(errs, s.typedValueErrors(obj, reported)...)
	sortFieldErrors(errs)
	sort.SliceStable(unknownFields, func(i, j int) bool { return naturalLess(unknownFields[i], unknownFields[j]) })
	return errs, unknownFields
}

// withoutStatusRules keeps, of the errors in status, only values of the
// wrong type. The API server drops the status of a profile that is created
// or updated (only the status subresource writes it) and the sync never
// sends it, so nothing Git holds there is refused for breaking a rule; but a
// value of the wrong type cannot be decoded, and the schema names it with
// its path.
func withoutStatusRules(errs field.ErrorList) field.ErrorList {
	kept := errs[:0]
	for _, e := range errs {
		if (e.Field == "status" || strings.HasPrefix(e.Field, "status.") || strings.HasPrefix(e.Field, "status[")) && e.Type != field.ErrorTypeTypeInvalid {
			continue
		}
		kept = append(kept, e)
	}
	return kept
}

// withoutRestatements drops the validator's errors that have no field path
// ("must validate at least one schema (anyOf)", "Checked value must be of
// type integer"): they restate, in the validator's internal terms, an error
// the same value also has at its path. Only when nothing else is reported
// are they kept, without the "<nil>" path.
func withoutRestatements(errs field.ErrorList) field.ErrorList {
	kept := make(field.ErrorList, 0, len(errs))
	var pathless field.ErrorList
	for _, e := range errs {
		if e.Field == "<nil>" || e.Field == "" {
			e.Field = ""
			pathless = append(pathless, e)
			continue
		}
		kept = append(kept, e)
	}
	if len(kept) == 0 {
		return pathless
	}
	return kept
}

// typedNode is the part of a schema whose values our Go types read more
// strictly than the schema checks them: date-times, which metav1.Time reads
// as RFC 3339 only (no lower-case t or z, no offsets of 24 hours or more),
// and int-or-strings, which in this API are all resource.Quantity. Subtrees
// without such values are left out, so that the walk skips them.
type typedNode struct {
	dateTime, quantity bool
	properties         map[string]*typedNode
	additional, items  *typedNode
}

func newTypedNode(s *structuralschema.Structural) *typedNode {
	if s == nil {
		return nil
	}
	n := &typedNode{
		dateTime: s.ValueValidation != nil && s.ValueValidation.Format == "date-time",
		quantity: s.XIntOrString,
		items:    newTypedNode(s.Items),
	}
	for key := range s.Properties {
		property := s.Properties[key]
		if child := newTypedNode(&property); child != nil {
			if n.properties == nil {
				n.properties = make(map[string]*typedNode)
			}
			n.properties[key] = child
		}
	}
	if s.AdditionalProperties != nil {
		n.additional = newTypedNode(s.AdditionalProperties.Structural)
	}
	if !n.dateTime && !n.quantity && n.items == nil && n.additional == nil && n.properties == nil {
		return nil
	}
	return n
}

// typedValueErrors reports the values of obj that the schema accepts but
// our Go types reject when a client reads the object, so that the typed
// decode never has to explain them in Go's terms. Paths in reported already
// have an error and are skipped.
func (s *crdSchema) typedValueErrors(obj map[string]any, reported map[string]bool) field.ErrorList {
	w := typedValueWalker{reported: reported}
	w.walk(s.typed, obj)
	return w.errs
}

// typedValueWalker keeps the path as a stack and builds a field.Path only
// for a value that fails.
type typedValueWalker struct {
	reported map[string]bool
	stack    []pathElement
	errs     field.ErrorList
}

type pathElement struct {
	key   string
	index int // when key is empty
}

func (w *typedValueWalker) walk(n *typedNode, value any) {
	if n == nil {
		return
	}
	switch value := value.(type) {
	case map[string]any:
		for key, child := range n.properties {
			if v, ok := value[key]; ok {
				w.stack = append(w.stack, pathElement{key: key})
				w.walk(child, v)
				w.stack = w.stack[:len(w.stack)-1]
			}
		}
		if n.additional != nil {
			for key, v := range value {
				if _, known := n.properties[key]; !known {
					w.stack = append(w.stack, pathElement{key: key})
					w.walk(n.additional, v)
					w.stack = w.stack[:len(w.stack)-1]
				}
			}
		}
	case []any:
		for i, v := range value {
			w.stack = append(w.stack, pathElement{index: i})
			w.walk(n.items, v)
			w.stack = w.stack[:len(w.stack)-1]
		}
	case string:
		if n.dateTime {
			if _, err := time.Parse(time.RFC3339, value); err != nil {
				w.report(value, "must be an RFC 3339 date-time as clients read it, for example 2025-06-01T00:00:00Z")
			}
		}
		if n.quantity {
			if _, err := resource.ParseQuantity(value); err != nil {
				w.report(value, fmt.Sprintf("must be a quantity, for example 4, 500m or 8Gi: %v", err))
			}
		}
	}
}

func (w *typedValueWalker) report(value, detail string) {
	var path *field.Path
	for _, e := range w.stack {
		if e.key != "" {
			path = path.Child(e.key)
		} else {
			path = path.Index(e.index)
		}
	}
	if !w.reported[path.String()] {
		w.errs = append(w.errs, field.Invalid(path, value, detail))
	}
}

// sortFieldErrors orders errors by field path, indices compared as numbers,
// then by message: the validators walk maps, whose order Go randomises, and
// the same input must always print the same lines.
func sortFieldErrors(errs field.ErrorList) {
	sort.SliceStable(errs, func(i, j int) bool {
		if errs[i].Field != errs[j].Field {
			return naturalLess(errs[i].Field, errs[j].Field)
		}
		return errs[i].ErrorBody() < errs[j].ErrorBody()
	})
}

// naturalLess compares a and b byte by byte except that runs of digits
// compare as numbers, so versions[2] sorts before versions[10].
func naturalLess(a, b string) bool {
	for a != "" && b != "" {
		if isDigit(a[0]) && isDigit(b[0]) {
			na, restA := digitRun(a)
			nb, restB := digitRun(b)
			if len(na) != len(nb) {
				return len(na) < len(nb)
			}
			if na != nb {
				return na < nb
			}
			a, b = restA, restB
			continue
		}
		if a[0] != b[0] {
			return a[0] < b[0]
		}
		a, b = a[1:], b[1:]
	}
	return len(a) < len(b)
}

func isDigit(c byte) bool { return '0' <= c && c <= '9' }

// digitRun splits s into its leading digits, without leading zeros, and the rest.
func digitRun(s string) (digits, rest string) {
	end := 0
	for end < len(s) && isDigit(s[end]) {
		end++
	}
	digits = s[:end]
	for len(digits) > 1 && digits[0] == '0' {
		digits = digits[1:]
	}
	return digits, s[end:]
}
