// Package overlay builds a kustomize overlay of one checkout into profile
// documents (internal/render/profile), as a sandbox:
//
//   - Build reads one checkout's work tree and nothing else (no network, no
//     .git/, no paths leaving it, builtin plugins only), within Limits and a
//     context, and keeps each object's file;
//   - strategic-merge patches merge lists by their keys (versions by
//     version, stages by classification) with mergekeys.OpenAPISchema,
//     generated from the CRDs;
//   - BuildWithWarnings also names every JSON patch that addresses such a
//     list entry by index;
//   - the resource files are read and their objects counted before
//     kustomize runs (planResources), and a build that only lists resources
//     and patches them is built without kustomize's accumulator, whose time
//     grows with the square of the objects, meaning the same (buildPlain),
//     its patches checked as they apply (linearPatches).
//
// It is the only package of ours that imports kustomize. The CLI, the sync
// (through internal/sandbox), the benchmarks and run-local build overlays
// and import it; the packages that only read built documents (profile,
// merge, policy, prdiff), the ones that only need the merge keys
// (mergekeys, overlaypatch) and the admission webhooks do not.
package overlay
