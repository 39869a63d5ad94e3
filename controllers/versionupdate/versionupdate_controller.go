// Package versionupdate is the VersionUpdate reconciler: on its interval it
// reads the tree of the branch a ProfileSync follows, checks the sources of
// new versions its profilesync-versions.yaml declares, and pushes what the
// schedule and the versioning policy ask for as one commit on a branch of
// its own, for a person to review (docs/versions.md). The flow is the one
// `profilesync propose` runs (internal/propose/delivery); the repository is
// reached through internal/gitsource with the ProfileSync's credentials.
package versionupdate

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/Masterminds/semver/v3"
	"github.com/fluxcd/pkg/runtime/predicates"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/go-git/go-git/v5/plumbing/transport"
	"github.com/google/go-containerregistry/pkg/authn"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	v1alpha1 "github.com/profilesync/profilesync/api/v1alpha1"
	"github.com/profilesync/profilesync/controllers/metrics"
	"github.com/profilesync/profilesync/controllers/statuspatch"
	"github.com/profilesync/profilesync/internal/gitsource"
	"github.com/profilesync/profilesync/internal/propose"
	"github.com/profilesync/profilesync/internal/propose/delivery"
	"github.com/profilesync/profilesync/internal/propose/sources"
	"github.com/profilesync/profilesync/internal/render/profile"
	"github.com/profilesync/profilesync/internal/repofile"
)

// Event reasons beyond the conditions' (a condition's reason is also that of
// the event reporting the same thing).
const (
	// SourceFailedEvent is the reason of the event of each failed source.
	SourceFailedEvent = v1alpha1.SourceFailedReason
	// NotProposedEvent is the reason of the event that lists what a check
	// did not propose, and why: a release in its cooldown, a change the
	// validation, the policy or a landscape's build would refuse.
	NotProposedEvent = "NotProposed"
)

// retryAfterTransient is how soon a check that failed for a reason that may
// pass (the Git server, a moved base) is tried again, when the interval is
// longer.
const retryAfterTransient = 30 * time.Second

// Reconciler reconciles VersionUpdates.
type Reconciler struct {
	client.Client
	// SecretReader reads Secrets from the API server, uncached: the
	// operator does not watch Secrets.
	SecretReader  client.Reader
	EventRecorder record.EventRecorder
	// Fetcher reaches the profiles repository (its mirror of proposals).
	Fetcher *gitsource.Fetcher
	Clock   clock.PassiveClock
	Metrics *metrics.Proposals
	// ReadLimits bound every file read of the tree; MaxTreeSize the tree
	// exported (--max-checkout-size).
	ReadLimits  repofile.Limits
	MaxTreeSize int64
	// SourceLimits bound what reading one source takes in.
	SourceLimits sources.Limits
	// SourceTransport carries the requests to the sources;
	// http.DefaultTransport when nil.
	SourceTransport http.RoundTripper
	// GitTimeout bounds each fetch and push of the profiles repository when
	// the ProfileSync sets no spec.timeout.
	GitTimeout time.Duration
	// Build builds the landscapes of the tree with the proposals (the
	// manager's build sandbox), so that a proposal one of them would refuse
	// is not pushed; nil checks the profiles' files alone.
	Build delivery.Build
}

// +kubebuilder:rbac:groups=core.profilesync.io,resources=versionupdates,verbs=get;list;watch
// +kubebuilder:rbac:groups=core.profilesync.io,resources=versionupdates/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=core.profilesync.io,resources=profilesyncs,verbs=get;list;watch
// +kubebuilder:rbac:groups=core.profilesync.io,resources=namespacedcloudprofiles,verbs=get;list;watch
// +kubebuilder:rbac:groups="",resources=secrets,verbs=get
// +kubebuilder:rbac:groups="",resources=events,verbs=create;patch

// SetupWithManager registers the reconciler. Spec changes and reconcile
// requests (the reconcile.fluxcd.io/requestedAt annotation) check at once,
// and so does a ProfileSync of the namespace, or of any namespace that
// names the VersionUpdate's branch, that appears or whose spec changes (its
// repository and the branch it follows decide what a VersionUpdate
// proposes and where it may push); otherwise every
// spec.interval. Its own status writes do not.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager, opts controller.Options) error {
	return ctrl.NewControllerManagedBy(mgr).
		For(&v1alpha1.VersionUpdate{}, builder.WithPredicates(
			predicate.Or(predicate.GenerationChangedPredicate{}, predicates.ReconcileRequestedPredicate{}),
		)).
		Watches(&v1alpha1.ProfileSync{}, handler.EnqueueRequestsFromMapFunc(r.updatesOfNamespace),
			builder.WithPredicates(predicate.GenerationChangedPredicate{})).
		// Another VersionUpdate of the same branch that appears, leaves or
		// changes may take or free the branch.
		Watches(&v1alpha1.VersionUpdate{}, handler.EnqueueRequestsFromMapFunc(r.updatesOfBranch),
			builder.WithPredicates(predicate.GenerationChangedPredicate{})).
		WithOptions(opts).
		Complete(r)
}

// updatesOfNamespace are the VersionUpdates of a ProfileSync's namespace,
// its own among them, and those of any namespace that push the branch it
// names: a change of the branch it follows may refuse or allow them.
func (r *Reconciler) updatesOfNamespace(ctx context.Context, obj client.Object) []reconcile.Request {
	var updates v1alpha1.VersionUpdateList
	if err := r.List(ctx, &updates); err != nil {
		log.FromContext(ctx).Error(err, "listing the VersionUpdates of a changed ProfileSync", "profileSync", client.ObjectKeyFromObject(obj))
		return nil
	}
	branch := ""
	if sync, ok := obj.(*v1alpha1.ProfileSync); ok {
		branch, _, _ = followsBranch(sync)
	}
	var requests []reconcile.Request
	for i := range updates.Items {
		update := &updates.Items[i]
		if update.Namespace == obj.GetNamespace() || (branch != "" && update.Spec.Branch == branch) {
			requests = append(requests, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(update)})
		}
	}
	return requests
}

// updatesOfBranch are the other VersionUpdates that push the branch a
// VersionUpdate pushes: which of them may push it depends on this one.
func (r *Reconciler) updatesOfBranch(ctx context.Context, obj client.Object) []reconcile.Request {
	changed, ok := obj.(*v1alpha1.VersionUpdate)
	if !ok {
		return nil
	}
	var updates v1alpha1.VersionUpdateList
	if err := r.List(ctx, &updates); err != nil {
		log.FromContext(ctx).Error(err, "listing the VersionUpdates of a changed VersionUpdate's branch", "versionUpdate", client.ObjectKeyFromObject(obj))
		return nil
	}
	var requests []reconcile.Request
	for i := range updates.Items {
		other := &updates.Items[i]
		if other.Spec.Branch == changed.Spec.Branch && client.ObjectKeyFromObject(other) != client.ObjectKeyFromObject(changed) {
			requests = append(requests, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(other)})
		}
	}
	return requests
}

// cacheKey names the VersionUpdate's mirror in the Git cache; it cannot be
// a ProfileSync's ("namespace/name").
func cacheKey(update types.NamespacedName) string {
	return "versionupdate/" + update.Namespace + "/" + update.Name
}

// Reconcile checks the sources of one VersionUpdate and pushes its proposal.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	update := &v1alpha1.VersionUpdate{}
	if err := r.Get(ctx, req.NamespacedName, update); err != nil {
		if apierrors.IsNotFound(err) {
			r.Metrics.Forget(req.NamespacedName)
			return ctrl.Result{}, r.Fetcher.ForgetProposals(cacheKey(req.NamespacedName))
		}
		return ctrl.Result{}, err
	}
	if update.Spec.Suspend {
		return ctrl.Result{}, nil
	}
	before := update.DeepCopy()
	now := r.Clock.Now().UTC().Truncate(time.Second)
	check := r.check(ctx, update, now)
	update.Status.ObservedGeneration = update.Generation
	stamp := metav1.NewTime(now)
	update.Status.LastCheckTime = &stamp
	setConditions(update, check, now)
	if err := statuspatch.Write(ctx, r.Client, before, update, &update.Status); err != nil {
		return ctrl.Result{}, err
	}
	requeue := update.Spec.Interval.Duration
	if check.transient && requeue > retryAfterTransient {
		requeue = retryAfterTransient
	}
	log.FromContext(ctx).V(1).Info("checked the sources of new versions", "reason", check.reason, "message", check.message, "requeueAfter", requeue)
	return ctrl.Result{RequeueAfter: requeue}, nil
}

// checkResult is what one check ends with: Ready's reason and message, and
// whether only a change helps (Stalled) or a retry may.
type checkResult struct {
	ready     bool
	reason    string
	message   string
	stalled   bool
	transient bool
}

func failed(reason string, stalled bool, format string, args ...any) checkResult {
	return checkResult{reason: reason, message: fmt.Sprintf(format, args...), stalled: stalled, transient: !stalled}
}

// check runs one check: the ProfileSync, its branch and Secret, the tree,
// the sources, the proposal and its push. It sets status.sources and
// status.lastProposal, and records the events and metrics.
func (r *Reconciler) check(ctx context.Context, update *v1alpha1.VersionUpdate, now time.Time) checkResult {
	key := client.ObjectKeyFromObject(update)
	sync := &v1alpha1.ProfileSync{}
	syncKey := client.ObjectKey{Namespace: update.Namespace, Name: update.Spec.ProfileSyncRef.Name}
	if err := r.Get(ctx, syncKey, sync); err != nil {
		if apierrors.IsNotFound(err) {
			return failed(v1alpha1.ProfileSyncNotFoundReason, false, "spec.profileSyncRef: ProfileSync %s not found", syncKey)
		}
		return failed(v1alpha1.ProfileSyncNotFoundReason, false, "reading ProfileSync %s: %v", syncKey, err)
	}
	credentials, err := r.secretData(ctx, update.Namespace, sync)
	if err != nil {
		return failed(v1alpha1.ProposeFailedReason, false, "ProfileSync %s: %v", syncKey, err)
	}
	timeout := r.GitTimeout
	if sync.Spec.Timeout != nil {
		timeout = sync.Spec.Timeout.Duration
	}
	base, err := r.followedBranch(ctx, sync, credentials, timeout)
	if err != nil {
		return failed(v1alpha1.ProposeFailedReason, false, "ProfileSync %s: reading the branch it follows: %v", syncKey, err)
	}
	if !update.Spec.AllowPushToFollowedBranch {
		follower, err := r.followerOf(ctx, update, sync, base, credentials, timeout)
		if err != nil {
			return failed(v1alpha1.ProposeFailedReason, false, "listing the ProfileSyncs of the cluster: %v", err)
		}
		if follower != "" {
			return failed(v1alpha1.BranchFollowedReason, true,
				"spec.branch %s is the branch ProfileSync %s follows: nothing is pushed to it unless spec.allowPushToFollowedBranch is true", update.Spec.Branch, follower)
		}
	}
	claimant, err := r.claimantOf(ctx, update, sync)
	if err != nil {
		return failed(v1alpha1.ProposeFailedReason, false, "listing the VersionUpdates of branch %s: %v", update.Spec.Branch, err)
	}
	if claimant != "" {
		return failed(v1alpha1.BranchClaimedReason, true,
			"spec.branch %s of %s is pushed by VersionUpdate %s, created first: two VersionUpdates on one branch would replace each other's proposals; give this one a branch of its own",
			update.Spec.Branch, sync.Spec.URL, claimant)
	}

	request := gitsource.ProposalRequest{URL: sync.Spec.URL, Credentials: credentials, Timeout: timeout, CacheKey: cacheKey(key),
		Base: base, Branch: update.Spec.Branch}
	// In the Git cache, named as its fetches in progress are: a tree left
	// by a crash is removed when the operator starts (gitsource.New).
	tree, err := os.MkdirTemp(r.Fetcher.Root(), ".incoming-versionupdate-*")
	if err != nil {
		return failed(v1alpha1.ProposeFailedReason, false, "making the tree's directory: %v", err)
	}
	defer func() { _ = os.RemoveAll(tree) }()
	started, err := r.Fetcher.FetchProposalBase(ctx, request, tree, r.MaxTreeSize)
	if err != nil {
		return failed(v1alpha1.ProposeFailedReason, !gitsource.IsTransient(err), "%v", err)
	}

	overrides, err := r.clusterOverrides(ctx)
	if err != nil {
		return failed(v1alpha1.ProposeFailedReason, false, "listing the NamespacedCloudProfiles of the cluster: %v", err)
	}
	outcome, err := delivery.Plan(ctx, delivery.Options{
		Root: tree, Label: fmt.Sprintf("%s@%s", base, started.Commit), Now: now,
		ReadLimits: r.ReadLimits, SourceLimits: r.SourceLimits, Transport: r.SourceTransport,
		Credentials: delivery.Credentials{
			Git: func(s *propose.Source) (transport.AuthMethod, error) {
				return r.gitSourceAuth(ctx, update.Namespace, s)
			},
			OCI: func(s *propose.Source) (authn.Authenticator, error) { return r.registryAuth(ctx, update.Namespace, s) },
		},
		ClusterOverrides: overrides,
		Build:            r.Build,
	})
	if err != nil {
		return failed(v1alpha1.ProposeFailedReason, true, "%s@%s: %v", base, shortCommit(started.Commit), err)
	}
	update.Status.Sources = sourceStatuses(outcome.Sources)
	var sourceFailures []string
	for _, s := range outcome.Sources {
		if s.Err != nil {
			r.Metrics.SourceFailed(key, s.Name)
			message := bounded(s.Err.Error() + "; it changes nothing")
			r.EventRecorder.Event(update, corev1.EventTypeWarning, SourceFailedEvent, message)
			sourceFailures = append(sourceFailures, message)
		}
	}
	if skipped := outcome.Result.Skipped; len(skipped) > 0 {
		lines := make([]string, 0, len(skipped))
		for _, skip := range skipped {
			lines = append(lines, skip.String())
		}
		r.EventRecorder.Event(update, corev1.EventTypeNormal, NotProposedEvent,
			bounded(fmt.Sprintf("not proposed on %s@%s: %s", base, shortCommit(started.Commit), strings.Join(lines, "\n"))))
	}
	result := r.deliver(ctx, update, request, started, outcome, now)
	if len(sourceFailures) > 0 && result.ready {
		// The others were proposed; the failure is what needs a person. It
		// is checked again at the interval, not sooner: a registry that
		// refuses the credentials is not asked every 30 s.
		return checkResult{reason: v1alpha1.SourceFailedReason,
			message: bounded(strings.Join(sourceFailures, "\n") + "\n" + result.message)}
	}
	return result
}

// deliver writes and pushes the proposal of outcome, if any.
func (r *Reconciler) deliver(ctx context.Context, update *v1alpha1.VersionUpdate, request gitsource.ProposalRequest, started *gitsource.ProposalBase,
	outcome *delivery.Outcome, now time.Time) checkResult {
	proposals := outcome.Result.Proposals
	if len(proposals) == 0 {
		message := fmt.Sprintf("nothing to propose on %s@%s: the profiles hold every version the sources offer that the schedule and the policy allow",
			request.Base, shortCommit(started.Commit))
		r.EventRecorder.Event(update, corev1.EventTypeNormal, v1alpha1.NothingToProposeReason, message)
		return checkResult{ready: true, reason: v1alpha1.NothingToProposeReason, message: message}
	}
	edited, err := delivery.WriteEdits(outcome.Reader, outcome.Result.Edits())
	if err != nil {
		return failed(v1alpha1.ProposeFailedReason, true, "writing the edits: %v", err)
	}
	files := make(map[string][]byte, len(edited))
	for _, f := range edited {
		files[f.Path] = f.Content
	}
	author := object.Signature{Name: delivery.DefaultAuthorName, Email: delivery.DefaultAuthorEmail, When: now}
	if a := update.Spec.Author; a != nil {
		author.Name, author.Email = a.Name, a.Email
	}
	commit, pushed, err := r.Fetcher.PushProposal(ctx, request, started, gitsource.ProposalCommit{Files: files, Message: outcome.Message(), Author: author})
	if err != nil {
		return failed(v1alpha1.PushFailedReason, !gitsource.IsTransient(err) && !errors.Is(err, gitsource.ErrBaseMoved), "%v", err)
	}
	if !pushed {
		message := fmt.Sprintf("nothing new to propose: branch %s already carries the proposal on %s@%s (commit %s)",
			request.Branch, request.Base, shortCommit(started.Commit), shortCommit(commit))
		r.EventRecorder.Event(update, corev1.EventTypeNormal, v1alpha1.NothingToProposeReason, message)
		return checkResult{ready: true, reason: v1alpha1.NothingToProposeReason, message: message}
	}
	changes := make([]v1alpha1.ProposedChange, 0, min(len(proposals), v1alpha1.MaxReportedChanges))
	for _, p := range proposals[:min(len(proposals), v1alpha1.MaxReportedChanges)] {
		changes = append(changes, v1alpha1.ProposedChange{Source: p.Source, Summary: bounded(p.Summary)})
	}
	update.Status.LastProposal = &v1alpha1.VersionProposal{Commit: commit, Branch: request.Branch, Base: started.Commit, Changes: changes, Time: metav1.NewTime(now)}
	r.Metrics.Proposed(client.ObjectKeyFromObject(update))
	noun := "changes"
	if len(proposals) == 1 {
		noun = "change"
	}
	summaries := make([]string, 0, len(proposals))
	for _, p := range proposals {
		summaries = append(summaries, p.Summary)
	}
	message := bounded(fmt.Sprintf("pushed %d %s on %s@%s to branch %s (commit %s): %s", len(proposals), noun, request.Base,
		shortCommit(started.Commit), request.Branch, shortCommit(commit), strings.Join(summaries, "; ")))
	r.EventRecorder.Event(update, corev1.EventTypeNormal, v1alpha1.ProposedReason, message)
	return checkResult{ready: true, reason: v1alpha1.ProposedReason, message: message}
}

// setConditions writes Ready and Stalled of a check at now; a condition
// that keeps its status keeps its transition time.
func setConditions(update *v1alpha1.VersionUpdate, check checkResult, now time.Time) {
	status := metav1.ConditionFalse
	if check.ready {
		status = metav1.ConditionTrue
	}
	transition := metav1.NewTime(now)
	apimeta.SetStatusCondition(&update.Status.Conditions, metav1.Condition{Type: v1alpha1.ReadyCondition, Status: status,
		Reason: check.reason, Message: bounded(check.message), ObservedGeneration: update.Generation, LastTransitionTime: transition})
	if check.stalled {
		apimeta.SetStatusCondition(&update.Status.Conditions, metav1.Condition{Type: v1alpha1.StalledCondition, Status: metav1.ConditionTrue,
			Reason: check.reason, Message: bounded(check.message), ObservedGeneration: update.Generation, LastTransitionTime: transition})
	} else {
		apimeta.RemoveStatusCondition(&update.Status.Conditions, v1alpha1.StalledCondition)
	}
}

// secretData is the data of the ProfileSync's spec.secretRef; nil when it
// names none.
func (r *Reconciler) secretData(ctx context.Context, namespace string, sync *v1alpha1.ProfileSync) (map[string][]byte, error) {
	if sync.Spec.SecretRef == nil {
		return nil, nil
	}
	secret := &corev1.Secret{}
	if err := r.SecretReader.Get(ctx, client.ObjectKey{Namespace: namespace, Name: sync.Spec.SecretRef.Name}, secret); err != nil {
		return nil, fmt.Errorf("reading Secret %s (spec.secretRef): %w", sync.Spec.SecretRef.Name, err)
	}
	return secret.Data, nil
}

// registryAuth is an OCI source's credentials: the Secret its
// credentials.secretName names, in the VersionUpdate's namespace;
// anonymous when it names none. Environment variables are the CLI's.
func (r *Reconciler) registryAuth(ctx context.Context, namespace string, s *propose.Source) (authn.Authenticator, error) {
	if s.OCI == nil || s.OCI.Credentials == nil || s.OCI.Credentials.SecretName == "" {
		return nil, nil
	}
	secret := &corev1.Secret{}
	if err := r.SecretReader.Get(ctx, client.ObjectKey{Namespace: namespace, Name: s.OCI.Credentials.SecretName}, secret); err != nil {
		return nil, fmt.Errorf("source %s: reading Secret %s/%s (oci.credentials.secretName): %w", s.Name, namespace, s.OCI.Credentials.SecretName, err)
	}
	return sources.SecretAuth(s, secret.Data)
}

// gitSourceAuth is a Git source's credentials: the Secret its
// credentials.secretName names, in the VersionUpdate's namespace, with the
// keys of a ProfileSync's own Secret (https or ssh); anonymous when it
// names none. Environment variables are the CLI's.
func (r *Reconciler) gitSourceAuth(ctx context.Context, namespace string, s *propose.Source) (transport.AuthMethod, error) {
	if s.Git == nil || s.Git.Credentials == nil || s.Git.Credentials.SecretName == "" {
		return nil, nil
	}
	secret := &corev1.Secret{}
	if err := r.SecretReader.Get(ctx, client.ObjectKey{Namespace: namespace, Name: s.Git.Credentials.SecretName}, secret); err != nil {
		return nil, fmt.Errorf("source %s: reading Secret %s/%s (git.credentials.secretName): %w", s.Name, namespace, s.Git.Credentials.SecretName, err)
	}
	allowPlainHTTP, tempDir := r.Fetcher.AuthOptions()
	return sources.GitAuth(s, secret.Data, allowPlainHTTP, tempDir)
}

// followsBranch is the branch a ProfileSync follows: spec.ref.branch, or
// the remote's default branch when it names none; empty with ok false when
// it follows a tag or a semver range.
func followsBranch(sync *v1alpha1.ProfileSync) (branch string, followsDefault, ok bool) {
	ref := sync.Spec.Ref
	switch {
	case ref == nil:
		return "", true, true
	case ref.Branch != "":
		return ref.Branch, false, true
	case ref.Tag != "" || ref.SemVer != "":
		return "", false, false
	default:
		// A commit alone, or an empty ref: the default branch.
		return "", true, true
	}
}

// followedBranch is the branch proposals start from: the one the
// ProfileSync follows, or its repository's default branch.
func (r *Reconciler) followedBranch(ctx context.Context, sync *v1alpha1.ProfileSync, credentials map[string][]byte, timeout time.Duration) (string, error) {
	if branch, _, ok := followsBranch(sync); ok && branch != "" {
		return branch, nil
	}
	return r.Fetcher.DefaultBranch(ctx, gitsource.LandscapeRequest{URL: sync.Spec.URL, Credentials: credentials, Timeout: timeout})
}

// followerOf names ("namespace/name") a ProfileSync of the cluster, of the
// same repository, that follows spec.branch: a landscape of another
// namespace is one as well; empty when none does.
func (r *Reconciler) followerOf(ctx context.Context, update *v1alpha1.VersionUpdate, sync *v1alpha1.ProfileSync, base string,
	credentials map[string][]byte, timeout time.Duration) (string, error) {
	var syncs v1alpha1.ProfileSyncList
	if err := r.List(ctx, &syncs); err != nil {
		return "", err
	}
	defaultBranch := ""
	if _, followsDefault, _ := followsBranch(sync); followsDefault {
		defaultBranch = base
	}
	for i := range syncs.Items {
		other := &syncs.Items[i]
		if other.Spec.URL != sync.Spec.URL {
			continue
		}
		branch, followsDefault, ok := followsBranch(other)
		if !ok {
			continue
		}
		if followsDefault {
			if defaultBranch == "" {
				var err error
				if defaultBranch, err = r.followedBranch(ctx, other, credentials, timeout); err != nil {
					return "", err
				}
			}
			branch = defaultBranch
		}
		if branch == update.Spec.Branch {
			return other.Namespace + "/" + other.Name, nil
		}
	}
	return "", nil
}

// claimantOf names ("namespace/name") the VersionUpdate that pushes
// update's branch of the same repository in its place: of those that push
// it and are not suspended, the first created, then the first by namespace
// and name, so that every one of them reaches the same answer. Empty when
// update is that one.
func (r *Reconciler) claimantOf(ctx context.Context, update *v1alpha1.VersionUpdate, sync *v1alpha1.ProfileSync) (string, error) {
	var updates v1alpha1.VersionUpdateList
	if err := r.List(ctx, &updates); err != nil {
		return "", err
	}
	var earlier []*v1alpha1.VersionUpdate
	for i := range updates.Items {
		other := &updates.Items[i]
		if other.Spec.Branch == update.Spec.Branch && !other.Spec.Suspend && other.DeletionTimestamp == nil && claimsFirst(other, update) {
			earlier = append(earlier, other)
		}
	}
	slices.SortFunc(earlier, func(a, b *v1alpha1.VersionUpdate) int {
		if claimsFirst(a, b) {
			return -1
		}
		return 1
	})
	for _, other := range earlier {
		otherSync := &v1alpha1.ProfileSync{}
		err := r.Get(ctx, client.ObjectKey{Namespace: other.Namespace, Name: other.Spec.ProfileSyncRef.Name}, otherSync)
		if apierrors.IsNotFound(err) {
			continue // it pushes nothing while its ProfileSync is missing
		}
		if err != nil {
			return "", err
		}
		if otherSync.Spec.URL == sync.Spec.URL {
			return other.Namespace + "/" + other.Name, nil
		}
	}
	return "", nil
}

// claimsFirst reports whether a takes a branch before b: created earlier,
// or at the same second and first by namespace, then name.
func claimsFirst(a, b *v1alpha1.VersionUpdate) bool {
	if !a.CreationTimestamp.Equal(&b.CreationTimestamp) {
		return a.CreationTimestamp.Before(&b.CreationTimestamp)
	}
	if a.Namespace != b.Namespace {
		return a.Namespace < b.Namespace
	}
	return a.Name < b.Name
}

// clusterOverrides are the NamespacedCloudProfiles of the cluster, whose
// overrides keep a version from retiring.
func (r *Reconciler) clusterOverrides(ctx context.Context) ([]profile.Object, error) {
	var list v1alpha1.NamespacedCloudProfileList
	if err := r.List(ctx, &list); err != nil {
		return nil, err
	}
	overrides := make([]profile.Object, 0, len(list.Items))
	for i := range list.Items {
		overrides = append(overrides, profile.Object{NamespacedCloudProfile: &list.Items[i]})
	}
	return overrides, nil
}

// sourceStatuses are status.sources: per source, how many versions it
// found and the newest of them, or its failure.
func sourceStatuses(outcomes []delivery.SourceOutcome) []v1alpha1.VersionSourceStatus {
	statuses := make([]v1alpha1.VersionSourceStatus, 0, min(len(outcomes), v1alpha1.MaxReportedSources))
	for _, o := range outcomes[:min(len(outcomes), v1alpha1.MaxReportedSources)] {
		s := v1alpha1.VersionSourceStatus{Name: o.Name, Found: len(o.Versions), Newest: newest(o.Versions, v1alpha1.MaxReportedVersions)}
		if o.Err != nil {
			s.Failure = bounded(o.Err.Error())
		}
		statuses = append(statuses, s)
	}
	return statuses
}

// newest are the n newest of versions, the newest first.
func newest(versions []string, n int) []string {
	parsed := make([]*semver.Version, 0, len(versions))
	for _, v := range versions {
		if p, err := semver.NewVersion(v); err == nil {
			parsed = append(parsed, p)
		}
	}
	slices.SortFunc(parsed, func(a, b *semver.Version) int { return b.Compare(a) })
	out := make([]string, 0, min(n, len(parsed)))
	for _, v := range parsed[:min(n, len(parsed))] {
		out = append(out, v.Original())
	}
	return out
}

// bounded cuts a message of the status or an event to
// v1alpha1.MaxReportedMessage bytes, on a rune boundary.
func bounded(message string) string {
	if len(message) <= v1alpha1.MaxReportedMessage {
		return message
	}
	const more = " …"
	cut := v1alpha1.MaxReportedMessage - len(more)
	for cut > 0 && !isRuneStart(message[cut]) {
		cut--
	}
	return message[:cut] + more
}

func isRuneStart(b byte) bool { return b&0xC0 != 0x80 }

func shortCommit(commit string) string {
	if len(commit) > 12 {
		return commit[:12]
	}
	return commit
}
