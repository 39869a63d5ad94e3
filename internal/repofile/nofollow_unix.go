//go:build unix

package repofile

import "syscall"

// oNoFollow makes opening a file fail when it has become a symbolic link
// since its links were resolved and checked.
const oNoFollow = syscall.O_NOFOLLOW
