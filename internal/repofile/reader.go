// Package repofile reads files of a repository's work tree the way the sync
// may read them, for the operator and every command alike: regular files
// inside the repository root only, never Git's metadata (.git/), no symbolic
// link that leads out of the root, each file and the whole reading within
// Limits. A refusal names the file, relative to the root, and the rule it
// broke, and never anything read from a file it refused.
package repofile

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// Default limits. They leave room for ten times the largest landscape we
// know of (10 CloudProfiles of 600 versions and 100 namespaced profiles
// render to about 2.3 MB) while keeping a hostile commit far below what the
// operator's memory holds.
const (
	DefaultMaxFileSize  int64 = 4 << 20
	DefaultMaxTotalSize int64 = 32 << 20
)

// GitMetadataDir is the directory no reading sees: it is Git's, not the
// profiles', and it may hold what a commit must never read (the remote's
// address, hooks, other branches).
const GitMetadataDir = ".git"

// ErrRefused is matched (errors.Is) by every refusal of a path for breaking
// one of the rules of the package doc.
var ErrRefused = errors.New("refused")

// RefusedError is a path refused for breaking a rule.
type RefusedError struct {
	// Path is the path as the reader was asked for it, relative to the root
	// with forward slashes when it is inside.
	Path string
	// Rule says which rule, in words.
	Rule string
}

func (e *RefusedError) Error() string { return fmt.Sprintf("%s: %s: refused", e.Path, e.Rule) }

// Is makes errors.Is(err, ErrRefused) true.
func (e *RefusedError) Is(target error) bool { return target == ErrRefused }

// Rules, in the words of RefusedError.
const (
	ruleOutside      = "outside the repository root"
	ruleGitMetadata  = "in .git/, Git's metadata, which is not part of the repository's content"
	ruleLinksOutside = "a symbolic link that leads outside the repository root"
	ruleLinksIntoGit = "a symbolic link into .git/, Git's metadata"
	ruleNotRegular   = "not a regular file (a device, pipe or socket is never read)"
)

// Reader reads files below one root within one set of Limits; what it reads
// counts against Limits.MaxTotalSize for as long as it is used.
type Reader struct {
	root   string // absolute, symbolic links resolved
	limits Limits
	read   *int64 // shared with the readers of At
}

// Open returns a reader of the repository at root. A zero limit takes its
// default.
func Open(root string, limits Limits) (*Reader, error) {
	abs, err := filepath.Abs(root)
	if err == nil {
		abs, err = filepath.EvalSymlinks(abs)
	}
	if err != nil {
		return nil, fmt.Errorf("repository root %s: %w", root, err)
	}
	if limits.MaxFileSize <= 0 {
		limits.MaxFileSize = DefaultMaxFileSize
	}
	if limits.MaxTotalSize <= 0 {
		limits.MaxTotalSize = DefaultMaxTotalSize
	}
	return &Reader{root: abs, limits: limits, read: new(int64)}, nil
}

// At returns a reader of the repository at root that shares r's limits and
// what r has read so far: one reading of several repositories.
func (r *Reader) At(root string) (*Reader, error) {
	at, err := Open(root, r.limits)
	if err != nil {
		return nil, err
	}
	at.read = r.read
	return at, nil
}

// Root is the repository root, absolute, symbolic links resolved.
func (r *Reader) Root() string { return r.root }

// Rel returns path, absolute or relative to the working directory, relative
// to the root with forward slashes; it refuses a path outside the root. It
// checks nothing on disk: ReadFile and Files do.
func (r *Reader) Rel(path string) (string, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return "", fmt.Errorf("resolving %s: %w", path, err)
	}
	// The root has its links resolved; so must the path's directories be,
	// or a root reached through a link would look like somewhere else.
	if dir, err := filepath.EvalSymlinks(filepath.Dir(abs)); err == nil {
		abs = filepath.Join(dir, filepath.Base(abs))
	}
	if !Within(r.root, abs) {
		return "", &RefusedError{Path: path, Rule: ruleOutside}
	}
	rel, err := filepath.Rel(r.root, abs)
	if err != nil {
		return "", fmt.Errorf("resolving %s: %w", path, err)
	}
	return filepath.ToSlash(rel), nil
}

// Within reports whether path is root or below it; both must be absolute
// and clean.
func Within(root, path string) bool {
	return path == root || strings.HasPrefix(path, root+string(filepath.Separator))
}

// InGitMetadata reports whether rel, a path relative to a repository root,
// is a .git entry or below one, at any depth (a submodule's too).
func InGitMetadata(rel string) bool {
	for _, part := range strings.Split(filepath.ToSlash(rel), "/") {
		if part == GitMetadataDir {
			return true
		}
	}
	return false
}

// CheckPath applies the rules on paths to abs, an absolute clean path, in
// the repository at root (absolute, links resolved): it must be inside the
// root and outside .git/, and so must whatever its symbolic links lead to.
// It returns the path with links resolved, or abs itself when it does not
// exist. display names abs in the refusal.
func CheckPath(root, abs, display string) (string, error) {
	if !Within(root, abs) {
		return "", &RefusedError{Path: display, Rule: ruleOutside}
	}
	rel, _ := filepath.Rel(root, abs)
	if InGitMetadata(rel) {
		return "", &RefusedError{Path: display, Rule: ruleGitMetadata}
	}
	resolved, err := ResolveLinks(abs)
	if err != nil {
		return abs, nil // a loop of links leads nowhere; reading it reports that
	}
	if !Within(root, resolved) {
		return "", &RefusedError{Path: display, Rule: ruleLinksOutside}
	}
	rel, _ = filepath.Rel(root, resolved)
	if InGitMetadata(rel) {
		return "", &RefusedError{Path: display, Rule: ruleLinksIntoGit}
	}
	return resolved, nil
}

// maxLinks bounds the symbolic links ResolveLinks follows, as the kernel
// bounds them (ELOOP).
const maxLinks = 40

// ResolveLinks returns abs, an absolute clean path, with every symbolic
// link on its way replaced by what it leads to. Unlike
// filepath.EvalSymlinks it also resolves a link whose target does not
// exist: where a link leads matters before anything is there, since a
// checkout recreates committed links as they were written (a link out of
// the root must be refused as one, not as a missing file).
func ResolveLinks(abs string) (string, error) {
	separator := string(filepath.Separator)
	resolved := filepath.VolumeName(abs) + separator
	rest := strings.Split(strings.TrimPrefix(abs, resolved), separator)
	followed := 0
	for len(rest) > 0 {
		part := rest[0]
		rest = rest[1:]
		switch part {
		case "", ".":
			continue
		case "..":
			resolved = filepath.Dir(resolved)
			continue
		}
		next := filepath.Join(resolved, part)
		info, err := os.Lstat(next)
		if err != nil || info.Mode()&fs.ModeSymlink == 0 {
			resolved = next
			continue
		}
		if followed++; followed > maxLinks {
			return "", fmt.Errorf("%s: more than %d symbolic links on the way", abs, maxLinks)
		}
		target, err := os.Readlink(next)
		if err != nil {
			return "", fmt.Errorf("reading the symbolic link %s: %w", next, err)
		}
		if filepath.IsAbs(target) {
			resolved = filepath.VolumeName(target) + separator
			target = strings.TrimPrefix(target, resolved)
		}
		rest = append(strings.Split(filepath.Clean(target), separator), rest...)
	}
	return resolved, nil
}

// resolve checks name, relative to the root, and returns it absolute with
// links resolved, and how to show it.
func (r *Reader) resolve(name string) (resolved, display string, err error) {
	display = filepath.ToSlash(filepath.Clean(filepath.FromSlash(name)))
	if filepath.IsAbs(name) || !filepath.IsLocal(filepath.FromSlash(name)) && display != "." {
		return "", display, &RefusedError{Path: display, Rule: ruleOutside}
	}
	resolved, err = CheckPath(r.root, filepath.Join(r.root, filepath.FromSlash(name)), display)
	return resolved, display, err
}

// ReadFile reads name, relative to the root, within the limits. A missing
// file is an error that matches fs.ErrNotExist.
func (r *Reader) ReadFile(name string) ([]byte, error) {
	resolved, display, err := r.resolve(name)
	if err != nil {
		return nil, err
	}
	// Lstat, not Stat: the links are resolved, and the file is checked
	// before it is opened, because opening a pipe blocks.
	info, err := os.Lstat(resolved)
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", display, unwrapPathError(err))
	}
	if info.Mode()&fs.ModeSymlink != 0 {
		// Left unresolved by CheckPath: it leads nowhere.
		return nil, fmt.Errorf("reading %s: a symbolic link to nothing: %w", display, fs.ErrNotExist)
	}
	if !info.Mode().IsRegular() {
		return nil, &RefusedError{Path: display, Rule: ruleNotRegular}
	}
	file, err := os.OpenFile(resolved, os.O_RDONLY|oNoFollow, 0)
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", display, unwrapPathError(err))
	}
	defer file.Close()
	if info, err := file.Stat(); err != nil || !info.Mode().IsRegular() {
		// Replaced between the check and the open.
		return nil, &RefusedError{Path: display, Rule: ruleNotRegular}
	}
	return r.readBounded(display, file, info.Size())
}

// ReadStream reads what is not a file of the repository (standard input)
// within the same limits; display names it.
func (r *Reader) ReadStream(display string, stream io.Reader) ([]byte, error) {
	return r.readBounded(display, stream, -1)
}

// readBounded reads content of known size (-1 when unknown) within the
// limits.
func (r *Reader) readBounded(display string, content io.Reader, size int64) ([]byte, error) {
	tooLarge := func(size int64) error {
		return &LimitError{File: display, What: "maximum file size", Flag: MaxFileSizeFlag, Max: r.limits.MaxFileSize, Size: size}
	}
	if size > r.limits.MaxFileSize {
		return nil, tooLarge(size)
	}
	// The size can change between Stat and reading; what is read counts.
	data, err := io.ReadAll(io.LimitReader(content, r.limits.MaxFileSize+1))
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", display, unwrapPathError(err))
	}
	if int64(len(data)) > r.limits.MaxFileSize {
		return nil, tooLarge(0)
	}
	*r.read += int64(len(data))
	if *r.read > r.limits.MaxTotalSize {
		return nil, &LimitError{File: display, What: "maximum rendered size, which also bounds what is read in all,",
			Flag: MaxRenderedSizeFlag, Max: r.limits.MaxTotalSize, Size: *r.read}
	}
	// An alias is always written with '*': without one, nothing expands.
	if bytes.IndexByte(data, '*') >= 0 && ExpandedYAMLSize(data, r.limits.MaxFileSize) > r.limits.MaxFileSize {
		return nil, &LimitError{File: display, What: "maximum file size (with its YAML aliases written out)",
			Flag: MaxFileSizeFlag, Max: r.limits.MaxFileSize}
	}
	return data, nil
}

// Files lists the regular files below dir (relative to the root; a file
// lists itself) whose base name keep accepts, relative to the root with
// forward slashes, sorted. It does not descend into .git/ nor follow links
// to directories; a kept name that is a link leading out of the root or into
// .git/, or that is not a regular file, is refused.
func (r *Reader) Files(dir string, keep func(name string) bool) ([]string, error) {
	resolved, display, err := r.resolve(dir)
	if err != nil {
		return nil, err
	}
	info, err := os.Stat(resolved)
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", display, unwrapPathError(err))
	}
	if !info.IsDir() {
		return []string{display}, nil
	}
	var files []string
	err = filepath.WalkDir(resolved, func(path string, entry fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if entry.IsDir() {
			if entry.Name() == GitMetadataDir {
				return filepath.SkipDir
			}
			return nil
		}
		if !keep(entry.Name()) {
			return nil
		}
		rel, _ := filepath.Rel(r.root, path)
		name := filepath.ToSlash(rel)
		target, err := CheckPath(r.root, path, name)
		if err != nil {
			return err
		}
		if info, err := os.Stat(target); err != nil || !info.Mode().IsRegular() {
			return &RefusedError{Path: name, Rule: ruleNotRegular}
		}
		files = append(files, name)
		return nil
	})
	if err != nil {
		return nil, err
	}
	sort.Strings(files)
	return files, nil
}

// unwrapPathError drops the absolute path an *fs.PathError carries: the
// caller names the file relative to the root.
func unwrapPathError(err error) error {
	var pathErr *fs.PathError
	if errors.As(err, &pathErr) {
		return pathErr.Err
	}
	return err
}

// RepositoryOf returns the repository path is in (FindRoot).
func RepositoryOf(path string) (string, error) {
	root, err := FindRoot(path)
	return root.Dir, err
}

// Root is the directory a command reading path is confined to, and how it
// was chosen, for messages that say which root was used.
type Root struct {
	Dir string
	// Chosen says how: RootGit, RootWorkingDirectory or RootOwnDirectory.
	Chosen RootChoice
}

// RootChoice is how a default root was chosen.
type RootChoice int

const (
	// RootGit is the nearest directory at or above path with a .git entry.
	RootGit RootChoice = iota
	// RootWorkingDirectory is the working directory, which contains path,
	// when no Git work tree does: an overlay may then reach bases above it
	// (../../base), as in a checkout without .git.
	RootWorkingDirectory
	// RootOwnDirectory is path's own directory (path itself when it is a
	// directory), when neither a Git work tree nor the working directory
	// contains it.
	RootOwnDirectory
)

// Describe says which root was used and why, and how to choose another.
func (r Root) Describe() string {
	switch r.Chosen {
	case RootGit:
		return fmt.Sprintf("the root is %s, the Git work tree that contains the path; set --root to use another", r.Dir)
	case RootWorkingDirectory:
		return fmt.Sprintf("the root is %s, the working directory: no Git work tree contains the path; set --root to use another", r.Dir)
	}
	return fmt.Sprintf("the root is %s, the path's own directory: neither a Git work tree nor the working directory contains the path; "+
		"set --root to the directory that holds everything the path refers to", r.Dir)
}

// FindRoot returns the root a command reading path is confined to when none
// is given: the nearest directory at or above it that holds a .git entry;
// else the working directory, when it contains path; else path's own
// directory (path itself when it is a directory).
func FindRoot(path string) (Root, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return Root{}, fmt.Errorf("resolving %s: %w", path, err)
	}
	own := abs
	if info, err := os.Stat(abs); err != nil || !info.IsDir() {
		own = filepath.Dir(abs)
	}
	for dir := own; ; {
		if _, err := os.Lstat(filepath.Join(dir, GitMetadataDir)); err == nil {
			return Root{Dir: dir, Chosen: RootGit}, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			break
		}
		dir = parent
	}
	if wd, err := os.Getwd(); err == nil {
		if rel, err := filepath.Rel(wd, own); err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
			return Root{Dir: wd, Chosen: RootWorkingDirectory}, nil
		}
	}
	return Root{Dir: own, Chosen: RootOwnDirectory}, nil
}
