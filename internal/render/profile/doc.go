// Package profile is the object model of the profiles in Git: what a
// CloudProfile or NamespacedCloudProfile read from a file is, whether it is
// valid, and what it says at a given time.
//
//   - DecodeDocuments reads CloudProfiles and NamespacedCloudProfiles (ours,
//     or Gardener's core.gardener.cloud/v1beta1) strictly and refuses what
//     the API server would refuse: the schema of the CRDs the cluster
//     installs (compiled in from config/crd, checked with the API server's
//     own validator) and metadata as apimachinery validates it, naming file,
//     object and field of every problem; Problems.Summarize cuts a mistake
//     repeated many times short for people to read;
//   - Validate checks a set applied together at a time: every profile's
//     lifecycle rules, duplicates, the size the API server would store, and
//     every namespaced profile merged with its parent (internal/render/merge). The
//     Set it returns is the only thing that evaluates (Set.Evaluate gives
//     each valid profile its status at that same time), so no set is
//     evaluated against objects or a time it was not validated with. Load
//     is decoding and Validate in one, the path of every caller that does
//     not keep decoded objects itself;
//   - DriftedFields names the fields of a live profile that differ from
//     what is applied, and ContentDigest identifies what was applied.
//
// Building an overlay into documents is internal/render/overlay; the pull-request
// diff of two builds is internal/prdiff.
//
// The package is pure: it takes files and specs and returns objects, specs
// and field errors, and it does not compile kustomize. The CLI, the sync and
// the NamespacedCloudProfile controller call it with what they read
// themselves, so a profile means the same thing everywhere.
package profile
