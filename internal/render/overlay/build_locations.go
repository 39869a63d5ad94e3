package overlay

import (
	"bytes"
	"errors"
	"fmt"
	"maps"
	"net/url"
	"path/filepath"
	"slices"
	"strings"
	"sync"

	"go.yaml.in/yaml/v3"

	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/api/provider"
	"sigs.k8s.io/kustomize/api/resmap"
	"sigs.k8s.io/kustomize/api/resource"
	"sigs.k8s.io/kustomize/api/types"

	v1alpha1 "github.com/profilesync/profilesync/api/v1alpha1"
	"github.com/profilesync/profilesync/internal/policy"
	"github.com/profilesync/profilesync/internal/propose"
	"github.com/profilesync/profilesync/internal/render/profile"
	"github.com/profilesync/profilesync/internal/rollout"
)

// kustomizationFileNames are the names kustomize recognises, in the order it
// tries them.
var kustomizationFileNames = []string{"kustomization.yaml", "kustomization.yml", "Kustomization"}

// IsKustomizationFile reports whether name is a file name kustomize reads
// as a kustomization. Such a file is never a profile: the CLI skips it when
// it reads a directory of profiles.
func IsKustomizationFile(name string) bool {
	for _, known := range kustomizationFileNames {
		if name == known {
			return true
		}
	}
	return false
}

// IsSettingsFile reports whether name, a file's base name, is one of the
// repository's settings rather than profiles: a versioning policy file, the
// rollout file or the versions file. Like a kustomization, it lives among
// the profiles in Git but holds none, so a plain directory build and the
// CLI's -f DIRECTORY skip it.
func IsSettingsFile(name string) bool {
	return policy.IsFileName(name) || rollout.IsFileName(name) || propose.IsFileName(name)
}

// resmapFactory parses resources exactly as the build does, so that an
// entry is taken for inline content or for a location exactly when
// kustomize takes it so.
var resmapFactory = sync.OnceValue(func() *resmap.Factory {
	return resmap.NewFactory(provider.NewDepProvider().GetResourceFactory())
})

// locationKind says what kustomize makes of an entry.
type locationKind int

const (
	// fileLocation is read as a file.
	fileLocation locationKind = iota
	// fileOrDirectoryLocation is read as a file or built as a kustomization.
	fileOrDirectoryLocation
)

// vetKustomization checks, before kustomize sees it, every location the
// kustomization at path makes kustomize load: each must be a relative path
// to a file or directory of the work tree. The kustomization is decoded the
// way kustomize decodes it (types.Kustomization, with its deprecated fields
// folded in by FixKustomization), so every field kustomize knows is seen
// here; TestEveryKustomizationFieldIsVetted keeps that list complete.
// Generator, transformer and validator configurations, inline or in files
// or built from directories, are checked too (see pluginEntries and
// pluginConfigs).
//
// All problems of one kustomization are reported together, each naming the
// file and the entry. The verdict is remembered: kustomize reads a base once
// for each overlay that uses it.
func (r *buildFS) vetKustomization(path string, content []byte) error {
	if verdict, ok := r.vetted[path]; ok {
		return verdict
	}
	r.vetted[path] = nil // a kustomization that reaches itself is kustomize's to report
	verdict := r.checkKustomization(path, content)
	r.vetted[path] = verdict
	if verdict != nil {
		return r.refuse(verdict)
	}
	return nil
}

// maxComponentDepth bounds how deep components may nest. kustomize quotes
// the error of a component inside the error of the one that includes it
// (%q), which doubles every backslash at each level: a chain of 34 tiny
// components makes an error of gigabytes before anything could cut it.
// Refused before kustomize recurses, a chain never builds that error; at
// this depth one is a few KiB at most, and no real landscape nests
// components half as deep.
const maxComponentDepth = 10

func (r *buildFS) checkKustomization(path string, content []byte) error {
	file := r.display(path)
	if problem, ok := profile.CheckYAMLText(file, content); !ok {
		return profile.Problems{problem}
	}
	if errs := duplicateKeys(file, content); len(errs) > 0 {
		return errors.Join(errs...)
	}
	var k types.Kustomization
	if err := k.Unmarshal(content); err != nil {
		return fmt.Errorf("%s: not a kustomization: %w", file, err)
	}
	dir := filepath.Dir(path)
	v := locationVet{fs: r, file: file, dir: dir}
	// FixKustomization moves deprecated fields into others (bases into
	// resources); a problem is named by the field the author wrote.
	v.entries("bases", fileOrDirectoryLocation, k.Bases)
	k.Bases = nil
	v.reservedMetadata(k)
	k.FixKustomization()

	for _, entry := range k.Resources {
		if abs := v.entry("resources", fileOrDirectoryLocation, entry); abs != "" && !r.IsDir(abs) {
			r.resourceFiles[abs] = true
		}
	}
	depth := r.componentDepth[dir] + 1
	for _, component := range k.Components {
		abs := v.entry("components", fileOrDirectoryLocation, component)
		if abs == "" {
			continue
		}
		if depth > maxComponentDepth {
			v.fail(fmt.Errorf("%s: components entry %q: components nest %d deep, more than the %d a build allows", file, component, depth, maxComponentDepth))
			continue
		}
		r.componentDepth[abs] = max(r.componentDepth[abs], depth)
	}
	v.entries("crds", fileLocation, k.Crds)
	v.entries("configurations", fileLocation, k.Configurations)
	for i, patch := range k.PatchesStrategicMerge {
		if isInlinePatch(string(patch)) {
			v.inlinePatch(fmt.Sprintf("patchesStrategicMerge[%d]", i), string(patch))
		} else {
			v.patchFile("patchesStrategicMerge", string(patch))
		}
	}
	for i, patch := range k.Patches {
		v.patchFile("patches", patch.Path)
		v.inlinePatch(fmt.Sprintf("patches[%d].patch", i), patch.Patch)
	}
	for i, patch := range k.PatchesJson6902 {
		v.patchFile("patchesJson6902", patch.Path)
		v.inlinePatch(fmt.Sprintf("patchesJson6902[%d].patch", i), patch.Patch)
	}
	for _, replacement := range k.Replacements {
		v.entry("replacements", fileLocation, replacement.Path)
	}
	v.entry("openapi", fileLocation, k.OpenAPI["path"])
	for _, generator := range k.ConfigMapGenerator {
		v.entries("configMapGenerator", fileLocation, generatorSources(generator.GeneratorArgs))
	}
	for _, generator := range k.SecretGenerator {
		v.entries("secretGenerator", fileLocation, generatorSources(generator.GeneratorArgs))
	}
	if len(k.HelmCharts) > 0 || k.HelmGlobals != nil {
		v.fail(fmt.Errorf("%s: helmCharts: refused: inflating a chart runs the helm binary and may fetch the chart from the network; render it into the repository instead", file))
	}
	v.pluginEntries("generators", k.Generators)
	v.pluginEntries("transformers", k.Transformers)
	v.pluginEntries("validators", k.Validators)
	return errors.Join(v.errs...)
}

// locationVet collects the problems of the locations one file names.
type locationVet struct {
	fs *buildFS
	// file names the kustomization (or configuration file) in messages.
	file string
	// dir is what relative locations are relative to: the directory of the
	// kustomization that lists them.
	dir  string
	errs []error
}

func (v *locationVet) fail(err error) { v.errs = append(v.errs, err) }

func (v *locationVet) entries(field string, kind locationKind, entries []string) {
	for _, entry := range entries {
		v.entry(field, kind, entry)
	}
}

// entry checks one location; it returns the absolute path it names, or ""
// when it is refused (or empty).
func (v *locationVet) entry(field string, kind locationKind, entry string) string {
	if entry == "" {
		return ""
	}
	refused := func(format string, args ...any) string {
		v.fail(fmt.Errorf("%s: %s entry %q: %s", v.file, field, entry, fmt.Sprintf(format, args...)))
		return ""
	}
	switch {
	case isNetworkLocation(entry):
		return refused("remote locations are refused: a build reads only the repository, never the network; copy what it names into the repository")
	case filepath.IsAbs(entry):
		return refused("absolute paths are refused: use a path relative to the kustomization")
	}
	abs, err := v.fs.resolve(filepath.Join(v.dir, entry))
	if err != nil {
		return refused("%v", err)
	}
	if !v.fs.Exists(abs) {
		return refused("no such file or directory in the repository")
	}
	if kind == fileLocation && v.fs.IsDir(abs) {
		return refused("is a directory; a file is expected here")
	}
	if kind == fileOrDirectoryLocation && v.fs.IsDir(abs) && !v.fs.hasKustomization(abs) {
		return refused("%s is a directory without a kustomization (%s): add one, or list its files", v.fs.display(abs),
			strings.Join(kustomizationFileNames, ", "))
	}
	return abs
}

// hasKustomization reports whether the directory dir holds a kustomization.
func (r *buildFS) hasKustomization(dir string) bool {
	for _, name := range kustomizationFileNames {
		if r.Exists(filepath.Join(dir, name)) {
			return true
		}
	}
	return false
}

// patchUse is where a kustomization lists a patch file: what a problem of
// the patch names besides the patch, since the kustomization decides what
// it applies to.
type patchUse struct{ kustomization, field, entry string }

// patchFile checks a patch's location; its content is checked when
// kustomize reads it (checkPatch, from buildFS.ReadFile), so that it is
// read once.
func (v *locationVet) patchFile(field, entry string) {
	if abs := v.entry(field, fileLocation, entry); abs != "" {
		v.fs.patches[abs] = patchUse{kustomization: v.file, field: field, entry: entry}
	}
}

// inlinePatch checks a patch written in the kustomization itself.
func (v *locationVet) inlinePatch(field, patch string) {
	if patch != "" {
		v.errs = append(v.errs, checkPatch(v.file+": "+field, []byte(patch))...)
	}
}

// strategicMergeDirectives are the directives of a strategic-merge patch
// kustomize does not carry out: it leaves them in the object as fields
// ($patch it does carry out).
var strategicMergeDirectives = []string{"$retainKeys", "$setElementOrder/", "$deleteFromPrimitiveList/"}

// checkPatch refuses, in a strategic-merge or JSON patch, what kustomize
// would carry into the objects unseen and the objects' checks would then
// blame on the file that defines them: a directive kustomize does not
// carry out, and a label or annotation of the domain the sync writes
// itself. place names the patch: the kustomization, the entry and the file.
func checkPatch(place string, content []byte) []error {
	check := patchContentCheck{place: place}
	decoder := yaml.NewDecoder(bytes.NewReader(content))
	for {
		var document yaml.Node
		if err := decoder.Decode(&document); err != nil {
			return check.errs // the end, or what kustomize reports
		}
		if len(document.Content) != 1 {
			continue
		}
		root := document.Content[0]
		check.directives(root, "")
		switch root.Kind {
		case yaml.MappingNode:
			check.reservedKeys(profile.MetadataField, mappingValue(root, profile.MetadataField))
		case yaml.SequenceNode:
			check.jsonPatch(root)
		}
	}
}

// Fields of an object's metadata a patch may set reserved keys in.
const (
	labelsField      = "labels"
	annotationsField = "annotations"
)

// patchContentCheck collects the problems of one patch.
type patchContentCheck struct {
	place string
	errs  []error
}

func (c *patchContentCheck) fail(path, message string) {
	c.errs = append(c.errs, fmt.Errorf("%s: %s: %s", c.place, path, message))
}

// directives refuses every key below node that is a directive kustomize
// does not carry out.
func (c *patchContentCheck) directives(node *yaml.Node, path string) {
	switch node.Kind {
	case yaml.SequenceNode:
		for i, child := range node.Content {
			c.directives(child, fmt.Sprintf("%s[%d]", path, i))
		}
	case yaml.MappingNode:
		for i := 0; i+1 < len(node.Content); i += 2 {
			key := node.Content[i].Value
			child := strings.TrimPrefix(path+"."+key, ".")
			for _, directive := range strategicMergeDirectives {
				if key == directive || strings.HasSuffix(directive, "/") && strings.HasPrefix(key, directive) {
					c.fail(child, fmt.Sprintf("the directive %s is not carried out by kustomize, which would leave it in the object "+
						"as a field the API does not have; remove it from the patch", strings.TrimSuffix(directive, "/")))
				}
			}
			c.directives(node.Content[i+1], child)
		}
	}
}

// reservedKeys refuses the reserved labels and annotations of metadata, an
// object's metadata at path (nil when the patch sets none).
func (c *patchContentCheck) reservedKeys(path string, metadata *yaml.Node) {
	for _, field := range []string{labelsField, annotationsField} {
		keys := mappingValue(metadata, field)
		if keys == nil || keys.Kind != yaml.MappingNode {
			continue
		}
		for i := 0; i < len(keys.Content); i += 2 {
			if key := keys.Content[i].Value; profile.IsReservedLabel(key) {
				c.fail(fmt.Sprintf("%s.%s[%s]", path, field, key), reservedDomainMessage(field == annotationsField))
			}
		}
	}
}

// jsonPatch refuses the reserved labels and annotations the operations of
// a JSON patch add, one by one (/metadata/labels/KEY) or as a whole.
func (c *patchContentCheck) jsonPatch(operations *yaml.Node) {
	for i, operation := range operations.Content {
		path := mappingValue(operation, "path")
		if path == nil {
			continue
		}
		at := fmt.Sprintf("[%d].path %s", i, path.Value)
		parts := strings.Split(path.Value, "/")
		for j, part := range parts {
			parts[j] = strings.NewReplacer("~1", "/", "~0", "~").Replace(part)
		}
		if len(parts) < 2 || parts[0] != "" || parts[1] != profile.MetadataField {
			continue
		}
		value := mappingValue(operation, "value")
		switch {
		case len(parts) == 4 && (parts[2] == labelsField || parts[2] == annotationsField):
			if profile.IsReservedLabel(parts[3]) {
				c.fail(at, reservedDomainMessage(parts[2] == annotationsField))
			}
		case len(parts) == 3 && (parts[2] == labelsField || parts[2] == annotationsField) && value != nil:
			c.reservedKeys(at, &yaml.Node{Kind: yaml.MappingNode, Content: []*yaml.Node{{Kind: yaml.ScalarNode, Value: parts[2]}, value}})
		case len(parts) == 2 && value != nil:
			c.reservedKeys(at, value)
		}
	}
}

// reservedMetadata refuses labels and annotations of the domain the sync
// writes itself that the kustomization would set on every object it builds:
// the kustomization is the place to edit, not the objects.
func (v *locationVet) reservedMetadata(k types.Kustomization) {
	reserved := func(field string, keys map[string]string, annotations bool) {
		for _, key := range slices.Sorted(maps.Keys(keys)) {
			if profile.IsReservedLabel(key) {
				v.fail(fmt.Errorf("%s: %s[%s]: %s", v.file, field, key, reservedDomainMessage(annotations)))
			}
		}
	}
	reserved("commonLabels", k.CommonLabels, false)
	for i, label := range k.Labels {
		reserved(fmt.Sprintf("labels[%d].pairs", i), label.Pairs, false)
	}
	reserved("commonAnnotations", k.CommonAnnotations, true)
}

// reservedDomainMessage says why a label (or annotation) of the reserved
// domain is refused, in the words validateObjectMeta uses for one written
// in a profile.
func reservedDomainMessage(annotation bool) string {
	if annotation {
		return fmt.Sprintf("the %s/ domain is reserved: the sync sets %s itself to record what it applied",
			v1alpha1.ReservedLabelDomain, v1alpha1.AppliedDigestAnnotation)
	}
	return fmt.Sprintf("the %s/ domain is reserved: the sync sets %s and %s itself to mark the objects it owns",
		v1alpha1.ReservedLabelDomain, v1alpha1.OwnerNameLabel, v1alpha1.OwnerNamespaceLabel)
}

// duplicateKeys returns an error for every key given more than once in one
// mapping of content, as decoding a profile refuses one: kustomize keeps
// the last silently, so two resources: lists would lose the first.
// Content that is not YAML is left to kustomize's decoding.
func duplicateKeys(file string, content []byte) []error {
	var document yaml.Node
	if err := yaml.Unmarshal(content, &document); err != nil {
		return nil
	}
	var errs []error
	var walk func(node *yaml.Node, path string)
	walk = func(node *yaml.Node, path string) {
		switch node.Kind {
		case yaml.DocumentNode:
			for _, child := range node.Content {
				walk(child, path)
			}
		case yaml.SequenceNode:
			for i, child := range node.Content {
				walk(child, fmt.Sprintf("%s[%d]", path, i))
			}
		case yaml.MappingNode:
			firstLine := make(map[string]int)
			for i := 0; i+1 < len(node.Content); i += 2 {
				key := node.Content[i]
				child := key.Value
				if path != "" {
					child = path + "." + key.Value
				}
				if line, seen := firstLine[key.Value]; seen {
					errs = append(errs, fmt.Errorf("%s: line %d: %s: given more than once in the same mapping (first on line %d); "+
						"kustomize would read only the last: merge them into one", file, key.Line, child, line))
				} else {
					firstLine[key.Value] = key.Line
				}
				walk(node.Content[i+1], child)
			}
		}
	}
	walk(&document, "")
	return errs
}

// pluginEntries checks the generator, transformer or validator entries of
// a kustomization. kustomize takes an entry that parses as resources for
// inline configurations, and anything else for a location: a file of
// configurations, or a directory whose kustomization builds them.
func (v *locationVet) pluginEntries(field string, entries []string) {
	for _, entry := range entries {
		if configs, err := resmapFactory().NewResMapFromBytes([]byte(entry)); err == nil {
			v.pluginConfigs(v.file, configs.Resources())
			continue
		}
		abs := v.entry(field, fileOrDirectoryLocation, entry)
		if abs == "" {
			continue
		}
		configs, err := v.fs.pluginConfigsAt(abs)
		if err != nil {
			v.fail(fmt.Errorf("%s: %s entry %q: %w", v.file, field, entry, err))
			continue
		}
		v.pluginConfigs(v.fs.display(abs), configs)
	}
}

// pluginConfigsAt reads the configurations of a file, or builds them from a
// directory exactly as kustomize is about to: a directory's kustomization can
// compute a configuration (a replacement can write a URL into a patch's
// path), so only its output tells what the plugins will load.
func (r *buildFS) pluginConfigsAt(abs string) ([]*resource.Resource, error) {
	if !r.IsDir(abs) {
		content, err := r.ReadFile(abs)
		if err != nil {
			return nil, err
		}
		return resmapFactory().RF().SliceFromBytes(content)
	}
	r.krustyRuns++
	built, err := krusty.MakeKustomizer(buildOptions()).Run(r, abs)
	if err != nil {
		return nil, err
	}
	return built.Resources(), nil
}

// pluginConfigs checks configurations of builtin plugins. Only kustomize's
// builtin plugins run in a build (exec and container plugins never do), so
// a configuration of any other kind is refused here, before kustomize would
// refuse it with advice about flags that do not exist in ProfileSync. The
// locations a builtin plugin loads are relative to the kustomization that
// lists it.
func (v *locationVet) pluginConfigs(file string, configs []*resource.Resource) {
	for _, config := range configs {
		kind := config.GetKind()
		where := fmt.Sprintf("%s/%s", kind, config.GetName())
		locations, builtin := builtinPluginLocations[kind]
		switch {
		case !builtin:
			v.fail(fmt.Errorf("%s: %s: refused: only kustomize's builtin generators and transformers run in a build, never exec, container or Go plugins", file, where))
			continue
		case kind == helmChartInflationGenerator:
			v.fail(fmt.Errorf("%s: %s: refused: inflating a chart runs the helm binary and may fetch the chart from the network; render it into the repository instead", file, where))
			continue
		case locations == nil:
			continue
		}
		fields, err := config.Map()
		if err != nil {
			v.fail(fmt.Errorf("%s: %s: %w", file, where, err))
			continue
		}
		plugin := locationVet{fs: v.fs, file: file + ": " + where, dir: v.dir}
		for _, location := range locations(fields) {
			plugin.entry(location.field, fileLocation, location.path)
		}
		v.errs = append(v.errs, plugin.errs...)
	}
}

// isInlinePatch reports whether kustomize reads a strategic-merge patch
// entry as the patch itself rather than as the path of a file.
func isInlinePatch(entry string) bool {
	_, err := resmapFactory().RF().SliceFromBytes([]byte(entry))
	return err == nil
}

// isNetworkLocation reports whether kustomize would, or might, read entry
// from the network: anything with a URL scheme (its file loader GETs http and
// https URLs), and anything its own Git address parser accepts (it clones
// those by running git). The parser is reached through resource.Origin, the
// one exported function that runs it, so the answer is kustomize's own for
// github.com/org/repo, git@host:path, ssh:// and the rest.
func isNetworkLocation(entry string) bool {
	if u, err := url.Parse(entry); err == nil && u.Scheme != "" {
		return true
	}
	return isGitRepositoryAddress(entry)
}

func isGitRepositoryAddress(entry string) (repository bool) {
	defer func() {
		// The parser slices strings it has not fully checked; what makes
		// it panic is no local path either.
		if recover() != nil {
			repository = true
		}
	}()
	return (&resource.Origin{}).Append(entry).Repo != ""
}

// generatorSources returns the paths a config map or secret generator
// reads: files (written "path" or "key=path") and env files.
func generatorSources(args types.GeneratorArgs) []string {
	var paths []string
	for _, source := range args.FileSources {
		if _, path, found := strings.Cut(source, "="); found {
			source = path
		}
		paths = append(paths, source)
	}
	paths = append(paths, args.EnvSources...)
	if args.EnvSource != "" {
		paths = append(paths, args.EnvSource)
	}
	return paths
}

// pluginLocation is one path a builtin plugin's configuration makes it load.
type pluginLocation struct {
	field, path string
}

const helmChartInflationGenerator = "HelmChartInflationGenerator"

// builtinPluginLocations lists kustomize's builtin plugins with the
// locations each loads through the loader; nil for those that load
// nothing. A kind missing here is not a builtin and never runs.
// TestEveryBuiltinPluginIsClassified keeps the list complete.
var builtinPluginLocations = map[string]func(config map[string]any) []pluginLocation{
	"AnnotationsTransformer":         nil,
	"ConfigMapGenerator":             generatorConfigLocations,
	"HashTransformer":                nil,
	helmChartInflationGenerator:      nil, // refused
	"IAMPolicyGenerator":             nil,
	"ImageTagTransformer":            nil,
	"LabelTransformer":               nil,
	"NamespaceTransformer":           nil,
	"PatchJson6902Transformer":       stringLocation("path"),
	"PatchStrategicMergeTransformer": strategicMergeLocations,
	"PatchTransformer":               stringLocation("path"),
	"PrefixSuffixTransformer":        nil,
	"PrefixTransformer":              nil,
	"ReplacementTransformer":         replacementLocations,
	"ReplicaCountTransformer":        nil,
	"SecretGenerator":                generatorConfigLocations,
	"SuffixTransformer":              nil,
	"ValueAddTransformer":            stringLocation("targetFilePath"),
}

func stringLocation(field string) func(map[string]any) []pluginLocation {
	return func(config map[string]any) []pluginLocation {
		path, _ := config[field].(string)
		return []pluginLocation{{field: field, path: path}}
	}
}

func stringsOf(value any) []string {
	list, _ := value.([]any)
	var out []string
	for _, item := range list {
		if s, ok := item.(string); ok {
			out = append(out, s)
		}
	}
	return out
}

func generatorConfigLocations(config map[string]any) []pluginLocation {
	args := types.GeneratorArgs{KvPairSources: types.KvPairSources{
		FileSources: stringsOf(config["files"]),
		EnvSources:  stringsOf(config["envs"]),
	}}
	args.EnvSource, _ = config["env"].(string)
	sources := generatorSources(args)
	locations := make([]pluginLocation, 0, len(sources))
	for _, path := range sources {
		locations = append(locations, pluginLocation{field: "files/envs", path: path})
	}
	return locations
}

func strategicMergeLocations(config map[string]any) []pluginLocation {
	var locations []pluginLocation
	for _, path := range stringsOf(config["paths"]) {
		if !isInlinePatch(path) {
			locations = append(locations, pluginLocation{field: "paths", path: path})
		}
	}
	return locations
}

func replacementLocations(config map[string]any) []pluginLocation {
	replacements, _ := config["replacements"].([]any)
	var locations []pluginLocation
	for _, replacement := range replacements {
		fields, _ := replacement.(map[string]any)
		if path, _ := fields["path"].(string); path != "" {
			locations = append(locations, pluginLocation{field: "replacements.path", path: path})
		}
	}
	return locations
}
