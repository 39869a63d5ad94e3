package gitsource

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/go-git/go-billy/v5/osfs"
	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/cache"
	"github.com/go-git/go-git/v5/plumbing/object"
)

// ErrInvalidRequest marks errors in what was asked for — a malformed ref,
// an invalid semver range, an unsupported URL, unusable credentials. Retrying
// cannot help until the ProfileSync or its Secret changes.
var ErrInvalidRequest = errors.New("invalid git source")

// ErrReferenceNotFound marks a ref that does not exist on the remote: no
// such branch or tag, no tag in the semver range, a commit not on its branch.
// It may appear later (a tag yet to be pushed), so it is worth retrying.
var ErrReferenceNotFound = errors.New("reference not found")

// ErrConnectionFailed marks a fetch whose connection to the Git server was
// refused, reset or closed before the answer was complete: a server that
// restarts or drops connections. The same fetch repeated a moment later
// may succeed. A fetch that timed out is not marked: it already took the
// whole time it was given.
var ErrConnectionFailed = errors.New("connection to the Git server failed")

// ErrCheckoutTooLarge marks a fetch refused because the checkout grew past
// FetcherOptions.MaxCheckoutSize. Retrying cannot help until the repository
// shrinks at the wanted revision or the limit is raised.
var ErrCheckoutTooLarge = errors.New("the checkout exceeds the maximum checkout size")

// MaxCheckoutSizeFlag is the operator's command-line flag that sets
// FetcherOptions.MaxCheckoutSize. ErrCheckoutTooLarge errors name it, so
// that whoever reads one knows what raises the limit.
const MaxCheckoutSizeFlag = "max-checkout-size"

// revisionHashPrefix separates the ref name from the commit in a revision,
// main@sha1:<hex>, the format Flux uses.
const revisionHashPrefix = "sha1:"

// objectCacheSize bounds the memory go-git may use to cache decoded objects
// during one fetch; several fetches run at once. PlainClone's default is
// 96 MiB.
const objectCacheSize = 32 * cache.MiByte

// Names of the temporary directories inside the cache root. They start with
// a dot so they can never be a cache directory (see cacheDirName).
const (
	incomingDirPattern = ".incoming-*"
	outgoingDirPattern = ".outgoing-*"
	// knownHostsFilePattern names the short-lived copy of known_hosts that
	// the ssh host key parser reads (see sshAuth).
	knownHostsFilePattern = ".known_hosts-*"
)

// Request says what to fetch and where the caller stands.
type Request struct {
	// URL is the repository: https://, http:// or ssh://. User information
	// in an https or http URL is used for basic authentication (a user name
	// alone as a token); https credentials in both URL and Credentials are
	// refused. For ssh it names the ssh user only. Either way it is never
	// stored in the checkout nor shown in errors. A query or fragment is
	// refused: Git URLs cannot have one.
	URL string
	// Ref is the commit to fetch; the zero Ref follows the remote's HEAD.
	Ref Ref
	// Credentials is the data of the Secret named by spec.secretRef, nil
	// when there is none. See the Credential* keys.
	Credentials map[string][]byte
	// Timeout bounds the whole Fetch, listing included; zero leaves it to
	// ctx.
	Timeout time.Duration
	// CacheKey names the cache directory of the object that fetches, like
	// "namespace/name". Each key has one checkout.
	CacheKey string
	// History asks for the branch's history, not only its tip: no shallow
	// clone (spec.verify.pathRules verify every commit since the last
	// applied revision).
	History bool
	// LastRevision is the revision the caller already has (for example
	// status.lastAttemptedRevision), used to compute Result.Changed. Empty
	// when it has none.
	LastRevision string
}

// Result is a checked-out revision.
type Result struct {
	// Dir is the worktree of the revision, including its .git directory,
	// whose remote URL has no user information: no credential is stored
	// anywhere under Dir. It stays valid until the next Fetch or Forget with
	// the same cache key; callers must not modify it.
	Dir string
	// Revision names the revision: "<branch>@sha1:<hex>" for a branch or the
	// remote's HEAD (named by its default branch), "<tag>@sha1:<hex>" for a
	// tag or semver range (the commit, never the annotated tag object), and
	// "sha1:<hex>" for a commit without branch.
	Revision string
	// Commit is the 40-hex-digit SHA-1 of the checked-out commit.
	Commit string
	// Changed is true unless Request.LastRevision names the same commit.
	// It compares commits, not ref names: switching from a branch to a tag
	// of the same commit is not a change of content.
	Changed bool
}

// FetcherOptions configure a Fetcher.
type FetcherOptions struct {
	// AllowCredentialsOverHTTP lets credentials be sent to plain http://
	// URLs, in clear text. Off by default; meant for test servers on
	// loopback and trusted networks.
	AllowCredentialsOverHTTP bool
	// MaxCheckoutSize bounds the bytes a fetch may write to disk for one
	// checkout, object store and worktree together; zero means no limit.
	// A repository's pack can be small and still check out to far more
	// (a large file of zeros compresses to almost nothing), so the limit
	// is enforced on every write, and a fetch that crosses it stops there
	// with ErrCheckoutTooLarge.
	MaxCheckoutSize int64
}

// Fetcher fetches Git revisions into per-object directories under a cache
// root and skips the download when the wanted commit is already checked out.
// It is safe for concurrent use; fetches with the same cache key run one at
// a time.
//
// The cache root belongs to the Fetcher: New removes leftovers of
// interrupted fetches from it, so two processes must not share one.
type Fetcher struct {
	root    string
	options FetcherOptions
	// limits bound every Git object the Fetcher reads (ObjectLimitsFor
	// its MaxCheckoutSize).
	limits ObjectLimits

	refusedMu sync.Mutex
	// refused is, per cache directory, the last revision refused for an
	// object over its bound, so that it is not downloaded again while it is
	// what the ref resolves to.
	refused map[string]*RevisionRefusedError

	locksMu sync.Mutex
	// locks serialise fetches per cache key; one mutex per object ever
	// fetched, which is small and bounded by the number of objects.
	locks map[string]*sync.Mutex
}

// New returns a Fetcher that keeps its checkouts under cacheRoot, creating
// it if needed.
func New(cacheRoot string, options FetcherOptions) (*Fetcher, error) {
	if cacheRoot == "" {
		return nil, fmt.Errorf("%w: empty cache directory", ErrInvalidRequest)
	}
	if options.MaxCheckoutSize < 0 {
		return nil, fmt.Errorf("maximum checkout size %d is negative; use 0 for no limit", options.MaxCheckoutSize)
	}
	root, err := filepath.Abs(cacheRoot)
	if err != nil {
		return nil, fmt.Errorf("resolve cache directory %q: %w", cacheRoot, err)
	}
	if err := os.MkdirAll(root, 0o750); err != nil {
		return nil, fmt.Errorf("create cache directory: %w", err)
	}
	// Leftovers of a fetch interrupted by a crash would otherwise pile up.
	for _, pattern := range []string{incomingDirPattern, outgoingDirPattern, knownHostsFilePattern} {
		leftovers, err := filepath.Glob(filepath.Join(root, pattern))
		if err != nil {
			return nil, fmt.Errorf("find leftover fetches: %w", err)
		}
		for _, leftover := range leftovers {
			if err := os.RemoveAll(leftover); err != nil {
				return nil, fmt.Errorf("remove leftover fetch: %w", err)
			}
		}
	}
	return &Fetcher{root: root, options: options, limits: ObjectLimitsFor(options.MaxCheckoutSize),
		refused: make(map[string]*RevisionRefusedError), locks: make(map[string]*sync.Mutex)}, nil
}

// ObjectLimits are the bounds of the Git objects the Fetcher reads, for
// reading its checkouts (CommitTime) within the same.
func (f *Fetcher) ObjectLimits() ObjectLimits {
	return f.limits
}

// Root is the cache directory.
func (f *Fetcher) Root() string {
	return f.root
}

// Fetch resolves req.Ref on the remote and makes sure the resolved commit is
// checked out in the cache directory of req.CacheKey.
//
// It always lists the remote's refs first (one cheap request). When the
// commit they resolve to is already checked out, it downloads nothing.
// Otherwise it clones (shallow and single-branch where possible) into a
// temporary directory in the cache root and then swaps it into place, so a
// failed, cancelled or oversized fetch leaves the previous checkout
// untouched. The clone is given the URL without user information, which
// travels only as authentication, so no credential reaches the disk.
//
// Errors never contain credentials and say what failed for which URL; they
// match ErrInvalidRequest, ErrReferenceNotFound or ErrCheckoutTooLarge where
// that applies, and context.DeadlineExceeded on timeout.
func (f *Fetcher) Fetch(ctx context.Context, req Request) (result *Result, err error) {
	secrets := credentialSecrets(req.URL, req.Credentials)
	// Every error leaves through here, so none can carry a credential.
	defer func() { err = redactError(err, secrets) }()

	repo := RedactURL(req.URL)
	repoURL, err := parseRepositoryURL(req.URL)
	if err != nil {
		return nil, err
	}
	auth, err := authFor(repoURL, req.Credentials, f.options.AllowCredentialsOverHTTP, f.root)
	if err != nil {
		return nil, err
	}
	if err := req.Ref.validate(); err != nil {
		return nil, err
	}
	dirName, err := cacheDirName(req.CacheKey)
	if err != nil {
		return nil, err
	}
	if req.Timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, req.Timeout)
		defer cancel()
	}

	lock := f.lockFor(dirName)
	lock.Lock()
	defer lock.Unlock()

	listing, err := listRemote(ctx, auth)
	if err != nil {
		return nil, fmt.Errorf("list refs of %s: %w", repo, withTimeout(ctx, req.Timeout, err))
	}
	wanted, err := resolve(req.Ref, listing, repo)
	if err != nil {
		return nil, err
	}

	revisionOf := func(commit plumbing.Hash) string {
		if wanted.revisionName != "" {
			return wanted.revisionName + "@" + revisionHashPrefix + commit.String()
		}
		return revisionHashPrefix + commit.String()
	}
	if refused := f.refusedRevision(dirName, revisionOf(wanted.commit)); refused != nil {
		return nil, refused
	}
	dir := filepath.Join(f.root, dirName)
	if !hasCheckout(dir, req.Ref, wanted, listing, req.History) {
		commit, err := f.cloneInto(ctx, dir, req, wanted, auth, repo)
		if errors.Is(err, ErrObjectTooLarge) {
			refused := &RevisionRefusedError{Revision: revisionOf(wanted.commit), Err: err}
			f.rememberRefused(dirName, refused)
			return nil, refused
		}
		if err != nil {
			return nil, err
		}
		// A branch or tag can move between the listing and the clone; the
		// clone is newer, and it is what is on disk.
		wanted.commit = commit
	}

	revision := revisionOf(wanted.commit)
	f.rememberRefused(dirName, nil)
	return &Result{
		Dir:      dir,
		Revision: revision,
		Commit:   wanted.commit.String(),
		Changed:  CommitOfRevision(req.LastRevision) != wanted.commit.String(),
	}, nil
}

// Forget removes the checkout of cacheKey and its mirror of the landscapes'
// records, for when its object is deleted.
// A key without a checkout is not an error.
func (f *Fetcher) Forget(cacheKey string) error {
	dirName, err := cacheDirName(cacheKey)
	if err != nil {
		return err
	}
	lock := f.lockFor(dirName)
	lock.Lock()
	defer lock.Unlock()
	if err := os.RemoveAll(filepath.Join(f.root, dirName)); err != nil {
		return fmt.Errorf("remove checkout of %q: %w", cacheKey, err)
	}
	f.rememberRefused(dirName, nil)
	mirrorLock := f.lockFor(dirName + landscapesDirSuffix)
	mirrorLock.Lock()
	defer mirrorLock.Unlock()
	if err := os.RemoveAll(filepath.Join(f.root, dirName+landscapesDirSuffix)); err != nil {
		return fmt.Errorf("remove the landscapes' mirror of %q: %w", cacheKey, err)
	}
	return nil
}

// RevisionRefusedError is a revision whose fetch was refused for what it
// holds, an object over its bound (ErrObjectTooLarge), before anything of
// it was inflated: the revision itself is at fault, as when it does not
// build. The Fetcher remembers it per cache key and refuses it again
// without downloading it while the ref resolves to it; a restarted
// process downloads it once more and refuses it again from the objects'
// headers.
type RevisionRefusedError struct {
	// Revision is the revision refused, as Result.Revision names it.
	Revision string
	Err      error
}

func (e *RevisionRefusedError) Error() string {
	// Not the revision as such: "<ref>@" would read as user information to
	// the redaction of errors.
	return fmt.Sprintf("commit %s refused: %v", CommitOfRevision(e.Revision), e.Err)
}
func (e *RevisionRefusedError) Unwrap() error { return e.Err }

// refusedRevision is the refusal remembered for revision in the cache
// directory dirName, nil when there is none.
func (f *Fetcher) refusedRevision(dirName, revision string) *RevisionRefusedError {
	f.refusedMu.Lock()
	defer f.refusedMu.Unlock()
	if refused := f.refused[dirName]; refused != nil && refused.Revision == revision {
		return refused
	}
	return nil
}

// rememberRefused keeps refused as the refusal of dirName; nil forgets it.
func (f *Fetcher) rememberRefused(dirName string, refused *RevisionRefusedError) {
	f.refusedMu.Lock()
	defer f.refusedMu.Unlock()
	if refused == nil {
		delete(f.refused, dirName)
		return
	}
	f.refused[dirName] = refused
}

func (f *Fetcher) lockFor(dirName string) *sync.Mutex {
	f.locksMu.Lock()
	defer f.locksMu.Unlock()
	lock, ok := f.locks[dirName]
	if !ok {
		lock = &sync.Mutex{}
		f.locks[dirName] = lock
	}
	return lock
}

// hasCheckout says whether dir already has wanted checked out. For a commit
// pinned to a branch, the checkout must also come from that branch: its
// membership was checked when it was cloned, and a checkout of the same
// commit from elsewhere proves nothing about the branch. A shallow
// checkout lacks the history asked for. A tag's checkout must hold the
// tag as the remote lists it: spec.verify's modes Tag and TagAndHEAD
// verify the annotated tag object, and a checkout of the same commit made
// for another tag (a release candidate's, say) lacks it, as one made before
// the tag was signed again holds the old one. Any problem reading the
// checkout counts as "no": fetching again repairs it.
func hasCheckout(dir string, ref Ref, wanted resolution, listing remoteRefs, history bool) bool {
	repository, err := git.PlainOpen(dir)
	if err != nil {
		return false
	}
	head, err := repository.Head()
	if err != nil || head.Hash() != wanted.commit {
		return false
	}
	if shallow, err := repository.Storer.Shallow(); history && (err != nil || len(shallow) > 0) {
		return false
	}
	if wanted.cloneRef.IsTag() {
		local, err := repository.Reference(wanted.cloneRef, false)
		if err != nil || local.Hash() != listing.hashes[wanted.cloneRef] {
			return false
		}
	}
	if ref.Commit != "" && ref.Branch != "" {
		if _, err := repository.Reference(plumbing.NewRemoteReferenceName(git.DefaultRemoteName, ref.Branch), false); err != nil {
			return false
		}
	}
	return true
}

// cloneInto clones wanted into a fresh directory, checks out its commit and
// replaces dir with it. It returns the commit checked out.
//
// Everything the clone writes, objects and worktree, goes through one
// diskBudget, so a checkout larger than MaxCheckoutSize is stopped at the
// write that crosses the limit rather than found out once it is on disk.
func (f *Fetcher) cloneInto(ctx context.Context, dir string, req Request, wanted resolution, auth clientAuth, repo string) (plumbing.Hash, error) {
	incoming, err := os.MkdirTemp(f.root, incomingDirPattern)
	if err != nil {
		return plumbing.ZeroHash, fmt.Errorf("create fetch directory: %w", err)
	}
	defer os.RemoveAll(incoming) // a no-op once it has been moved into place

	options := &git.CloneOptions{
		URL:  auth.remoteURL,
		Auth: auth.method,
		// Tags are only needed to find a pinned commit that is on no branch.
		Tags: git.NoTags,
	}
	what := req.Ref.String()
	switch {
	case wanted.cloneRef == "":
		options.Tags = git.AllTags
		what = fmt.Sprintf("all branches and tags (looking for commit %s)", wanted.commit)
	case wanted.shallow && !req.History:
		options.ReferenceName = wanted.cloneRef
		options.SingleBranch = true
		options.Depth = 1
	default:
		options.ReferenceName = wanted.cloneRef
		options.SingleBranch = true
	}

	budget := newDiskBudget(f.options.MaxCheckoutSize)
	// The same layout git.PlainClone makes, with every write counted.
	worktree := budget.filesystem(osfs.New(incoming))
	dotGit, err := worktree.Chroot(git.GitDirName)
	if err != nil {
		return plumbing.ZeroHash, fmt.Errorf("open the .git directory of the fetch: %w", err)
	}
	storage := openBoundedStorage(dotGit, f.limits, objectCacheSize, false)
	defer storage.Close()
	tooLarge := func() error {
		return fmt.Errorf("fetch %s of %s: %w of %s (raise it with --%s)",
			what, repo, ErrCheckoutTooLarge, formatBytes(f.options.MaxCheckoutSize), MaxCheckoutSizeFlag)
	}

	repository, err := git.CloneContext(ctx, storage, worktree, options)
	if budget.exceeded() {
		// Whatever go-git made of the failed write, the cause is the limit.
		return plumbing.ZeroHash, tooLarge()
	}
	if err != nil {
		return plumbing.ZeroHash, fmt.Errorf("fetch %s of %s: %w", what, repo, withTimeout(ctx, req.Timeout, err))
	}

	commit, err := checkOut(repository, req.Ref, wanted, repo)
	if budget.exceeded() {
		return plumbing.ZeroHash, tooLarge()
	}
	if err != nil {
		return plumbing.ZeroHash, err
	}
	if err := replaceDir(dir, incoming, f.root); err != nil {
		return plumbing.ZeroHash, err
	}
	return commit, nil
}

// checkOut makes sure the clone's worktree holds the wanted commit and
// returns it. A clone of a branch or tag already has its tip checked out; a
// pinned commit is looked up and, with a branch, must be in its history.
func checkOut(repository *git.Repository, ref Ref, wanted resolution, repo string) (plumbing.Hash, error) {
	head, err := repository.Head()
	if err != nil {
		return plumbing.ZeroHash, fmt.Errorf("read HEAD of the clone of %s: %w", repo, err)
	}
	if ref.Commit == "" {
		return head.Hash(), nil
	}

	commit, err := repository.CommitObject(wanted.commit)
	if errors.Is(err, plumbing.ErrObjectNotFound) {
		if ref.Branch != "" {
			return plumbing.ZeroHash, fmt.Errorf("%w: commit %s is not on branch %q of %s",
				ErrReferenceNotFound, ref.Commit, ref.Branch, repo)
		}
		return plumbing.ZeroHash, fmt.Errorf("%w: commit %s not found on any branch or tag of %s",
			ErrReferenceNotFound, ref.Commit, repo)
	}
	if err != nil {
		return plumbing.ZeroHash, fmt.Errorf("read commit %s of %s: %w", ref.Commit, repo, err)
	}
	if ref.Branch != "" && head.Hash() != commit.Hash {
		// The objects of a single-branch clone are all reachable from the
		// branch, so finding the commit nearly proves membership; checking
		// ancestry makes it exact.
		tip, err := repository.CommitObject(head.Hash())
		if err != nil {
			return plumbing.ZeroHash, fmt.Errorf("read tip of branch %q of %s: %w", ref.Branch, repo, err)
		}
		onBranch, err := commit.IsAncestor(tip)
		if err != nil {
			return plumbing.ZeroHash, fmt.Errorf("check commit %s is on branch %q of %s: %w", ref.Commit, ref.Branch, repo, err)
		}
		if !onBranch {
			return plumbing.ZeroHash, fmt.Errorf("%w: commit %s is not on branch %q of %s",
				ErrReferenceNotFound, ref.Commit, ref.Branch, repo)
		}
	}
	if head.Hash() != commit.Hash {
		if err := checkOutCommit(repository, commit); err != nil {
			return plumbing.ZeroHash, fmt.Errorf("check out commit %s of %s: %w", ref.Commit, repo, err)
		}
	}
	return commit.Hash, nil
}

func checkOutCommit(repository *git.Repository, commit *object.Commit) error {
	worktree, err := repository.Worktree()
	if err != nil {
		return err
	}
	return worktree.Checkout(&git.CheckoutOptions{Hash: commit.Hash, Force: true})
}

// replaceDir puts incoming where dir is. Renames within one filesystem are
// atomic, but a directory cannot be renamed over a non-empty one, so the old
// checkout is first moved aside: for an instant dir does not exist, which is
// harmless because fetches of one key are serialised and callers read Dir
// only after Fetch returns.
func replaceDir(dir, incoming, root string) error {
	outgoing := ""
	if _, err := os.Lstat(dir); err == nil {
		aside, err := os.MkdirTemp(root, outgoingDirPattern)
		if err != nil {
			return fmt.Errorf("make room for the new checkout: %w", err)
		}
		outgoing = filepath.Join(aside, "checkout")
		if err := os.Rename(dir, outgoing); err != nil {
			_ = os.RemoveAll(aside)
			return fmt.Errorf("move the old checkout aside: %w", err)
		}
		defer os.RemoveAll(aside)
	}
	if err := os.Rename(incoming, dir); err != nil {
		if outgoing != "" {
			// Put the old checkout back so the caller keeps a working tree.
			_ = os.Rename(outgoing, dir)
		}
		return fmt.Errorf("move the new checkout into place: %w", err)
	}
	return nil
}

// cacheDirName turns a cache key into a directory name that is safe on any
// filesystem and unique per key: the key with every character other than
// letters, digits, '.', '_' and '-' replaced by '_' (so "ns/name" becomes
// "ns_name-…", readable when inspecting the cache), followed by a short hash
// of the exact key so that keys differing only in replaced characters never
// share a directory. It never starts with a dot, which the temporary
// directories use.
func cacheDirName(cacheKey string) (string, error) {
	if cacheKey == "" {
		return "", fmt.Errorf("%w: empty cache key", ErrInvalidRequest)
	}
	readable := []rune(cacheKey)
	for i, r := range readable {
		safe := r < 128 && (r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '.' || r == '_' || r == '-')
		if !safe || (i == 0 && r == '.') {
			readable[i] = '_'
		}
	}
	// Long keys are cut so the name stays well inside file name limits.
	const maxReadable = 100
	if len(readable) > maxReadable {
		readable = readable[:maxReadable]
	}
	sum := sha256.Sum256([]byte(cacheKey))
	return string(readable) + "-" + hex.EncodeToString(sum[:4]), nil
}

// CommitOfRevision is the hex commit of a revision ("main@sha1:<hex>" or
// "sha1:<hex>"), or "" when it names none.
func CommitOfRevision(revision string) string {
	i := strings.LastIndex(revision, revisionHashPrefix)
	if i < 0 {
		return ""
	}
	return revision[i+len(revisionHashPrefix):]
}

// RefOfRevision is the ref name of a revision ("main" of
// "main@sha1:<hex>"), or "" when it names none.
func RefOfRevision(revision string) string {
	if i := strings.LastIndex(revision, "@"+revisionHashPrefix); i > 0 {
		return revision[:i]
	}
	return ""
}

// withTimeout adds the timeout to an error caused by ctx's deadline, so the
// message says "timed out after 30s" rather than only "context deadline
// exceeded", and makes sure errors.Is finds context.DeadlineExceeded even
// when the transport reported it only in words.
func withTimeout(ctx context.Context, timeout time.Duration, err error) error {
	if !errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return err
	}
	alreadySaysSo := errors.Is(err, context.DeadlineExceeded)
	switch {
	case timeout > 0 && alreadySaysSo:
		return fmt.Errorf("timed out after %s: %w", timeout, err)
	case timeout > 0:
		return fmt.Errorf("timed out after %s (%w): %w", timeout, context.DeadlineExceeded, err)
	case alreadySaysSo:
		return err
	default:
		return fmt.Errorf("%w: %w", context.DeadlineExceeded, err)
	}
}

// formatBytes writes a size the way a person would set it: in the largest
// binary unit that divides it, like "64 MiB", else in bytes.
func formatBytes(size int64) string {
	for _, unit := range []struct {
		name  string
		bytes int64
	}{{"GiB", 1 << 30}, {"MiB", 1 << 20}, {"KiB", 1 << 10}} {
		if size >= unit.bytes && size%unit.bytes == 0 {
			return fmt.Sprintf("%d %s", size/unit.bytes, unit.name)
		}
	}
	return fmt.Sprintf("%d bytes", size)
}
