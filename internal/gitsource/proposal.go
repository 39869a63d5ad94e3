package gitsource

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/config"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/object"
)

// What the VersionUpdate controller needs of a repository: the tree of the
// branch its proposals start from, and a branch pushed with one commit on
// it, updated in place. Both go through a mirror of their own next to the
// cache key's checkout (proposalsDirSuffix), bounded as the landscapes'
// mirror is: every object by its header, the mirror's disk by
// FetcherOptions.MaxCheckoutSize.

// proposalsDirSuffix names a cache key's mirror of the branches of its
// proposals.
const proposalsDirSuffix = ".proposals"

// outgoingProposalRef holds a proposal's commit in the mirror while it is
// pushed; it never leaves the mirror.
const outgoingProposalRef = plumbing.ReferenceName("refs/profilesync/outgoing/proposal")

// ErrBaseMoved marks a push whose base branch moved on the server since
// the tree was read: the proposal is made again from the new tip.
var ErrBaseMoved = errors.New("the branch the proposal starts from moved on the server")

// ProposalRequest names the repository, the branch proposals start from and
// the branch they are pushed to.
type ProposalRequest struct {
	// URL, Credentials and Timeout are as in Request: the ProfileSync's.
	URL         string
	Credentials map[string][]byte
	Timeout     time.Duration
	// CacheKey names the mirror, like "versionupdate/namespace/name".
	CacheKey string
	// Base is the branch the proposal starts from (the branch a landscape
	// follows); Branch the one it is pushed to.
	Base   string
	Branch string
}

// ProposalBase is where a proposal starts.
type ProposalBase struct {
	// Commit is Base's tip, whose tree FetchProposalBase exported.
	Commit string
	// BranchCommit is the proposal branch's tip on the server; empty when
	// the branch does not exist.
	BranchCommit string
}

// ProposalCommit is the commit PushProposal makes: Files (slash-separated
// repository paths of files the base has) with their new content.
type ProposalCommit struct {
	Files   map[string][]byte
	Message string
	Author  object.Signature
}

// FetchProposalBase brings Base and Branch into the cache key's mirror and
// writes Base's tree into dest (empty or absent) within maxBytes (0: no
// limit), through the bounded storer. Errors are those of Fetch, without
// credentials; a missing Base matches ErrReferenceNotFound.
func (f *Fetcher) FetchProposalBase(ctx context.Context, req ProposalRequest, dest string, maxBytes int64) (base *ProposalBase, err error) {
	secrets := credentialSecrets(req.URL, req.Credentials)
	defer func() { err = redactError(err, secrets) }()
	mirror, unlock, err := f.openProposalMirror(req)
	if err != nil {
		return nil, err
	}
	defer unlock()
	if req.Timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, req.Timeout)
		defer cancel()
	}
	base, err = mirror.fetchProposalBranches(ctx, req)
	if err != nil {
		return nil, fmt.Errorf("fetch branch %s of %s: %w", req.Base, mirror.repo, withTimeout(ctx, req.Timeout, err))
	}
	if _, err := exportRevision(ctx, mirror.repository, mirror.repo, base.Commit, dest, maxBytes); err != nil {
		return nil, err
	}
	return base, nil
}

// PushProposal makes one commit on base.Commit that changes Files, and
// pushes it to Branch, replacing what it held: a branch already holding
// the same change on the same base is left as it is (pushed is false), so
// a proposal is updated in place, never duplicated. A Branch that is Base
// is fast-forwarded, never replaced. When Base moved on the
// server since FetchProposalBase, nothing is pushed and the error matches
// ErrBaseMoved. Errors are those of Fetch, without credentials.
func (f *Fetcher) PushProposal(ctx context.Context, req ProposalRequest, base *ProposalBase, change ProposalCommit) (commit string, pushed bool, err error) {
	secrets := credentialSecrets(req.URL, req.Credentials)
	defer func() { err = redactError(err, secrets) }()
	mirror, unlock, err := f.openProposalMirror(req)
	if err != nil {
		return "", false, err
	}
	defer unlock()
	if req.Timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, req.Timeout)
		defer cancel()
	}
	now, err := mirror.fetchProposalBranches(ctx, req)
	if err != nil {
		return "", false, fmt.Errorf("fetch branch %s of %s: %w", req.Base, mirror.repo, withTimeout(ctx, req.Timeout, err))
	}
	if now.Commit != base.Commit {
		return "", false, fmt.Errorf("%w: %s is at %s, the proposal was made on %s", ErrBaseMoved, req.Base, now.Commit, base.Commit)
	}
	repository := mirror.repository
	baseCommit, err := repository.CommitObject(plumbing.NewHash(base.Commit))
	if err != nil {
		return "", false, fmt.Errorf("read commit %s of %s: %w", base.Commit, mirror.repo, err)
	}
	baseTree, err := baseCommit.Tree()
	if err != nil {
		return "", false, fmt.Errorf("read the tree of %s of %s: %w", base.Commit, mirror.repo, err)
	}
	treeHash, err := replaceFiles(repository, baseTree, change.Files)
	if err != nil {
		return "", false, fmt.Errorf("write the proposal's tree on %s: %w", base.Commit, err)
	}
	if now.BranchCommit != "" && req.Branch != req.Base {
		existing, err := repository.CommitObject(plumbing.NewHash(now.BranchCommit))
		if err == nil && existing.TreeHash == treeHash && len(existing.ParentHashes) == 1 && existing.ParentHashes[0] == baseCommit.Hash {
			return existing.Hash.String(), false, nil
		}
	}
	proposal := &object.Commit{Author: change.Author, Committer: change.Author, Message: change.Message, TreeHash: treeHash,
		ParentHashes: []plumbing.Hash{baseCommit.Hash}}
	encoded := repository.Storer.NewEncodedObject()
	if err := proposal.Encode(encoded); err != nil {
		return "", false, fmt.Errorf("write the proposal's commit: %w", err)
	}
	hash, err := repository.Storer.SetEncodedObject(encoded)
	if err != nil {
		return "", false, fmt.Errorf("write the proposal's commit: %w", err)
	}
	storer := repository.Storer
	if err := storer.SetReference(plumbing.NewHashReference(outgoingProposalRef, hash)); err != nil {
		return "", false, fmt.Errorf("write the proposal's commit: %w", err)
	}
	defer func() { _ = storer.RemoveReference(outgoingProposalRef) }()
	branchRef := plumbing.NewBranchReferenceName(req.Branch)
	// "+": the branch is the proposal's own, replaced by each new one;
	// pushed to the branch it starts from (the caller was told to), only a
	// fast-forward of it.
	refSpec := config.RefSpec("+" + string(outgoingProposalRef) + ":" + string(branchRef))
	if req.Branch == req.Base {
		refSpec = config.RefSpec(string(outgoingProposalRef) + ":" + string(branchRef))
	}
	pushErr := mirror.remote.PushContext(ctx, &git.PushOptions{RemoteName: git.DefaultRemoteName, RefSpecs: []config.RefSpec{refSpec}, Auth: mirror.auth})
	if pushErr != nil && !errors.Is(pushErr, git.NoErrAlreadyUpToDate) {
		return "", false, fmt.Errorf("push branch %s to %s: %w", req.Branch, mirror.repo, classifyPushError(withTimeout(ctx, req.Timeout, pushErr)))
	}
	_ = storer.SetReference(plumbing.NewHashReference(branchRef, hash))
	return hash.String(), true, nil
}

// openProposalMirror checks the branch names and opens the cache key's
// mirror of proposals.
func (f *Fetcher) openProposalMirror(req ProposalRequest) (*landscapeMirror, func(), error) {
	for _, branch := range []string{req.Base, req.Branch} {
		if err := plumbing.NewBranchReferenceName(branch).Validate(); err != nil || branch == "" || strings.HasPrefix(branch, "-") {
			return nil, nil, fmt.Errorf("%w: branch %q is no branch name", ErrInvalidRequest, branch)
		}
	}
	return f.openMirrorAt(LandscapeRequest{URL: req.URL, Credentials: req.Credentials, Timeout: req.Timeout, CacheKey: req.CacheKey}, proposalsDirSuffix)
}

// fetchProposalBranches lists the remote, fetches Base and, when it
// exists, Branch, and drops every other ref of the mirror.
func (m *landscapeMirror) fetchProposalBranches(ctx context.Context, req ProposalRequest) (*ProposalBase, error) {
	listing, err := listRemote(ctx, clientAuth{remoteURL: m.remoteURL, method: m.auth})
	if err != nil {
		return nil, err
	}
	baseRef := plumbing.NewBranchReferenceName(req.Base)
	branchRef := plumbing.NewBranchReferenceName(req.Branch)
	baseTip, ok := listing.hashes[baseRef]
	if !ok {
		return nil, fmt.Errorf("%w: branch %q not found on %s", ErrReferenceNotFound, req.Base, m.repo)
	}
	specs := []config.RefSpec{config.RefSpec("+" + baseRef + ":" + baseRef)}
	branchTip, branchExists := listing.hashes[branchRef]
	if branchExists && branchRef != baseRef {
		specs = append(specs, config.RefSpec("+"+branchRef+":"+branchRef))
	}
	err = m.fetch(ctx, specs)
	if errors.Is(err, ErrCheckoutTooLarge) {
		if err = m.recreate(); err == nil {
			err = m.fetch(ctx, specs)
		}
	}
	if err != nil {
		return nil, err
	}
	refs, err := m.repository.Storer.IterReferences()
	if err != nil {
		return nil, fmt.Errorf("list the refs of the mirror of %s: %w", m.repo, err)
	}
	var unwanted []plumbing.ReferenceName
	_ = refs.ForEach(func(ref *plumbing.Reference) error {
		name := ref.Name()
		if name != plumbing.HEAD && name != baseRef && (name != branchRef || !branchExists) {
			unwanted = append(unwanted, name)
		}
		return nil
	})
	for _, name := range unwanted {
		if err := m.repository.Storer.RemoveReference(name); err != nil {
			return nil, fmt.Errorf("remove %s from the mirror of %s: %w", name, m.repo, err)
		}
	}
	// The tips as listed: a branch that moved between the listing and the
	// fetch is read again next time.
	base := &ProposalBase{Commit: baseTip.String()}
	if tip, err := m.repository.Reference(baseRef, true); err == nil {
		base.Commit = tip.Hash().String()
	}
	if branchExists {
		base.BranchCommit = branchTip.String()
		if tip, err := m.repository.Reference(branchRef, true); err == nil {
			base.BranchCommit = tip.Hash().String()
		}
	}
	return base, nil
}

// replaceFiles writes the trees of base with files' blobs in place of
// theirs, and returns the new root tree. Every file must exist in base: a
// proposal edits the files where the versions are.
func replaceFiles(repository *git.Repository, base *object.Tree, files map[string][]byte) (plumbing.Hash, error) {
	direct := map[string][]byte{}
	nested := map[string]map[string][]byte{}
	for name, content := range files {
		clean := path.Clean(name)
		if clean != name || strings.HasPrefix(name, "/") || name == "." || strings.HasPrefix(name, "../") {
			return plumbing.ZeroHash, fmt.Errorf("%w: %q is no repository path", ErrInvalidRequest, name)
		}
		first, rest, isNested := strings.Cut(name, "/")
		if !isNested {
			direct[first] = content
			continue
		}
		if nested[first] == nil {
			nested[first] = map[string][]byte{}
		}
		nested[first][rest] = content
	}
	entries := make([]object.TreeEntry, len(base.Entries))
	copy(entries, base.Entries)
	found := map[string]bool{}
	for i, entry := range entries {
		if content, ok := direct[entry.Name]; ok {
			if !entry.Mode.IsFile() {
				return plumbing.ZeroHash, fmt.Errorf("%s is not a file", entry.Name)
			}
			hash, err := writeBlob(repository, content)
			if err != nil {
				return plumbing.ZeroHash, err
			}
			entries[i].Hash = hash
			found[entry.Name] = true
		}
		if inner, ok := nested[entry.Name]; ok {
			if entry.Mode != filemode.Dir {
				return plumbing.ZeroHash, fmt.Errorf("%s is not a directory", entry.Name)
			}
			subtree, err := repository.TreeObject(entry.Hash)
			if err != nil {
				return plumbing.ZeroHash, fmt.Errorf("read tree %s: %w", entry.Name, err)
			}
			hash, err := replaceFiles(repository, subtree, inner)
			if err != nil {
				return plumbing.ZeroHash, fmt.Errorf("%s/%w", entry.Name, err)
			}
			entries[i].Hash = hash
			found[entry.Name] = true
		}
	}
	var missing []string
	for name := range direct {
		if !found[name] {
			missing = append(missing, name)
		}
	}
	for name := range nested {
		if !found[name] {
			missing = append(missing, name)
		}
	}
	if len(missing) > 0 {
		sort.Strings(missing)
		return plumbing.ZeroHash, fmt.Errorf("%s: %w", strings.Join(missing, ", "), os.ErrNotExist)
	}
	tree := &object.Tree{Entries: entries}
	encoded := repository.Storer.NewEncodedObject()
	if err := tree.Encode(encoded); err != nil {
		return plumbing.ZeroHash, err
	}
	return repository.Storer.SetEncodedObject(encoded)
}

func writeBlob(repository *git.Repository, content []byte) (plumbing.Hash, error) {
	blob := repository.Storer.NewEncodedObject()
	blob.SetType(plumbing.BlobObject)
	writer, err := blob.Writer()
	if err != nil {
		return plumbing.ZeroHash, err
	}
	if _, err := writer.Write(content); err != nil {
		return plumbing.ZeroHash, err
	}
	if err := writer.Close(); err != nil {
		return plumbing.ZeroHash, err
	}
	return repository.Storer.SetEncodedObject(blob)
}

// ForgetProposals removes the cache key's mirror of proposals, for when its
// object is deleted. A key without one is not an error.
func (f *Fetcher) ForgetProposals(cacheKey string) error {
	dirName, err := cacheDirName(cacheKey)
	if err != nil {
		return err
	}
	dirName += proposalsDirSuffix
	lock := f.lockFor(dirName)
	lock.Lock()
	defer lock.Unlock()
	if err := os.RemoveAll(filepath.Join(f.root, dirName)); err != nil {
		return fmt.Errorf("remove the proposals' mirror of %q: %w", cacheKey, err)
	}
	return nil
}
