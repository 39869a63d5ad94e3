// Package crd holds the CustomResourceDefinitions that `make manifests`
// generates into bases/ from the markers in api/v1alpha1, compiled into the
// binary. The files are the one source of truth for the API's schema: the
// cluster installs them (kustomization.yaml), and the CLI and the sync check
// profiles against the same bytes, so the two cannot drift apart.
package crd

import (
	"embed"
	"fmt"
	"io/fs"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"sigs.k8s.io/yaml"
)

// bases are the generated CRDs, one per file.
//
//go:embed bases/*.yaml
var bases embed.FS

// Definitions returns every CRD of bases/, in file name order.
func Definitions() ([]*apiextensionsv1.CustomResourceDefinition, error) {
	files, err := fs.Glob(bases, "bases/*.yaml")
	if err != nil {
		return nil, fmt.Errorf("listing the embedded CRDs: %w", err)
	}
	definitions := make([]*apiextensionsv1.CustomResourceDefinition, 0, len(files))
	for _, file := range files {
		data, err := bases.ReadFile(file)
		if err != nil {
			return nil, fmt.Errorf("reading embedded CRD %s: %w", file, err)
		}
		var definition apiextensionsv1.CustomResourceDefinition
		if err := yaml.UnmarshalStrict(data, &definition); err != nil {
			return nil, fmt.Errorf("decoding embedded CRD %s: %w", file, err)
		}
		if definition.Kind != "CustomResourceDefinition" {
			return nil, fmt.Errorf("embedded file %s is a %q, not a CustomResourceDefinition", file, definition.Kind)
		}
		definitions = append(definitions, &definition)
	}
	return definitions, nil
}
