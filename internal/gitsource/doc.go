// Package gitsource fetches one revision of a Git repository into a local
// cache, the way the ProfileSync controller needs it: resolve a branch, tag,
// semver range or commit on the remote, download it only when it changed,
// and report the revision as "<ref>@sha1:<hex>".
//
// It uses go-git only — never the git command line — and knows nothing of
// Kubernetes: the controller passes the spec's URL and ref, the Secret's
// data and a cache key, and gets back a directory and a revision.
//
// Credentials never leave this package in error text: user information of
// URLs is shown as "***" (see RedactURL) and credential values are scrubbed
// from every error Fetch returns.
//
// The subpackage gitserver is a real Git smart-HTTP server for tests and the
// local demo; operator code must not import it.
package gitsource
