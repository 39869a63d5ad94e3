// Package prdiff compares a landscape built from two revisions (a pull
// request's base and head) by what changes for clusters: versions, images
// and stages added, removed or moved, classifications that differ now or
// within a horizon, update strategies and update targets. CheckRolloutOrder
// warns when a later landscape reaches a stage before an earlier one,
// Compare assembles both into the report of every landscape, and
// WriteText, WriteMarkdown and WriteJSON print a report for a
// terminal, a pull-request comment and programs.
//
// The package is pure: it takes the objects internal/render/overlay built and
// internal/render/profile decoded, and
// returns a report. `profilesync diff` is its one caller.
package prdiff
