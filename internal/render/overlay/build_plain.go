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
	seen := make(map[objectKey]bool)
	out := r.newRenderer(target, kustomizationPath)
	patches, ok := newLinearPatches(r, plan)
	if !ok {
		return nil, false, nil
	}
	order := 0
	// tooLarge is the output's refusal, returned once every object has
	// been checked.
	var tooLarge error
	reusable := &Reusable{}
	for _, file := range plan.files {
		if use := file.read.reused; use != nil {
			// The previous build's documents of the same file in the same
			// context (see BuildReusing): its objects are checked and
			// counted as if they were built here.
			for _, document := range use.Documents {
				if seen[document.key()] {
					return nil, false, nil
				}
				seen[document.key()] = true
			}
			order += len(use.Documents)
			if tooLarge != nil {
				continue
			}
			first := out.placed()
			if err := out.reuse(use.Documents, use.First); err != nil {
				tooLarge, out.docs = err, nil
				continue
			}
			// Its pieces move with it.
			var pieces []ReusablePiece
			for _, piece := range use.Pieces {
				if len(piece.Documents) > 0 {
					piece.First += first - use.First
				}
				pieces = append(pieces, piece)
			}
			reusable.Files = append(reusable.Files, ReusableFile{File: use.File, Context: use.Context, Digest: use.Digest,
				Objects: use.Objects, First: first, Documents: use.Documents, Pieces: pieces})
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
				for _, document := range entry.reused.Documents {
					if seen[document.key()] {
						return nil, false, nil
					}
					seen[document.key()] = true
				}
				order += len(entry.reused.Documents)
				continue
			}
			object := entry.object
			if !buildsLikeKustomize(object) {
				return nil, false, nil
			}
			id := object.CurId()
			key := objectKey{group: id.Group, version: id.Version, kind: id.Kind, name: id.Name, namespace: id.EffectiveNamespace()}
			if seen[key] {
				return nil, false, nil
			}
			seen[key], keys[i] = true, key
			if err := object.SetOrigin(&resource.Origin{Path: file.origin}); err != nil {
				return nil, false, nil
			}
			// Patched as kustomize patches it: with its origin and its
			// build annotations, which kustomize removes at the end.
			set, ok := patches.apply(object, file, order)
			if !ok {
				return nil, false, nil
			}
			sources[i], order = set, order+1
			object.RemoveBuildAnnotations()
			if err := object.ClearTransformations(); err != nil {
				return nil, false, nil
			}
		}
		if tooLarge != nil {
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
		use := ReusableFile{File: r.display(file.abs), Digest: file.read.digest, Objects: file.read.objects, First: out.placed()}
		var pieces []ReusablePiece
		if piecewise {
			pieces = make([]ReusablePiece, len(file.read.pieces))
			for i, piece := range file.read.pieces {
				pieces[i] = ReusablePiece{Digest: piece.digest, Objects: piece.objects}
			}
		}
		for i, entry := range entries {
			var documents []ReusableDocument
			first := out.placed()
			if entry.reused != nil {
				if err := out.reuse(entry.reused.Documents, entry.reused.First); err != nil {
					tooLarge, out.docs = err, nil
					break
				}
				documents = entry.reused.Documents
			} else {
				if err := out.add(entry.object); err != nil {
					if !errors.Is(err, ErrLimitExceeded) {
						return nil, true, err
					}
					tooLarge, out.docs = err, nil
					break
				}
				doc := &out.docs[len(out.docs)-1]
				if doc.SetBy, err = patches.fieldSourcesOf(entry.object, doc.Data, sources[i]); err != nil {
					return nil, true, err
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
		// Only the use the planning parsed and counted, in a context
		// without patches, may be reused.
		if tooLarge == nil && file.context != nil && file.read.counted {
			use.Context, use.Pieces = *file.context, pieces
			reusable.Files = append(reusable.Files, use)
		}
	}
	warnings, ok := patches.finish()
	if !ok {
		return nil, false, nil
	}
	if tooLarge != nil {
		return nil, true, tooLarge
	}
	r.checkedWhileBuilding, r.warningsWhileBuilding = true, warnings
	r.reused, r.reusable = out.reused, reusable
	return out.docs, true, nil
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
