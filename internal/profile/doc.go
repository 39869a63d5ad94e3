// Package render turns what is in Git into profiles that can be applied, and
// a NamespacedCloudProfile into the profile its namespace sees:
//
//   - Build kustomize-builds an overlay from one checkout's work tree and
//     nothing else (no network, no .git/, no paths leaving it, builtin
//     plugins only), within Limits and a context, and keeps each object's
//     file; strategic-merge patches merge lists by their keys (versions by
//     version, stages by classification) with OpenAPISchema, generated from
//     the CRDs, and BuildWithWarnings also names every JSON patch that
//     addresses such a list entry by index;
//   - DecodeDocuments reads CloudProfiles and NamespacedCloudProfiles (ours,
//     or Gardener's core.gardener.cloud/v1beta1) strictly and refuses what
//     the API server would refuse: the schema of the CRDs the cluster
//     installs (compiled in from config/crd, checked with the API server's
//     own validator) and metadata as apimachinery validates it, naming file,
//     object and field of every problem; Problems.Summarize cuts a mistake
//     repeated many times short for people to read;
//   - ValidateSet checks a set applied together: every profile's lifecycle
//     rules, duplicates, and every namespaced profile merged with its parent;
//   - merge.Namespaced renders status.cloudProfileSpec (docs/semantics.md
//     section 3), and CheckCloudProfileChange guards a parent against
//     changes that would make a version unavailable again or pull an
//     overridden entry out from under a namespaced profile.
//
// The pull-request diff of two builds is internal/prdiff.
//
// The package is pure: it takes files and specs and returns objects, specs
// and field errors. The CLI, the sync, the NamespacedCloudProfile controller
// and the admission webhooks call it with what they read themselves, so a
// profile means the same thing everywhere.
package profile
