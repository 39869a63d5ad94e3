package overlay

import (
	"errors"
	"path/filepath"
	"reflect"
	"slices"
	"strings"

	"sigs.k8s.io/kustomize/api/types"
)

// resourcePlan is what the kustomizations of a build list as resources, read
// before kustomize runs (see planResources).
type resourcePlan struct {
	// plain says whether every kustomization of the build is a plain list
	// of resources, with or without patches and labels or annotations for
	// every object (see isPlainKustomization), so that the build can take
	// the linear path (buildPlain) instead of kustomize's.
	plain bool
	// files are the resource files in the order kustomize accumulates
	// them, a file once for each time a kustomization lists it.
	files []plannedFile
	// transforming are the kustomizations of the build that transform
	// their objects (patches, labels, annotations), in the order the
	// planning reached them.
	transforming []transformingKustomizationPlan
}

// transformingKustomizationPlan is a kustomization of a plain build that
// transforms the objects of the resources it lists (its bases' objects
// as their own transformations left them): kustomize applies its patches,
// in order, then its labels and its annotations.
type transformingKustomizationPlan struct {
	path    string // the kustomization file, absolute
	dir     string // its directory, symbolic links resolved, as kustomize's loader has it
	patches []types.Patch
	// labels, commonLabels and commonAnnotations are its fields of those
	// names, which kustomize's label and annotation transformers apply
	// after its patches (see metadataTransformers).
	labels            []types.Label
	commonLabels      map[string]string
	commonAnnotations map[string]string
	// rank is where kustomize applies its patches among the build's
	// kustomizations': after those of the kustomizations it lists.
	rank int
}

// transforms says whether k changes the objects of its resources in a way
// the linear path applies.
func transforms(k types.Kustomization) bool {
	return len(k.Patches) > 0 || len(k.Labels) > 0 || len(k.CommonLabels) > 0 || len(k.CommonAnnotations) > 0
}

// plannedFile is one use of a resource file.
type plannedFile struct {
	// abs is the file as kustomize reads it: joined to the directory of
	// the kustomization that lists it, with that directory's symbolic
	// links resolved, as kustomize's loader resolves them.
	abs string
	// origin is the path kustomize records as the objects' origin: the
	// entries that lead to the file joined, relative to the build's
	// target.
	origin string
	// transformedBy are the kustomizations (indices into
	// resourcePlan.transforming) whose transformations apply to the file's
	// objects, in the order kustomize applies them: the one that lists the
	// file first, the top-level kustomization last.
	transformedBy []int
	// context is the use's context (fileContext), nil when a
	// kustomization on its chain has patches; read is what the planning's
	// read of the file found (see BuildReusing).
	context *[32]byte
	read    resourceRead
}

// maxPlanDepth bounds how deep planResources follows kustomizations listing
// kustomizations. kustomize refuses a cycle through the directories it
// builds; a chain deeper than this is left to it as well.
const maxPlanDepth = 64

// planResources reads, before kustomize runs, every resource file the
// kustomizations of the build list, following the directories they list
// (resources and components) in the order kustomize accumulates them, and
// every kustomization on the way, through the build's file system: each
// read is checked and counted against the build's limits as kustomize's
// own reads are (buildFS.ReadFile). kustomize accumulates objects in time
// that grows with the square of their number, so counting them here is
// what refuses a build of too many objects at once instead of after
// kustomize has accumulated the limit's worth: the build then returns the
// limit's error and kustomize never runs. The files read here are served
// to kustomize from memory without being counted again (see
// buildFS.prefetched).
//
// Any other problem stops the planning without an error: kustomize reads
// the same files next and reports it in its own words (a refused read is
// recorded and reported either way). The plan is then not plain.
func (r *buildFS) planResources(target, kustomizationPath string, content []byte) (resourcePlan, error) {
	planner := resourcePlanner{fs: r, plan: resourcePlan{plain: true},
		contexts: [][32]byte{targetContext(r.display(target), r.display(kustomizationPath))}}
	r.planning = true
	defer func() { r.planning = false }()
	// The top-level kustomization has been read (topKustomization); one
	// generated for a plain directory is vetted here, before its entries
	// are followed.
	if _, generated := r.virtual[kustomizationPath]; generated || !r.Exists(kustomizationPath) {
		if err := r.vetKustomization(kustomizationPath, content); err != nil {
			return resourcePlan{}, nil
		}
	}
	realTarget, _, err := r.CleanedAbs(filepath.Join(target, "."))
	if err != nil {
		return resourcePlan{}, nil
	}
	err = planner.kustomization(string(realTarget), kustomizationPath, "", content, []string{string(realTarget)}, true)
	switch {
	case errors.Is(err, ErrLimitExceeded):
		return resourcePlan{}, errors.Join(r.refusals...)
	case err != nil:
		return resourcePlan{}, nil
	}
	return planner.plan, nil
}

// errStopPlanning ends the planning where kustomize is left to report what
// it finds.
var errStopPlanning = errors.New("left to kustomize")

// resourcePlanner walks the kustomizations of one build.
type resourcePlanner struct {
	fs   *buildFS
	plan resourcePlan
	// enclosing are the transforming kustomizations that lead to the one
	// being planned, outermost first (indices into plan.transforming).
	enclosing []int
	// ranked counts the transforming kustomizations planned to the end.
	ranked int
	// contexts are the contexts (reuseContext) of the kustomizations that
	// lead to the one being planned, the target's first; patched counts
	// those of them with patches (see BuildReusing).
	contexts [][32]byte
	patched  int
}

// kustomization plans the kustomization content of the file path in the
// directory dir (symbolic links resolved), reached through the entries
// joined in origin;
// chain are the directories of the kustomizations that lead to it, dir
// last. top says whether it is the build's own kustomization, or a
// component's (which is of kind Component, and never plain).
func (p *resourcePlanner) kustomization(dir, path, origin string, content []byte, chain []string, top bool) error {
	var k types.Kustomization
	if err := k.Unmarshal(content); err != nil {
		return errStopPlanning
	}
	k.FixKustomization()
	if k.CheckEmpty() != nil || len(k.EnforceFields()) > 0 || !top && k.Kind == types.ComponentKind {
		return errStopPlanning
	}
	if !isPlainKustomization(k, top) {
		p.plan.plain = false
	}
	p.contexts = append(p.contexts, reuseContext(p.contexts[len(p.contexts)-1], p.fs.display(path), content))
	if len(k.Patches) > 0 {
		p.patched++
	}
	defer func() {
		p.contexts = p.contexts[:len(p.contexts)-1]
		if len(k.Patches) > 0 {
			p.patched--
		}
	}()
	if transforms(k) {
		p.plan.transforming = append(p.plan.transforming, transformingKustomizationPlan{path: path, dir: dir, patches: k.Patches,
			labels: k.Labels, commonLabels: k.CommonLabels, commonAnnotations: k.CommonAnnotations})
		index := len(p.plan.transforming) - 1
		p.enclosing = append(p.enclosing, index)
		defer func() {
			p.enclosing = p.enclosing[:len(p.enclosing)-1]
			p.plan.transforming[index].rank = p.ranked
			p.ranked++
		}()
	}
	for _, entry := range k.Resources {
		if err := p.entry(dir, origin, entry, chain); err != nil {
			return err
		}
	}
	if len(k.Components) > 0 {
		// kustomize reads a component after the generators' files of the
		// kustomization that lists it; its resources are counted here all
		// the same, and the build is not plain.
		for _, entry := range k.Components {
			if err := p.directory(dir, origin, entry, chain, true); err != nil {
				return err
			}
		}
	}
	return nil
}

// entry plans one resources entry: a file, or a directory with a
// kustomization.
func (p *resourcePlanner) entry(dir, origin, entry string, chain []string) error {
	if entry == "" || isNetworkLocation(entry) || filepath.IsAbs(entry) {
		return errStopPlanning // refused by vetKustomization already
	}
	abs := filepath.Join(dir, entry)
	if p.fs.IsDir(abs) {
		return p.directory(dir, origin, entry, chain, false)
	}
	var context *[32]byte
	if p.patched == 0 {
		c := fileContext(p.contexts[len(p.contexts)-1], filepath.Join(origin, entry))
		context = &c
	}
	p.fs.readContext, p.fs.resourceRead = context, resourceRead{}
	_, err := p.fs.ReadFile(abs)
	read := p.fs.resourceRead
	p.fs.readContext, p.fs.resourceRead = nil, resourceRead{}
	if err != nil {
		return err
	}
	p.fs.prefetched[abs]++
	transformedBy := slices.Clone(p.enclosing)
	slices.Reverse(transformedBy)
	p.plan.files = append(p.plan.files, plannedFile{abs: abs, origin: filepath.Join(origin, entry), transformedBy: transformedBy,
		context: context, read: read})
	return nil
}

// directory plans a directory listed as a resource or a component.
func (p *resourcePlanner) directory(dir, origin, entry string, chain []string, component bool) error {
	if hasAmbiguousPathSegment(entry) || len(chain) >= maxPlanDepth {
		return errStopPlanning
	}
	confirmed, _, err := p.fs.CleanedAbs(filepath.Join(dir, entry))
	if err != nil {
		return errStopPlanning
	}
	sub := string(confirmed)
	// kustomize refuses a directory that is, or contains, one it is
	// building already.
	if slices.ContainsFunc(chain, func(visited string) bool { return isWithin(sub, visited) }) {
		return errStopPlanning
	}
	var found []string
	for _, name := range kustomizationFileNames {
		if p.fs.Exists(filepath.Join(sub, name)) {
			found = append(found, filepath.Join(sub, name))
		}
	}
	if len(found) != 1 {
		return errStopPlanning // kustomize's to report: none, or more than one
	}
	content, err := p.fs.ReadFile(found[0])
	if err != nil {
		return err
	}
	p.fs.prefetched[found[0]]++
	var k types.Kustomization
	if k.Unmarshal(content) == nil && (k.Kind == types.ComponentKind) != component {
		return errStopPlanning // kustomize refuses the wrong kind
	}
	if component {
		p.plan.plain = false
	}
	return p.kustomization(sub, found[0], filepath.Join(origin, entry), content, append(slices.Clip(chain), sub), component)
}

// hasAmbiguousPathSegment reports whether a directory entry has a segment
// with ".." in it that is not "..": kustomize refuses such a directory
// ("path is ambiguous").
func hasAmbiguousPathSegment(path string) bool {
	for _, part := range strings.Split(filepath.ToSlash(path), "/") {
		if part != "" && part != "." && part != ".." && strings.Contains(part, "..") {
			return true
		}
	}
	return false
}

// isPlainKustomization reports whether k (fixed: bases moved into
// resources) does nothing but list resources, patch them and add labels
// and annotations to every object (labels, commonLabels,
// commonAnnotations): no generator, other transformer, name or namespace
// change, component, replacement, variable, configuration (which changes
// the fields labels and annotations go to), schema or sort order, and no
// patch options (which let a patch rename an object) nor legacy patch
// fields (which kustomize applies after other transformers). The build's
// own kustomization may ask for origin annotations (the build adds them
// anyway); the buildMetadata of the others is replaced by it in
// kustomize, so theirs does not matter.
func isPlainKustomization(k types.Kustomization, top bool) bool {
	if k.Kind != types.KustomizationKind {
		return false
	}
	if top && slices.ContainsFunc(k.BuildMetadata, func(option string) bool { return option != types.OriginAnnotations }) {
		return false
	}
	if slices.ContainsFunc(k.Patches, func(patch types.Patch) bool { return patch.Options != nil }) {
		return false
	}
	rest := k
	rest.TypeMeta = types.TypeMeta{}
	rest.MetaData = nil
	rest.Resources = nil
	rest.BuildMetadata = nil
	rest.Patches = nil
	rest.Labels, rest.CommonLabels, rest.CommonAnnotations = nil, nil, nil
	return reflect.ValueOf(rest).IsZero()
}
