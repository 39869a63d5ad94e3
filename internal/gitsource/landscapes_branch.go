package gitsource

import (
	"context"
	"fmt"

	"github.com/go-git/go-git/v5/plumbing"
)

// What `profilesync rollout status` needs of a Landscapes beyond the
// records: the branch it follows and the tree of the revision a landscape
// runs.

// HeadBranch is the branch the repository's HEAD names: the checked-out
// branch of a work tree. A detached HEAD has none, which is an error.
func (l *Landscapes) HeadBranch() (string, error) {
	head, err := l.repository.Reference(plumbing.HEAD, false)
	if err != nil {
		return "", fmt.Errorf("read HEAD: %w", err)
	}
	if head.Type() != plumbing.SymbolicReference || !head.Target().IsBranch() {
		return "", fmt.Errorf("%w: HEAD is detached, so it names no branch", ErrReferenceNotFound)
	}
	return head.Target().Short(), nil
}

// ExportTree writes the files of commit (a full SHA-1) into dest, as
// ExportTree does for a repository on disk, within maxBytes (0: no limit).
// It reads through the Landscapes' own bounded storer, as ExportTree does:
// no object over its bound is inflated, a large blob is read as it is
// consumed.
func (l *Landscapes) ExportTree(ctx context.Context, commit, dest string, maxBytes int64) error {
	if maxBytes < 0 {
		return fmt.Errorf("maximum export size %d is negative; use 0 for no limit", maxBytes)
	}
	_, err := exportRevision(ctx, l.repository, l.storage.Filesystem().Root(), commit, dest, maxBytes)
	return err
}

// DefaultBranch lists the refs of the request's repository, as `git
// ls-remote` does, and returns the branch its HEAD names: the branch a
// ProfileSync without spec.ref follows. Errors are those of Fetch, without
// credentials.
func (f *Fetcher) DefaultBranch(ctx context.Context, req LandscapeRequest) (branch string, err error) {
	secrets := credentialSecrets(req.URL, req.Credentials)
	defer func() { err = redactError(err, secrets) }()
	repo := RedactURL(req.URL)
	repoURL, err := parseRepositoryURL(req.URL)
	if err != nil {
		return "", err
	}
	auth, err := authFor(repoURL, req.Credentials, f.options.AllowCredentialsOverHTTP, f.root)
	if err != nil {
		return "", err
	}
	if req.Timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, req.Timeout)
		defer cancel()
	}
	listing, err := listRemote(ctx, auth)
	if err != nil {
		return "", fmt.Errorf("list the refs of %s: %w", repo, withTimeout(ctx, req.Timeout, err))
	}
	resolved, err := resolveHead(listing, repo)
	if err != nil {
		return "", err
	}
	if resolved.revisionName == "" {
		return "", fmt.Errorf("%w: HEAD of %s is detached, so it names no branch", ErrReferenceNotFound, repo)
	}
	return resolved.revisionName, nil
}
