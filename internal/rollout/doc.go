// Package rollout is the order in which a change reaches the landscapes of a
// profiles repository, as the repository's rollout file
// (profilesync-rollout.yaml, at its root) writes it down: the landscapes,
// each with its overlay, the upstream landscapes it waits for, how long they
// must have held a commit (soak), and how far behind them the lifecycle
// dates of its profiles must stay (lag).
//
// The package decodes and checks the file (file.go) and answers which
// landscape a ProfileSync belongs to. It is pure: no Kubernetes client, time
// is always a parameter. The CLI (build, diff, timeline) reads the file
// through it. docs/rollout.md describes the file for operators.
package rollout
