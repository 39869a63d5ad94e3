package gitsource

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"strings"

	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/cache"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/go-git/go-git/v5/storage/filesystem"
)

// ErrMalformedTree marks a commit whose tree no Git checkout would write: an
// entry named "", ".", "..", ".git" (in any case) or containing a slash, or
// two entries of one name. Such a tree can only come from a crafted commit,
// so it is refused rather than written in some guessed way.
var ErrMalformedTree = errors.New("malformed tree")

// ExportTree writes the files of one revision of the local repository at
// repoDir into dest and returns the full SHA-1 of the commit it wrote, so
// that two revisions of a repository can be built side by side (base and
// head of a pull request) without touching its work tree.
//
// repoDir is a work tree (or any directory inside one) or a bare
// repository. revision is anything go-git's Repository.ResolveRevision
// understands: a branch, a remote-tracking branch ("origin/main"), a tag
// (annotated tags are peeled to their commit), a full or abbreviated SHA-1,
// "HEAD", and ancestry like "HEAD~1" or "main^2"; empty means HEAD. Only
// committed content is exported: the work tree and the index are not read.
//
// dest must not exist or be an empty directory. It receives exactly the
// revision's tree and nothing else, in particular no .git: regular and
// executable files (mode 0644 or 0755 before umask), directories, and
// symbolic links recreated as links with their target as committed, even a
// target outside dest, because the build refuses links that leave the
// repository and must see them to do so. A submodule becomes an empty
// directory, as in a checkout that has not initialised it. Every write goes
// through an os.Root on dest, so no entry can write outside it.
//
// maxBytes bounds the exported content (file sizes plus symbolic link
// targets), because a small commit can hold a file that is huge once
// inflated; zero means no limit. An export that would pass it stops with an
// error matching ErrCheckoutTooLarge. On any error dest is left empty (or
// absent, when ExportTree created it).
//
// Errors match ErrReferenceNotFound when the revision does not resolve (for
// example an ancestor missing from a shallow clone), ErrMalformedTree for a
// tree no checkout would write, and ctx's error when it is done.
func ExportTree(ctx context.Context, repoDir, revision, dest string, maxBytes int64) (commit string, err error) {
	if maxBytes < 0 {
		return "", fmt.Errorf("maximum export size %d is negative; use 0 for no limit", maxBytes)
	}
	if revision == "" {
		revision = string(plumbing.HEAD)
	}
	repository, storage, err := openLocalRepository(repoDir, ObjectLimitsFor(maxBytes))
	if err != nil {
		return "", err
	}
	defer storage.Close()
	return exportRevision(ctx, repository, repoDir, revision, dest, maxBytes)
}

// exportRevision is ExportTree of an opened repository, which repoDir
// names in messages.
func exportRevision(ctx context.Context, repository *git.Repository, repoDir, revision, dest string, maxBytes int64) (commit string, err error) {
	hash, err := resolveLocalRevision(repository, repoDir, revision)
	if err != nil {
		return "", err
	}
	commitObject, err := repository.CommitObject(hash)
	if err != nil {
		return "", fmt.Errorf("read commit %s (%s) of %s: %w", hash, revision, repoDir, err)
	}
	tree, err := commitObject.Tree()
	if err != nil {
		return "", fmt.Errorf("read the tree of commit %s (%s) of %s: %w", hash, revision, repoDir, err)
	}

	cleanUp, err := prepareExportDir(dest)
	if err != nil {
		return "", err
	}
	root, err := os.OpenRoot(dest)
	if err != nil {
		cleanUp()
		return "", fmt.Errorf("open export directory %s: %w", dest, err)
	}
	defer root.Close()

	export := treeExport{ctx: ctx, repository: repository, root: root, remaining: maxBytes, limited: maxBytes > 0}
	if err := export.tree(tree, "."); err != nil {
		cleanUp()
		what := fmt.Sprintf("export %s (commit %s) of %s to %s", revision, hash, repoDir, dest)
		var tooLarge *exportTooLargeError
		if errors.As(err, &tooLarge) {
			return "", fmt.Errorf("%s: %w of %s: reached at %s (%s)", what, ErrCheckoutTooLarge, formatBytes(maxBytes), tooLarge.name, formatBytes(tooLarge.size))
		}
		return "", fmt.Errorf("%s: %w", what, err)
	}
	return hash.String(), nil
}

// openLocalRepository opens the repository at or above repoDir (a linked
// work tree's too) with the bounded storer of every repository we read
// (openBoundedStorage): no object over its bound is inflated, and a blob
// within it is read as it is consumed. Close the storage when done.
// lazyObjectThreshold is the size above which an object is read from disk
// as it is consumed rather than inflated on access.
const lazyObjectThreshold = 64 << 10

func openLocalRepository(repoDir string, limits ObjectLimits) (*git.Repository, *boundedStorage, error) {
	opened, err := git.PlainOpenWithOptions(repoDir, &git.PlainOpenOptions{DetectDotGit: true, EnableDotGitCommonDir: true})
	if err != nil {
		return nil, nil, fmt.Errorf("open Git repository %s: %w", repoDir, err)
	}
	storage, ok := opened.Storer.(*filesystem.Storage)
	if !ok {
		return nil, nil, fmt.Errorf("open Git repository %s: not a repository on disk", repoDir)
	}
	bounded := openBoundedStorage(storage.Filesystem(), limits, cache.DefaultMaxSize, false)
	repository, err := git.Open(bounded, nil)
	if err != nil {
		_ = bounded.Close()
		return nil, nil, fmt.Errorf("open Git repository %s: %w", repoDir, err)
	}
	return repository, bounded, nil
}

// resolveLocalRevision resolves revision to a commit. go-git answers a
// missing ref, a missing ancestor (typical of shallow clones, as CI checks
// out by default) and an ancestor before the first commit with three
// different errors; all mean the revision is not there.
func resolveLocalRevision(repository *git.Repository, repoDir, revision string) (plumbing.Hash, error) {
	hash, err := repository.ResolveRevision(plumbing.Revision(revision))
	if bounded, ok := repository.Storer.(*boundedStorage); ok && err != nil {
		if refused := bounded.lastRefusal(); refused != nil {
			// go-git resolves a name to a commit by reading it, and says
			// "not found" when the read is refused.
			return plumbing.ZeroHash, fmt.Errorf("resolve revision %q in %s: %w", revision, repoDir, refused)
		}
	}
	switch {
	case err == nil:
		return *hash, nil
	case errors.Is(err, plumbing.ErrReferenceNotFound), errors.Is(err, plumbing.ErrObjectNotFound):
		return plumbing.ZeroHash, fmt.Errorf("%w: revision %q not found in %s (%v); in a shallow clone, fetch the history it needs first",
			ErrReferenceNotFound, revision, repoDir, err)
	case errors.Is(err, io.EOF):
		// go-git's way of saying that HEAD~n walked past the first commit.
		return plumbing.ZeroHash, fmt.Errorf("%w: revision %q not found in %s: the history ends before it",
			ErrReferenceNotFound, revision, repoDir)
	default:
		return plumbing.ZeroHash, fmt.Errorf("resolve revision %q in %s: %w", revision, repoDir, err)
	}
}

// prepareExportDir makes sure dest exists and is empty, and returns what
// undoes a failed export: dest is removed when this created it and emptied
// otherwise, so a caller never builds half a tree.
func prepareExportDir(dest string) (cleanUp func(), err error) {
	entries, err := os.ReadDir(dest)
	switch {
	case errors.Is(err, os.ErrNotExist):
		if err := os.Mkdir(dest, 0o755); err != nil {
			return nil, fmt.Errorf("create export directory: %w", err)
		}
		return func() { _ = os.RemoveAll(dest) }, nil
	case err != nil:
		return nil, fmt.Errorf("read export directory: %w", err)
	case len(entries) > 0:
		return nil, fmt.Errorf("export directory %s is not empty", dest)
	}
	return func() {
		leftovers, _ := os.ReadDir(dest)
		for _, entry := range leftovers {
			_ = os.RemoveAll(dest + string(os.PathSeparator) + entry.Name())
		}
	}, nil
}

// exportTooLargeError stops an export at the entry that would pass its
// limit; ExportTree turns it into ErrCheckoutTooLarge with the limit and the
// entry in words.
type exportTooLargeError struct {
	name string
	size int64
}

func (e *exportTooLargeError) Error() string {
	return fmt.Sprintf("%s (%s) does not fit in the export size limit", e.name, formatBytes(e.size))
}

// treeExport writes trees of repository below root within a byte budget.
type treeExport struct {
	ctx        context.Context
	repository *git.Repository
	root       *os.Root
	// remaining is what the export may still write when limited.
	remaining int64
	limited   bool
}

// take charges the n bytes of entry name to the budget, refusing them when
// they do not fit.
func (e *treeExport) take(name string, n int64) error {
	if !e.limited {
		return nil
	}
	if n > e.remaining {
		return &exportTooLargeError{name: name, size: n}
	}
	e.remaining -= n
	return nil
}

// tree writes the entries of tree into dir, which already exists. The entries
// are checked by name before anything is written, so a crafted tree cannot
// reach a path through an entry of its own (two entries "a", one a link and
// one a directory).
func (e *treeExport) tree(tree *object.Tree, dir string) error {
	seen := make(map[string]bool, len(tree.Entries))
	for _, entry := range tree.Entries {
		if err := checkEntryName(entry.Name, dir); err != nil {
			return err
		}
		if seen[entry.Name] {
			return fmt.Errorf("%w: %s appears twice", ErrMalformedTree, path.Join(dir, entry.Name))
		}
		seen[entry.Name] = true
	}
	for _, entry := range tree.Entries {
		if err := e.ctx.Err(); err != nil {
			return context.Cause(e.ctx)
		}
		name := path.Join(dir, entry.Name)
		if err := e.entry(entry, name); err != nil {
			return err
		}
	}
	return nil
}

func (e *treeExport) entry(entry object.TreeEntry, name string) error {
	switch entry.Mode {
	case filemode.Dir:
		sub, err := e.repository.TreeObject(entry.Hash)
		if err != nil {
			return fmt.Errorf("read tree %s: %w", name, err)
		}
		if err := e.root.Mkdir(name, 0o755); err != nil {
			return fmt.Errorf("create directory: %w", err)
		}
		return e.tree(sub, name)
	case filemode.Submodule:
		// The submodule's commit lives in another repository; a checkout
		// without it leaves an empty directory.
		if err := e.root.Mkdir(name, 0o755); err != nil {
			return fmt.Errorf("create directory for submodule: %w", err)
		}
		return nil
	case filemode.Symlink:
		return e.symlink(entry, name)
	case filemode.Regular, filemode.Deprecated:
		return e.file(entry, name, 0o644)
	case filemode.Executable:
		return e.file(entry, name, 0o755)
	default:
		return fmt.Errorf("%w: %s has unknown mode %o", ErrMalformedTree, name, uint32(entry.Mode))
	}
}

func (e *treeExport) file(entry object.TreeEntry, name string, perm os.FileMode) (err error) {
	blob, err := e.repository.BlobObject(entry.Hash)
	if err != nil {
		return fmt.Errorf("read file %s: %w", name, err)
	}
	// Checked before reading, so an oversized blob is never inflated.
	if err := e.take(name, blob.Size); err != nil {
		return err
	}
	reader, err := blob.Reader()
	if err != nil {
		return fmt.Errorf("read file %s: %w", name, err)
	}
	defer reader.Close()
	// O_EXCL: never write through something already there.
	out, err := e.root.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, perm)
	if err != nil {
		return fmt.Errorf("create file: %w", err)
	}
	defer func() {
		if closeErr := out.Close(); closeErr != nil && err == nil {
			err = fmt.Errorf("write file %s: %w", name, closeErr)
		}
	}()
	// The object header gave the size charged; a blob longer than that
	// would write more than the budget allowed, so it is cut there and
	// refused.
	written, err := io.Copy(out, io.LimitReader(reader, blob.Size+1))
	if err != nil {
		return fmt.Errorf("write file %s: %w", name, err)
	}
	if written != blob.Size {
		return fmt.Errorf("read file %s: the object holds %d bytes, its header says %d", name, written, blob.Size)
	}
	return nil
}

func (e *treeExport) symlink(entry object.TreeEntry, name string) error {
	blob, err := e.repository.BlobObject(entry.Hash)
	if err != nil {
		return fmt.Errorf("read symbolic link %s: %w", name, err)
	}
	// A link target is a path; anything longer than a path can be is not
	// worth inflating.
	const maxTarget = 4096
	if blob.Size > maxTarget {
		return fmt.Errorf("%w: symbolic link %s has a target of %d bytes", ErrMalformedTree, name, blob.Size)
	}
	if err := e.take(name, blob.Size); err != nil {
		return err
	}
	reader, err := blob.Reader()
	if err != nil {
		return fmt.Errorf("read symbolic link %s: %w", name, err)
	}
	defer reader.Close()
	target, err := io.ReadAll(io.LimitReader(reader, maxTarget))
	if err != nil {
		return fmt.Errorf("read symbolic link %s: %w", name, err)
	}
	if len(target) == 0 || strings.ContainsRune(string(target), 0) {
		return fmt.Errorf("%w: symbolic link %s has an empty target or one with a NUL byte", ErrMalformedTree, name)
	}
	if err := e.root.Symlink(string(target), name); err != nil {
		return fmt.Errorf("create symbolic link: %w", err)
	}
	return nil
}

// checkEntryName refuses names Git itself refuses to check out (its
// verify_path): they could otherwise climb out of a directory, or write a
// .git that the build would read as the repository's metadata.
func checkEntryName(name, dir string) error {
	switch {
	case name == "", name == ".", name == "..":
		return fmt.Errorf("%w: %s has an entry named %q", ErrMalformedTree, treeName(dir), name)
	case strings.ContainsAny(name, "/\x00"):
		return fmt.Errorf("%w: %s has an entry %q with a slash or NUL byte", ErrMalformedTree, treeName(dir), name)
	case strings.EqualFold(name, git.GitDirName):
		return fmt.Errorf("%w: %s has an entry %q; a commit may not hold Git metadata", ErrMalformedTree, treeName(dir), name)
	}
	return nil
}

// treeName names the directory dir of the exported tree for messages.
func treeName(dir string) string {
	if dir == "." {
		return "the top-level tree"
	}
	return "directory " + dir
}
