package gitsource

import (
	"fmt"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
)

// CommitTime returns when commit (a full SHA-1, as ExportTree and Fetch
// report it) was committed in the repository at repoDir: a work tree, a
// directory inside one, a bare repository, or a fetch's Result.Dir. It is the
// committer's time, which a rebase or a merge renews, not the author's: a
// change takes effect with the commit that lands it. The versioning policy
// measures notice periods from it. The commit is read within limits, like
// every object (ObjectLimitsFor): one over its bound is refused from its
// header, never decoded.
func CommitTime(repoDir, commit string, limits ObjectLimits) (time.Time, error) {
	repository, storage, err := openLocalRepository(repoDir, limits)
	if err != nil {
		return time.Time{}, err
	}
	defer storage.Close()
	object, err := repository.CommitObject(plumbing.NewHash(commit))
	if err != nil {
		return time.Time{}, fmt.Errorf("read commit %s of %s: %w", commit, repoDir, err)
	}
	return object.Committer.When, nil
}
