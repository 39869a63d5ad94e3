package v1alpha1

import (
	"time"

	"github.com/fluxcd/pkg/apis/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// ProfileSyncKind is the kind of a ProfileSync.
const ProfileSyncKind = "ProfileSync"

// DefaultSyncTimeout and MaxSyncTimeout are spec.timeout's default and
// largest value; the markers on ProfileSyncSpec.Timeout say the same.
const (
	DefaultSyncTimeout = 60 * time.Second
	MaxSyncTimeout     = 10 * time.Minute
)

// Labels the sync puts on every object it applies, so `kubectl get -l` finds
// a landscape's profiles. They decide nothing: whoever may edit an object may
// rewrite them, so ownership is the ProfileSyncs' inventories
// (ProfileSyncStatus.Inventory), and the sync writes the labels back like any
// field Git sets. A profile in Git may not set any label of
// ReservedLabelDomain.
const (
	OwnerNameLabel      = ReservedLabelDomain + "/name"
	OwnerNamespaceLabel = ReservedLabelDomain + "/namespace"

	// ReservedLabelDomain is the prefix of the labels and annotations only
	// the sync writes.
	ReservedLabelDomain = "profilesync.io"

	// AppliedDigestAnnotation is the digest of what Git said of an object
	// (spec, labels, annotations) when the sync last applied it. It tells a
	// change in Git, which the sync applies whole (server-side apply then
	// removes what Git dropped), from fields only the cluster has, which
	// belong to whoever set them and are left alone.
	AppliedDigestAnnotation = ReservedLabelDomain + "/applied-digest"
)

// GitReference says which commit of the repository to sync. When none of its
// fields is set, the remote's default branch (HEAD) is used.
//
// +kubebuilder:validation:XValidation:rule="[has(self.tag), has(self.semver), has(self.commit)].filter(x, x).size() <= 1",message="set at most one of tag, semver and commit"
// +kubebuilder:validation:XValidation:rule="!has(self.branch) || !(has(self.tag) || has(self.semver))",message="branch may be combined only with commit"
type GitReference struct {
	// branch is the branch to follow. With commit, the commit must be on it.
	// +optional
	// +kubebuilder:validation:MaxLength=250
	Branch string `json:"branch,omitempty"`

	// tag is the tag to sync.
	// +optional
	// +kubebuilder:validation:MaxLength=250
	Tag string `json:"tag,omitempty"`

	// semver is a semver range (for example ">=1.2.0 <2.0.0"); the highest tag
	// in the range is synced.
	// +optional
	// +kubebuilder:validation:MaxLength=250
	SemVer string `json:"semver,omitempty"`

	// commit is the full SHA-1 of the commit to sync.
	// +optional
	// +kubebuilder:validation:Pattern=`^[0-9a-f]{40}$`
	Commit string `json:"commit,omitempty"`
}

// ProfileSyncSpec says where the profiles of one landscape live in Git.
//
// +kubebuilder:validation:XValidation:rule="!has(self.rollout) || !has(self.rollout.hotfix) || !has(self.ref) || !(has(self.ref.tag) || has(self.ref.semver) || has(self.ref.commit))",message="spec.rollout.hotfix needs a ProfileSync that follows a branch (no ref.tag, ref.semver or ref.commit)"
type ProfileSyncSpec struct {
	// url is the repository's address: https://, http:// or ssh://.
	// +required
	// +kubebuilder:validation:Pattern=`^(https?|ssh)://.+$`
	// +kubebuilder:validation:MaxLength=2048
	URL string `json:"url"`

	// ref is the commit to sync; the remote's default branch when unset.
	// +optional
	Ref *GitReference `json:"ref,omitempty"`

	// path is the directory of the landscape's kustomize overlay, relative to
	// the repository root. It may not leave the repository.
	// +optional
	// +kubebuilder:default="./"
	// +kubebuilder:validation:MaxLength=1024
	// +kubebuilder:validation:XValidation:rule="!self.startsWith('/') && !self.split('/').exists(p, p == '..')",message="path must be relative and stay inside the repository"
	Path string `json:"path,omitempty"`

	// landscape names this ProfileSync's landscape in the repository's
	// rollout file (profilesync-rollout.yaml at its root; docs/rollout.md).
	// When unset, the landscape is the one whose path is spec.path; set it
	// when the overlay synced is not the one the file lists for the
	// landscape. A ProfileSync in no landscape works as without a rollout
	// file.
	// +optional
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`
	Landscape string `json:"landscape,omitempty"`

	// interval is how often the repository is checked for new commits.
	// +required
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:Pattern="^([0-9]+(\\.[0-9]+)?(ms|s|m|h))+$"
	Interval metav1.Duration `json:"interval"`

	// timeout bounds fetching and building one revision, together: what a
	// commit decides the length of. A revision that takes longer is refused
	// (FetchFailed or BuildFailed) and the last good one stays. At most 10m,
	// so that one commit cannot tie up a sync worker for long.
	// +optional
	// +kubebuilder:default="60s"
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:Pattern="^([0-9]+(\\.[0-9]+)?(ms|s|m|h))+$"
	// +kubebuilder:validation:XValidation:rule="duration(self) <= duration('10m')",message="timeout may be at most 10m"
	Timeout *metav1.Duration `json:"timeout,omitempty"`

	// secretRef names a Secret in the ProfileSync's namespace with credentials:
	// username and password, or bearerToken, for https; identity and
	// known_hosts for ssh.
	// +optional
	SecretRef *meta.LocalObjectReference `json:"secretRef,omitempty"`

	// suspend stops syncing while true; what is applied stays.
	// +optional
	Suspend bool `json:"suspend,omitempty"`

	// prune deletes profiles this ProfileSync applied earlier that the current
	// revision no longer has. A CloudProfile still used by a
	// NamespacedCloudProfile is never deleted.
	// +optional
	Prune bool `json:"prune,omitempty"`

	// serviceAccountName is the name of a ServiceAccount in the ProfileSync's
	// namespace whose identity the sync writes with: its dry runs, applies and
	// prunes impersonate system:serviceaccount:<namespace>:<serviceAccountName>,
	// so RBAC and the admission webhooks (the custom verbs of GEP-25 included)
	// judge them exactly as they judge that ServiceAccount's own requests.
	// The ServiceAccount must exist, and hold at least patch and create (and,
	// with prune, delete) on what the revision writes; a write it may not make
	// stops the revision with reason AccessDenied.
	//
	// When unset, a ProfileSync in the operator's namespace
	// (--cluster-profiles-namespace) writes with the operator's own identity,
	// and any other ProfileSync with the operator's --default-service-account
	// if it is set, else with the operator's own identity.
	// +optional
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`
	ServiceAccountName string `json:"serviceAccountName,omitempty"`

	// webhook lets the Git host trigger a sync at once on a push, instead of
	// waiting for the next interval. It needs the operator's push receiver
	// (flag --receiver-addr).
	// +optional
	Webhook *ProfileSyncWebhook `json:"webhook,omitempty"`

	// driftDetection says what the sync does with a hand edit of a field Git
	// sets: put it back (mode correct, the default) or only report it (mode
	// warn). Either way a new revision is applied whole, and an object held
	// by break glass (HoldUntilAnnotation) is left alone.
	// +optional
	DriftDetection *DriftDetection `json:"driftDetection,omitempty"`

	// rollout says how this landscape takes part in the repository's
	// rollout (profilesync-rollout.yaml; docs/rollout.md): whether it
	// records what it applies, and whether it holds or takes a hotfix.
	// Without it, a landscape with upstream landscapes still waits for
	// them, and records nothing.
	// +optional
	Rollout *ProfileSyncRollout `json:"rollout,omitempty"`

	// verify makes the sync apply only revisions signed by a key it trusts:
	// a revision whose signature does not verify is refused before it is
	// built (reason VerificationFailed), and the last good revision stays.
	// Without it, signatures are not checked.
	// +optional
	Verify *SignatureVerification `json:"verify,omitempty"`
}

// SignatureVerificationMode is what of a revision must be signed.
//
// +kubebuilder:validation:Enum=HEAD;Tag;TagAndHEAD
type SignatureVerificationMode string

const (
	// VerifyHEAD checks the signature of the commit the revision points at
	// (its HEAD), as Flux's spec.verify.mode HEAD does.
	VerifyHEAD SignatureVerificationMode = "HEAD"
	// VerifyTag checks the signature of the annotated tag the revision was
	// taken from (spec.ref.tag, or the tag spec.ref.semver chose), as
	// Flux's mode Tag: a revision taken from no tag, or from a lightweight
	// tag, is refused.
	VerifyTag SignatureVerificationMode = "Tag"
	// VerifyTagAndHEAD checks both the annotated tag and its commit.
	VerifyTagAndHEAD SignatureVerificationMode = "TagAndHEAD"
)

// SignaturePathRule says who may sign a change of some paths of the
// repository.
type SignaturePathRule struct {
	// paths are globs over repository paths, / separated: * and ? match
	// within a directory, ** any number of directories, and a pattern
	// covers everything under a directory it matches (overlays/prod is
	// overlays/prod/**).
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=32
	// +kubebuilder:validation:items:MinLength=1
	// +kubebuilder:validation:items:MaxLength=512
	Paths []string `json:"paths"`
	// principals may sign a change of paths: a commit that changes a file
	// paths match must be signed by a key with one of them: for an SSH key,
	// a principal of its allowed_signers line; for an OpenPGP key, the
	// email of one of its user IDs.
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=32
	// +kubebuilder:validation:items:MinLength=1
	// +kubebuilder:validation:items:MaxLength=256
	Principals []string `json:"principals"`
}

// SignatureVerification says which signatures a revision must carry.
type SignatureVerification struct {
	// mode is what must be signed: HEAD, the commit the revision points at
	// (the branch's tip, the tag's or the semver range's commit, the
	// commit named, or the commit the rollout lets the landscape take);
	// Tag, the annotated tag the revision was taken from (spec.ref.tag or
	// the tag spec.ref.semver chose; a revision of no tag, or of a
	// lightweight tag, is refused); TagAndHEAD, both.
	// +optional
	// +kubebuilder:default=HEAD
	Mode SignatureVerificationMode `json:"mode,omitempty"`

	// pathRules say who may sign what: a commit that changes a path a rule
	// matches must be signed by a key with one of the rule's principals
	// (every rule matching the path), while a path no rule matches needs
	// any trusted key. With pathRules, every commit since the last applied
	// revision is verified, not the revision's alone, so no chain of
	// commits brings a change its signer may not make (in mode Tag, the
	// tag's signer answers for every path changed since the last applied
	// revision). The first revision applied counts every file of its tree
	// as changed. The rules live here, in the cluster, never in the
	// repository they guard.
	// +optional
	// +kubebuilder:validation:MaxItems=64
	PathRules []SignaturePathRule `json:"pathRules,omitempty"`

	// maxCommits bounds the commits verified for one revision with
	// pathRules: a revision further than that from the last applied one
	// is refused, naming this field.
	// +optional
	// +kubebuilder:default=100
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=10000
	MaxCommits int32 `json:"maxCommits,omitempty"`

	// secretRef names a Secret in the ProfileSync's namespace of trusted
	// keys. An entry whose name ends in .asc holds armored OpenPGP public
	// keys (what `gpg --export --armor` writes); an entry named
	// allowed_signers, or ending in .allowed_signers, holds SSH public keys
	// in git's allowed_signers format (principals, then options
	// namespaces="git", valid-after and valid-before, then the key; times
	// in UTC), checked in namespace "git". A commit signed by any of them,
	// neither expired nor revoked at the time of the sync (an SSH key:
	// within valid-after and valid-before), verifies. An entry of another
	// name, or one that holds no key or holds a private key, or a line an
	// allowed_signers entry cannot read in full, refuses every revision,
	// naming the entry. The Secret is
	// read at every sync that checks a revision, so a key added or removed
	// counts from the next new revision, the next spec change or reconcile
	// request, or the refusal's recheck (--refusal-recheck-interval).
	// +required
	SecretRef meta.LocalObjectReference `json:"secretRef"`
}

// ProfileSyncRollout is a landscape's part in the rollout.
//
// +kubebuilder:validation:XValidation:rule="!(has(self.hold) && self.hold && has(self.hotfix))",message="set at most one of hold and hotfix: a hotfix is taken now, a hold takes nothing"
type ProfileSyncRollout struct {
	// record pushes a record of each revision this landscape applies, once
	// every profile of it is Ready (and of each revision it refuses, and of
	// its hold), to refs/profilesync/landscapes/<landscape> of the
	// repository, with spec.secretRef's credentials, which must allow
	// pushing. Downstream landscapes read these records to decide what they
	// may take, and `profilesync rollout status` to show where each
	// landscape stands. Unset, it is on for a landscape the repository's
	// rollout file lists and off for a ProfileSync in none; false turns it
	// off (downstream landscapes then wait for ever, and say so). A failed
	// push is retried with backoff and shown by the Recorded condition; it
	// never blocks or undoes an apply.
	// +optional
	Record *bool `json:"record,omitempty"`

	// hold keeps this landscape at the revision it runs while upstream
	// landscapes and the branch move on. The sync goes on at that revision
	// (drift is corrected, lifecycle stages start on time) and the status
	// says what waits. With record, the hold and its release are recorded
	// too (kinds held and released), so whoever reads the records sees it.
	// +optional
	Hold bool `json:"hold,omitempty"`

	// hotfix is a commit of the followed branch (its full SHA-1) to take now,
	// whatever the upstream landscapes hold. It is recorded as kind hotfix.
	// Once applied it changes nothing more; newer commits wait for the
	// upstream landscapes again.
	// +optional
	// +kubebuilder:validation:Pattern=`^[0-9a-f]{40}$`
	Hotfix string `json:"hotfix,omitempty"`

	// signingKey signs each record this landscape pushes with an SSH key,
	// as git signs a commit with gpg.format=ssh, so that downstream
	// landscapes (upstreamKeys) can tell its records from forged ones. The
	// Secret's entry "identity" holds an unencrypted SSH private key (what
	// ssh-keygen writes; Ed25519, ECDSA or RSA; at most 16 KiB). A Secret
	// that cannot be read or holds no usable key fails the push (Recorded
	// False, RecordFailed, naming the Secret and entry); no record is pushed
	// unsigned while it is set.
	// +optional
	SigningKey *RecordSigningKey `json:"signingKey,omitempty"`

	// upstreamKeys makes this landscape count only the records of its
	// upstream landscapes that are signed by their keys: any other record
	// (unsigned, signed by another key, changed after signing) is ignored
	// with a warning event, and named in status.rollout.message, so a
	// forged record cannot make this landscape skip its soak. The Secret's
	// entry "allowed_signers" lists the keys, one per line, each after the
	// name of the landscape whose records it signs (an allowed_signers file
	// whose principals are landscapes: "dev ssh-ed25519 AAAA..."). Every
	// upstream landscape's records must then verify: one without a key in
	// the Secret holds nothing. A Secret that cannot be read or parsed
	// fails the sync (FetchFailed, retried), taking nothing new.
	// +optional
	UpstreamKeys *UpstreamRecordKeys `json:"upstreamKeys,omitempty"`
}

// RecordSigningKeyEntry is the entry of spec.rollout.signingKey's Secret
// that holds the SSH private key.
const RecordSigningKeyEntry = "identity"

// UpstreamKeysEntry is the entry of spec.rollout.upstreamKeys's Secret that
// holds the upstream landscapes' public keys, allowed_signers style.
const UpstreamKeysEntry = "allowed_signers"

// RecordSigningKey names the Secret of the SSH key a landscape signs its
// records with.
type RecordSigningKey struct {
	// secretRef names a Secret in the ProfileSync's namespace whose entry
	// "identity" holds the SSH private key.
	// +required
	SecretRef meta.LocalObjectReference `json:"secretRef"`
}

// UpstreamRecordKeys names the Secret of the public keys the upstream
// landscapes sign their records with.
type UpstreamRecordKeys struct {
	// secretRef names a Secret in the ProfileSync's namespace whose entry
	// "allowed_signers" holds lines of a landscape name and an SSH public
	// key.
	// +required
	SecretRef meta.LocalObjectReference `json:"secretRef"`
}

// DriftDetectionMode is what the sync does with drift: a field Git sets that
// was changed on the cluster while Git did not change it.
//
// +kubebuilder:validation:Enum=correct;warn
type DriftDetectionMode string

const (
	// DriftDetectionCorrect puts drift back to what Git says at the next
	// sync, with a DriftCorrected event naming the fields.
	DriftDetectionCorrect DriftDetectionMode = "correct"

	// DriftDetectionWarn writes nothing back: drift is reported by a
	// DriftDetected event naming the fields, the Drifted condition and the
	// profilesync_drifted_objects metric. A revision that changes an object
	// still applies it whole, drifted fields included.
	DriftDetectionWarn DriftDetectionMode = "warn"
)

// DriftDetection configures what the sync does with drift, as
// helm-controller's driftDetection does.
type DriftDetection struct {
	// mode is correct (put drift back; the default) or warn (report it and
	// write nothing back). A landscape new to the operator can start in warn
	// to see what it would correct.
	// +optional
	// +kubebuilder:default=correct
	Mode DriftDetectionMode `json:"mode,omitempty"`
}

// DriftMode is spec.driftDetection.mode, DriftDetectionCorrect when unset.
func (in *ProfileSync) DriftMode() DriftDetectionMode {
	if in.Spec.DriftDetection == nil || in.Spec.DriftDetection.Mode == "" {
		return DriftDetectionCorrect
	}
	return in.Spec.DriftDetection.Mode
}

// ProfileSyncWebhook configures push-triggered syncs. The Git host posts to
// the receiver's path /hook/<namespace>/<name> of the ProfileSync, and the
// receiver accepts the request when one of these headers proves that the
// sender knows the Secret's token:
//
//   - X-Hub-Signature-256: sha256=<hex> (GitHub): HMAC-SHA256 of the body
//     keyed with the token;
//   - X-Gitlab-Token: <token> (GitLab): the token itself;
//   - X-Signature: sha256=<hex> (any other sender): HMAC-SHA256 of the body
//     keyed with the token, as GitHub computes it.
//
// Every comparison is in constant time. The body is not interpreted: any
// accepted request triggers a sync of spec.ref, at most one per second per
// ProfileSync (a burst or a replay is folded into one). Every request that
// does not prove the token is answered 404, the same as for a ProfileSync
// without a webhook.
type ProfileSyncWebhook struct {
	// secretRef names a Secret in the ProfileSync's namespace whose key
	// "token" holds the shared secret of the webhook.
	// +required
	SecretRef meta.LocalObjectReference `json:"secretRef"`
}

// InventoryEntry names one object a ProfileSync applied.
type InventoryEntry struct {
	// kind is CloudProfile or NamespacedCloudProfile.
	// +required
	Kind string `json:"kind"`

	// namespace is the object's namespace; empty for a CloudProfile.
	// +optional
	Namespace string `json:"namespace,omitempty"`

	// name is the object's name.
	// +required
	Name string `json:"name"`
}

// ProfileSyncInventory lists the objects a ProfileSync applied.
type ProfileSyncInventory struct {
	// entries are the applied objects, sorted by kind, namespace and name.
	// +optional
	// +listType=atomic
	Entries []InventoryEntry `json:"entries,omitempty"`
}

// ObjectHold is a hold the sync honours: one object of the inventory that
// carries a valid HoldUntilAnnotation and still differs from Git.
type ObjectHold struct {
	InventoryEntry `json:",inline"`

	// until is when the hold expires: the object's hold-until annotation.
	// +required
	Until metav1.Time `json:"until"`

	// reason is the object's hold-reason annotation.
	// +optional
	// +kubebuilder:validation:MaxLength=1024
	Reason string `json:"reason,omitempty"`

	// driftedFields are the fields Git waits on: the paths of the fields Git
	// sets that the object differed from Git on when the sync first honoured
	// the hold, as a DriftCorrected event names them, and of those that a
	// later edit of the object (a new metadata.generation) made differ. A
	// field that differs only because Git changed it during the hold is not
	// added, unless an edit of the object reached the sync in the same
	// sync: the sync cannot tell the two apart then, and rather holds longer
	// than overwrite an edit. The hold is released when Git has caught up on every one of
	// them: Git's desired object (its spec with the API server's defaults,
	// and the labels and annotations Git sets) equals the live one there,
	// list entries matched by their keys. A field Git no longer sets counts
	// as caught up only when the live object lacks it too: Git dropping a
	// field someone changed by hand does not agree with the change. More
	// fields than fit are recorded as their whole (spec, metadata.labels,
	// metadata.annotations). Empty for an object Git no longer has, which
	// stays held until it expires.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=100
	// +kubebuilder:validation:items:MaxLength=1024
	DriftedFields []string `json:"driftedFields,omitempty"`

	// observedGeneration is the object's metadata.generation when
	// driftedFields were last recorded: a newer one is a new edit, whose
	// drift is added.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
}

// ProfileSyncStatus is what the ProfileSync controller observed.
type ProfileSyncStatus struct {
	// observedGeneration is the generation the status was computed from.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// conditions are Ready, Reconciling, Stalled and, when something fails,
	// FetchFailed, BuildFailed, ValidationFailed or ApplyFailed; Held while
	// objects are held or a hold is refused, and Drifted while objects
	// drifted under driftDetection mode warn.
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`

	// lastAttemptedRevision is the revision last fetched, as branch@sha1:hex.
	// +optional
	LastAttemptedRevision string `json:"lastAttemptedRevision,omitempty"`

	// lastAppliedRevision is the revision whose profiles are on the cluster.
	// +optional
	LastAppliedRevision string `json:"lastAppliedRevision,omitempty"`

	// inventory lists the objects this ProfileSync owns: those applied from
	// lastAppliedRevision and, after a sync that stopped before it finished,
	// also those that sync was about to write (they are recorded before the
	// first write). It, never an object's labels, decides what is this
	// ProfileSync's to prune and what other ProfileSyncs may not write.
	// +optional
	Inventory *ProfileSyncInventory `json:"inventory,omitempty"`

	// holds are the objects of the inventory the sync leaves alone because
	// they are held (HoldUntilAnnotation), sorted by kind, namespace and
	// name. The Held condition says the same in words. A hold is listed
	// from the sync that honours it until the sync that ends it (Git caught
	// up, or it expired), so that its end is told from a refused hold even
	// across a restart of the operator.
	// +optional
	// +listType=atomic
	Holds []ObjectHold `json:"holds,omitempty"`

	// rollout is this landscape's place in the repository's rollout: what it
	// runs, what it waits for and what it recorded. Absent while the
	// repository has no rollout file.
	// +optional
	Rollout *RolloutStatus `json:"rollout,omitempty"`

	meta.ReconcileRequestStatus `json:",inline"`
}

// RolloutStatus is what a landscape runs and waits for.
type RolloutStatus struct {
	// landscape is this ProfileSync's landscape in the rollout file; empty
	// when it is in none (message says so), and then it follows its branch
	// as without a rollout.
	// +optional
	Landscape string `json:"landscape,omitempty"`

	// message says in words what the landscape does: follows the branch,
	// waits, holds, or is in no landscape.
	// +optional
	// +kubebuilder:validation:MaxLength=1024
	Message string `json:"message,omitempty"`

	// appliedRevision is the commit the landscape runs (full SHA-1).
	// +optional
	AppliedRevision string `json:"appliedRevision,omitempty"`

	// appliedAt is when appliedRevision was applied.
	// +optional
	AppliedAt *metav1.Time `json:"appliedAt,omitempty"`

	// waiting is the newer commit of the branch the landscape waits for;
	// absent when it runs the newest commit it may take.
	// +optional
	Waiting *RolloutCandidate `json:"waiting,omitempty"`

	// recordedRevision is the commit of the last record pushed for this
	// landscape (spec.rollout.record).
	// +optional
	RecordedRevision string `json:"recordedRevision,omitempty"`

	// recordedKind is the kind of that record: applied, hotfix, refused,
	// held or released.
	// +optional
	RecordedKind string `json:"recordedKind,omitempty"`
}

// RolloutCandidate is a commit a landscape waits for.
type RolloutCandidate struct {
	// revision is the commit (full SHA-1).
	// +required
	Revision string `json:"revision"`

	// upstreams say, per upstream landscape, what it runs and since when it
	// holds revision.
	// +optional
	// +listType=atomic
	Upstreams []UpstreamHold `json:"upstreams,omitempty"`

	// eligibleAt is when revision may be taken if nothing changes; absent
	// while an upstream landscape does not hold it or refused it.
	// +optional
	EligibleAt *metav1.Time `json:"eligibleAt,omitempty"`
}

// UpstreamHold is what an upstream landscape's records say of a candidate.
type UpstreamHold struct {
	// landscape is the upstream landscape.
	// +required
	Landscape string `json:"landscape"`

	// running is the commit its newest applied or hotfix record names;
	// empty when it has recorded none.
	// +optional
	Running string `json:"running,omitempty"`

	// since is when it started to hold the candidate, Ready, without
	// interruption; absent when it does not hold it.
	// +optional
	Since *metav1.Time `json:"since,omitempty"`

	// refused says it refused the candidate: it is never taken.
	// +optional
	Refused bool `json:"refused,omitempty"`
}

// ProfileSync keeps the CloudProfiles and NamespacedCloudProfiles of one
// landscape in sync with a kustomize overlay in a Git repository.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:scope=Namespaced,shortName=psync,categories=profilesync-all
// +kubebuilder:printcolumn:name="URL",type=string,JSONPath=`.spec.url`,priority=1
// +kubebuilder:printcolumn:name="Path",type=string,JSONPath=`.spec.path`,priority=1
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Revision",type=string,JSONPath=`.status.lastAppliedRevision`
// +kubebuilder:printcolumn:name="Held",type=string,JSONPath=`.status.conditions[?(@.type=="Held")].status`
// +kubebuilder:printcolumn:name="Waiting For",type=string,JSONPath=`.status.rollout.waiting.revision`
// +kubebuilder:printcolumn:name="Eligible",type=string,JSONPath=`.status.rollout.waiting.eligibleAt`
// +kubebuilder:printcolumn:name="Status",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].message`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type ProfileSync struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// spec says which repository, revision and overlay to sync.
	// +required
	Spec ProfileSyncSpec `json:"spec"`

	// status is computed by the ProfileSync controller.
	// +optional
	Status ProfileSyncStatus `json:"status,omitempty"`
}

// GetConditions returns the conditions of the ProfileSync.
func (in *ProfileSync) GetConditions() []metav1.Condition { return in.Status.Conditions }

// SetConditions sets the conditions of the ProfileSync.
func (in *ProfileSync) SetConditions(conditions []metav1.Condition) {
	in.Status.Conditions = conditions
}

// +kubebuilder:object:root=true

// ProfileSyncList is a list of ProfileSyncs.
type ProfileSyncList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []ProfileSync `json:"items"`
}
