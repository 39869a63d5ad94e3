// Package render turns a NamespacedCloudProfile and its parent CloudProfile
// into the profile clusters in the namespace see (status.cloudProfileSpec),
// following SEMANTICS.md section 3, and guards the parent against changes that
// would pull an overridden entry out from under a namespaced profile.
//
// The package is pure: it takes specs and returns specs and field errors. The
// NamespacedCloudProfile controller, the sync and the admission webhook call it
// with objects they fetched themselves.
package render
