package overlay

import (
	"sigs.k8s.io/kustomize/api/konfig"
	"sigs.k8s.io/kustomize/api/resource"
	"sigs.k8s.io/kustomize/kyaml/resid"

	v1alpha1 "github.com/profilesync/profilesync/api/v1alpha1"
	"github.com/profilesync/profilesync/internal/profile"
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

// accumulatePlain builds a plan whose kustomizations are plain lists of
// resources (resourcePlan.plain) without kustomize's accumulator, whose
// time grows with the square of the objects (it checks each object it adds
// against every one it holds). It means what kustomize means by such a
// list, and parses and annotates with kustomize's own code:
//
//   - each file is parsed by kustomize's resource factory, which expands
//     Lists (their items after the file's other objects, as kustomize
//     puts them);
//   - the objects come in the order kustomize accumulates them, which it
//     keeps: the build sorts nothing (krusty's default options);
//   - each object's origin is the one kustomize records (the entries that
//     lead to its file, joined), and the build annotations kustomize
//     removes at the end are removed.
//
// An object defined twice (the same group, version, kind, name and
// namespace, a namespaced object without a namespace being in "default",
// as kustomize compares them) is kustomize's error. So is anything the
// linear path does not build the way kustomize would: an object of
// another kind than plainKinds, one without a valid name, one marked as
// local configuration (kustomize drops it) or as needing a hash suffix
// (kustomize renames it). For all of these accumulatePlain returns false,
// and the build runs kustomize, which reports the error in its words or
// builds what the linear path does not. The caller holds kustomizeRuns and
// has registered the build's schema (useBuildSchema), which tells kustomize
// which kinds have no namespace.
func (r *buildFS) accumulatePlain(plan resourcePlan) ([]*resource.Resource, bool) {
	factory := resmapFactory().RF()
	seen := make(map[resid.ResId]bool)
	var accumulated []*resource.Resource
	for _, file := range plan.files {
		objects, err := factory.SliceFromBytes(r.served[file.abs])
		if err != nil {
			return nil, false
		}
		for _, object := range objects {
			if !r.buildsLikeKustomize(object) {
				return nil, false
			}
			id := object.CurId()
			key := resid.NewResIdWithNamespace(id.Gvk, id.Name, id.EffectiveNamespace())
			if seen[key] {
				return nil, false
			}
			seen[key] = true
			if err := object.SetOrigin(&resource.Origin{Path: file.origin}); err != nil {
				return nil, false
			}
			object.RemoveBuildAnnotations()
			if err := object.ClearTransformations(); err != nil {
				return nil, false
			}
			accumulated = append(accumulated, object)
		}
	}
	return accumulated, true
}

// buildsLikeKustomize reports whether kustomize, given only object, would
// keep it as parsed; see accumulatePlain.
func (r *buildFS) buildsLikeKustomize(object *resource.Resource) bool {
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
	_, local := metadata.ObjectMeta.Annotations[konfig.IgnoredByKustomizeAnnotation]
	return !local
}
