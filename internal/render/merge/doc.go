// Package merge renders a NamespacedCloudProfile into the profile its
// namespace sees, and guards a parent CloudProfile against changes its
// namespaced profiles cannot follow:
//
//   - Namespaced renders status.cloudProfileSpec (docs/semantics.md
//     section 3): the parent's spec with the overrides applied and
//     validated;
//   - CheckCloudProfileChange refuses a change to a parent that would make a
//     version unavailable again, lower maxNodesTotal or pull an overridden
//     entry out from under a namespaced profile.
//
// It is all the admission webhooks need, so it imports no more than
// internal/lifecycle: it decodes nothing and does not compile kustomize.
// internal/render/profile merges every namespaced profile of a set through it.
package merge
