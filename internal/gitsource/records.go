package gitsource

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/go-git/go-billy/v5/osfs"
	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/config"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/cache"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/go-git/go-git/v5/plumbing/transport"
	"github.com/go-git/go-git/v5/storage/filesystem"

	"github.com/profilesync/profilesync/internal/rollout"
)

// ErrRecordRefMoved marks a record push refused because the landscape's
// ref moved on the server since it was read: another writer pushed a
// record. Fetching and pushing again may succeed.
var ErrRecordRefMoved = errors.New("the landscape's record ref moved on the server")

// ErrRecordPushRejected marks a record push the server refused for a
// reason of its own (a hook, a protected ref). Retrying cannot help until
// the server's configuration changes.
var ErrRecordPushRejected = errors.New("the Git server refused the record")

// ErrUnknownRevision marks a record skipped because the revision it names
// is no commit of the repository.
var ErrUnknownRevision = errors.New("the record names a commit unknown to the repository")

// ErrGarbledRecord marks a record skipped because it could not be read: no
// single record file, too large, or not a valid record (rollout.DecodeRecord).
var ErrGarbledRecord = errors.New("garbled record")

// DefaultMaxRecords bounds how many record commits RecordLimits reads of
// one landscape when it sets no maximum.
const DefaultMaxRecords = rollout.DefaultMaxRecords

// landscapesDirSuffix names a cache key's mirror of the landscapes, next to
// its checkout. A checkout's name always ends in "-" and eight hex digits
// (cacheDirName), so the two can never be the same directory.
const landscapesDirSuffix = ".landscapes"

// outgoingRefPrefix holds a record commit in the local mirror while it is
// pushed; it never leaves the mirror.
const outgoingRefPrefix = "refs/profilesync/outgoing/"

// recordAuthor signs record commits.
const (
	recordAuthorName  = "profilesync"
	recordAuthorEmail = "profilesync@profilesync.invalid"
)

// LandscapeRequest names the repository that holds the landscapes' records
// and the caller's local mirror of it.
type LandscapeRequest struct {
	// URL, Credentials and Timeout are as in Request: the ProfileSync's.
	URL         string
	Credentials map[string][]byte
	Timeout     time.Duration
	// CacheKey names the mirror, like "namespace/name"; it may be the key
	// of the ProfileSync's checkout, whose directory it does not touch.
	CacheKey string
}

// Landscapes is a local repository that holds the landscapes' records and
// the commits they name: the mirror FetchLandscapes keeps, or any
// repository on disk (OpenLandscapes). It reads with go-git only.
type Landscapes struct {
	repository *git.Repository
	// storage keeps the pack files open across the thousands of reads of
	// one history; Close releases them.
	storage *filesystem.Storage
}

// Close releases the files the Landscapes holds open.
func (l *Landscapes) Close() error {
	if l.storage == nil {
		return nil
	}
	return l.storage.Close()
}

// readOptions open a repository for many small reads: opening and closing
// the pack file for every object would cost more than reading it.
var readOptions = filesystem.Options{KeepDescriptors: true}

// openForReading opens the bare repository or .git directory at dir.
func openForReading(dir string) (*Landscapes, error) {
	storage := filesystem.NewStorageWithOptions(osfs.New(dir), cache.NewObjectLRU(objectCacheSize), readOptions)
	repository, err := git.Open(storage, nil)
	if err != nil {
		_ = storage.Close()
		return nil, err
	}
	return &Landscapes{repository: repository, storage: storage}, nil
}

// RecordLimits bounds how far back Records reads one landscape's history
// (rollout.RecordLimits: the decision says how far it needs).
type RecordLimits = rollout.RecordLimits

// RecordHistory is what Records read of one landscape; its warnings match
// ErrGarbledRecord or ErrUnknownRevision.
type RecordHistory = rollout.RecordHistory

// FetchLandscapes brings the repository's branches, tags and every
// landscape's records into the cache key's mirror, a bare repository next
// to its checkout, and opens it. Only what changed is downloaded; refs
// deleted on the server are deleted from the mirror. What one call writes
// is bounded by FetcherOptions.MaxCheckoutSize (ErrCheckoutTooLarge). The
// returned Landscapes stays valid until the next FetchLandscapes or
// PushRecord of the same key; Close it when done.
//
// Errors are those of Fetch, without credentials.
func (f *Fetcher) FetchLandscapes(ctx context.Context, req LandscapeRequest) (landscapes *Landscapes, err error) {
	secrets := credentialSecrets(req.URL, req.Credentials)
	defer func() { err = redactError(err, secrets) }()
	mirror, unlock, err := f.openMirror(req)
	if err != nil {
		return nil, err
	}
	defer unlock()
	if req.Timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, req.Timeout)
		defer cancel()
	}
	refSpecs := []config.RefSpec{
		"+refs/heads/*:refs/heads/*",
		"+refs/tags/*:refs/tags/*",
		config.RefSpec("+" + rollout.LandscapeRefPrefix + "*:" + rollout.LandscapeRefPrefix + "*"),
	}
	if err := mirror.fetch(ctx, refSpecs); err != nil {
		return nil, fmt.Errorf("fetch the landscapes' records of %s: %w", mirror.repo, withTimeout(ctx, req.Timeout, err))
	}
	landscapes, err = openForReading(mirror.dir)
	if err != nil {
		return nil, fmt.Errorf("open the mirror of the landscapes of %s: %w", mirror.repo, err)
	}
	return landscapes, nil
}

// OpenLandscapes opens the repository at repoDir (the top of a work tree,
// or a bare repository) to read the landscapes' records it holds, as
// `profilesync rollout status` does on a local path. Close it when done.
func OpenLandscapes(repoDir string) (*Landscapes, error) {
	dir := repoDir
	if info, err := os.Stat(filepath.Join(repoDir, git.GitDirName)); err == nil && info.IsDir() {
		dir = filepath.Join(repoDir, git.GitDirName)
	}
	landscapes, err := openForReading(dir)
	if err != nil {
		return nil, fmt.Errorf("open Git repository %s: %w", repoDir, err)
	}
	return landscapes, nil
}

// Records reads the records of landscape from the tip of its ref back,
// along first parents, within limits. A landscape without a ref has no
// records. A record that is garbled, names another landscape or names a
// commit the repository does not have is skipped with a warning, never an
// error: records are untrusted input. Errors are for a repository that
// cannot be read, and for a name that is no landscape name.
func (l *Landscapes) Records(landscape string, limits RecordLimits) (RecordHistory, error) {
	refName, err := rollout.LandscapeRef(landscape)
	if err != nil {
		return RecordHistory{}, fmt.Errorf("%w: %w", ErrInvalidRequest, err)
	}
	ref, err := l.repository.Reference(plumbing.ReferenceName(refName), true)
	if errors.Is(err, plumbing.ErrReferenceNotFound) {
		return RecordHistory{}, nil
	}
	if err != nil {
		return RecordHistory{}, fmt.Errorf("read %s: %w", refName, err)
	}
	maxRecords := limits.Max
	if maxRecords <= 0 {
		maxRecords = DefaultMaxRecords
	}
	var history RecordHistory
	knownRevisions := map[string]bool{}
	next := ref.Hash()
	for read := 0; ; read++ {
		if read == maxRecords {
			history.Truncated = true
			return history, nil
		}
		commit, err := l.repository.CommitObject(next)
		if err != nil {
			return history, fmt.Errorf("read record %s of %s: %w", next, refName, err)
		}
		record, err := l.recordOf(refName, landscape, commit, knownRevisions)
		switch {
		case err != nil:
			history.Warnings = append(history.Warnings, err)
		default:
			history.Records = append(history.Records, record)
			if record.Kind != rollout.RecordRefused && !limits.Since.IsZero() && !record.ReadyAt.After(limits.Since) {
				return history, nil
			}
		}
		if commit.NumParents() == 0 {
			return history, nil
		}
		next = commit.ParentHashes[0]
	}
}

// recordOf reads and checks the record of one record commit; its errors
// are the warnings of Records.
func (l *Landscapes) recordOf(refName, landscape string, commit *object.Commit, knownRevisions map[string]bool) (rollout.Record, error) {
	source := refName + "@" + commit.Hash.String()
	garbled := func(format string, args ...any) error {
		return fmt.Errorf("%w %s: %s", ErrGarbledRecord, source, fmt.Sprintf(format, args...))
	}
	tree, err := commit.Tree()
	if err != nil {
		return rollout.Record{}, garbled("read its tree: %v", err)
	}
	if len(tree.Entries) != 1 || tree.Entries[0].Name != rollout.RecordFileName || tree.Entries[0].Mode != filemode.Regular {
		return rollout.Record{}, garbled("its tree must hold exactly one regular file, %s", rollout.RecordFileName)
	}
	blob, err := l.repository.BlobObject(tree.Entries[0].Hash)
	if err != nil {
		return rollout.Record{}, garbled("read %s: %v", rollout.RecordFileName, err)
	}
	if blob.Size > rollout.MaxRecordSize {
		return rollout.Record{}, garbled("%s is %d bytes, more than the %d bytes a record may have", rollout.RecordFileName, blob.Size, rollout.MaxRecordSize)
	}
	reader, err := blob.Reader()
	if err != nil {
		return rollout.Record{}, garbled("read %s: %v", rollout.RecordFileName, err)
	}
	data, err := io.ReadAll(io.LimitReader(reader, rollout.MaxRecordSize+1))
	_ = reader.Close()
	if err != nil {
		return rollout.Record{}, garbled("read %s: %v", rollout.RecordFileName, err)
	}
	record, err := rollout.DecodeRecord(source, data)
	if err != nil {
		return rollout.Record{}, fmt.Errorf("%w %w", ErrGarbledRecord, err)
	}
	if record.Landscape != landscape {
		return rollout.Record{}, garbled("landscape: Invalid value %q: the record is under the ref of %q", record.Landscape, landscape)
	}
	known, checked := knownRevisions[record.Revision]
	if !checked {
		_, err := l.repository.CommitObject(plumbing.NewHash(record.Revision))
		known = err == nil
		knownRevisions[record.Revision] = known
	}
	if !known {
		return rollout.Record{}, fmt.Errorf("%w: %s: revision: %s", ErrUnknownRevision, source, record.Revision)
	}
	record.Commit = commit.Hash.String()
	return record, nil
}

// Candidates lists the commits of branch its ref holds that come after
// running, newest first: from the tip back along first parents, to but
// not including running, at most maxCandidates (all when 0). When running
// is not found the list is cut at maxCandidates.
func (l *Landscapes) Candidates(branch, running string, maxCandidates int) ([]string, error) {
	refName := plumbing.NewBranchReferenceName(branch)
	ref, err := l.repository.Reference(refName, true)
	if err != nil {
		return nil, fmt.Errorf("read branch %q: %w", branch, err)
	}
	var candidates []string
	for next := ref.Hash(); maxCandidates == 0 || len(candidates) < maxCandidates; {
		if next.String() == running {
			break
		}
		candidates = append(candidates, next.String())
		commit, err := l.repository.CommitObject(next)
		if err != nil {
			return nil, fmt.Errorf("read commit %s of branch %q: %w", next, branch, err)
		}
		if commit.NumParents() == 0 {
			break
		}
		next = commit.ParentHashes[0]
	}
	return candidates, nil
}

// IsAncestor says whether ancestor is descendant or in its history; both
// must be commits of the repository. It implements rollout.Ancestry.
func (l *Landscapes) IsAncestor(ancestor, descendant string) (bool, error) {
	if ancestor == descendant {
		return true, nil
	}
	older, err := l.repository.CommitObject(plumbing.NewHash(ancestor))
	if err != nil {
		return false, fmt.Errorf("read commit %s: %w", ancestor, err)
	}
	newer, err := l.repository.CommitObject(plumbing.NewHash(descendant))
	if err != nil {
		return false, fmt.Errorf("read commit %s: %w", descendant, err)
	}
	return older.IsAncestor(newer)
}

var (
	_ rollout.Ancestry   = (*Landscapes)(nil)
	_ rollout.Repository = (*Landscapes)(nil)
)

// PushRecord writes record as a new commit on top of its landscape's ref,
// refs/profilesync/landscapes/<record.Landscape>, and pushes that ref, and
// only that ref, to the repository with the request's credentials. It
// returns the record commit.
//
// The ref is built only from the record's validated landscape name (see
// rollout.LandscapeRef), so no input can make it push elsewhere. The push
// is a fast-forward of the ref as it was just fetched: when another writer
// moved it in between, the server keeps theirs and the error matches
// ErrRecordRefMoved. Nothing is retried here; IsTransient says whether the
// caller should. A failed push leaves the server's ref and the mirror's as
// they were.
func (f *Fetcher) PushRecord(ctx context.Context, req LandscapeRequest, record rollout.Record) (commit string, err error) {
	secrets := credentialSecrets(req.URL, req.Credentials)
	defer func() { err = redactError(err, secrets) }()
	content, err := rollout.EncodeRecord(record)
	if err != nil {
		return "", fmt.Errorf("%w: %w", ErrInvalidRequest, err)
	}
	refName, err := rollout.LandscapeRef(record.Landscape)
	if err != nil {
		return "", fmt.Errorf("%w: %w", ErrInvalidRequest, err)
	}
	landscapeRef := plumbing.ReferenceName(refName)
	outgoingRef := plumbing.ReferenceName(outgoingRefPrefix + record.Landscape)

	mirror, unlock, err := f.openMirror(req)
	if err != nil {
		return "", err
	}
	defer unlock()
	if req.Timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, req.Timeout)
		defer cancel()
	}
	// Every landscape's ref at once: they are small, and it prunes the
	// mirror's copy of a ref deleted on the server.
	allLandscapes := config.RefSpec("+" + rollout.LandscapeRefPrefix + "*:" + rollout.LandscapeRefPrefix + "*")
	if err := mirror.fetch(ctx, []config.RefSpec{allLandscapes}); err != nil {
		return "", fmt.Errorf("read %s of %s before pushing a record: %w", refName, mirror.repo, withTimeout(ctx, req.Timeout, err))
	}
	var parent plumbing.Hash
	if tip, err := mirror.repository.Reference(landscapeRef, true); err == nil {
		parent = tip.Hash()
	} else if !errors.Is(err, plumbing.ErrReferenceNotFound) {
		return "", fmt.Errorf("read %s in the mirror of %s: %w", refName, mirror.repo, err)
	}
	recordCommit, err := writeRecordCommit(mirror.repository, record, content, parent)
	if err != nil {
		return "", fmt.Errorf("write the record of %s for %s: %w", record.Landscape, record.Revision, err)
	}

	storer := mirror.repository.Storer
	if err := storer.SetReference(plumbing.NewHashReference(outgoingRef, recordCommit)); err != nil {
		return "", fmt.Errorf("write the record of %s for %s: %w", record.Landscape, record.Revision, err)
	}
	defer func() { _ = storer.RemoveReference(outgoingRef) }()
	// No "+": only a fast-forward of the ref as fetched.
	refSpec := config.RefSpec(string(outgoingRef) + ":" + refName)
	pushErr := mirror.remote.PushContext(ctx, &git.PushOptions{RemoteName: git.DefaultRemoteName, RefSpecs: []config.RefSpec{refSpec}, Auth: mirror.auth})
	if pushErr != nil {
		return "", fmt.Errorf("push %s to %s: %w", refName, mirror.repo, classifyPushError(withTimeout(ctx, req.Timeout, pushErr)))
	}
	// The push is done whatever becomes of the mirror's copy: should it
	// fail, the next fetch brings the mirror up to date.
	_ = storer.SetReference(plumbing.NewHashReference(landscapeRef, recordCommit))
	return recordCommit.String(), nil
}

// IsTransient says whether a failed FetchLandscapes or PushRecord may
// succeed if repeated later without any change: a connection that failed,
// a timeout, a ref another writer moved, a server error. It is false for
// what only a change of the ProfileSync, its Secret, the record or the
// server's configuration can fix: an invalid request, credentials the
// server refuses, a repository that does not exist, a push the server
// rejects on its own, a fetch past the maximum checkout size.
func IsTransient(err error) bool {
	if err == nil {
		return false
	}
	for _, permanent := range []error{
		ErrInvalidRequest, ErrRecordPushRejected, ErrCheckoutTooLarge,
		transport.ErrAuthenticationRequired, transport.ErrAuthorizationFailed, transport.ErrRepositoryNotFound,
	} {
		if errors.Is(err, permanent) {
			return false
		}
	}
	return true
}

// classifyPushError marks go-git's and the server's refusals of a ref
// update: a ref that moved (go-git's own fast-forward check, or the
// server's "fetch first", "stale info", failed lock) or a rejection.
func classifyPushError(err error) error {
	message := err.Error()
	switch {
	case strings.Contains(message, "non-fast-forward"),
		strings.Contains(message, "command error on") && (strings.Contains(message, "fetch first") ||
			strings.Contains(message, "stale info") || strings.Contains(message, "failed to lock") ||
			strings.Contains(message, "failed to update ref") || strings.Contains(message, "cannot lock ref")):
		return fmt.Errorf("%w: %w", ErrRecordRefMoved, err)
	case strings.Contains(message, "command error on"), strings.Contains(message, "unpack error"):
		return fmt.Errorf("%w: %w", ErrRecordPushRejected, err)
	}
	return err
}

// writeRecordCommit stores the record file, its tree and a commit on top of
// parent (none when zero) in repository, and returns the commit. It is
// signed with the record's own time, so the same record always makes the
// same commit and no clock is read.
func writeRecordCommit(repository *git.Repository, record rollout.Record, content []byte, parent plumbing.Hash) (plumbing.Hash, error) {
	storer := repository.Storer
	blob := storer.NewEncodedObject()
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
	blobHash, err := storer.SetEncodedObject(blob)
	if err != nil {
		return plumbing.ZeroHash, err
	}
	tree := &object.Tree{Entries: []object.TreeEntry{{Name: rollout.RecordFileName, Mode: filemode.Regular, Hash: blobHash}}}
	treeObject := storer.NewEncodedObject()
	if err := tree.Encode(treeObject); err != nil {
		return plumbing.ZeroHash, err
	}
	treeHash, err := storer.SetEncodedObject(treeObject)
	if err != nil {
		return plumbing.ZeroHash, err
	}
	when := record.ReadyAt
	if when.IsZero() {
		when = record.AppliedAt
	}
	signature := object.Signature{Name: recordAuthorName, Email: recordAuthorEmail, When: when.UTC()}
	commit := &object.Commit{
		Author:    signature,
		Committer: signature,
		Message:   fmt.Sprintf("%s: %s %s\n\nRecorded by profilesync %s.\n", record.Landscape, record.Kind, record.Revision, record.OperatorVersion),
		TreeHash:  treeHash,
	}
	if !parent.IsZero() {
		commit.ParentHashes = []plumbing.Hash{parent}
	}
	commitObject := storer.NewEncodedObject()
	if err := commit.Encode(commitObject); err != nil {
		return plumbing.ZeroHash, err
	}
	return storer.SetEncodedObject(commitObject)
}

// landscapeMirror is a cache key's bare mirror, opened with the remote of
// a request.
type landscapeMirror struct {
	dir        string
	repository *git.Repository
	remote     *git.Remote
	auth       transport.AuthMethod
	// repo is the redacted URL, for messages.
	repo string
	// budget counts what this call writes, up to maxSize.
	budget  *diskBudget
	maxSize int64
}

// openMirror checks the request, takes the cache key's lock for the mirror
// and opens it, creating it on first use; unlock releases the lock.
func (f *Fetcher) openMirror(req LandscapeRequest) (mirror *landscapeMirror, unlock func(), err error) {
	repo := RedactURL(req.URL)
	repoURL, err := parseRepositoryURL(req.URL)
	if err != nil {
		return nil, nil, err
	}
	auth, err := authFor(repoURL, req.Credentials, f.options.AllowCredentialsOverHTTP, f.root)
	if err != nil {
		return nil, nil, err
	}
	dirName, err := cacheDirName(req.CacheKey)
	if err != nil {
		return nil, nil, err
	}
	dirName += landscapesDirSuffix
	lock := f.lockFor(dirName)
	lock.Lock()
	dir := filepath.Join(f.root, dirName)
	// What one call writes is bounded like a checkout: records are
	// untrusted, and a ref can be made to point at any amount of data.
	budget := newDiskBudget(f.options.MaxCheckoutSize)
	storage := filesystem.NewStorage(budget.filesystem(osfs.New(dir)), cache.NewObjectLRU(objectCacheSize))
	repository, err := git.Open(storage, nil)
	if errors.Is(err, git.ErrRepositoryNotExists) {
		repository, err = git.Init(storage, nil)
	}
	if err != nil {
		_ = storage.Close()
		lock.Unlock()
		// A mirror that cannot be opened is rebuilt by the next call.
		_ = os.RemoveAll(dir)
		return nil, nil, fmt.Errorf("open the mirror of the landscapes of %s: %w", repo, err)
	}
	remote := git.NewRemote(repository.Storer, &config.RemoteConfig{Name: git.DefaultRemoteName, URLs: []string{auth.remoteURL}})
	release := func() {
		_ = storage.Close()
		lock.Unlock()
	}
	mirror = &landscapeMirror{dir: dir, repository: repository, remote: remote, auth: auth.method, repo: repo,
		budget: budget, maxSize: f.options.MaxCheckoutSize}
	return mirror, release, nil
}

// fetch brings refSpecs into the mirror, pruning what the server deleted.
func (m *landscapeMirror) fetch(ctx context.Context, refSpecs []config.RefSpec) error {
	err := m.remote.FetchContext(ctx, &git.FetchOptions{
		RemoteName: git.DefaultRemoteName,
		RefSpecs:   refSpecs,
		Auth:       m.auth,
		Tags:       git.NoTags,
		Prune:      true,
	})
	if m.budget.exceeded() {
		return fmt.Errorf("%w of %s (raise it with --%s)", ErrCheckoutTooLarge, formatBytes(m.maxSize), MaxCheckoutSizeFlag)
	}
	if errors.Is(err, git.NoErrAlreadyUpToDate) {
		return nil
	}
	return err
}
