package controllers

import (
	"context"
	"fmt"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1alpha1 "github.com/profilesync/profilesync/api/v1alpha1"
	"github.com/profilesync/profilesync/internal/render"
)

// planItem is one object of the revision and its live counterpart.
type planItem struct {
	object render.Object
	// live is the object on the cluster, nil when it is new.
	live client.Object
	// stage is when the item is applied; see applyPlan.
	stage applyStage
}

// applyStage orders the writes of a revision so that each one is valid for
// the admission webhooks when it is made.
type applyStage int

const (
	// stageValidNow: namespaced profiles valid against their parent as it is
	// on the cluster. They go first, so an override the revision drops is
	// gone before its parent loses what it overrode.
	stageValidNow applyStage = iota
	// stageParents: CloudProfiles.
	stageParents
	// stageNeedsNewParent: namespaced profiles valid only against their
	// parent as this revision has it (a new parent, or an override of
	// something the parent gains).
	stageNeedsNewParent
)

// owner is the ProfileSync ("namespace/name") named by the live object's
// labels, empty when it has none.
func (i planItem) owner() string {
	labels := i.live.GetLabels()
	if labels[OwnerNameLabel] == "" {
		return ""
	}
	return labels[OwnerNamespaceLabel] + "/" + labels[OwnerNameLabel]
}

// applyPlan is what one revision changes: the objects to apply, in an order
// the admission webhooks accept, and the objects of the previous inventory to
// prune.
//
// The items are sorted by stage. The revision as a whole was validated by
// render.ValidateSet and checkUpdateRules already; the stages only keep every
// single write valid for the webhooks.
type applyPlan struct {
	items  []planItem
	pruned []v1alpha1.InventoryEntry
	keys   map[string]bool
}

func inventoryKey(kind, namespace, name string) string {
	return kind + "/" + namespace + "/" + name
}

func newApplyPlan(obj *v1alpha1.ProfileSync, objects []render.Object, live *liveProfiles) *applyPlan {
	plan := &applyPlan{keys: make(map[string]bool, len(objects))}
	var validNow, needNewParent []planItem
	for _, o := range objects {
		plan.keys[inventoryKey(o.Kind(), o.Namespace(), o.Name())] = true
		if o.CloudProfile != nil {
			item := planItem{object: o, stage: stageParents}
			if cp, ok := live.cloudProfiles[o.Name()]; ok {
				item.live = cp
			}
			plan.items = append(plan.items, item)
			continue
		}
		item := planItem{object: o}
		if ncp, ok := live.namespaced[client.ObjectKey{Namespace: o.Namespace(), Name: o.Name()}]; ok {
			item.live = ncp
		}
		if mergesWithLiveParent(o.NamespacedCloudProfile, live) {
			validNow = append(validNow, item)
			continue
		}
		item.stage = stageNeedsNewParent
		needNewParent = append(needNewParent, item)
	}
	plan.items = append(append(validNow, plan.items...), needNewParent...)

	if obj.Spec.Prune && obj.Status.Inventory != nil {
		for _, entry := range obj.Status.Inventory.Entries {
			if !plan.keys[inventoryKey(entry.Kind, entry.Namespace, entry.Name)] {
				plan.pruned = append(plan.pruned, entry)
			}
		}
	}
	return plan
}

func mergesWithLiveParent(ncp *v1alpha1.NamespacedCloudProfile, live *liveProfiles) bool {
	parent, ok := live.cloudProfiles[ncp.Spec.Parent.Name]
	if !ok {
		return false
	}
	_, errs := render.MergeNamespaced(&parent.Spec, &ncp.Spec)
	return len(errs) == 0
}

func (p *applyPlan) has(kind, namespace, name string) bool {
	return p.keys[inventoryKey(kind, namespace, name)]
}

func (p *applyPlan) prunes(kind, namespace, name string) bool {
	for _, e := range p.pruned {
		if e.Kind == kind && e.Namespace == namespace && e.Name == name {
			return true
		}
	}
	return false
}

// inventory lists the revision's objects, sorted by kind, namespace and name.
func (p *applyPlan) inventory() *v1alpha1.ProfileSyncInventory {
	entries := make([]v1alpha1.InventoryEntry, 0, len(p.items))
	for _, item := range p.items {
		entries = append(entries, v1alpha1.InventoryEntry{Kind: item.object.Kind(), Namespace: item.object.Namespace(), Name: item.object.Name()})
	}
	sort.Slice(entries, func(i, j int) bool {
		return inventoryKey(entries[i].Kind, entries[i].Namespace, entries[i].Name) <
			inventoryKey(entries[j].Kind, entries[j].Namespace, entries[j].Name)
	})
	return &v1alpha1.ProfileSyncInventory{Entries: entries}
}

// apply server-side applies every object that differs from the cluster, stage
// by stage. Each stage is first applied as a dry run, so an object the API
// server refuses stops the revision before that stage writes anything: when a
// revision changes only CloudProfiles, or only adds namespaced profiles,
// nothing at all is written. (A dry run cannot see the writes of an earlier
// stage, so the stages cannot all be dry-run up front.) A live object that differs
// although the revision did not change was edited by hand: it is put back,
// and an event names the fields.
func (r *ProfileSyncReconciler) apply(ctx context.Context, obj *v1alpha1.ProfileSync, plan *applyPlan, revision string) error {
	type change struct {
		item    planItem
		desired *unstructured.Unstructured
		fields  []string
	}
	var changes []change
	for _, item := range plan.items {
		desired, err := applyObject(item.object, obj)
		if err != nil {
			return err
		}
		var fields []string
		if item.live != nil {
			fields, err = driftedFields(desired, item.live)
			if err != nil {
				return err
			}
			if len(fields) == 0 {
				continue
			}
		}
		changes = append(changes, change{item: item, desired: desired, fields: fields})
	}

	dryRun := func(c change) error {
		err := r.Apply(ctx, client.ApplyConfigurationFromUnstructured(c.desired.DeepCopy()),
			client.FieldOwner(SyncFieldManager), client.ForceOwnership, client.DryRunAll)
		switch {
		case err == nil:
			return nil
		case apierrors.IsInvalid(err) || apierrors.IsBadRequest(err) || apierrors.IsForbidden(err):
			return validationFailed(fmt.Errorf("%s: %s: refused by the API server: %w", c.item.object.File, c.item.object.Ref(), err))
		default:
			return &syncError{condition: v1alpha1.ApplyFailedCondition, reason: v1alpha1.ApplyFailedReason,
				err: fmt.Errorf("dry-run apply %s: %w", c.item.object.Ref(), err)}
		}
	}
	var created, configured int
	for i, c := range changes {
		if i == 0 || changes[i-1].item.stage != c.item.stage {
			for _, next := range changes[i:] {
				if next.item.stage != c.item.stage {
					break
				}
				if err := dryRun(next); err != nil {
					return err
				}
			}
		}
		err := r.Apply(ctx, client.ApplyConfigurationFromUnstructured(c.desired),
			client.FieldOwner(SyncFieldManager), client.ForceOwnership)
		if err != nil {
			return &syncError{condition: v1alpha1.ApplyFailedCondition, reason: v1alpha1.ApplyFailedReason,
				err: fmt.Errorf("apply %s: %w", c.item.object.Ref(), err)}
		}
		if c.item.live == nil {
			created++
			continue
		}
		configured++
		if obj.Status.LastAppliedRevision == revision {
			r.EventRecorder.Eventf(obj, corev1.EventTypeNormal, v1alpha1.DriftCorrectedReason,
				"%s: %s changed on the cluster; restored from %s", c.item.object.Ref(), strings.Join(c.fields, ", "), revision)
		}
	}
	if created+configured > 0 {
		r.EventRecorder.Eventf(obj, corev1.EventTypeNormal, "Applied",
			"revision %s: %d created, %d configured", revision, created, configured)
	}
	return nil
}

// prune deletes the objects of the previous inventory that the revision no
// longer has, namespaced profiles before CloudProfiles. checkUpdateRules has
// already refused a revision that would delete a CloudProfile still in use.
// An object whose labels name another owner is left alone.
func (r *ProfileSyncReconciler) prune(ctx context.Context, obj *v1alpha1.ProfileSync, plan *applyPlan) error {
	pruned := append([]v1alpha1.InventoryEntry(nil), plan.pruned...)
	sort.SliceStable(pruned, func(i, j int) bool {
		return pruned[i].Kind == v1alpha1.NamespacedCloudProfileKind && pruned[j].Kind != v1alpha1.NamespacedCloudProfileKind
	})
	self := map[string]string{OwnerNamespaceLabel: obj.Namespace, OwnerNameLabel: obj.Name}
	for _, entry := range pruned {
		var target client.Object = &v1alpha1.NamespacedCloudProfile{}
		if entry.Kind == v1alpha1.CloudProfileKind {
			target = &v1alpha1.CloudProfile{}
		}
		key := client.ObjectKey{Namespace: entry.Namespace, Name: entry.Name}
		if err := r.Get(ctx, key, target); err != nil {
			if apierrors.IsNotFound(err) {
				continue
			}
			return fmt.Errorf("get %s %s to prune: %w", entry.Kind, key, err)
		}
		labels := target.GetLabels()
		if labels[OwnerNamespaceLabel] != self[OwnerNamespaceLabel] || labels[OwnerNameLabel] != self[OwnerNameLabel] {
			continue
		}
		if err := r.Delete(ctx, target); client.IgnoreNotFound(err) != nil {
			return &syncError{condition: v1alpha1.ApplyFailedCondition, reason: v1alpha1.ApplyFailedReason,
				err: fmt.Errorf("prune %s %s: %w", entry.Kind, key, err)}
		}
		r.EventRecorder.Eventf(obj, corev1.EventTypeNormal, "Pruned", "%s %s removed from Git: deleted", entry.Kind, key)
	}
	return nil
}

// applyObject is the object the sync applies: apiVersion, kind, name,
// namespace, the labels and annotations of Git plus the owner labels, and
// spec. Status is never sent.
func applyObject(o render.Object, owner *v1alpha1.ProfileSync) (*unstructured.Unstructured, error) {
	var typed runtime.Object
	var objMeta *metaFields
	switch {
	case o.CloudProfile != nil:
		cp := &v1alpha1.CloudProfile{Spec: o.CloudProfile.Spec}
		cp.SetGroupVersionKind(v1alpha1.GroupVersion.WithKind(v1alpha1.CloudProfileKind))
		objMeta = &metaFields{name: o.Name(), labels: o.CloudProfile.Labels, annotations: o.CloudProfile.Annotations}
		typed = cp
	default:
		ncp := &v1alpha1.NamespacedCloudProfile{Spec: o.NamespacedCloudProfile.Spec}
		ncp.SetGroupVersionKind(v1alpha1.GroupVersion.WithKind(v1alpha1.NamespacedCloudProfileKind))
		objMeta = &metaFields{name: o.Name(), namespace: o.Namespace(), labels: o.NamespacedCloudProfile.Labels, annotations: o.NamespacedCloudProfile.Annotations}
		typed = ncp
	}
	content, err := runtime.DefaultUnstructuredConverter.ToUnstructured(typed)
	if err != nil {
		return nil, fmt.Errorf("convert %s: %w", o.Ref(), err)
	}
	delete(content, "status")
	u := &unstructured.Unstructured{Object: content}
	unstructured.RemoveNestedField(u.Object, "metadata")
	u.SetName(objMeta.name)
	u.SetNamespace(objMeta.namespace)
	labels := map[string]string{OwnerNamespaceLabel: owner.Namespace, OwnerNameLabel: owner.Name}
	for k, v := range objMeta.labels {
		labels[k] = v
	}
	u.SetLabels(labels)
	if len(objMeta.annotations) > 0 {
		u.SetAnnotations(objMeta.annotations)
	}
	return u, nil
}

type metaFields struct {
	name, namespace     string
	labels, annotations map[string]string
}

// driftedFields lists what of desired the live object does not have: the
// top-level spec fields that differ (after the API server's defaults) and
// "metadata.labels"/"metadata.annotations" when one set in Git is missing or
// different. Empty means the object is up to date and needs no write.
func driftedFields(desired *unstructured.Unstructured, live client.Object) ([]string, error) {
	liveContent, err := runtime.DefaultUnstructuredConverter.ToUnstructured(live)
	if err != nil {
		return nil, fmt.Errorf("convert live %s: %w", live.GetName(), err)
	}
	desiredSpec, _, _ := unstructured.NestedMap(desired.Object, "spec")
	liveSpec, _, _ := unstructured.NestedMap(liveContent, "spec")
	applyAPIDefaults(desired.GetKind(), desiredSpec)

	keys := map[string]bool{}
	for k := range desiredSpec {
		keys[k] = true
	}
	for k := range liveSpec {
		keys[k] = true
	}
	var fields []string
	for k := range keys {
		if !equality.Semantic.DeepEqual(desiredSpec[k], liveSpec[k]) {
			fields = append(fields, "spec."+k)
		}
	}
	sort.Strings(fields)
	if !isSubset(desired.GetLabels(), live.GetLabels()) {
		fields = append(fields, "metadata.labels")
	}
	if !isSubset(desired.GetAnnotations(), live.GetAnnotations()) {
		fields = append(fields, "metadata.annotations")
	}
	return fields, nil
}

// applyAPIDefaults sets on a desired spec the defaults the API server sets on
// the live one, so that an unset default is not taken for drift.
func applyAPIDefaults(kind string, spec map[string]interface{}) {
	if kind != v1alpha1.CloudProfileKind {
		return
	}
	images, _, _ := unstructured.NestedSlice(spec, "machineImages")
	for i := range images {
		image, ok := images[i].(map[string]interface{})
		if ok && image["updateStrategy"] == nil {
			image["updateStrategy"] = string(v1alpha1.UpdateStrategyMajor)
		}
	}
	if images != nil {
		spec["machineImages"] = images
	}
}

func isSubset(want, have map[string]string) bool {
	for k, v := range want {
		if have[k] != v {
			return false
		}
	}
	return true
}
