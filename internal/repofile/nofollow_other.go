//go:build !unix

package repofile

// oNoFollow is not available here; the checks before opening remain.
const oNoFollow = 0
