package overlay

import (
	_ "embed" // the field specs of kustomize's label and annotation transformers
	"fmt"
	"sort"
	"sync"

	"sigs.k8s.io/kustomize/api/builtins" //nolint:staticcheck // SA1019, see build_plain_patches.go
	"sigs.k8s.io/kustomize/api/resmap"
	"sigs.k8s.io/kustomize/api/types"
	"sigs.k8s.io/yaml"
)

// kustomizeMetadataFieldSpecs is the part of kustomize's default
// transformer configuration (builtinconfig.MakeDefaultConfig, internal to
// kustomize) that its label and annotation transformers read: the fields
// each label or annotation goes to, by kind.
//
//go:embed kustomize_metadata_fieldspecs.yaml
var kustomizeMetadataFieldSpecs []byte

// metadataFieldSpecs are the field specs of kustomize's transformer
// configuration that its label and annotation transformers are configured
// with (builtinconfig.TransformerConfig's fields of the same names).
type metadataFieldSpecs struct {
	CommonLabels              types.FsSlice `json:"commonLabels,omitempty"`
	Labels                    types.FsSlice `json:"labels,omitempty"`
	TemplateLabels            types.FsSlice `json:"templateLabels,omitempty"`
	VolumeClaimTemplateLabels types.FsSlice `json:"volumeClaimTemplateLabels,omitempty"`
	CommonAnnotations         types.FsSlice `json:"commonAnnotations,omitempty"`
}

// parseMetadataFieldSpecs reads field specs as kustomize reads its default
// configuration: strictly, each list sorted by kind as kustomize sorts it
// (TransformerConfig.sortFields, with the same sort).
func parseMetadataFieldSpecs(data []byte) (metadataFieldSpecs, error) {
	var specs metadataFieldSpecs
	if err := yaml.UnmarshalStrict(data, &specs); err != nil {
		return metadataFieldSpecs{}, err
	}
	for _, list := range []types.FsSlice{specs.CommonLabels, specs.Labels, specs.TemplateLabels, specs.VolumeClaimTemplateLabels, specs.CommonAnnotations} {
		sort.Sort(list)
	}
	return specs, nil
}

// defaultMetadataFieldSpecs are kustomize's default field specs of its
// label and annotation transformers, read once; each call returns a copy,
// as MakeDefaultConfig does.
var defaultMetadataFieldSpecs = func() func() (metadataFieldSpecs, error) {
	parsed := sync.OnceValues(func() (metadataFieldSpecs, error) { return parseMetadataFieldSpecs(kustomizeMetadataFieldSpecs) })
	return func() (metadataFieldSpecs, error) {
		specs, err := parsed()
		if err != nil {
			return metadataFieldSpecs{}, fmt.Errorf("kustomize's field specs of labels and annotations: %w", err)
		}
		return metadataFieldSpecs{
			CommonLabels:              specs.CommonLabels.DeepCopy(),
			Labels:                    specs.Labels.DeepCopy(),
			TemplateLabels:            specs.TemplateLabels.DeepCopy(),
			VolumeClaimTemplateLabels: specs.VolumeClaimTemplateLabels.DeepCopy(),
			CommonAnnotations:         specs.CommonAnnotations.DeepCopy(),
		}, nil
	}
}()

// metadataTransformers are the label and annotation transformers of the
// kustomization k, configured as kustomize configures them
// (kusttarget_configplugin.go: the LabelTransformer and
// AnnotationsTransformer configurators over the default transformer
// configuration, which a plain build's kustomizations do not change): one
// label transformer per labels entry, with the entry's fields merged with
// the default field specs its options ask for, one for commonLabels, then
// one for commonAnnotations. They run in that order, after the
// kustomization's patches. An error is kustomize's to report: the build
// then goes through it.
//
// Each transformer sets its labels or annotations on every object given,
// by the object's kind alone, so that one applied to each object on its own
// changes it as it does applied to all of them at once.
func (r *buildFS) metadataTransformers(k transformingKustomizationPlan) ([]resmap.Transformer, error) {
	tc, err := defaultMetadataFieldSpecs()
	if err != nil {
		return nil, err
	}
	helpers := resmap.NewPluginHelpers(patchLoader{fs: r, dir: k.dir}, nil, resmapFactory(), types.DisabledPluginConfig())
	configure := func(plugin resmap.TransformerPlugin, config any) (resmap.Transformer, error) {
		y, err := yaml.Marshal(config)
		if err != nil {
			return nil, err
		}
		if err := plugin.Config(helpers, y); err != nil {
			return nil, err
		}
		return plugin, nil
	}
	var transformers []resmap.Transformer
	if len(k.labels) > 0 || len(k.commonLabels) > 0 {
		// The configuration kustomize marshals, field names and all.
		type labelStruct struct {
			Labels     map[string]string
			FieldSpecs []types.FieldSpec
		}
		for _, label := range k.labels {
			fss, err := types.FsSlice(label.FieldSpecs).MergeAll(tc.Labels)
			if err != nil {
				return nil, fmt.Errorf("failed to merge labels: %w", err)
			}
			if label.IncludeSelectors {
				fss, err = fss.MergeAll(tc.CommonLabels)
			} else {
				if label.IncludeTemplates {
					if fss, err = fss.MergeAll(tc.TemplateLabels); err != nil {
						return nil, fmt.Errorf("failed to merge template fieldSpec: %w", err)
					}
				}
				if label.IncludeVolumeClaimTemplates {
					if fss, err = fss.MergeAll(tc.VolumeClaimTemplateLabels); err != nil {
						return nil, fmt.Errorf("failed to merge volumeClaimTemplate fieldSpec: %w", err)
					}
				}
				fss, err = fss.MergeOne(types.FieldSpec{Path: "metadata/labels", CreateIfNotPresent: true})
			}
			if err != nil {
				return nil, fmt.Errorf("failed to merge labels: %w", err)
			}
			transformer, err := configure(builtins.NewLabelTransformerPlugin(), labelStruct{Labels: label.Pairs, FieldSpecs: fss})
			if err != nil {
				return nil, err
			}
			transformers = append(transformers, transformer)
		}
		transformer, err := configure(builtins.NewLabelTransformerPlugin(), labelStruct{Labels: k.commonLabels, FieldSpecs: tc.CommonLabels})
		if err != nil {
			return nil, err
		}
		transformers = append(transformers, transformer)
	}
	if len(k.commonAnnotations) > 0 {
		transformer, err := configure(builtins.NewAnnotationsTransformerPlugin(), struct {
			Annotations map[string]string
			FieldSpecs  []types.FieldSpec
		}{Annotations: k.commonAnnotations, FieldSpecs: tc.CommonAnnotations})
		if err != nil {
			return nil, err
		}
		transformers = append(transformers, transformer)
	}
	return transformers, nil
}
