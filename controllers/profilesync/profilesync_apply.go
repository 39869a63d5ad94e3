package profilesync

import (
	"context"
	"fmt"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync/atomic"

	"golang.org/x/sync/errgroup"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1alpha1 "github.com/profilesync/profilesync/api/v1alpha1"
	"github.com/profilesync/profilesync/controllers/inventory"
	"github.com/profilesync/profilesync/controllers/transient"
	"github.com/profilesync/profilesync/internal/render/merge"
	"github.com/profilesync/profilesync/internal/render/profile"
)

// planItem is one object of the revision and its live counterpart.
type planItem struct {
	object profile.Object
	// digest is profile.ContentDigest of object.
	digest string
	// live is the object on the cluster, nil when it is new.
	live client.Object
	// otherOwners are the other ProfileSyncs whose inventory lists the
	// object (profilesync_ownership.go).
	otherOwners []types.NamespacedName
	// held: the object is held by break glass (profilesync_hold.go); the
	// sync writes nothing to it.
	held bool
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

// applyPlan is what one revision changes: the objects of the revision with
// their live counterparts, and the objects of the previous inventory to prune.
type applyPlan struct {
	items  []planItem
	pruned []v1alpha1.InventoryEntry
	// kept are the entries of the previous inventory the revision no longer
	// has that are held: neither pruned nor dropped from the inventory.
	kept []v1alpha1.InventoryEntry
	keys map[string]bool
	live *liveProfiles
}

// newApplyPlan plans the revision's objects, each with its digest
// (digests[i] of objects[i]), against the live profiles and the
// inventories of every ProfileSync (claims).
func newApplyPlan(obj *v1alpha1.ProfileSync, objects []profile.Object, digests []string, live *liveProfiles, claims inventoryClaims) *applyPlan {
	plan := &applyPlan{keys: make(map[string]bool, len(objects)), live: live}
	self := client.ObjectKeyFromObject(obj)
	for i, o := range objects {
		key := inventory.Key(o.Kind(), o.Namespace(), o.Name())
		plan.keys[key] = true
		item := planItem{object: o, digest: digests[i], otherOwners: claims.others(key, self)}
		if o.CloudProfile != nil {
			if cp, ok := live.cloudProfiles[o.Name()]; ok {
				item.live = cp
			}
		} else if ncp, ok := live.namespaced[client.ObjectKey{Namespace: o.Namespace(), Name: o.Name()}]; ok {
			item.live = ncp
		}
		plan.items = append(plan.items, item)
	}

	if obj.Spec.Prune {
		plan.pruned = prunable(obj, plan.keys, claims)
	}
	return plan
}

// sortInventory sorts entries by kind, namespace and name.
func sortInventory(entries []v1alpha1.InventoryEntry) {
	sort.Slice(entries, func(i, j int) bool {
		return inventory.Key(entries[i].Kind, entries[i].Namespace, entries[i].Name) <
			inventory.Key(entries[j].Kind, entries[j].Namespace, entries[j].Name)
	})
}

// stageOf is when an object of the revision is written. The revision as a
// whole was validated by profile.Validate and checkUpdateRules already; the
// stages only keep every single write valid for the admission webhooks. It is
// decided only for objects that are written, since it merges a namespaced
// profile with its live parent.
func (p *applyPlan) stageOf(o profile.Object) applyStage {
	if o.CloudProfile != nil {
		return stageParents
	}
	ncp := o.NamespacedCloudProfile
	parent, ok := p.live.cloudProfiles[ncp.Spec.Parent.Name]
	if !ok {
		return stageNeedsNewParent
	}
	if _, errs := merge.Namespaced(&parent.Spec, &ncp.Spec); len(errs) > 0 {
		return stageNeedsNewParent
	}
	return stageValidNow
}

func (p *applyPlan) has(kind, namespace, name string) bool {
	return p.keys[inventory.Key(kind, namespace, name)]
}

func (p *applyPlan) prunes(kind, namespace, name string) bool {
	for _, e := range p.pruned {
		if e.Kind == kind && e.Namespace == namespace && e.Name == name {
			return true
		}
	}
	return false
}

// inventory lists the revision's objects and the held objects it dropped,
// sorted by kind, namespace and name.
func (p *applyPlan) inventory() *v1alpha1.ProfileSyncInventory {
	entries := make([]v1alpha1.InventoryEntry, 0, len(p.items)+len(p.kept))
	for _, item := range p.items {
		entries = append(entries, v1alpha1.InventoryEntry{Kind: item.object.Kind(), Namespace: item.object.Namespace(), Name: item.object.Name()})
	}
	entries = append(entries, p.kept...)
	sortInventory(entries)
	return &v1alpha1.ProfileSyncInventory{Entries: entries}
}

// apply server-side applies every object of the plan that differs from the
// cluster, stage by stage, and records what it did; under driftDetection
// mode warn it reports drift instead of correcting it.
func (r *ProfileSyncReconciler) apply(ctx context.Context, obj *v1alpha1.ProfileSync, plan *applyPlan, revision string) error {
	changes, drifts, err := plan.changes(ownerLabels(obj), obj.DriftMode())
	if err != nil {
		return err
	}
	r.reportDrift(obj, drifts)
	if len(changes) == 0 {
		return nil
	}
	writer, err := r.writerFor(ctx, obj)
	if err != nil {
		return err
	}
	if err := r.applyStages(ctx, obj, writer, changes); err != nil {
		return err
	}
	r.recordApplied(obj, changes, revision)
	return nil
}

// changes are the writes the plan needs, in stage order: every object that
// is new, that Git changed since it was applied (its digest differs), or
// whose live counterpart lacks something of Git (with the fields it lacks).
// What only the live object has is not a reason to write: it is not Git's.
// A held object is never written. Under mode warn, an object Git did not
// change but the cluster did (drift) is not written either: it is returned
// among the drifts, with its fields.
func (p *applyPlan) changes(owner map[string]string, mode v1alpha1.DriftDetectionMode) ([]applyChange, []objectDrift, error) {
	var changes []applyChange
	var drifts []objectDrift
	for _, item := range p.items {
		if item.held {
			continue
		}
		var fields []string
		var err error
		if item.live != nil {
			applied := item.live.GetAnnotations()[v1alpha1.AppliedDigestAnnotation] == item.digest
			if applied && upToDate(item, owner) {
				continue
			}
			if fields, err = driftedFields(item, owner); err != nil {
				return nil, nil, err
			}
			if applied && len(fields) > 0 && mode == v1alpha1.DriftDetectionWarn {
				drifts = append(drifts, objectDrift{ref: item.object.Ref(), fields: fields})
				continue
			}
			if len(fields) == 0 {
				if applied {
					continue
				}
				// Git changed (or dropped) only fields the cluster has
				// more of; the apply removes what Git no longer sets.
				fields = []string{fmt.Sprintf("metadata.annotations[%s]", v1alpha1.AppliedDigestAnnotation)}
			}
		}
		desired, err := applyObject(item.object, owner)
		if err != nil {
			return nil, nil, err
		}
		annotations := desired.GetAnnotations()
		if annotations == nil {
			annotations = map[string]string{}
		}
		annotations[v1alpha1.AppliedDigestAnnotation] = item.digest
		desired.SetAnnotations(annotations)
		changes = append(changes, applyChange{item: item, desired: desired, fields: fields, stage: p.stageOf(item.object)})
	}
	sort.SliceStable(changes, func(i, j int) bool { return changes[i].stage < changes[j].stage })
	return changes, drifts, nil
}

// applyStages writes changes stage by stage. Each stage is first applied as
// a dry run, so an object the API server refuses stops the revision before
// that stage writes anything: when a revision changes only CloudProfiles, or
// only adds namespaced profiles, nothing at all is written. (A dry run cannot
// see the writes of an earlier stage, so the stages cannot all be dry-run up
// front.) A revision that changes a single object skips the dry run: that
// one write is whole or nothing by itself. Before the first write, the
// objects about to be written are recorded in the inventory (claimWrites).
// Every dry run and write is made as writer.
func (r *ProfileSyncReconciler) applyStages(ctx context.Context, obj *v1alpha1.ProfileSync, writer writeIdentity, changes []applyChange) error {
	dryRun := func(ctx context.Context, c applyChange) error { return r.write(ctx, writer, c, client.DryRunAll) }
	write := func(ctx context.Context, c applyChange) error { return r.write(ctx, writer, c) }
	claimed := false
	for start := 0; start < len(changes); {
		end := start
		for end < len(changes) && changes[end].stage == changes[start].stage {
			end++
		}
		stage := changes[start:end]
		if len(changes) > 1 {
			if err := r.forEachChange(ctx, stage, dryRun); err != nil {
				return err
			}
		}
		if !claimed {
			if err := r.claimWrites(ctx, obj, changes); err != nil {
				return err
			}
			claimed = true
		}
		if err := r.forEachChange(ctx, stage, write); err != nil {
			return err
		}
		start = end
	}
	return nil
}

// recordApplied emits the events of an apply: one summary, and one
// DriftCorrected per live object that differed although the revision did not
// change (it was edited by hand and has been put back), naming the fields.
func (r *ProfileSyncReconciler) recordApplied(obj *v1alpha1.ProfileSync, changes []applyChange, revision string) {
	var created, configured int
	for _, c := range changes {
		if c.item.live == nil {
			created++
			continue
		}
		configured++
		if obj.Status.LastAppliedRevision == revision {
			r.event(obj, corev1.EventTypeNormal, v1alpha1.DriftCorrectedReason,
				"%s: %s changed on the cluster; restored from %s", c.item.object.Ref(), fieldList(c.fields), revision)
		}
	}
	if created+configured > 0 {
		r.event(obj, corev1.EventTypeNormal, v1alpha1.AppliedReason,
			"revision %s: %d created, %d configured", revision, created, configured)
	}
}

// maxListedFields bounds the fields an event names; a profile edited in
// many places would otherwise make an event of every version.
const maxListedFields = 10

// fieldList joins fields for a message, at most maxListedFields of them.
func fieldList(fields []string) string {
	if len(fields) <= maxListedFields {
		return strings.Join(fields, ", ")
	}
	return fmt.Sprintf("%s and %d more fields", strings.Join(fields[:maxListedFields], ", "), len(fields)-maxListedFields)
}

// applyChange is one object to write, when, and, for a live one, the fields
// that differ.
type applyChange struct {
	item    planItem
	desired *unstructured.Unstructured
	fields  []string
	stage   applyStage
}

// forEachChange runs do for every change, at most ApplyConcurrency at a time:
// the writes of one stage do not depend on each other, and the API server
// takes long for large profiles. A failure stops the writes not started yet;
// those under way finish rather than being cancelled, so that the error
// returned is that of the first change, in order, that failed: the same at
// every retry of a stage that fails the same way, whichever write happened
// to answer first. A message that changed only its object would rewrite the
// ProfileSync's status at every retry.
func (r *ProfileSyncReconciler) forEachChange(ctx context.Context, changes []applyChange, do func(context.Context, applyChange) error) error {
	errs := make([]error, len(changes))
	var failed atomic.Bool
	var group errgroup.Group
	group.SetLimit(max(r.ApplyConcurrency, 1))
	for i, c := range changes {
		group.Go(func() error {
			// Changes are started in order, so one skipped here comes after
			// a change that failed.
			if failed.Load() {
				return nil
			}
			if errs[i] = do(ctx, c); errs[i] != nil {
				failed.Store(true)
			}
			return nil
		})
	}
	_ = group.Wait()
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// write server-side applies one change as writer. A refusal of the object
// itself (a rule of the API server or an admission webhook, or an object
// larger than the API server takes or can store) is a validation failure of
// the revision;
// anything else is retried, an admission webhook that cannot be called
// included: the object was never judged, and the webhook may come back.
// When writer is a ServiceAccount, Forbidden is its refusal: RBAC's, or the
// admission webhook's for a custom verb (every other rule of the webhooks
// answers Invalid).
func (r *ProfileSyncReconciler) write(ctx context.Context, writer writeIdentity, c applyChange, opts ...client.ApplyOption) error {
	opts = append(opts, client.FieldOwner(SyncFieldManager), client.ForceOwnership)
	err := transient.Retry(func() error {
		return writer.Apply(ctx, client.ApplyConfigurationFromUnstructured(c.desired.DeepCopy()), opts...)
	})
	if err == nil {
		return nil
	}
	if webhook, ok := unreachableWebhook(err); ok {
		return applyFailed(fmt.Errorf("apply %s: admission webhook %q could not be called; retrying: %w", c.item.object.Ref(), webhook, err))
	}
	if writer.serviceAccount != "" && apierrors.IsForbidden(err) {
		return accessDenied(fmt.Errorf("%s: %s: ServiceAccount %s may not write it: %w", c.item.object.File, c.item.object.Ref(), writer.serviceAccount, err))
	}
	if apierrors.IsInvalid(err) || apierrors.IsBadRequest(err) || apierrors.IsForbidden(err) || apierrors.IsRequestEntityTooLargeError(err) {
		return validationFailed(fmt.Errorf("%s: %s: refused by the API server: %w", c.item.object.File, c.item.object.Ref(), err))
	}
	if transient.TooLargeToStore(err) {
		return validationFailed(fmt.Errorf("%s: %s: refused by the API server: too large to store: %w", c.item.object.File, c.item.object.Ref(), err))
	}
	return applyFailed(fmt.Errorf("apply %s: %w", c.item.object.Ref(), err))
}

// callingWebhookFailed is how the API server's admission plugins begin the
// message of a webhook they could not call (k8s.io/apiserver's
// ErrCallingWebhook): not reachable, timed out, or an answer that is not an
// AdmissionReview. With failurePolicy Fail they return it as an
// InternalError; a webhook that answered and denied is a Forbidden or
// Invalid error instead.
const callingWebhookFailed = "failed calling webhook "

// webhookDenied is how the API server words an admission webhook's refusal
// (k8s.io/apiserver's webhook ToStatusErr).
var webhookDenied = regexp.MustCompile(`admission webhook "[^"]+" denied the request`)

// deniedByWebhook tells an admission webhook's refusal from RBAC's: both are
// Forbidden.
func deniedByWebhook(err error) bool {
	return webhookDenied.MatchString(err.Error())
}

// unreachableWebhook names the admission webhook that err says the API
// server could not call.
func unreachableWebhook(err error) (string, bool) {
	if !apierrors.IsInternalError(err) {
		return "", false
	}
	message := err.Error()
	i := strings.Index(message, callingWebhookFailed)
	if i < 0 {
		return "", false
	}
	quoted, err := strconv.QuotedPrefix(message[i+len(callingWebhookFailed):])
	if err != nil {
		return "", false
	}
	name, err := strconv.Unquote(quoted)
	return name, err == nil && name != ""
}

// comparedSpecs returns what the sync compares for an item with a live
// object: the object from Git, its spec with the API server's defaults, and
// the live spec.
func comparedSpecs(item planItem) (desired client.Object, desiredSpec, liveSpec any) {
	if cp := item.object.CloudProfile; cp != nil {
		return cp, profile.WithServerDefaults(&cp.Spec), &item.live.(*v1alpha1.CloudProfile).Spec
	}
	ncp := item.object.NamespacedCloudProfile
	return ncp, &ncp.Spec, &item.live.(*v1alpha1.NamespacedCloudProfile).Spec
}

// comparedSpecValues are comparedSpecs with both specs as plain values, as
// the field-by-field comparisons of package profile take them.
func comparedSpecValues(item planItem) (desired client.Object, desiredSpec, liveSpec map[string]any, err error) {
	desired, typedDesired, typedLive := comparedSpecs(item)
	if desiredSpec, err = runtime.DefaultUnstructuredConverter.ToUnstructured(typedDesired); err != nil {
		return nil, nil, nil, fmt.Errorf("convert %s: %w", item.object.Ref(), err)
	}
	if liveSpec, err = runtime.DefaultUnstructuredConverter.ToUnstructured(typedLive); err != nil {
		return nil, nil, nil, fmt.Errorf("convert live %s: %w", item.object.Ref(), err)
	}
	return desired, desiredSpec, liveSpec, nil
}

// upToDate is the cheap check that a live object already has what Git says:
// equal typed specs and every label and annotation of Git and of the owner
// present. Only when it says no does driftedFields look closer.
func upToDate(item planItem, ownerLabels map[string]string) bool {
	desired, desiredSpec, liveSpec := comparedSpecs(item)
	return equality.Semantic.DeepEqual(desiredSpec, liveSpec) &&
		isSubset(ownerLabels, item.live.GetLabels()) &&
		isSubset(desired.GetLabels(), item.live.GetLabels()) &&
		isSubset(desired.GetAnnotations(), item.live.GetAnnotations())
}

// prune deletes the objects of the inventory that the revision no longer
// has, namespaced profiles before CloudProfiles; newApplyPlan has left out
// those another ProfileSync's inventory lists, and labels play no part.
// checkUpdateRules has already refused a revision that would delete a
// CloudProfile still in use. The deletes are made as the ProfileSync's
// writer (writerFor), looked up at the first one.
func (r *ProfileSyncReconciler) prune(ctx context.Context, obj *v1alpha1.ProfileSync, plan *applyPlan) error {
	var writer *writeIdentity
	pruned := append([]v1alpha1.InventoryEntry(nil), plan.pruned...)
	sort.SliceStable(pruned, func(i, j int) bool {
		return pruned[i].Kind == v1alpha1.NamespacedCloudProfileKind && pruned[j].Kind != v1alpha1.NamespacedCloudProfileKind
	})
	for _, entry := range pruned {
		var target client.Object = &v1alpha1.NamespacedCloudProfile{}
		if entry.Kind == v1alpha1.CloudProfileKind {
			target = &v1alpha1.CloudProfile{}
		}
		key := client.ObjectKey{Namespace: entry.Namespace, Name: entry.Name}
		target.SetNamespace(key.Namespace)
		target.SetName(key.Name)
		if writer == nil {
			w, err := r.writerFor(ctx, obj)
			if err != nil {
				return err
			}
			writer = &w
		}
		err := transient.Retry(func() error { return writer.Delete(ctx, target) })
		if apierrors.IsNotFound(err) {
			continue
		}
		if err != nil {
			if writer.serviceAccount != "" && apierrors.IsForbidden(err) && !deniedByWebhook(err) {
				return accessDenied(fmt.Errorf("prune %s %s: ServiceAccount %s may not delete it: %w", entry.Kind, key, writer.serviceAccount, err))
			}
			return applyFailed(fmt.Errorf("prune %s %s: %w", entry.Kind, key, err))
		}
		r.event(obj, corev1.EventTypeNormal, v1alpha1.PrunedReason, "%s %s removed from Git: deleted", entry.Kind, key)
	}
	return nil
}

// ownerLabels are the labels that name the ProfileSync on what it applies.
func ownerLabels(obj *v1alpha1.ProfileSync) map[string]string {
	return map[string]string{v1alpha1.OwnerNamespaceLabel: obj.Namespace, v1alpha1.OwnerNameLabel: obj.Name}
}

// applyObject is the object the sync applies: apiVersion, kind, name,
// namespace, the labels and annotations of Git plus the owner labels, and
// spec. Status is never sent.
func applyObject(o profile.Object, owner map[string]string) (*unstructured.Unstructured, error) {
	var typed runtime.Object
	var source client.Object
	if cp := o.CloudProfile; cp != nil {
		apply := &v1alpha1.CloudProfile{Spec: cp.Spec}
		apply.SetGroupVersionKind(v1alpha1.GroupVersion.WithKind(v1alpha1.CloudProfileKind))
		typed, source = apply, cp
	} else {
		ncp := o.NamespacedCloudProfile
		apply := &v1alpha1.NamespacedCloudProfile{Spec: ncp.Spec}
		apply.SetGroupVersionKind(v1alpha1.GroupVersion.WithKind(v1alpha1.NamespacedCloudProfileKind))
		typed, source = apply, ncp
	}
	content, err := runtime.DefaultUnstructuredConverter.ToUnstructured(typed)
	if err != nil {
		return nil, fmt.Errorf("convert %s: %w", o.Ref(), err)
	}
	delete(content, "status")
	delete(content, "metadata")
	u := &unstructured.Unstructured{Object: content}
	u.SetName(source.GetName())
	u.SetNamespace(source.GetNamespace())
	labels := make(map[string]string, len(owner)+len(source.GetLabels()))
	for k, v := range owner {
		labels[k] = v
	}
	for k, v := range source.GetLabels() {
		labels[k] = v
	}
	u.SetLabels(labels)
	if len(source.GetAnnotations()) > 0 {
		u.SetAnnotations(source.GetAnnotations())
	}
	return u, nil
}

// driftedFields lists what of Git the live object does not have: the spec
// fields Git sets that differ on the cluster, by their path
// (profile.DriftedFields), and each label and annotation of Git (or owner
// label) that is missing or different. Fields only the cluster has are left
// to whoever set them. Empty means the object needs no write.
func driftedFields(item planItem, ownerLabels map[string]string) ([]string, error) {
	desired, desiredFields, liveFields, err := comparedSpecValues(item)
	if err != nil {
		return nil, err
	}
	fields, err := profile.DriftedFields(item.object.Kind(), "spec", desiredFields, liveFields)
	if err != nil {
		return nil, fmt.Errorf("compare %s: %w", item.object.Ref(), err)
	}
	fields = append(fields, driftedKeys("metadata.labels", ownerLabels, item.live.GetLabels())...)
	fields = append(fields, driftedKeys("metadata.labels", desired.GetLabels(), item.live.GetLabels())...)
	fields = append(fields, driftedKeys("metadata.annotations", desired.GetAnnotations(), item.live.GetAnnotations())...)
	return fields, nil
}

// driftedKeys names the keys of want that have missing or other values.
func driftedKeys(path string, want, have map[string]string) []string {
	var keys []string
	for k, v := range want {
		if value, ok := have[k]; !ok || value != v {
			keys = append(keys, fmt.Sprintf("%s[%s]", path, k))
		}
	}
	sort.Strings(keys)
	return keys
}

func isSubset(want, have map[string]string) bool {
	for k, v := range want {
		if have[k] != v {
			return false
		}
	}
	return true
}
