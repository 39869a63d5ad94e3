package gitsource

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"github.com/go-git/go-billy/v5"
)

// errOverBudget is what a write past a diskBudget's limit fails with. go-git
// may wrap it in its own words or not at all, so callers ask
// diskBudget.exceeded rather than errors.Is.
var errOverBudget = errors.New("write refused: the checkout would exceed its size limit")

// diskBudget counts the bytes a fetch has on disk and refuses writes that
// would take it past a limit. It tracks the size of every file it has seen
// written, so that a file rewritten or removed (the index, a worktree file
// replaced when a pinned commit is checked out) counts once, with its
// current size, the way the disk holds it. It assumes that the directory it
// watches starts empty, as a fetch's fresh directory does, or that count
// measured it first.
//
// Sizes are file contents; directories and file system overhead are not
// counted.
type diskBudget struct {
	// limit is the most bytes allowed; 0 means no limit.
	limit int64

	mu       sync.Mutex
	used     int64
	sizes    map[string]int64 // absolute path → bytes
	refusals int
}

func newDiskBudget(limit int64) *diskBudget {
	return &diskBudget{limit: limit, sizes: make(map[string]int64)}
}

// count adds what the files under dir hold (none when it does not exist),
// for a budget over a directory that lives across fetches.
func (b *diskBudget) count(dir string) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	err := filepath.WalkDir(dir, func(path string, entry os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if entry.IsDir() {
			return nil
		}
		info, err := entry.Info()
		if err != nil {
			return err
		}
		b.sizes[path] = info.Size()
		b.used += info.Size()
		return nil
	})
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("measure %s: %w", dir, err)
	}
	return nil
}

// exceeded says whether a write was refused for the limit.
func (b *diskBudget) exceeded() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.refusals > 0
}

// grow records that path now reaches at least size bytes, failing without
// recording anything when that would take the total past the limit.
func (b *diskBudget) grow(path string, size int64) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.resizeLocked(path, max(size, b.sizes[path]))
}

// truncate records that path now has exactly size bytes.
func (b *diskBudget) truncate(path string, size int64) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.resizeLocked(path, size)
}

// resizeLocked records that path has size bytes, unless it grows past the
// limit. b.mu must be held.
func (b *diskBudget) resizeLocked(path string, size int64) error {
	growth := size - b.sizes[path]
	if growth > 0 && b.limit > 0 && b.used+growth > b.limit {
		b.refusals++
		return errOverBudget
	}
	b.used += growth
	b.sizes[path] = size
	return nil
}

// size is what path is known to hold.
func (b *diskBudget) size(path string) int64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.sizes[path]
}

// forget records that path is gone.
func (b *diskBudget) forget(path string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.used -= b.sizes[path]
	delete(b.sizes, path)
}

// move records a rename of a file or directory, replacing whatever newPath
// was.
func (b *diskBudget) move(oldPath, newPath string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.used -= b.sizes[newPath]
	delete(b.sizes, newPath)
	if size, ok := b.sizes[oldPath]; ok {
		b.sizes[newPath] = size
		delete(b.sizes, oldPath)
	}
	// go-git renames files only, but a renamed directory takes its files
	// along, and they must not be counted twice when written again.
	oldPrefix := oldPath + string(filepath.Separator)
	for path, size := range b.sizes {
		if rest, ok := strings.CutPrefix(path, oldPrefix); ok {
			b.sizes[filepath.Join(newPath, rest)] = size
			delete(b.sizes, path)
		}
	}
}

// filesystem returns fs with every write counted against the budget.
func (b *diskBudget) filesystem(fs billy.Filesystem) billy.Filesystem {
	return &budgetedFilesystem{Filesystem: fs, budget: b}
}

// budgetedFilesystem is a billy.Filesystem whose writes a diskBudget
// counts. Reading passes straight through; every way of writing (creating,
// opening for writing, temporary files, symlinks) is wrapped, and renames
// and removals are recorded so that sizes stay true.
type budgetedFilesystem struct {
	billy.Filesystem
	budget *diskBudget
}

// path is the absolute path of name, the key of the budget's sizes; it is
// the same whichever chroot of the same tree name is relative to.
func (fs *budgetedFilesystem) path(name string) string {
	return filepath.Join(fs.Root(), name)
}

func (fs *budgetedFilesystem) Create(name string) (billy.File, error) {
	return fs.OpenFile(name, os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o666)
}

func (fs *budgetedFilesystem) OpenFile(name string, flag int, perm os.FileMode) (billy.File, error) {
	file, err := fs.Filesystem.OpenFile(name, flag, perm)
	if err != nil || flag&(os.O_WRONLY|os.O_RDWR) == 0 {
		return file, err
	}
	return fs.budgeted(file, fs.path(name), flag), nil
}

func (fs *budgetedFilesystem) TempFile(dir, prefix string) (billy.File, error) {
	file, err := fs.Filesystem.TempFile(dir, prefix)
	if err != nil {
		return nil, err
	}
	return fs.budgeted(file, fs.path(file.Name()), os.O_RDWR|os.O_CREATE|os.O_TRUNC), nil
}

// budgeted wraps a file opened for writing.
func (fs *budgetedFilesystem) budgeted(file billy.File, path string, flag int) billy.File {
	if flag&os.O_TRUNC != 0 {
		// Shrinking never crosses the limit.
		_ = fs.budget.truncate(path, 0)
	}
	return &budgetedFile{File: file, budget: fs.budget, path: path, appends: flag&os.O_APPEND != 0}
}

func (fs *budgetedFilesystem) Rename(oldName, newName string) error {
	if err := fs.Filesystem.Rename(oldName, newName); err != nil {
		return err
	}
	fs.budget.move(fs.path(oldName), fs.path(newName))
	return nil
}

func (fs *budgetedFilesystem) Remove(name string) error {
	if err := fs.Filesystem.Remove(name); err != nil {
		return err
	}
	fs.budget.forget(fs.path(name))
	return nil
}

// Symlink counts the link's target, which is what the link stores.
func (fs *budgetedFilesystem) Symlink(target, link string) error {
	path := fs.path(link)
	if err := fs.budget.grow(path, int64(len(target))); err != nil {
		return err
	}
	if err := fs.Filesystem.Symlink(target, link); err != nil {
		fs.budget.forget(path)
		return err
	}
	return nil
}

func (fs *budgetedFilesystem) Chroot(dir string) (billy.Filesystem, error) {
	chroot, err := fs.Filesystem.Chroot(dir)
	if err != nil {
		return nil, err
	}
	return fs.budget.filesystem(chroot), nil
}

// Capabilities are those of the wrapped file system: go-git chooses how to
// update refs by them.
func (fs *budgetedFilesystem) Capabilities() billy.Capability {
	return billy.Capabilities(fs.Filesystem)
}

// Chmod is passed on so that go-git can make pack files read-only, as it
// does on a plain clone.
func (fs *budgetedFilesystem) Chmod(name string, mode os.FileMode) error {
	chmod, ok := fs.Filesystem.(billy.Chmod)
	if !ok {
		return fmt.Errorf("chmod %s: %w", name, billy.ErrNotSupported)
	}
	return chmod.Chmod(name, mode)
}

// budgetedFile is a file opened for writing whose growth a diskBudget
// approves before the bytes are written.
type budgetedFile struct {
	billy.File
	budget  *diskBudget
	path    string
	appends bool
}

func (f *budgetedFile) Write(p []byte) (int, error) {
	offset := f.budget.size(f.path)
	if !f.appends {
		var err error
		if offset, err = f.Seek(0, io.SeekCurrent); err != nil {
			return 0, err
		}
	}
	if err := f.budget.grow(f.path, offset+int64(len(p))); err != nil {
		return 0, err
	}
	return f.File.Write(p)
}

func (f *budgetedFile) Truncate(size int64) error {
	if err := f.budget.truncate(f.path, size); err != nil {
		return err
	}
	return f.File.Truncate(size)
}
