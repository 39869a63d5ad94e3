// Package propose turns new releases into reviewed changes of the profiles:
// the versions file that declares where versions come from and the schedule
// they follow (profilesync-versions.yaml), and the proposal engine, which
// from the profiles, the versioning policy, the discovered versions and the
// time computes the edits a person would make by hand: a new patch enters
// and takes over from the one it replaces, which is deprecated with the
// policy's notice and expires after the schedule's duration; a new minor
// enters in preview, and the minor that leaves the policy's supported window
// is deprecated; versions expired long ago and overridden by no namespaced
// profile are retired.
//
// The engine is pure (no client, no network, the time a parameter) and
// never proposes what the sync would refuse: every proposal is checked with
// the profiles' validation (internal/render/profile, internal/lifecycle) and
// the policy (internal/policy) now and at every transition it schedules, and
// one that would add a refusal is reported as skipped, with the reason.
//
// docs/versions.md describes the file and the schedule for operators.
package propose
