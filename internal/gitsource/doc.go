// Package gitsource fetches one revision of a Git repository into a local
// cache, the way the ProfileSync controller needs it: resolve a branch, tag,
// semver range or commit on the remote, download it only when it changed,
// and report the revision as "<ref>@sha1:<hex>".
//
// It uses go-git only — never the git command line — and knows nothing of
// Kubernetes: the controller passes the spec's URL and ref, the Secret's
// data and a cache key, and gets back a directory and a revision.
//
// Credentials reach neither the disk nor error text. User information in a
// URL is moved into go-git's authentication, so the checkout's .git/config
// keeps the URL without it. Errors show URLs through RedactURL, which hides
// user information and query values even of malformed URLs, and credential
// values are scrubbed from every error Fetch returns.
//
// A checkout can be bounded with FetcherOptions.MaxCheckoutSize: every byte
// a fetch writes, object store and worktree alike, is counted as it is
// written, and a fetch that would pass the limit stops with
// ErrCheckoutTooLarge, leaving the previous checkout in place.
//
// ExportTree writes one revision of a local repository into a directory,
// for the offline pull-request diff: base and head are built side by side
// from their own trees, without a checkout and without the git binary.
//
// The landscapes' records (internal/rollout) travel through Git too:
// FetchLandscapes keeps a bare mirror of a repository's followed branch and
// refs/profilesync/landscapes/* per cache key, within a disk budget across
// fetches, Landscapes reads a
// landscape's records from it, bounded and skipping untrusted garbage with
// warnings, and is the rollout.Repository of rollout.DecideLandscape, every
// ancestry question of one decision answered from one walk; PushRecord
// fast-forwards one landscape's own ref and nothing else.
//
// Every repository is read through one bounded storer (objects.go): each
// Git object's kind and size are read from its header, loose or packed,
// and an object over its bound (ObjectLimitsFor) is refused with
// ErrObjectTooLarge before anything inflates it; a fetched pack is checked
// the same way before go-git indexes it.
//
// The loopback Git server that tests and run-local use lives in
// test/gitserver; a lint rule keeps operator code from importing it.
package gitsource
