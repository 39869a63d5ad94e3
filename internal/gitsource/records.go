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
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/go-git/go-git/v5/plumbing/transport"

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
	// Branch is the branch the landscapes follow, the one branch
	// FetchLandscapes mirrors besides the records; empty mirrors the
	// records only. PushRecord does not read it.
	Branch string
	// Signer signs the record commits PushRecord writes
	// (spec.rollout.signingKey); nil writes them unsigned.
	Signer *RecordSigner
}

// Landscapes is a local repository that holds the landscapes' records and
// the commits they name: the mirror FetchLandscapes keeps, or any
// repository on disk (OpenLandscapes). It reads with go-git only.
type Landscapes struct {
	repository *git.Repository
	// storage keeps the pack files open across the thousands of reads of
	// one history, and bounds every object read; Close releases them.
	storage *boundedStorage
	// recordKeys, when set, are the keys Records checks each record's
	// signature against at recordKeysAt (CheckRecordSignatures).
	recordKeys   *RecordKeys
	recordKeysAt time.Time
}

// CheckRecordSignatures makes Records check the signature of every record
// it reads against keys at now (the decision's time: an allowed_signers
// line's valid-after and valid-before), marking each
// (rollout.Record.Signature): a landscape keys has no key for gets every
// record marked unknown key.
func (l *Landscapes) CheckRecordSignatures(keys RecordKeys, now time.Time) {
	l.recordKeys, l.recordKeysAt = &keys, now
}

// Close releases the files the Landscapes holds open.
func (l *Landscapes) Close() error {
	if l.storage == nil {
		return nil
	}
	return l.storage.Close()
}

// openForReading opens the bare repository or .git directory at dir for
// many small reads (opening and closing the pack file for every object
// would cost more than reading it), every object within limits.
func openForReading(dir string, limits ObjectLimits) (*Landscapes, error) {
	storage := openBoundedStorage(osfs.New(dir), limits, objectCacheSize, true)
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

// FetchLandscapes brings the branch the landscapes follow (req.Branch)
// and every landscape's records into the cache key's mirror, a bare
// repository next to its checkout, and opens it. Nothing else is fetched:
// pushes to other branches and tags cost the mirror nothing. Only what
// changed is downloaded; refs deleted on the server are deleted from the
// mirror, and refs it no longer wants too. What the mirror holds on disk,
// across fetches, is bounded by FetcherOptions.MaxCheckoutSize: a fetch that
// would pass it empties the mirror (collecting what nothing wanted reaches)
// and fetches once more, and fails with ErrCheckoutTooLarge when what is
// wanted alone does not fit. Every object fetched and read is bounded by
// its kind (ErrObjectTooLarge). The returned Landscapes stays valid until
// the next FetchLandscapes or PushRecord of the same key; Close it when
// done.
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
	if err := mirror.fetchWanted(ctx, req.Branch); err != nil {
		return nil, fmt.Errorf("fetch the landscapes' records of %s: %w", mirror.repo, withTimeout(ctx, req.Timeout, err))
	}
	landscapes, err = openForReading(mirror.dir, f.limits)
	if err != nil {
		return nil, fmt.Errorf("open the mirror of the landscapes of %s: %w", mirror.repo, err)
	}
	return landscapes, nil
}

// OpenLandscapes opens the repository at repoDir (the top of a work tree,
// or a bare repository) to read the landscapes' records it holds, as
// `profilesync rollout status` does on a local path, every object within
// limits. Close it when done.
func OpenLandscapes(repoDir string, limits ObjectLimits) (*Landscapes, error) {
	dir := repoDir
	if info, err := os.Stat(filepath.Join(repoDir, git.GitDirName)); err == nil && info.IsDir() {
		dir = filepath.Join(repoDir, git.GitDirName)
	}
	landscapes, err := openForReading(dir, limits)
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
			if l.recordKeys != nil {
				record.Signature = VerifyRecordSignature(commit, landscape, *l.recordKeys, l.recordKeysAt)
			}
			history.Records = append(history.Records, record)
			// A record whose signature does not verify never ends the
			// reading: else a forged record with an old readyAt would hide
			// the genuine ones below it.
			trusted := !record.Signature.Checked || record.Signature.Verified
			if trusted && record.Kind.Runs() && !limits.Since.IsZero() && !record.ReadyAt.After(limits.Since) {
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
	err = mirror.fetch(ctx, []config.RefSpec{allLandscapes})
	if errors.Is(err, ErrCheckoutTooLarge) {
		// Collected as FetchLandscapes does; the push needs the records only.
		if err = mirror.recreate(); err == nil {
			err = mirror.fetch(ctx, []config.RefSpec{allLandscapes})
		}
	}
	if err != nil {
		return "", fmt.Errorf("read %s of %s before pushing a record: %w", refName, mirror.repo, withTimeout(ctx, req.Timeout, err))
	}
	var parent plumbing.Hash
	if tip, err := mirror.repository.Reference(landscapeRef, true); err == nil {
		parent = tip.Hash()
	} else if !errors.Is(err, plumbing.ErrReferenceNotFound) {
		return "", fmt.Errorf("read %s in the mirror of %s: %w", refName, mirror.repo, err)
	}
	recordCommit, err := writeRecordCommit(mirror.repository, record, content, parent, req.Signer)
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
// rejects on its own, a fetch past the maximum checkout size, an object
// over its bound, a record key that cannot be used.
func IsTransient(err error) bool {
	if err == nil {
		return false
	}
	for _, permanent := range []error{
		ErrInvalidRequest, ErrRecordPushRejected, ErrCheckoutTooLarge, ErrObjectTooLarge, ErrInvalidRecordKey,
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
// parent (none when zero) in repository, and returns the commit. Its author
// and committer carry the record's own time, so no clock is read (and the
// same record makes the same commit, but for an ECDSA signature, which
// draws a random number). With signer, the commit is signed with its SSH
// key, as git signs with gpg.format=ssh.
func writeRecordCommit(repository *git.Repository, record rollout.Record, content []byte, parent plumbing.Hash, signer *RecordSigner) (plumbing.Hash, error) {
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
	if signer != nil {
		if err := signer.signCommit(commit); err != nil {
			return plumbing.ZeroHash, err
		}
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
	storage    *boundedStorage
	remote     *git.Remote
	auth       transport.AuthMethod
	remoteURL  string
	// repo is the redacted URL, for messages.
	repo string
	// budget counts what the mirror holds on disk, from what it held when
	// opened, up to maxSize: the bound holds across fetches, not per fetch.
	budget  *diskBudget
	maxSize int64
	limits  ObjectLimits
}

// openMirror checks the request, takes the cache key's lock for the mirror
// and opens it, creating it on first use; unlock releases the lock.
func (f *Fetcher) openMirror(req LandscapeRequest) (mirror *landscapeMirror, unlock func(), err error) {
	return f.openMirrorAt(req, landscapesDirSuffix)
}

// openMirrorAt is openMirror of the mirror whose directory is the cache
// key's with suffix: the landscapes' (landscapesDirSuffix) or the
// proposals' (proposalsDirSuffix).
func (f *Fetcher) openMirrorAt(req LandscapeRequest, suffix string) (mirror *landscapeMirror, unlock func(), err error) {
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
	dirName += suffix
	lock := f.lockFor(dirName)
	lock.Lock()
	mirror = &landscapeMirror{dir: filepath.Join(f.root, dirName), auth: auth.method, remoteURL: auth.remoteURL, repo: repo,
		maxSize: f.options.MaxCheckoutSize, limits: f.limits}
	if err := mirror.open(); err != nil {
		lock.Unlock()
		// A mirror that cannot be opened is rebuilt by the next call.
		_ = os.RemoveAll(mirror.dir)
		return nil, nil, fmt.Errorf("open the mirror of %s: %w", repo, err)
	}
	release := func() {
		mirror.close()
		lock.Unlock()
	}
	return mirror, release, nil
}

// open opens the mirror's directory, creating the repository on first use,
// with a budget that starts from what the directory already holds.
func (m *landscapeMirror) open() error {
	// A pack whose receipt was interrupted (a crash) is never read: it
	// only takes room.
	leftovers, _ := filepath.Glob(filepath.Join(m.dir, "objects", "pack", "tmp_pack_*"))
	for _, leftover := range leftovers {
		_ = os.Remove(leftover)
	}
	m.budget = newDiskBudget(m.maxSize)
	if err := m.budget.count(m.dir); err != nil {
		return err
	}
	m.storage = openBoundedStorage(m.budget.filesystem(osfs.New(m.dir)), m.limits, objectCacheSize, false)
	repository, err := git.Open(m.storage, nil)
	if errors.Is(err, git.ErrRepositoryNotExists) {
		repository, err = git.Init(m.storage, nil)
	}
	if err != nil {
		_ = m.storage.Close()
		return err
	}
	m.repository = repository
	m.remote = git.NewRemote(repository.Storer, &config.RemoteConfig{Name: git.DefaultRemoteName, URLs: []string{m.remoteURL}})
	return nil
}

func (m *landscapeMirror) close() {
	_ = m.storage.Close()
}

// recreate empties the mirror and opens it anew: the way it is collected
// when it has reached its budget. Objects that no wanted ref reaches any
// more (branches no landscape follows, a force-pushed history) are gone;
// the next fetch brings back what is wanted.
func (m *landscapeMirror) recreate() error {
	m.close()
	if err := os.RemoveAll(m.dir); err != nil {
		return fmt.Errorf("empty the mirror of the landscapes of %s: %w", m.repo, err)
	}
	if err := m.open(); err != nil {
		return fmt.Errorf("open the mirror of the landscapes of %s: %w", m.repo, err)
	}
	return nil
}

// mirrorRefSpecs are what a mirror holds: the branch the landscapes
// follow and every landscape's records. Nothing else is fetched, so a
// push to another branch or a tag costs the mirror nothing.
func mirrorRefSpecs(branch string) []config.RefSpec {
	specs := []config.RefSpec{config.RefSpec("+" + rollout.LandscapeRefPrefix + "*:" + rollout.LandscapeRefPrefix + "*")}
	if branch != "" {
		name := plumbing.NewBranchReferenceName(branch)
		specs = append(specs, config.RefSpec("+"+name+":"+name))
	}
	return specs
}

// fetchWanted brings the branch and the records into the mirror within its
// budget. A mirror that would pass its budget is collected (recreate) and
// fetched once more: only what is wanted now must fit. Refs the mirror no
// longer wants (another branch, tags an older mirror kept) are removed.
func (m *landscapeMirror) fetchWanted(ctx context.Context, branch string) error {
	if strings.ContainsAny(branch, "*:^~?[\\ ") || strings.HasPrefix(branch, "-") {
		return fmt.Errorf("%w: branch %q is no branch name", ErrInvalidRequest, branch)
	}
	specs := mirrorRefSpecs(branch)
	err := m.fetch(ctx, specs)
	if errors.Is(err, ErrCheckoutTooLarge) {
		if err := m.recreate(); err != nil {
			return err
		}
		err = m.fetch(ctx, specs)
	}
	if errors.Is(err, git.NoMatchingRefSpecError{}) {
		// Only the branch is named; the records' pattern may match nothing.
		return fmt.Errorf("%w: branch %q not found on %s", ErrReferenceNotFound, branch, m.repo)
	}
	if err != nil {
		return err
	}
	return m.dropUnwantedRefs(branch)
}

// dropUnwantedRefs removes every ref but the branch and the records, so
// that what they alone reached is collected with the mirror.
func (m *landscapeMirror) dropUnwantedRefs(branch string) error {
	refs, err := m.repository.Storer.IterReferences()
	if err != nil {
		return fmt.Errorf("list the refs of the mirror of %s: %w", m.repo, err)
	}
	var unwanted []plumbing.ReferenceName
	_ = refs.ForEach(func(ref *plumbing.Reference) error {
		name := ref.Name()
		wanted := name == plumbing.HEAD || strings.HasPrefix(name.String(), rollout.LandscapeRefPrefix) ||
			(branch != "" && name == plumbing.NewBranchReferenceName(branch))
		if !wanted {
			unwanted = append(unwanted, name)
		}
		return nil
	})
	for _, name := range unwanted {
		if err := m.repository.Storer.RemoveReference(name); err != nil {
			return fmt.Errorf("remove %s from the mirror of %s: %w", name, m.repo, err)
		}
	}
	return nil
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
