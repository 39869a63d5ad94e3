package profilesync

import (
	"context"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"sync/atomic"

	"golang.org/x/sync/errgroup"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1alpha1 "github.com/profilesync/profilesync/api/v1alpha1"
	"github.com/profilesync/profilesync/controllers/transient"
	"github.com/profilesync/profilesync/internal/syncplan"
)

// apply executes the writes of the plan, stage by stage, as the
// ProfileSync's writer (writerFor), and reports them once made. The plan
// decided them in full: what is written, in which stage, and with which
// fields; nothing here decides.
func (r *ProfileSyncReconciler) apply(ctx context.Context, obj *v1alpha1.ProfileSync, plan *syncplan.Plan) error {
	if len(plan.Writes) == 0 {
		return nil
	}
	writer, err := r.writerFor(ctx, obj)
	if err != nil {
		return err
	}
	if err := r.applyStages(ctx, obj, writer, plan.Writes, plan.Claim); err != nil {
		return err
	}
	r.emit(obj, plan.Applied)
	return nil
}

// applyStages writes the plan's writes, in its order, stage by stage. Each
// stage is first applied as a dry run, so an object the API server refuses
// stops the revision before that stage writes anything: when a revision
// changes only CloudProfiles, or only adds namespaced profiles, nothing at
// all is written. (A dry run cannot see the writes of an earlier stage, so
// the stages cannot all be dry-run up front.) A revision that changes a
// single object skips the dry run: that one write is whole or nothing by
// itself. Before the first write, the plan's claim is recorded in the
// inventory (claimWrites). Every dry run and write is made as writer.
func (r *ProfileSyncReconciler) applyStages(ctx context.Context, obj *v1alpha1.ProfileSync, writer writeIdentity, changes []syncplan.Write, claim []v1alpha1.InventoryEntry) error {
	dryRun := func(ctx context.Context, c syncplan.Write) error { return r.write(ctx, writer, c, client.DryRunAll) }
	write := func(ctx context.Context, c syncplan.Write) error { return r.write(ctx, writer, c) }
	claimed := false
	for start := 0; start < len(changes); {
		end := start
		for end < len(changes) && changes[end].Stage == changes[start].Stage {
			end++
		}
		stage := changes[start:end]
		if len(changes) > 1 {
			if err := r.forEachChange(ctx, stage, dryRun); err != nil {
				return err
			}
		}
		if !claimed {
			if err := r.claimWrites(ctx, obj, claim); err != nil {
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

// forEachChange runs do for every change, at most ApplyConcurrency at a time:
// the writes of one stage do not depend on each other, and the API server
// takes long for large profiles. A failure stops the writes not started yet;
// those under way finish rather than being cancelled, so that the error
// returned is that of the first change, in order, that failed: the same at
// every retry of a stage that fails the same way, whichever write happened
// to answer first. A message that changed only its object would rewrite the
// ProfileSync's status at every retry.
func (r *ProfileSyncReconciler) forEachChange(ctx context.Context, changes []syncplan.Write, do func(context.Context, syncplan.Write) error) error {
	errs := make([]error, len(changes))
	// firstFailed is the index of the first change in order that failed so
	// far. A change is skipped only after an earlier one failed: goroutines
	// do not run in the order they are started, and the first change's error
	// is the one reported.
	var firstFailed atomic.Int64
	firstFailed.Store(int64(len(changes)))
	var group errgroup.Group
	group.SetLimit(max(r.ApplyConcurrency, 1))
	for i, c := range changes {
		group.Go(func() error {
			if firstFailed.Load() < int64(i) {
				return nil
			}
			if errs[i] = do(ctx, c); errs[i] != nil {
				for {
					current := firstFailed.Load()
					if current <= int64(i) || firstFailed.CompareAndSwap(current, int64(i)) {
						break
					}
				}
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
func (r *ProfileSyncReconciler) write(ctx context.Context, writer writeIdentity, c syncplan.Write, opts ...client.ApplyOption) error {
	opts = append(opts, client.FieldOwner(SyncFieldManager), client.ForceOwnership)
	err := transient.Retry(func() error {
		return writer.Apply(ctx, client.ApplyConfigurationFromUnstructured(c.Desired.DeepCopy()), opts...)
	})
	if err == nil {
		return nil
	}
	if webhook, ok := unreachableWebhook(err); ok {
		return applyFailed(fmt.Errorf("apply %s: admission webhook %q could not be called; retrying: %w", c.Object.Ref(), webhook, err))
	}
	if writer.serviceAccount != "" && apierrors.IsForbidden(err) {
		return accessDenied(fmt.Errorf("%s: %s: ServiceAccount %s may not write it: %w", c.Object.File, c.Object.Ref(), writer.serviceAccount, err))
	}
	if apierrors.IsInvalid(err) || apierrors.IsBadRequest(err) || apierrors.IsForbidden(err) || apierrors.IsRequestEntityTooLargeError(err) {
		return validationFailed(fmt.Errorf("%s: %s: refused by the API server: %w", c.Object.File, c.Object.Ref(), err))
	}
	if transient.TooLargeToStore(err) {
		return validationFailed(fmt.Errorf("%s: %s: refused by the API server: too large to store: %w", c.Object.File, c.Object.Ref(), err))
	}
	return applyFailed(fmt.Errorf("apply %s: %w", c.Object.Ref(), err))
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

// prune deletes the plan's prunes, in its order (namespaced profiles
// before CloudProfiles). The plan left out what another ProfileSync's
// inventory lists and what is held, and refused a revision that would
// delete a CloudProfile still in use; labels play no part. The deletes are
// made as the ProfileSync's writer (writerFor), looked up at the first one.
func (r *ProfileSyncReconciler) prune(ctx context.Context, obj *v1alpha1.ProfileSync, pruned []v1alpha1.InventoryEntry) error {
	var writer *writeIdentity
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
		r.emit(obj, []syncplan.Event{syncplan.PrunedEvent(entry)})
	}
	return nil
}
