package gitsource

import (
	"fmt"
	"time"

	"github.com/go-git/go-git/v5/plumbing"

	"github.com/profilesync/profilesync/internal/rollout"
)

// CommitTime returns when commit (a full SHA-1, as ExportTree and Fetch
// report it) was committed in the repository at repoDir: a work tree, a
// directory inside one, a bare repository, or a fetch's Result.Dir. It is the
// committer's time, which a rebase or a merge renews, not the author's: a
// change takes effect with the commit that lands it. The versioning policy
// measures notice periods from it. The commit is read within limits, like
// every object (ObjectLimitsFor): one over its bound is refused from its
// header, never decoded.
//
// Git stores the committer's time as unix seconds, so a commit can name any
// year. One outside what a status, JSON and the API server can hold (years
// 0000 to 9999, rollout.TimeInRange) is refused: the error wraps
// rollout.ErrTimeOutOfRange and names the commit and the field. The sync then
// measures the policy's notice from its clock's now, with a warning, and
// 'profilesync diff' does the same (docs/security.md): the time a hostile
// commit claims never freezes a status patch or fails a JSON report.
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
	when := object.Committer.When
	if !rollout.TimeInRange(when, 0) {
		return time.Time{}, fmt.Errorf("%w: commit %s: committer time: unix %d is outside years 0000 to 9999, the times a status can hold",
			rollout.ErrTimeOutOfRange, commit, when.Unix())
	}
	return when, nil
}
