package v1alpha1

import (
	"github.com/fluxcd/pkg/apis/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// VersionUpdateKind is the kind of a VersionUpdate.
const VersionUpdateKind = "VersionUpdate"

// The bounds of a VersionUpdate's status: what it reports of each source
// and of a proposal stays small, however many tags a source lists.
const (
	// MaxReportedVersions is how many of a source's versions, the newest
	// first, status.sources[].newest lists.
	MaxReportedVersions = 10
	// MaxReportedSources bounds status.sources.
	MaxReportedSources = 50
	// MaxReportedChanges bounds status.lastProposal.changes.
	MaxReportedChanges = 100
	// MaxReportedMessage bounds each message of the status (a failure, a
	// change), in bytes.
	MaxReportedMessage = 1024
)

// VersionUpdate condition reasons (Ready's, and the events'); a reason of
// Ready=False is also that of Stalled=True when only a change of the
// VersionUpdate, its ProfileSync or the repository helps.
const (
	// ProposedReason: the last check pushed a proposal to spec.branch.
	ProposedReason = "Proposed"
	// NothingToProposeReason: the last check found nothing new to propose:
	// the profiles hold every version the sources offer that the schedule
	// and the policy allow, or spec.branch already carries the proposal.
	NothingToProposeReason = "NothingToPropose"
	// SourceFailedReason: a source of the versions file failed (unreachable,
	// bad credentials, bad tags); the message names it. The others were
	// proposed.
	SourceFailedReason = "SourceFailed"
	// ProfileSyncNotFoundReason: spec.profileSyncRef names no ProfileSync.
	ProfileSyncNotFoundReason = "ProfileSyncNotFound"
	// BranchFollowedReason: spec.branch is a branch of the repository that
	// a ProfileSync of any namespace follows, and
	// spec.allowPushToFollowedBranch is not set.
	BranchFollowedReason = "BranchFollowed"
	// BranchClaimedReason: another VersionUpdate, created earlier (or, at
	// the same second, first by namespace and name), pushes spec.branch of
	// the same repository; two would replace each other's proposals.
	BranchClaimedReason = "BranchClaimed"
	// ProposeFailedReason: the versions file or a profile it feeds is
	// invalid, or the edits could not be made; the message says which.
	ProposeFailedReason = "ProposeFailed"
	// PushFailedReason: the proposal could not be pushed (retried).
	PushFailedReason = "PushFailed"
)

// VersionUpdateSpec says which repository to propose new versions for and
// where to push them.
// +kubebuilder:validation:XValidation:rule="!has(self.author) || !has(self.author.email) || self.author.email.contains('@')",message="author.email must be an email address"
type VersionUpdateSpec struct {
	// profileSyncRef names the ProfileSync, in the same namespace, whose
	// repository, Secret (spec.secretRef) and branch the proposals use: they
	// start from the branch it follows (its repository's default branch
	// when it follows a tag, a semver range or a commit) and are pushed with
	// its credentials.
	// +required
	ProfileSyncRef meta.LocalObjectReference `json:"profileSyncRef"`

	// branch is the branch the proposals are pushed to, one commit on the
	// branch they start from, replaced by each new proposal. A branch of the
	// repository that a ProfileSync of any namespace follows is refused unless
	// allowPushToFollowedBranch is true; so is a branch of the same
	// repository that another VersionUpdate, created earlier, pushes.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=250
	// +kubebuilder:validation:Pattern=`^[A-Za-z0-9_][A-Za-z0-9._/-]*$`
	// +kubebuilder:validation:XValidation:rule="!self.contains('..') && !self.contains('//') && !self.endsWith('/') && !self.endsWith('.lock') && !self.endsWith('.')",message="branch must be a Git branch name"
	Branch string `json:"branch"`

	// allowPushToFollowedBranch lets the proposals be pushed to a branch a
	// ProfileSync of any namespace follows: they then reach its landscape
	// unreviewed. Off by default.
	// +optional
	AllowPushToFollowedBranch bool `json:"allowPushToFollowedBranch,omitempty"`

	// interval is how often the sources are checked.
	// +required
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:Pattern="^([0-9]+(\\.[0-9]+)?(ms|s|m|h))+$"
	// +kubebuilder:validation:XValidation:rule="duration(self) >= duration('1s')",message="interval must be at least 1s"
	Interval metav1.Duration `json:"interval"`

	// suspend stops the checks; nothing is checked or pushed while it is
	// true.
	// +optional
	Suspend bool `json:"suspend,omitempty"`

	// author signs the commits of proposals; profilesync
	// <profilesync@users.noreply.invalid> when unset.
	// +optional
	Author *CommitAuthor `json:"author,omitempty"`
}

// CommitAuthor is the name and email of a commit's author and committer.
type CommitAuthor struct {
	// name is the author's name.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=256
	Name string `json:"name"`
	// email is the author's email address.
	// +required
	// +kubebuilder:validation:MinLength=3
	// +kubebuilder:validation:MaxLength=256
	Email string `json:"email"`
}

// VersionSourceStatus is what the last check found of one source.
type VersionSourceStatus struct {
	// name is the source's name in profilesync-versions.yaml.
	// +kubebuilder:validation:MaxLength=63
	Name string `json:"name"`
	// found is how many versions the source offered (within its range and
	// tag pattern).
	Found int `json:"found"`
	// newest are the newest of them, the newest first, at most 10.
	// +kubebuilder:validation:MaxItems=10
	// +kubebuilder:validation:items:MaxLength=128
	// +optional
	Newest []string `json:"newest,omitempty"`
	// failure is why the source failed, naming it; empty when it did not.
	// +kubebuilder:validation:MaxLength=1024
	// +optional
	Failure string `json:"failure,omitempty"`
}

// ProposedChange is one change of a proposal and its reason.
type ProposedChange struct {
	// source is the source the change comes from.
	// +kubebuilder:validation:MaxLength=63
	Source string `json:"source"`
	// summary is the line of the commit message: the change and its reason.
	// +kubebuilder:validation:MaxLength=1024
	Summary string `json:"summary"`
}

// VersionProposal is a proposal pushed.
type VersionProposal struct {
	// commit is the proposal's commit.
	// +kubebuilder:validation:MaxLength=40
	Commit string `json:"commit"`
	// branch is the branch it was pushed to.
	// +kubebuilder:validation:MaxLength=250
	Branch string `json:"branch"`
	// base is the commit it starts from, the tip of the branch the
	// ProfileSync follows when it was made.
	// +kubebuilder:validation:MaxLength=40
	Base string `json:"base"`
	// changes are its changes, each with its reason.
	// +kubebuilder:validation:MaxItems=100
	// +optional
	Changes []ProposedChange `json:"changes,omitempty"`
	// time is when it was pushed.
	Time metav1.Time `json:"time"`
}

// VersionUpdateStatus is what the VersionUpdate controller found and
// proposed.
type VersionUpdateStatus struct {
	// observedGeneration is the generation of the spec last checked.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// conditions: Ready (reasons Proposed, NothingToPropose, SourceFailed,
	// ProfileSyncNotFound, BranchFollowed, BranchClaimed, ProposeFailed,
	// PushFailed), and
	// Stalled while only a change of the VersionUpdate, its ProfileSync or
	// the repository helps.
	// +listType=map
	// +listMapKey=type
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`
	// lastCheckTime is when the sources were last checked.
	// +optional
	LastCheckTime *metav1.Time `json:"lastCheckTime,omitempty"`
	// sources are what the last check found of each source.
	// +kubebuilder:validation:MaxItems=50
	// +optional
	Sources []VersionSourceStatus `json:"sources,omitempty"`
	// lastProposal is the last proposal pushed.
	// +optional
	LastProposal *VersionProposal `json:"lastProposal,omitempty"`
}

// VersionUpdate checks the sources of new versions that a profiles
// repository declares (profilesync-versions.yaml) on an interval, and
// pushes what its schedule and versioning policy ask for as one commit on
// a branch of that repository, for a person to review (docs/versions.md).
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:scope=Namespaced,shortName=vu,categories=profilesync-all
// +kubebuilder:printcolumn:name="ProfileSync",type=string,JSONPath=`.spec.profileSyncRef.name`
// +kubebuilder:printcolumn:name="Branch",type=string,JSONPath=`.spec.branch`
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Reason",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].reason`
// +kubebuilder:printcolumn:name="Proposal",type=string,JSONPath=`.status.lastProposal.commit`,priority=1
// +kubebuilder:printcolumn:name="Last Check",type=date,JSONPath=`.status.lastCheckTime`
// +kubebuilder:printcolumn:name="Status",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].message`,priority=1
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type VersionUpdate struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// spec says which ProfileSync's repository to propose for and where.
	// +required
	Spec VersionUpdateSpec `json:"spec"`

	// status is computed by the VersionUpdate controller.
	// +optional
	Status VersionUpdateStatus `json:"status,omitempty"`
}

// GetConditions returns the conditions of the VersionUpdate.
func (in *VersionUpdate) GetConditions() []metav1.Condition { return in.Status.Conditions }

// SetConditions sets the conditions of the VersionUpdate.
func (in *VersionUpdate) SetConditions(conditions []metav1.Condition) {
	in.Status.Conditions = conditions
}

// +kubebuilder:object:root=true

// VersionUpdateList is a list of VersionUpdates.
type VersionUpdateList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []VersionUpdate `json:"items"`
}
