package render

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"sigs.k8s.io/kustomize/kyaml/filesys"
)

// errReadOnly is returned for every attempt of kustomize to write: a build
// only reads the repository.
var errReadOnly = errors.New("the repository is read-only during a build")

// rootedFS is the file system kustomize builds on: the disk, but only below
// root (a symbolic link pointing out of root is refused like a path that
// leaves it), read-only, and with some files replaced by content held in
// memory (the top-level kustomization with build options added, or one
// generated for a plain directory of YAML files).
type rootedFS struct {
	root    string // absolute, symbolic links resolved
	disk    filesys.FileSystem
	virtual map[string][]byte // absolute path → content
}

var _ filesys.FileSystem = (*rootedFS)(nil)

// resolve returns the absolute, cleaned form of path, or an error when it (or
// the target of a symbolic link on the way) lies outside root.
func (r *rootedFS) resolve(path string) (string, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return "", fmt.Errorf("resolving %s: %w", path, err)
	}
	if _, ok := r.virtual[abs]; ok {
		return abs, nil
	}
	if !isWithin(r.root, abs) {
		return "", r.outside(path)
	}
	if resolved, err := filepath.EvalSymlinks(abs); err == nil && !isWithin(r.root, resolved) {
		return "", fmt.Errorf("%s is a symbolic link to %s, outside the repository root: refused", r.display(abs), resolved)
	}
	return abs, nil
}

func (r *rootedFS) outside(path string) error {
	return fmt.Errorf("%s is outside the repository root %s: refused", path, r.root)
}

// display shows path relative to root when it is inside.
func (r *rootedFS) display(path string) string {
	if rel, err := filepath.Rel(r.root, path); err == nil && !strings.HasPrefix(rel, "..") {
		return filepath.ToSlash(rel)
	}
	return path
}

// isWithin reports whether path is root or below it; both must be absolute
// and clean.
func isWithin(root, path string) bool {
	return path == root || strings.HasPrefix(path, root+string(filepath.Separator))
}

func (r *rootedFS) Create(string) (filesys.File, error) { return nil, errReadOnly }
func (r *rootedFS) Mkdir(string) error                  { return errReadOnly }
func (r *rootedFS) MkdirAll(string) error               { return errReadOnly }
func (r *rootedFS) RemoveAll(string) error              { return errReadOnly }
func (r *rootedFS) WriteFile(string, []byte) error      { return errReadOnly }

func (r *rootedFS) Open(path string) (filesys.File, error) {
	abs, err := r.resolve(path)
	if err != nil {
		return nil, err
	}
	if _, ok := r.virtual[abs]; ok {
		return nil, fmt.Errorf("%s is generated in memory and can only be read whole", r.display(abs))
	}
	return r.disk.Open(abs)
}

func (r *rootedFS) IsDir(path string) bool {
	abs, err := r.resolve(path)
	if err != nil {
		return false
	}
	if _, ok := r.virtual[abs]; ok {
		return false
	}
	return r.disk.IsDir(abs)
}

func (r *rootedFS) ReadDir(path string) ([]string, error) {
	abs, err := r.resolve(path)
	if err != nil {
		return nil, err
	}
	return r.disk.ReadDir(abs)
}

func (r *rootedFS) CleanedAbs(path string) (filesys.ConfirmedDir, string, error) {
	if _, err := r.resolve(path); err != nil {
		return "", "", err
	}
	dir, file, err := r.disk.CleanedAbs(path)
	if err != nil {
		return "", "", err
	}
	if !isWithin(r.root, string(dir)) {
		return "", "", r.outside(path)
	}
	return dir, file, nil
}

func (r *rootedFS) Exists(path string) bool {
	abs, err := r.resolve(path)
	if err != nil {
		return false
	}
	if _, ok := r.virtual[abs]; ok {
		return true
	}
	return r.disk.Exists(abs)
}

func (r *rootedFS) Glob(pattern string) ([]string, error) {
	if _, err := r.resolve(filepath.Dir(pattern)); err != nil {
		return nil, err
	}
	matches, err := r.disk.Glob(pattern)
	if err != nil {
		return nil, err
	}
	inside := matches[:0]
	for _, m := range matches {
		if _, err := r.resolve(m); err == nil {
			inside = append(inside, m)
		}
	}
	return inside, nil
}

func (r *rootedFS) ReadFile(path string) ([]byte, error) {
	abs, err := r.resolve(path)
	if err != nil {
		return nil, err
	}
	if content, ok := r.virtual[abs]; ok {
		return content, nil
	}
	return r.disk.ReadFile(abs)
}

func (r *rootedFS) Walk(path string, walkFn filepath.WalkFunc) error {
	abs, err := r.resolve(path)
	if err != nil {
		return err
	}
	return r.disk.Walk(abs, func(p string, info os.FileInfo, err error) error {
		if _, outside := r.resolve(p); outside != nil {
			return walkFn(p, info, outside)
		}
		return walkFn(p, info, err)
	})
}
