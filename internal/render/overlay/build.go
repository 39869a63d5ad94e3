package overlay

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"

	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/api/resmap"
	"sigs.k8s.io/kustomize/api/resource"
	"sigs.k8s.io/kustomize/api/types"
	"sigs.k8s.io/kustomize/kyaml/openapi"
	kyaml "sigs.k8s.io/kustomize/kyaml/yaml"
	"sigs.k8s.io/yaml"

	"github.com/profilesync/profilesync/internal/render/mergekeys"
	"github.com/profilesync/profilesync/internal/render/profile"
)

// Build renders the directory path of the repository checked out at root,
// the way `kustomize build` does, and returns one profile.Document per object in
// kustomize's output order. path is relative to root (an absolute path must
// lie inside root). Each profile.Document's File is the root-relative path of the
// file the object was read from, taken from kustomize's origin tracking, so
// that problems name the file a person has to edit.
//
// A commit is untrusted input, so the build reads the work tree and nothing
// else (see buildFS):
//
//   - nothing outside root is read, nor anything in .git/: a path, base or
//     resource that leaves root or enters .git/ (also through a symbolic
//     link) is refused;
//   - every location a kustomization or a builtin plugin's configuration
//     makes kustomize load must be a file or directory of the work tree; a
//     URL or Git address is refused, naming the file and the entry, before
//     kustomize could fetch it: a build never touches the network;
//   - exec, container and Go plugins and Helm charts never run;
//   - it stays within limits (see Limits), and is abandoned when ctx is done:
//     Build then returns ctx's error at once, and the build stops at its
//     next file access.
//
// A directory without a kustomization file is read like Flux's
// kustomize-controller reads one: as if it had a kustomization listing every
// *.yaml and *.yml file below it (sorted, hidden directories and versioning
// policy files skipped) and, in
// place of their files, every subdirectory that has a kustomization of its
// own.
//
// The resource files of the kustomizations are read, checked and counted
// against Limits.MaxObjects before kustomize runs (planResources), so that
// a build of too many objects is refused before kustomize accumulates any.
// A build whose kustomizations only list resources of profiles, patch them
// and add labels and annotations to them (labels, commonLabels,
// commonAnnotations; no generator, other transformer, name or namespace
// change, component, configuration, patch option) is built without
// kustomize's accumulator, in time linear in its objects, to the same
// output (buildPlain, linearPatches); anything else goes through kustomize.
//
// Files may be referenced from anywhere inside root (kustomize's "load
// restrictor" is off, as in Flux), so an overlay can use a patch file kept
// next to its base.
//
// Strategic-merge patches merge CloudProfiles and NamespacedCloudProfiles by
// the keys of their lists (Kubernetes and image versions by version,
// lifecycle stages by classification, images, types and regions by name),
// so an overlay can name the version it changes instead of counting its
// position in the base. kustomize knows those keys only from an OpenAPI
// schema, so every build registers mergekeys.OpenAPISchema as if the top-level
// kustomization said `openapi: {path: ...}`, unless that kustomization sets
// its own openapi field: then its schema is used, as plain kustomize would.
// kustomize takes the schema of the top-level kustomization and ignores the
// openapi field of every base once one is set, so a base's own schema is
// ignored too.
//
// The entries of those keyed lists keep the order of the file each object
// was read from, where kustomize moves the entries a strategic-merge patch
// names to the front (see restoreKeyedListOrder). That is the one way Build
// differs from plain `kustomize build` with the schema written to a file and
// named in the overlay's openapi field: the objects are the same, but plain
// kustomize may list a patched version first, or a lifecycle's stages out of
// rank order.
func Build(ctx context.Context, root, path string, limits Limits) ([]profile.Document, error) {
	docs, _, err := BuildWithWarnings(ctx, root, path, limits)
	return docs, err
}

// BuildWithWarnings is Build that also returns warnings about the overlay,
// which never fail the build. Each warning names the kustomization file
// that holds a JSON patch (patches with a list of operations, or
// patchesJson6902) whose path addresses a keyed list by index, and the entry
// that index selects today: an insertion in the base silently moves such a
// patch onto another version. See indexPatchWarnings for how the entry is
// found. It also names each strategic-merge patch entry, by its key, that
// matches no entry of its target where that is a mistake: a $patch: delete
// that deletes nothing, or an entry created without a field every other
// entry of its list has (see staleKeyedEntries).
//
// Each document's SetBy names the fields that patches set and the patch
// that set each (see fieldSources), so that problems of those fields name
// the patch, not the object's file, where the value is not. Neither the
// warnings nor SetBy ever fail the build.
func BuildWithWarnings(ctx context.Context, root, path string, limits Limits) ([]profile.Document, profile.Problems, error) {
	return BuildWithWarningsWithin(ctx, ctx, root, path, limits)
}

// BuildWithWarningsWithin is BuildWithWarnings whose checks after the build
// (the warnings, and which patch set which field) end when extras is done,
// while the build itself ends when ctx is: a caller that is stopped at a
// deadline (the build sandbox's child, which its parent kills) keeps time
// to hand over what the build made, and a check that takes long never turns
// a build that finished into one that failed. What was not checked in time
// is one warning, and without SetBy problems name the objects' files.
//
// A build on the linear path (see buildPlain) checks its patches while it
// applies them, so its warnings and SetBy come with the build, whatever
// extras says, and nothing is built again; the checks after the build are
// those of a build through kustomize, which cost a build of the target per
// patch (fieldSources) and per run of JSON patches or strategic-merge patch
// with a list (indexPatchWarnings).
func BuildWithWarningsWithin(ctx, extras context.Context, root, path string, limits Limits) ([]profile.Document, profile.Problems, error) {
	return buildWithChecks(ctx, extras, root, path, limits, true)
}

// buildWithChecks is BuildWithWarningsWithin, on the linear path where the
// plan allows it and linear is true.
func buildWithChecks(ctx, extras context.Context, root, path string, limits Limits, linear bool) ([]profile.Document, profile.Problems, error) {
	built, err := buildWithChecksReusing(ctx, extras, root, path, limits, linear, nil)
	return built.Documents, built.Warnings, err
}

// buildWithChecksReusing is buildWithChecks that may reuse what the build
// that answered previous built (see BuildReusing).
func buildWithChecksReusing(ctx, extras context.Context, root, path string, limits Limits, linear bool, previous *Reusable) (Built, error) {
	docs, warnings, reused, reusable, err := buildAndCheck(ctx, extras, root, path, limits, linear, previous)
	if err != nil {
		return Built{}, err
	}
	return Built{Documents: docs, Reused: reused, Warnings: warnings, Reusable: reusable}, nil
}

// buildAndCheck is buildWithChecksReusing's work.
func buildAndCheck(ctx, extras context.Context, root, path string, limits Limits, linear bool,
	previous *Reusable) ([]profile.Document, profile.Problems, []Reused, *Reusable, error) {
	buildFS, target, err := confineBuild(ctx, root, path, limits)
	if err != nil {
		return nil, nil, nil, nil, err
	}
	buildFS.previous = previousUses(previous)
	type outcome struct {
		docs []profile.Document
		err  error
		// checked says that the build checked its patches as it built
		// (the linear path): warnings are the checks' warnings, and
		// reused and reusable its answer about reuse.
		checked  bool
		warnings profile.Problems
		reused   []Reused
		reusable *Reusable
	}
	built := make(chan outcome, 1)
	warned := make(chan profile.Problems, 1)
	sourced := make(chan [][]profile.FieldSource, 1)
	go func() {
		builtSent, warnedSent := false, false
		defer func() {
			// kustomize has panicked on odd input before; a commit must not
			// take the process down with it.
			if recovered := recover(); recovered != nil {
				switch {
				case warnedSent:
					sourced <- nil
				case builtSent:
					warned <- nil
					sourced <- nil
				default:
					built <- outcome{err: fmt.Errorf("kustomize build of %s failed: %v", buildFS.display(target), recovered)}
				}
			}
		}()
		docs, _, err := buildFS.buildWith(target, linear)
		built <- outcome{docs: docs, err: err, checked: buildFS.checkedWhileBuilding, warnings: buildFS.warningsWhileBuilding,
			reused: buildFS.reused, reusable: buildFS.reusable}
		builtSent = true
		if err == nil && !buildFS.checkedWhileBuilding {
			warned <- buildFS.indexPatchWarnings()
			warnedSent = true
			sourced <- buildFS.fieldSources(target, docs)
		}
	}()
	var result outcome
	select {
	case result = <-built:
		if result.err != nil {
			return nil, nil, nil, nil, result.err
		}
		if result.checked {
			return result.docs, result.warnings, result.reused, result.reusable, nil
		}
	case <-ctx.Done():
		return nil, nil, nil, nil, fmt.Errorf("kustomize build of %s abandoned: %w", buildFS.display(target), context.Cause(ctx))
	}
	// The check for index patches comes after the build and must never fail
	// it, not even by running out of time.
	var warnings profile.Problems
	if extras.Err() != nil {
		return result.docs, profile.Problems{outOfTime(buildFS.display(target), extras)}, nil, nil, nil
	}
	select {
	case warnings = <-warned:
	case <-extras.Done():
		return result.docs, profile.Problems{outOfTime(buildFS.display(target), extras)}, nil, nil, nil
	}
	// So is the accounting of which patch set which field: without it,
	// problems name the objects' files.
	select {
	case sources := <-sourced:
		docs := result.docs
		if sources != nil {
			docs = slices.Clone(docs)
			for i := range docs {
				docs[i].SetBy = sources[i]
			}
		}
		return docs, warnings, nil, nil, nil
	case <-extras.Done():
		return result.docs, append(warnings, outOfTime(buildFS.display(target), extras)), nil, nil, nil
	}
}

// outOfTime is the warning of checks after a build that extras stopped.
func outOfTime(target string, extras context.Context) profile.Problem {
	return profile.Problem{File: target, Message: fmt.Sprintf("the checks after the build did not finish (JSON patches addressing list entries by index, "+
		"stale patches, which patch set which field, so problems name the objects' files): %v", context.Cause(extras))}
}

// kustomizeRuns lets one kustomize build run at a time in a process.
// kustomize keeps the OpenAPI schema that decides how patches merge in a
// process-wide variable, which a kustomization's openapi field replaces: two
// builds at once would merge with each other's schema. The operator and the
// CLI build each commit in a process of its own (internal/sandbox), where
// this lock is never contended; it guards builds that share a process, as
// tests and benchmarks run them.
var kustomizeRuns sync.Mutex

// kustomizeBuilds counts the kustomize builds of the process, those the
// checks after a build make included: what tells the tests that a build
// was checked without building its overlay again.
var kustomizeBuilds atomic.Int64

// buildOptions are kustomize's options for every build: no load restrictor
// (buildFS confines it), builtin plugins only.
func buildOptions() *krusty.Options {
	options := krusty.MakeDefaultOptions()
	options.LoadRestrictions = types.LoadRestrictionsNone
	options.PluginConfig = types.DisabledPluginConfig()
	return options
}

// build runs kustomize on target; see Build. A target whose kustomizations
// are plain lists of resources is built on the linear path instead
// (accumulatePlain), which builds the same objects.
func (r *buildFS) build(target string) ([]profile.Document, error) {
	docs, _, err := r.buildWith(target, true)
	return docs, err
}

// buildWith is build, on the linear path where the plan allows it and
// linear is true; linearPath says whether the build took it.
func (r *buildFS) buildWith(target string, linear bool) (docs []profile.Document, linearPath bool, err error) {
	kustomizationPath, content, err := topKustomization(r, target)
	if err != nil {
		return nil, false, err
	}
	plan, err := r.planResources(target, kustomizationPath, content)
	if err != nil {
		return nil, false, err
	}
	// Released by defer: a panic in kustomize is recovered by Build and
	// must not leave every later build waiting.
	kustomizeRuns.Lock()
	defer kustomizeRuns.Unlock()
	if linear && plan.plain {
		// The same schema as a kustomize build of the target registers: it
		// says which kinds have no namespace, and the keys by which the
		// order of lists is restored.
		if err := useBuildSchema(); err != nil {
			return nil, false, err
		}
		docs, ok, err := r.buildPlain(target, kustomizationPath, plan)
		if ok {
			return docs, true, err
		}
	}
	// kustomize parses the files itself: the planning's parses are not
	// held while it runs.
	clear(r.parsed)
	built, err := r.kustomize(target, kustomizationPath, content)
	if err != nil {
		return nil, false, err
	}
	if err := r.restoreKeyedListOrder(target, built.Resources()); err != nil {
		return nil, false, err
	}
	out := r.newRenderer(target, kustomizationPath)
	for _, res := range built.Resources() {
		if err := out.add(res); err != nil {
			return nil, false, err
		}
	}
	return out.docs, false, nil
}

// renderer renders built objects into documents, each with the
// root-relative path of the file it was read from (its origin), without
// the origin annotation, within MaxRenderedSize.
type renderer struct {
	fs                           *buildFS
	relTarget, kustomizationFile string
	rendered                     int64
	docs                         []profile.Document
	// reused are the previous build's documents placed among docs (see
	// BuildReusing), reusedCount how many there are.
	reused      []Reused
	reusedCount int
}

// placed is how many documents the renderer has placed, built or reused.
func (out *renderer) placed() int { return len(out.docs) + out.reusedCount }

// reuse places the previous build's documents, from its from-th on,
// after the documents placed before them, within MaxRenderedSize as if they
// were rendered here.
func (out *renderer) reuse(documents []ReusableDocument, from int) error {
	for _, document := range documents {
		out.rendered += document.Size
		if out.rendered > out.fs.limits.MaxRenderedSize {
			return &LimitError{File: out.relTarget, What: "maximum rendered size", Flag: MaxRenderedSizeFlag,
				Max: out.fs.limits.MaxRenderedSize, Size: out.rendered}
		}
	}
	if len(documents) > 0 {
		out.reused = append(out.reused, Reused{At: out.placed(), From: from, Count: len(documents)})
		out.reusedCount += len(documents)
	}
	return nil
}

func (r *buildFS) newRenderer(target, kustomizationPath string) *renderer {
	return &renderer{fs: r, relTarget: r.display(target), kustomizationFile: r.display(kustomizationPath)}
}

// add renders res after the objects added before it.
func (out *renderer) add(res *resource.Resource) error {
	file := out.kustomizationFile
	if origin, err := res.GetOrigin(); err == nil && origin != nil {
		originPath := origin.Path
		if originPath == "" {
			originPath = origin.ConfiguredIn
		}
		if originPath != "" {
			file = filepath.ToSlash(filepath.Join(out.relTarget, originPath))
		}
	}
	// The origin annotation is how kustomize tells us the file; it is not
	// part of the profile and must not be applied.
	if err := res.SetOrigin(nil); err != nil {
		return fmt.Errorf("kustomize build of %s: removing origin annotations: %w", out.relTarget, err)
	}
	data, err := renderJSON(res)
	if err != nil {
		return fmt.Errorf("%s: encoding %s: %w", file, res.CurId(), err)
	}
	out.rendered += int64(len(data))
	if out.rendered > out.fs.limits.MaxRenderedSize {
		return &LimitError{File: out.relTarget, What: "maximum rendered size", Flag: MaxRenderedSizeFlag,
			Max: out.fs.limits.MaxRenderedSize, Size: out.rendered}
	}
	out.docs = append(out.docs, profile.Document{File: file, Data: data})
	return nil
}

// renderJSON renders res as JSON straight from its node: what
// kustomize's res.AsYAML means, without AsYAML's four conversions (the node
// encoded as YAML text with yaml.v3, that text parsed into a map and
// marshalled as JSON, which is then parsed as YAML and encoded as YAML again
// with yaml.v2), which took half of a build's CPU, nor the manager's
// conversion of that YAML back into JSON (profile.DecodeDocuments reads this
// JSON without a YAML parse).
//
// It is res.MarshalJSON without its round trip through YAML text: the node,
// de-anchored by kustomize's reader (aliases replaced, merge keys merged), is
// decoded with yaml.v3 into the same map MarshalJSON decodes its text into
// (ints stay ints, quoted numbers and "true" stay strings, a timestamp is a
// string, a date the string of its midnight), and json.Marshal writes the keys sorted as AsYAML's output had
// them. A node that the round trip through YAML text changes
// (changedByYAMLText) is left to MarshalJSON, so that the rendering stays
// what kustomize means. TestRenderJSONIsKustomizesJSON and
// FuzzRenderJSONDecodesLikeAsYAML hold it to MarshalJSON byte for byte.
func renderJSON(res *resource.Resource) ([]byte, error) {
	node := res.YNode()
	if node == nil {
		return []byte("null"), nil
	}
	if changedByYAMLText(node, false, false) {
		return res.MarshalJSON()
	}
	var object map[string]any
	if err := node.Decode(&object); err != nil {
		return nil, err
	}
	return json.Marshal(object)
}

// changedByYAMLText reports whether node holds a value that MarshalJSON's
// round trip through YAML text changes, so that renderJSON leaves the node
// to MarshalJSON itself: an empty plain scalar (a null written as nothing,
// as in {a}) that yaml.v3's encoder writes as a quoted empty string, which
// it does inside a flow collection and for a key. inFlow says whether an
// enclosing collection is written in flow style, isKey whether node is a
// mapping's key.
func changedByYAMLText(node *kyaml.Node, inFlow, isKey bool) bool {
	switch node.Kind {
	case kyaml.ScalarNode:
		quoted := node.Style&(kyaml.SingleQuotedStyle|kyaml.DoubleQuotedStyle|kyaml.LiteralStyle|kyaml.FoldedStyle) != 0
		return node.Value == "" && !quoted && (inFlow || isKey)
	case kyaml.MappingNode, kyaml.SequenceNode, kyaml.DocumentNode:
		inFlow = inFlow || node.Style&kyaml.FlowStyle != 0
		for i, child := range node.Content {
			if changedByYAMLText(child, inFlow, node.Kind == kyaml.MappingNode && i%2 == 0) {
				return true
			}
		}
	case kyaml.AliasNode:
		return node.Alias != nil && changedByYAMLText(node.Alias, inFlow, isKey)
	}
	return false
}

// useBuildSchema registers mergekeys.OpenAPISchema as kustomize's schema,
// as a kustomize build of a kustomization without an openapi field of its
// own does (see addBuildOptions). The caller holds kustomizeRuns.
func useBuildSchema() error {
	schema, err := mergekeys.OpenAPISchema()
	if err != nil {
		return err
	}
	openapi.ResetOpenAPI()
	if err := openapi.SetSchema(map[string]string{"path": openAPISchemaFileName}, schema, true); err != nil {
		return fmt.Errorf("registering the build's OpenAPI schema: %w", err)
	}
	return nil
}

// confineBuild returns the confined file system for root and the absolute
// directory to build.
func confineBuild(ctx context.Context, root, path string, limits Limits) (*buildFS, string, error) {
	absRoot, err := filepath.Abs(root)
	if err != nil {
		return nil, "", fmt.Errorf("repository root %s: %w", root, err)
	}
	absRoot, err = filepath.EvalSymlinks(absRoot)
	if err != nil {
		return nil, "", fmt.Errorf("repository root %s: %w", root, err)
	}
	rootfs := newBuildFS(ctx, absRoot, limits.OrDefaults())
	target := path
	if !filepath.IsAbs(target) {
		target = filepath.Join(absRoot, path)
	}
	target = filepath.Clean(target)
	if _, err := rootfs.resolve(target); err != nil {
		return nil, "", fmt.Errorf("build path %q: %w", path, err)
	}
	info, err := os.Stat(target)
	if err != nil {
		return nil, "", fmt.Errorf("build path %q: %w", path, err)
	}
	if !info.IsDir() {
		return nil, "", fmt.Errorf("build path %q is not a directory", path)
	}
	return rootfs, target, nil
}

// topKustomization returns the path and content of the kustomization file in
// dir, or of one generated for a plain directory of YAML files.
func topKustomization(rootfs *buildFS, dir string) (string, []byte, error) {
	for _, name := range kustomizationFileNames {
		path := filepath.Join(dir, name)
		if !rootfs.Exists(path) {
			continue
		}
		content, err := rootfs.ReadFile(path)
		if err != nil {
			return "", nil, err // it names the file
		}
		return path, content, nil
	}
	resources, err := plainDirectoryResources(rootfs, dir)
	if err != nil {
		return "", nil, err
	}
	content, err := yaml.Marshal(types.Kustomization{
		TypeMeta:  types.TypeMeta{APIVersion: types.KustomizationVersion, Kind: types.KustomizationKind},
		Resources: resources,
	})
	if err != nil {
		return "", nil, fmt.Errorf("generating a kustomization for %s: %w", rootfs.display(dir), err)
	}
	return filepath.Join(dir, kustomizationFileNames[0]), content, nil
}

// plainDirectoryResources lists, relative to dir, the YAML files below dir
// and the subdirectories that have a kustomization of their own.
func plainDirectoryResources(rootfs *buildFS, dir string) ([]string, error) {
	var resources []string
	err := rootfs.walkWorkTree(dir, func(path string, entry fs.DirEntry, _ error) error {
		rel, err := filepath.Rel(dir, path)
		if err != nil {
			return err
		}
		if entry.IsDir() {
			if path == dir {
				return nil
			}
			if strings.HasPrefix(entry.Name(), ".") {
				return filepath.SkipDir
			}
			for _, name := range kustomizationFileNames {
				if rootfs.Exists(filepath.Join(path, name)) {
					resources = append(resources, filepath.ToSlash(rel))
					return filepath.SkipDir
				}
			}
			return nil
		}
		if ext := filepath.Ext(entry.Name()); (ext == ".yaml" || ext == ".yml") && !IsSettingsFile(entry.Name()) {
			resources = append(resources, filepath.ToSlash(rel))
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("listing YAML files below %s: %w", rootfs.display(dir), err)
	}
	sort.Strings(resources)
	return resources, nil
}

// kustomize runs kustomize on target, whose kustomization file at
// kustomizationPath is served as content with the build's options added (see
// addBuildOptions). The caller holds kustomizeRuns, and may go on using the
// OpenAPI schema the run registered until it releases it.
func (r *buildFS) kustomize(target, kustomizationPath string, content []byte) (resmap.ResMap, error) {
	schemaPath := r.unusedPath(filepath.Dir(kustomizationPath), openAPISchemaFileName)
	withOptions, usesOurSchema, err := addBuildOptions(content, filepath.Base(schemaPath))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", r.display(kustomizationPath), err)
	}
	if usesOurSchema {
		schema, err := mergekeys.OpenAPISchema()
		if err != nil {
			return nil, err
		}
		r.virtual[schemaPath] = schema
	}
	r.virtual[kustomizationPath] = withOptions

	// krusty.Run resets the schema, but keeps a custom one a previous build
	// set through its openapi field: cleared here, so each build starts from
	// nothing but what its own kustomization says.
	openapi.ResetOpenAPI()
	r.krustyRuns++
	kustomizeBuilds.Add(1)
	resources, err := krusty.MakeKustomizer(buildOptions()).Run(r, target)
	if len(r.refusals) > 0 {
		// kustomize reports a refused read as whatever it tried next; the
		// refusals say what was wrong and where.
		return nil, errors.Join(r.refusals...)
	}
	if err != nil {
		if twice := r.definedTwice(err); twice != "" {
			return nil, fmt.Errorf("kustomize build of %s: %s", r.display(target), twice)
		}
		if unmatched := r.unmatchedPatch(err); unmatched != "" {
			return nil, errors.New(unmatched)
		}
		return nil, fmt.Errorf("kustomize build of %s: %w", r.display(target), &rootRelativeError{err: err, root: r.root})
	}
	return resources, nil
}

// rootRelativeError is an error of kustomize with the paths it names
// relative to the repository root, as every other problem names files: the
// root is where the sync checked the commit out, nothing the author knows.
type rootRelativeError struct {
	err  error
	root string
}

func (e *rootRelativeError) Error() string {
	return strings.ReplaceAll(e.err.Error(), e.root+string(filepath.Separator), "")
}

func (e *rootRelativeError) Unwrap() error { return e.err }

// unmatchedStrategicMergePatch matches kustomize's error for a
// strategic-merge patch that matches no object: the patch's object ID.
var unmatchedStrategicMergePatch = regexp.MustCompile(`no resource matches strategic merge patch "([^./\s]+)\.[^/\s]*/(\S+)\.(\[noNs\]|[a-z0-9-]+)"`)

// unmatchedPatch explains kustomize's error for a strategic-merge patch
// that matches no object, which names the object it looked for but not the
// patch, by the patch files that address that object; "" when err is
// another error, or no patch file addresses it.
func (r *buildFS) unmatchedPatch(err error) string {
	match := unmatchedStrategicMergePatch.FindStringSubmatch(err.Error())
	if match == nil {
		return ""
	}
	kind, name, namespace := match[1], match[2], strings.TrimSuffix(match[3], "[noNs]")
	var places []string
	for _, abs := range slices.Sorted(maps.Keys(r.patches)) {
		if slices.ContainsFunc(r.objectsIn(abs), func(h objectHeader) bool { return h.is(kind, namespace, name) }) {
			use := r.patches[abs]
			places = append(places, fmt.Sprintf("%s: %s entry %q: %s", use.kustomization, use.field, use.entry, r.display(abs)))
		}
	}
	if len(places) == 0 {
		return ""
	}
	return fmt.Sprintf("%s: %s: no object of the build matches this patch; check its kind, name and namespace against the objects it should patch",
		strings.Join(places, "; "), profile.ObjectRef(kind, namespace, name))
}

// objectHeader is what identifies an object.
type objectHeader struct {
	Kind     string `json:"kind"`
	Metadata struct {
		Name      string `json:"name"`
		Namespace string `json:"namespace"`
	} `json:"metadata"`
}

// is reports whether the object is kind/namespace/name; an object without a
// namespace is any namespace's (a kustomization may set it).
func (h objectHeader) is(kind, namespace, name string) bool {
	return h.Kind == kind && h.Metadata.Name == name && (h.Metadata.Namespace == "" || h.Metadata.Namespace == namespace)
}

// objectsIn returns the objects of a file the build has read, in order.
func (r *buildFS) objectsIn(abs string) []objectHeader {
	docs, err := profile.SplitDocuments(r.display(abs), bytes.NewReader(r.served[abs]))
	if err != nil {
		return nil
	}
	var headers []objectHeader
	for _, doc := range docs {
		var header objectHeader
		if yaml.Unmarshal(doc.Data, &header) == nil {
			headers = append(headers, header)
		}
	}
	return headers
}

// registeredTwice matches kustomize's error for an object that two
// resources define: the object's ID (KIND.VERSION.GROUP/NAME.NAMESPACE).
var registeredTwice = regexp.MustCompile(`may not add resource with an already registered id: ([^./\s]+)\.[^/\s]*/(\S+)\.(\[noNs\]|[a-z0-9-]+)`)

// definedTwice explains kustomize's error for an object defined twice, which
// names the object and, at best, the second resources entry, by the files
// of the build that define it; "" when err is another error, or the files
// cannot be told (a name prefix made two objects one).
func (r *buildFS) definedTwice(err error) string {
	match := registeredTwice.FindStringSubmatch(err.Error())
	if match == nil {
		return ""
	}
	kind, name, namespace := match[1], match[2], strings.TrimSuffix(match[3], "[noNs]")
	var files []string
	for _, abs := range slices.Sorted(maps.Keys(r.served)) {
		if IsKustomizationFile(filepath.Base(abs)) {
			continue
		}
		if _, isPatch := r.patches[abs]; isPatch {
			continue
		}
		for _, header := range r.objectsIn(abs) {
			if header.is(kind, namespace, name) {
				files = append(files, r.display(abs))
			}
		}
	}
	if len(files) < 2 {
		return ""
	}
	// The files come in order, so a file that defines it twice comes twice
	// in a row.
	var places []string
	for start := 0; start < len(files); {
		end := start + 1
		for end < len(files) && files[end] == files[start] {
			end++
		}
		place := files[start]
		if end-start > 1 {
			place = fmt.Sprintf("%s (%d times)", place, end-start)
		}
		places = append(places, place)
		start = end
	}
	return fmt.Sprintf("%s is defined more than once: in %s; a build defines each object once, so keep one and patch it where it must differ",
		profile.ObjectRef(kind, namespace, name), strings.Join(places, " and "))
}

// openAPISchemaFileName is the name under which a build serves
// mergekeys.OpenAPISchema, from memory, next to the top-level kustomization.
const openAPISchemaFileName = "profilesync-openapi.json"

// unusedPath returns dir/name, or dir/N-name for the smallest N that names
// nothing in the work tree: a file served from memory must not hide one of
// the repository's.
func (r *buildFS) unusedPath(dir, name string) string {
	path := filepath.Join(dir, name)
	for n := 1; r.disk.Exists(path); n++ {
		path = filepath.Join(dir, fmt.Sprintf("%d-%s", n, name))
	}
	return path
}

// addBuildOptions returns the top-level kustomization with the options every
// build needs: originAnnotations in buildMetadata, so that kustomize records
// every object's source file (kustomize passes the top-level build options
// down to every base), and, unless the kustomization has an openapi field of
// its own, `openapi: {path: schemaFile}`. usesOurSchema says whether the
// openapi field was added.
func addBuildOptions(content []byte, schemaFile string) (withOptions []byte, usesOurSchema bool, err error) {
	// kustomize decodes field names case-insensitively (`openAPI:` is its
	// openapi field too), so whether the field is set is asked of kustomize's
	// own decoding.
	var decoded types.Kustomization
	if err := decoded.Unmarshal(content); err != nil {
		return nil, false, fmt.Errorf("not a kustomization: %w", err)
	}
	var kustomization map[string]any
	if err := yaml.Unmarshal(content, &kustomization); err != nil {
		return nil, false, fmt.Errorf("not a kustomization: %w", err)
	}
	if kustomization == nil {
		kustomization = map[string]any{}
	}
	if len(decoded.OpenAPI) == 0 {
		for field := range kustomization {
			if strings.EqualFold(field, "openapi") {
				delete(kustomization, field) // empty: kustomize's default schema
			}
		}
		kustomization["openapi"] = map[string]any{"path": schemaFile}
		usesOurSchema = true
	}
	metadata, _ := kustomization["buildMetadata"].([]any)
	if !slices.Contains(metadata, any(types.OriginAnnotations)) {
		kustomization["buildMetadata"] = append(metadata, types.OriginAnnotations)
	}
	withOptions, err = yaml.Marshal(kustomization)
	if err != nil {
		return nil, false, fmt.Errorf("adding build options: %w", err)
	}
	return withOptions, usesOurSchema, nil
}
