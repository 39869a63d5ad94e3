package delivery

import (
	"context"
	"errors"
	"fmt"

	"github.com/go-git/go-git/v5"
	gitconfig "github.com/go-git/go-git/v5/config"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/go-git/go-git/v5/plumbing/transport"
)

// Author signs the commits of proposals unless told otherwise.
const (
	DefaultAuthorName  = "profilesync"
	DefaultAuthorEmail = "profilesync@users.noreply.invalid"
)

// CheckoutCommit is a commit of the edits in a Git checkout on disk (the
// CLI's): to its current branch, or to Branch made from HEAD and pushed.
type CheckoutCommit struct {
	// Root is the top of the checkout.
	Root  string
	Files []EditedFile
	// Message is the commit message (CommitMessage).
	Message string
	Author  object.Signature
	// Branch, when set, is made from HEAD, committed to and pushed to
	// Remote, replacing what it held there: a branch that already carries a
	// proposal is updated in place, not duplicated.
	Branch string
	Remote string
	Auth   transport.AuthMethod
}

// ErrInvalidBranch marks a branch name Git refuses.
var ErrInvalidBranch = errors.New("invalid branch name")

// CommitToCheckout commits the edited files with go-git, and pushes
// c.Branch when it is set. It returns the commit.
func CommitToCheckout(ctx context.Context, c CheckoutCommit) (string, error) {
	repo, err := git.PlainOpen(c.Root)
	if err != nil {
		return "", fmt.Errorf("committing: %s is not the root of a Git checkout: %w", c.Root, err)
	}
	worktree, err := repo.Worktree()
	if err != nil {
		return "", fmt.Errorf("committing: %w", err)
	}
	if c.Branch != "" {
		branch := plumbing.NewBranchReferenceName(c.Branch)
		if err := branch.Validate(); err != nil {
			return "", fmt.Errorf("%w: %q: %w", ErrInvalidBranch, c.Branch, err)
		}
		head, err := repo.Head()
		if err != nil {
			return "", fmt.Errorf("committing: reading HEAD: %w", err)
		}
		if err := repo.Storer.SetReference(plumbing.NewHashReference(branch, head.Hash())); err != nil {
			return "", fmt.Errorf("committing: making branch %s: %w", c.Branch, err)
		}
		if err := worktree.Checkout(&git.CheckoutOptions{Branch: branch, Keep: true}); err != nil {
			return "", fmt.Errorf("committing: switching to branch %s: %w", c.Branch, err)
		}
	}
	for _, f := range c.Files {
		if _, err := worktree.Add(f.Path); err != nil {
			return "", fmt.Errorf("committing: adding %s: %w", f.Path, err)
		}
	}
	author := c.Author
	hash, err := worktree.Commit(c.Message, &git.CommitOptions{Author: &author, Committer: &author})
	if err != nil {
		return "", fmt.Errorf("committing: %w", err)
	}
	if c.Branch == "" {
		return hash.String(), nil
	}
	spec := gitconfig.RefSpec(fmt.Sprintf("+refs/heads/%s:refs/heads/%s", c.Branch, c.Branch))
	err = repo.PushContext(ctx, &git.PushOptions{RemoteName: c.Remote, RefSpecs: []gitconfig.RefSpec{spec}, Auth: c.Auth})
	if err != nil && !errors.Is(err, git.NoErrAlreadyUpToDate) {
		return "", fmt.Errorf("pushing branch %s (commit %s) to %s: %w", c.Branch, hash, c.Remote, err)
	}
	return hash.String(), nil
}
