package lifecycle

import "k8s.io/apimachinery/pkg/util/validation/field"

// WriteTimeOrigin marks the errors of the rules Gardener applies when an
// object is written, judged at the moment of the write: the bastion's image
// must be supported then (validateBastion), and a version supported then
// may not overlap another of its minor with a stage that never ends
// (unendingLifecycleOverlaps). Gardener never judges a stored object again,
// so what such a rule says later, when time has moved on, is no reason to
// stop computing the status of a profile the API server holds: the status
// controllers leave these errors out (WithoutWriteTimeRules), while the
// sync, the commands and admission, which judge a write, keep them.
const WriteTimeOrigin = "profilesync.io/at-write"

// WithoutWriteTimeRules returns errs without the errors of the rules judged
// only at the moment of a write (WriteTimeOrigin): what a stored object is
// held to.
func WithoutWriteTimeRules(errs field.ErrorList) field.ErrorList {
	var kept field.ErrorList
	for _, e := range errs {
		if e.Origin != WriteTimeOrigin {
			kept = append(kept, e)
		}
	}
	return kept
}
