package overlay

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"slices"
	"strings"

	// The patch transformer kustomize builds with: the one public way to
	// apply a patch entry exactly as a build does. Deprecated for an API
	// v1 that does not exist yet; go.mod pins the version, and
	// TestTheLinearPathBuildsWhatKustomizeBuilds holds the two together.
	"sigs.k8s.io/kustomize/api/builtins" //nolint:staticcheck // SA1019, see above
	"sigs.k8s.io/kustomize/api/ifc"
	"sigs.k8s.io/kustomize/api/resmap"
	"sigs.k8s.io/kustomize/api/resource"
	"sigs.k8s.io/kustomize/api/types"
	"sigs.k8s.io/kustomize/kyaml/openapi"
	kyaml "sigs.k8s.io/kustomize/kyaml/yaml"
	"sigs.k8s.io/yaml"

	"github.com/profilesync/profilesync/internal/render/profile"
)

// linearPatches applies the transformations of a plain build's
// kustomizations on the linear path (buildPlain), one object at a time:
// each kustomization's patches with kustomize's own patch transformer,
// then its labels and annotations with kustomize's own label and
// annotation transformers (metadataTransformers), and checks the patches
// as it goes.
//
// kustomize applies a kustomization's patches, in order, to every object
// its resources hold, each patch to what the ones before it left. A patch
// changes the objects it selects and nothing else, and which objects it
// selects depends on nothing but each object itself (its id, labels and
// annotations as the patches before left them), so applying every patch
// that reaches an object to that object, in kustomize's order, makes the
// object kustomize makes, in time linear in the objects. The same holds
// for labels and annotations, which kustomize adds to every object by its
// kind alone, after the kustomization's patches: a patch selects by the
// labels of the kustomizations its own lists, not by its own
// kustomization's. Where that would not hold, the linear path gives up and
// kustomize builds (apply returns false): a patch or a label that renames,
// deletes or marks an object (its id, or what buildsLikeKustomize checks,
// changed), a strategic-merge patch without a target that does not match
// exactly one object (kustomize's error), a patch, label or annotation
// kustomize cannot configure or apply.
//
// Because it holds each object right before each patch, it also finds,
// without building anything again, what the checks after a kustomize build
// rebuild the overlay for: which patch set which field
// (profile.FieldSource, as fieldSources records it: the object as the
// labels and annotations that run after the patch leave it, with and
// without the patch), the JSON patches that
// address a keyed list by index (as indexPatchWarnings finds them) and the
// stale strategic-merge patch entries (as staleKeyedEntries finds them),
// with the same words. Only the objects a patch selects cost anything.
type linearPatches struct {
	fs   *buildFS
	plan resourcePlan
	// entries are the configured patch entries of each of
	// plan.transforming, configured when an object first reaches them.
	entries [][]*linearPatchEntry
	// metadata are the label and annotation transformers of each of
	// plan.transforming, configured before the build: kustomize configures
	// them whether or not a kustomization holds objects.
	metadata [][]resmap.Transformer
	// steps are the patch entries applied so far, for describe; each
	// entry's step is its index here.
	steps []patchStep
	// warnings are the checks' findings, in the order indexPatchWarnings
	// would report them once sorted (see orderedWarning).
	warnings []orderedWarning
}

// linearPatchEntry is one patch entry, configured.
type linearPatchEntry struct {
	transformer *builtins.PatchTransformerPlugin
	entry       types.Patch
	step        int
	// strategicMerge are the objects of a strategic-merge patch (nil for a
	// JSON patch), as kustomize's transformer reads them.
	strategicMerge []*resource.Resource
	// matched counts, for each object of a strategic-merge patch without
	// a target, the objects it matched.
	matched []int
	// operations are a JSON patch's operations, as the check of index
	// patches reads them (patchCheck.jsonPatch).
	operations []json.RawMessage
	check      patchCheck
}

// orderedWarning is a warning with its place in indexPatchWarnings' order:
// by kustomization, entry, the entry's object and the target object.
type orderedWarning struct {
	kustomization     string
	entry, doc, order int
	warning           profile.Problem
}

// newLinearPatches configures the label and annotation transformers of
// plan's kustomizations; false when kustomize would not configure one.
func newLinearPatches(fs *buildFS, plan resourcePlan) (*linearPatches, bool) {
	p := &linearPatches{fs: fs, plan: plan, entries: make([][]*linearPatchEntry, len(plan.transforming)),
		metadata: make([][]resmap.Transformer, len(plan.transforming))}
	for k, kustomization := range plan.transforming {
		transformers, err := fs.metadataTransformers(kustomization)
		if err != nil {
			return nil, false
		}
		p.metadata[k] = transformers
	}
	return p, true
}

// configured returns entry i of the kustomization k, configured as
// kustomize configures it; false when kustomize would not configure it.
func (p *linearPatches) configured(k, i int) (*linearPatchEntry, bool) {
	if p.entries[k] == nil {
		p.entries[k] = make([]*linearPatchEntry, len(p.plan.transforming[k].patches))
	}
	if configured := p.entries[k][i]; configured != nil {
		return configured, true
	}
	kustomization := p.plan.transforming[k]
	entry := kustomization.patches[i]
	config, err := yaml.Marshal(entry)
	if err != nil {
		return nil, false
	}
	transformer, ok := builtins.NewPatchTransformerPlugin().(*builtins.PatchTransformerPlugin)
	if !ok {
		return nil, false
	}
	loader := patchLoader{fs: p.fs, dir: kustomization.dir}
	if err := transformer.Config(resmap.NewPluginHelpers(loader, nil, resmapFactory(), types.DisabledPluginConfig()), config); err != nil {
		return nil, false
	}
	// kustomize reads the patch's text again below and in its checks:
	// from what the transformer read, and counted once.
	text := strings.TrimSpace(entry.Patch)
	if entry.Path != "" {
		abs, err := p.fs.resolve(filepath.Join(kustomization.dir, entry.Path))
		if err != nil {
			return nil, false
		}
		text = string(p.fs.served[abs])
	}
	configured := &linearPatchEntry{transformer: transformer, entry: entry, step: len(p.steps),
		check: patchCheck{fs: p.fs, kustomization: kustomization.path, dir: kustomization.dir}}
	// A patch is a strategic-merge one when its text reads as objects, as
	// kustomize's transformer tells them apart.
	if objects, err := resmapFactory().RF().SliceFromBytes([]byte(text)); err == nil {
		configured.strategicMerge = objects
		configured.matched = make([]int, len(objects))
	} else if operations, ok := configured.check.jsonPatch(entry); ok {
		configured.operations = operations
	}
	p.steps = append(p.steps, patchStep{kustomization: kustomization.path, index: i, patch: entry,
		order: kustomization.rank<<20 | i})
	p.entries[k][i] = configured
	return configured, true
}

// apply applies the transformations of file's kustomizations to object,
// the order-th object of the build, and returns the fields the patches
// set; false when the linear path cannot build it as kustomize does.
func (p *linearPatches) apply(object *resource.Resource, file plannedFile, order int) (*objectSources, bool) {
	if len(file.transformedBy) == 0 {
		return nil, true
	}
	id := object.CurId()
	schema := openapi.SchemaForResourceType(kyaml.TypeMeta{APIVersion: object.GetApiVersion(), Kind: object.GetKind()})
	var sources *objectSources
	for n, k := range file.transformedBy {
		for i := range p.plan.transforming[k].patches {
			entry, ok := p.configured(k, i)
			if !ok {
				return nil, false
			}
			before, ok := p.applyEntry(object, entry, k, i, order)
			if !ok {
				return nil, false
			}
			if before == nil {
				continue
			}
			if rewriteAnnotations(object) != nil {
				return nil, false
			}
			if schema == nil {
				continue
			}
			// What kustomize's replay compares (fieldSources) are whole
			// builds with and without the patch, in which the labels and
			// annotations of this kustomization and of those that list it
			// come after it (a label the patch sets that they set again
			// is theirs, not the patch's), as rendered: without the
			// annotations the build removes at its end (an object whose
			// annotations are all the build's has none).
			after := object.DeepCopy()
			if later := file.transformedBy[n:]; p.setsMetadata(later) {
				if !p.applyMetadata(before, later) || !p.applyMetadata(after, later) {
					return nil, false
				}
			}
			if withoutBuildAnnotations(before) != nil || withoutBuildAnnotations(after) != nil {
				return nil, false
			}
			if sources == nil {
				sources = &objectSources{}
			}
			changedFields(before.YNode(), after.YNode(), schema, nil, func(path keyedPath) { sources.set(path, entry.step) })
		}
		if !p.applyMetadata(object, file.transformedBy[n:n+1]) {
			return nil, false
		}
	}
	if object.IsNilOrEmpty() || object.CurId() != id || !buildsLikeKustomize(object) {
		return nil, false // renamed, deleted or marked: kustomize's to build
	}
	return sources, true
}

// setsMetadata says whether any of the kustomizations has labels or
// annotations to set.
func (p *linearPatches) setsMetadata(kustomizations []int) bool {
	return slices.ContainsFunc(kustomizations, func(k int) bool { return len(p.metadata[k]) > 0 })
}

// applyMetadata applies the label and annotation transformers of the
// kustomizations, in order, to object; false when one fails or does more
// than change the object (kustomize's to build then).
func (p *linearPatches) applyMetadata(object *resource.Resource, kustomizations []int) bool {
	for _, k := range kustomizations {
		for _, transformer := range p.metadata[k] {
			one := resmapFactory().FromResource(object)
			if err := transformer.Transform(one); err != nil || one.Size() != 1 || one.Resources()[0] != object {
				return false
			}
			if rewriteAnnotations(object) != nil {
				return false
			}
		}
	}
	return true
}

// withoutBuildAnnotations removes from object the annotations the build
// removes at its end (buildPlain).
func withoutBuildAnnotations(object *resource.Resource) error {
	object.RemoveBuildAnnotations()
	if err := object.SetOrigin(nil); err != nil {
		return err
	}
	return object.ClearTransformations()
}

// rewriteAnnotations writes object's annotations anew, as kustomize does
// after each transformer it runs (it records the transformer in an
// annotation, removed at the end of the build): the annotations become new
// string nodes, sorted by key. That matters to what comes next: a label
// transformer sets one node in every field it writes a label to (the
// labels, and the annotations when its fields say so), and a later one
// that sets that label again changes the node in place, in both fields,
// unless the annotations were written anew in between; and an annotation
// a patch sets to a number becomes a string before the next patch reads
// it. The build of an object the transformer did not change is unchanged
// by it, so the linear path rewrites only after a transformer that
// changed the object, or may have.
func rewriteAnnotations(object *resource.Resource) error {
	return object.SetAnnotations(object.GetAnnotations())
}

// applyEntry checks and applies one patch entry (entry i of the
// kustomization k) to object, and returns the object as it was before
// when the entry selected it, nil when it did not.
func (p *linearPatches) applyEntry(object *resource.Resource, entry *linearPatchEntry, k, i, order int) (before *resource.Resource, ok bool) {
	path := p.plan.transforming[k].path
	if entry.entry.Target != nil {
		selected, err := resmapFactory().FromResource(object).Select(*entry.entry.Target)
		if err != nil {
			return nil, false
		}
		if len(selected) == 0 {
			return nil, true
		}
		if entry.strategicMerge != nil {
			p.staleEntries(object, entry, path, i, 0, entry.strategicMerge[0], order)
		} else if entry.operations != nil {
			p.indexedEntries(object, entry, path, i, order)
		}
		before = object.DeepCopy()
		one := resmapFactory().FromResource(object)
		if err := entry.transformer.Transform(one); err != nil || one.Size() != 1 || one.Resources()[0] != object {
			return nil, false
		}
		return before, true
	}
	if entry.strategicMerge == nil {
		return nil, false // a JSON patch without a target: kustomize's error
	}
	for d, patch := range entry.strategicMerge {
		if patch.GetKind() == object.GetKind() && patch.GetName() == object.GetName() &&
			(patch.GetNamespace() == "" || patch.GetNamespace() == object.GetNamespace()) {
			p.staleEntries(object, entry, path, i, d, patch, order)
		}
		if !matchesAnyID(object, patch) {
			continue
		}
		entry.matched[d]++
		if before == nil {
			before = object.DeepCopy()
		}
		if err := object.ApplySmPatch(patch.DeepCopy()); err != nil {
			return nil, false
		}
	}
	return before, true
}

// matchesAnyID reports whether a strategic-merge patch without a target
// patches object: kustomize's transformer patches the one object whose
// current or previous id is the patch's.
func matchesAnyID(object, patch *resource.Resource) bool {
	want := patch.OrgId()
	return slices.ContainsFunc(append(object.PrevIds(), object.CurId()), want.Equals)
}

// staleEntries adds staleKeyedEntries' warnings about one object of a
// strategic-merge patch entry against object, as the patch finds it.
func (p *linearPatches) staleEntries(object *resource.Resource, entry *linearPatchEntry, path string, i, d int, patch *resource.Resource, order int) {
	if !holdsList(patch.YNode()) {
		return
	}
	for _, w := range entry.check.staleWarnings(object, entry.entry, patch) {
		p.warnings = append(p.warnings, orderedWarning{kustomization: path, entry: i, doc: d, order: order, warning: w})
	}
}

// indexedEntries adds indexPatchWarnings' warnings about a JSON patch
// entry against object, as the patch finds it.
func (p *linearPatches) indexedEntries(object *resource.Resource, entry *linearPatchEntry, path string, i, order int) {
	for _, w := range entry.check.operationWarnings(object.DeepCopy(), entry.entry, entry.operations) {
		p.warnings = append(p.warnings, orderedWarning{kustomization: path, entry: i, order: order, warning: w})
	}
}

// finish says whether every strategic-merge patch without a target
// matched exactly one object, as kustomize requires, and returns the
// checks' warnings in indexPatchWarnings' order, each once.
func (p *linearPatches) finish() (profile.Problems, bool) {
	for _, entries := range p.entries {
		for _, entry := range entries {
			if entry == nil || entry.entry.Target != nil {
				continue
			}
			for _, matched := range entry.matched {
				if matched != 1 {
					return nil, false
				}
			}
		}
	}
	// Entries no object reached (a kustomization whose resources hold no
	// object) are kustomize's to report, as are their errors.
	for k, kustomization := range p.plan.transforming {
		for i := range kustomization.patches {
			if p.entries[k] == nil || p.entries[k][i] == nil {
				return nil, false
			}
		}
	}
	slices.SortStableFunc(p.warnings, func(a, b orderedWarning) int {
		switch {
		case a.kustomization != b.kustomization:
			return strings.Compare(a.kustomization, b.kustomization)
		case a.entry != b.entry:
			return a.entry - b.entry
		case a.doc != b.doc:
			return a.doc - b.doc
		}
		return a.order - b.order
	})
	var warnings profile.Problems
	seen := make(map[string]bool)
	for _, w := range p.warnings {
		if line := w.warning.String(); !seen[line] {
			seen[line] = true
			warnings = append(warnings, w.warning)
		}
	}
	return warnings, true
}

// fieldSourcesOf names, in the built object, the fields sources recorded
// and the patch that set each, as fieldSources does. fieldSources reads
// the order of the fields one patch set from the rendered document, whose
// mappings are sorted by key (a patch or a label may have added a key
// after those that sort after it), so the rendered document orders them
// here too when there is more than one.
func (p *linearPatches) fieldSourcesOf(object *resource.Resource, rendered []byte, sources *objectSources) ([]profile.FieldSource, error) {
	if sources == nil {
		return nil, nil
	}
	node := object.YNode()
	if len(sources.order) > 1 {
		parsed, err := kyaml.Parse(string(rendered))
		if err != nil {
			return nil, fmt.Errorf("reading the rendered %s again: %w", object.CurId(), err)
		}
		node = parsed.YNode()
	}
	return p.fs.describeSources(node, sources, p.steps), nil
}

// patchLoader loads the patch files of one kustomization for kustomize's
// patch transformer, through the build's file system (checked and counted
// as kustomize's own reads are), relative to the kustomization's directory
// as kustomize's loader reads them.
type patchLoader struct {
	fs  *buildFS
	dir string
}

func (l patchLoader) Repo() string { return "" }
func (l patchLoader) Root() string { return l.dir }
func (l patchLoader) New(string) (ifc.Loader, error) {
	return nil, fmt.Errorf("a patch loads no kustomization")
}
func (l patchLoader) Cleanup() error { return nil }

// Load reads a patch file. The read is counted once: a build that goes
// through kustomize after all is served the same content, not counted
// again (see buildFS.prefetched).
func (l patchLoader) Load(location string) ([]byte, error) {
	if filepath.IsAbs(location) || isNetworkLocation(location) {
		return nil, fmt.Errorf("%s: not a file of the kustomization's directory", location)
	}
	path := filepath.Join(l.dir, location)
	content, err := l.fs.ReadFile(path)
	if err != nil {
		return nil, err
	}
	if abs, err := l.fs.resolve(path); err == nil {
		l.fs.prefetched[abs]++
	}
	return content, nil
}
