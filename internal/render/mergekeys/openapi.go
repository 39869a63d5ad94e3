// Package mergekeys tells kustomize the keys the lists of our kinds merge by:
// the OpenAPI schema every build registers and plain kustomize reads from a
// kustomization's openapi field. It imports no kustomize, so what only
// needs the keys (overlaypatch, the CLI's openapi command) does not compile
// it; internal/render/overlay, which builds, registers the schema.
package mergekeys

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	v1alpha1 "github.com/profilesync/profilesync/api/v1alpha1"
	"github.com/profilesync/profilesync/config/crd"
	"github.com/profilesync/profilesync/internal/render/merge"
	"github.com/profilesync/profilesync/internal/render/profile"
)

// OpenAPISchema returns the OpenAPI schema that teaches kustomize how to
// merge CloudProfiles and NamespacedCloudProfiles, in the JSON form a
// kustomization's `openapi: {path: ...}` field takes. Every build registers
// it (see overlay.Build); plain kustomize needs it written to a file and
// named in the overlay's kustomization to render the same objects.
//
// It is generated from the CRDs compiled into the binary (config/crd), so it
// cannot drift from the API: every list the API keys
// (x-kubernetes-list-type: map) merges by its first key in a strategic-merge
// patch, for example Kubernetes and image versions by version, lifecycle
// stages by classification, images, machine types, volume types and regions
// by name. Lists of other types are replaced whole, as without the schema.
// Each kind is registered under our apiVersion and under Gardener's, which
// a build's output may carry and profile.DecodeDocuments reads as ours.
//
// The bytes are the same on every call: indented JSON, keys sorted, ending
// in a newline.
func OpenAPISchema() ([]byte, error) {
	generated, err := kustomizeOpenAPISchema()
	if err != nil {
		return nil, err
	}
	return bytes.Clone(generated), nil
}

// kustomizeOpenAPISchema is the schema, generated once; callers must not
// modify the bytes.
var kustomizeOpenAPISchema = sync.OnceValues(generateOpenAPISchema)

func generateOpenAPISchema() ([]byte, error) {
	definitions, err := crd.Definitions()
	if err != nil {
		return nil, fmt.Errorf("generating the kustomize OpenAPI schema: %w", err)
	}
	gardener, err := schema.ParseGroupVersion(profile.GardenerGroupVersion)
	if err != nil {
		return nil, fmt.Errorf("generating the kustomize OpenAPI schema: Gardener's API version: %w", err)
	}
	schemaDefinitions := make(map[string]any, len(profile.OpenAPIKinds))
	for _, definition := range definitions {
		kind := definition.Spec.Names.Kind
		if definition.Spec.Group != v1alpha1.GroupVersion.Group || !slices.Contains(profile.OpenAPIKinds, kind) {
			continue
		}
		served := crdVersionSchema(definition, v1alpha1.GroupVersion.Version)
		if served == nil {
			return nil, fmt.Errorf("generating the kustomize OpenAPI schema: CRD %s has no schema for version %s", definition.Name, v1alpha1.GroupVersion.Version)
		}
		kindSchema := kustomizeSchemaOf(served)
		kindSchema["x-kubernetes-group-version-kind"] = []any{
			groupVersionKind(v1alpha1.GroupVersion.WithKind(kind)),
			groupVersionKind(gardener.WithKind(kind)),
		}
		schemaDefinitions[definitionName(v1alpha1.GroupVersion.WithKind(kind))] = kindSchema
	}
	for _, kind := range profile.OpenAPIKinds {
		if _, ok := schemaDefinitions[definitionName(v1alpha1.GroupVersion.WithKind(kind))]; !ok {
			return nil, fmt.Errorf("generating the kustomize OpenAPI schema: no CRD for kind %s of %s among the embedded CRDs", kind, v1alpha1.GroupVersion)
		}
	}
	document := map[string]any{
		"swagger": "2.0",
		"info": map[string]any{
			"title":          "ProfileSync profiles for kustomize: merge keys of " + v1alpha1.GroupVersion.String() + " and " + profile.GardenerGroupVersion,
			merge.VersionKey: v1alpha1.GroupVersion.Version,
		},
		"definitions": schemaDefinitions,
	}
	out, err := json.MarshalIndent(document, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("encoding the kustomize OpenAPI schema: %w", err)
	}
	return append(out, '\n'), nil
}

func crdVersionSchema(definition *apiextensionsv1.CustomResourceDefinition, version string) *apiextensionsv1.JSONSchemaProps {
	for _, v := range definition.Spec.Versions {
		if v.Name == version && v.Schema != nil {
			return v.Schema.OpenAPIV3Schema
		}
	}
	return nil
}

// kustomizeSchemaOf keeps of a CRD schema what kustomize reads to merge:
// the structure (types, properties, items, map values) and the list types,
// and adds the patch strategy and merge key that kyaml looks for on a keyed
// list. Validation and descriptions are left out: kustomize does not
// validate, and the API server's schema stays the one source for that.
func kustomizeSchemaOf(props *apiextensionsv1.JSONSchemaProps) map[string]any {
	out := make(map[string]any)
	if props.Type != "" {
		out["type"] = props.Type
	}
	if len(props.Properties) > 0 {
		properties := make(map[string]any, len(props.Properties))
		for name, property := range props.Properties {
			properties[name] = kustomizeSchemaOf(&property)
		}
		out["properties"] = properties
	}
	if props.Items != nil && props.Items.Schema != nil {
		out["items"] = kustomizeSchemaOf(props.Items.Schema)
	}
	if props.AdditionalProperties != nil && props.AdditionalProperties.Schema != nil {
		out["additionalProperties"] = kustomizeSchemaOf(props.AdditionalProperties.Schema)
	}
	if props.XListType != nil {
		out["x-kubernetes-list-type"] = *props.XListType
		if *props.XListType == profile.ListTypeMap && len(props.XListMapKeys) > 0 {
			out["x-kubernetes-list-map-keys"] = props.XListMapKeys
			// kyaml merges by every key in x-kubernetes-list-map-keys, but only
			// when a patch strategy is set; tools that know a single merge key
			// take the first, as Kubernetes' own schemas do.
			out["x-kubernetes-patch-strategy"] = "merge"
			out["x-kubernetes-patch-merge-key"] = props.XListMapKeys[0]
		}
	}
	return out
}

func groupVersionKind(gvk schema.GroupVersionKind) map[string]any {
	return map[string]any{"group": gvk.Group, merge.VersionKey: gvk.Version, profile.KindField: gvk.Kind}
}

// definitionName names a kind's definition the way Kubernetes' OpenAPI
// does: the group's DNS labels reversed, then version and kind, for example
// io.profilesync.core.v1alpha1.CloudProfile.
func definitionName(gvk schema.GroupVersionKind) string {
	labels := strings.Split(gvk.Group, ".")
	slices.Reverse(labels)
	return strings.Join(append(labels, gvk.Version, gvk.Kind), ".")
}
