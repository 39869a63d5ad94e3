package overlay

import (
	"errors"

	"sigs.k8s.io/kustomize/api/konfig"
	"sigs.k8s.io/kustomize/api/resource"
	"sigs.k8s.io/kustomize/kyaml/resid"

	v1alpha1 "github.com/profilesync/profilesync/api/v1alpha1"
	"github.com/profilesync/profilesync/internal/render/profile"
)

// plainKinds are the kinds the linear path builds: the profiles, which are
// what a landscape is made of. kustomize does more than accumulate the
// objects of a plain list of resources when their kinds refer to others by
// name (a Deployment to its ConfigMaps, a RoleBinding to its subjects: it
// may fill in a namespace, or refuse a reference it cannot tell), and
// nothing of the kind for a profile: a build of any other kind goes
// through kustomize.
var plainKinds = func() map[typeMeta]bool {
	kinds := make(map[typeMeta]bool)
	for _, apiVersion := range []string{v1alpha1.GroupVersion.String(), profile.GardenerGroupVersion} {
		group, version := resid.ParseGroupVersion(apiVersion)
		for _, kind := range []string{"CloudProfile", "NamespacedCloudProfile"} {
			kinds[typeMeta{group: group, version: version, kind: kind}] = true
		}
	}
	return kinds
}()

// typeMeta is an object's group, version and kind.
type typeMeta struct{ group, version, kind string }

// buildPlain builds a plan whose kustomizations are plain lists of
// resources, with or without patches, labels and annotations
// (resourcePlan.plain), without
// kustomize's accumulator, whose time grows with the square of the objects
// (it checks each object it adds against every one it holds), and one file
// at a time, so that it holds the parsed objects of one file only. It
// means what kustomize means by such a list, and parses, patches,
// annotates and renders with kustomize's own code:
//
//   - each file is parsed by kustomize's resource factory, which expands
//     Lists (their items after the file's other objects, as kustomize
//     puts them);
//   - the objects come in the order kustomize accumulates them, which it
//     keeps: the build sorts nothing (krusty's default options);
//   - each object's origin is the one kustomize records (the entries that
//     lead to its file, joined);
//   - the patches, labels and annotations of the kustomizations that lead
//     to its file are applied to it by kustomize's patch, label and
//     annotation transformers, in kustomize's order (see linearPatches),
//     which also records which patch set which field (Document.SetBy) and
//     the warnings about the patches, so that the build needs no check
//     after it;
//   - the build annotations kustomize removes at the end are removed; the
//     order of keyed lists is restored as after a kustomize build
//     (restoreKeyedListOrder) in the objects a patch selected, the only
//     ones whose order the build changed.
//
// An object defined twice (the same group, version, kind, name and
// namespace, a namespaced object without a namespace being in "default",
// as kustomize compares them) is kustomize's error. So is anything the
// linear path does not build the way kustomize would: an object of
// another kind than plainKinds, one without a valid name, one marked as
// local configuration (kustomize drops it) or as needing a hash suffix
// (kustomize renames it). For all of these buildPlain returns ok false,
// and the build runs kustomize, which reports the error in its words or
// builds what the linear path does not; so it does when the output goes
// past MaxRenderedSize before such an object, so that the build fails as
// kustomize's would. The caller holds kustomizeRuns and has registered the
// build's schema (useBuildSchema), which tells kustomize which kinds have
// no namespace.
func (r *buildFS) buildPlain(target, kustomizationPath string, plan resourcePlan) (docs []profile.Document, ok bool, err error) {
	r.plainAttempts++
	factory := resmapFactory().RF()
	patches, ok := newLinearPatches(r, plan)
	if !ok {
		return nil, false, nil
	}
	b := &plainBuild{seen: make(map[objectKey]bool), out: r.newRenderer(target, kustomizationPath), reusable: &Reusable{}}
	for _, file := range plan.files {
		if use := file.read.reused; use != nil {
			// The previous build's documents of the same file in the same
			// context (see BuildReusing).
			if !b.reuseFile(use) {
				return nil, false, nil
			}
			continue
		}
		// The planning's parse, taken once: the objects made of it are
		// patched and annotated, and a file listed twice is parsed again.
		// Where the planning took pieces of the previous build (a push
		// changed the file, not all of its documents), their documents
		// come in their places.
		parsed := r.parsed[file.abs]
		delete(r.parsed, file.abs)
		entries, piecewise, err := r.readEntries(factory, file, parsed)
		if err != nil {
			return nil, false, nil
		}
		sources := make([]*objectSources, len(entries))
		keys := make([]objectKey, len(entries))
		for i, entry := range entries {
			if entry.reused != nil {
				if !b.checkReused(entry.reused.Documents) {
					return nil, false, nil
				}
				continue
			}
			object := entry.object
			if !buildsLikeKustomize(object) {
				return nil, false, nil
			}
			id := object.CurId()
			key := objectKey{group: id.Group, version: id.Version, kind: id.Kind, name: id.Name, namespace: id.EffectiveNamespace()}
			if b.seen[key] {
				return nil, false, nil
			}
			b.seen[key], keys[i] = true, key
			if err := object.SetOrigin(&resource.Origin{Path: file.origin}); err != nil {
				return nil, false, nil
			}
			// Patched as kustomize patches it: with its origin and its
			// build annotations, which kustomize removes at the end.
			set, ok := patches.apply(object, file, b.order)
			if !ok {
				return nil, false, nil
			}
			sources[i], b.order = set, b.order+1
			object.RemoveBuildAnnotations()
			if err := object.ClearTransformations(); err != nil {
				return nil, false, nil
			}
		}
		if b.tooLarge != nil {
			continue
		}
		// Only a patch moves the entries of a keyed list (see
		// restoreKeyedListOrder): an object no patch selected has its
		// file's order already, and reading its file again for it was a
		// seventh of a build without patches.
		var patched []*resource.Resource
		for i, entry := range entries {
			if sources[i] != nil {
				patched = append(patched, entry.object)
			}
		}
		if err := r.restoreKeyedListOrder(target, patched); err != nil {
			return nil, true, err
		}
		if err := b.render(r, file, entries, piecewise, keys, func(i int, doc *profile.Document) (err error) {
			doc.SetBy, err = patches.fieldSourcesOf(entries[i].object, doc.Data, sources[i])
			return err
		}); err != nil {
			return nil, true, err
		}
	}
	warnings, ok := patches.finish()
	if !ok {
		return nil, false, nil
	}
	if b.tooLarge != nil {
		return nil, true, b.tooLarge
	}
	r.checkedWhileBuilding, r.warningsWhileBuilding = true, warnings
	r.reused, r.reusable = b.out.reused, b.reusable
	return b.out.docs, true, nil
}

// plainBuild is what a build on the linear path carries from file to
// file.
type plainBuild struct {
	// seen are the objects placed so far, for the check of objects
	// defined twice.
	seen map[objectKey]bool
	out  *renderer
	// order counts the objects placed so far (see linearPatches.apply).
	order int
	// tooLarge is the output's refusal, returned once every object has
	// been checked.
	tooLarge error
	// reusable is what the next build may reuse of this one.
	reusable *Reusable
}

// checkReused enters documents of the previous build into the check of
// objects defined twice and the count of objects, as the objects they
// were made of; false for an object defined twice (kustomize's to
// report).
func (b *plainBuild) checkReused(documents []ReusableDocument) bool {
	for _, document := range documents {
		if b.seen[document.key()] {
			return false
		}
		b.seen[document.key()] = true
	}
	b.order += len(documents)
	return true
}

// reuseFile places the documents of a use of a file the planning took
// whole from the previous build: checked and counted as if they were built
// here. It returns false for an object defined twice.
func (b *plainBuild) reuseFile(use *ReusableFile) bool {
	if !b.checkReused(use.Documents) {
		return false
	}
	if b.tooLarge != nil {
		return true
	}
	first := b.out.placed()
	if err := b.out.reuse(use.Documents, use.First); err != nil {
		b.tooLarge, b.out.docs = err, nil
		return true
	}
	// Its pieces move with it.
	var pieces []ReusablePiece
	for _, piece := range use.Pieces {
		if len(piece.Documents) > 0 {
			piece.First += first - use.First
		}
		pieces = append(pieces, piece)
	}
	b.reusable.Files = append(b.reusable.Files, ReusableFile{File: use.File, Context: use.Context, Digest: use.Digest,
		Objects: use.Objects, First: first, Documents: use.Documents, Pieces: pieces})
	return true
}

// render renders the entries of a use of a file, or places the previous
// build's documents of its reused pieces, in order, within MaxRenderedSize
// (past it, tooLarge is set and the file's rendering stops), and records
// what the next build may reuse of the file: its documents' identities
// and sizes, and its pieces' when it was read piece by piece. setBy sets
// the field sources of the document rendered from the i-th entry.
func (b *plainBuild) render(r *buildFS, file plannedFile, entries []fileEntry, piecewise bool, keys []objectKey,
	setBy func(i int, doc *profile.Document) error) error {
	use := ReusableFile{File: r.display(file.abs), Digest: file.read.digest, Objects: file.read.objects, First: b.out.placed()}
	var pieces []ReusablePiece
	if piecewise {
		pieces = make([]ReusablePiece, len(file.read.pieces))
		for i, piece := range file.read.pieces {
			pieces[i] = ReusablePiece{Digest: piece.digest, Objects: piece.objects}
		}
	}
	for i, entry := range entries {
		var documents []ReusableDocument
		first := b.out.placed()
		if entry.reused != nil {
			if err := b.out.reuse(entry.reused.Documents, entry.reused.First); err != nil {
				b.tooLarge, b.out.docs = err, nil
				return nil
			}
			documents = entry.reused.Documents
		} else {
			if err := b.out.add(entry.object); err != nil {
				if !errors.Is(err, ErrLimitExceeded) {
					return err
				}
				b.tooLarge, b.out.docs = err, nil
				return nil
			}
			doc := &b.out.docs[len(b.out.docs)-1]
			if err := setBy(i, doc); err != nil {
				return err
			}
			documents = []ReusableDocument{keys[i].document(int64(len(doc.Data)))}
		}
		use.Documents = append(use.Documents, documents...)
		if piecewise && len(documents) > 0 {
			if len(pieces[entry.piece].Documents) == 0 {
				pieces[entry.piece].First = first
			}
			pieces[entry.piece].Documents = append(pieces[entry.piece].Documents, documents...)
		}
	}
	// Only the use the planning parsed and counted, in a context without
	// patches, may be reused.
	if file.context != nil && file.read.counted {
		use.Context, use.Pieces = *file.context, pieces
		b.reusable.Files = append(b.reusable.Files, use)
	}
	return nil
}

// buildsLikeKustomize reports whether kustomize, given only object, would
// keep it as parsed; see buildPlain.
func buildsLikeKustomize(object *resource.Resource) bool {
	if object.IsNilOrEmpty() || object.NeedHashSuffix() {
		return false
	}
	gvk := object.GetGvk()
	if !plainKinds[typeMeta{group: gvk.Group, version: gvk.Version, kind: gvk.Kind}] {
		return false
	}
	metadata, err := object.GetValidatedMetadata()
	if err != nil {
		return false
	}
	_, local := metadata.Annotations[konfig.IgnoredByKustomizeAnnotation]
	return !local
}
