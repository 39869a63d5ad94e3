package gitserver

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/format/objfile"
)

// WriteLooseZeros writes a loose blob of size zero bytes into the Git
// repository whose work tree is dir, streaming, as `git fetch` leaves a small
// fetch: compressed, it is a thousandth of its size. Tests use it for a blob
// that is small on disk and huge inflated.
func WriteLooseZeros(dir string, size int64) (plumbing.Hash, error) {
	objects := filepath.Join(dir, ".git", "objects")
	tmp, err := os.CreateTemp(objects, "loose-")
	if err != nil {
		return plumbing.ZeroHash, fmt.Errorf("write a loose blob: %w", err)
	}
	defer os.Remove(tmp.Name()) // a no-op once renamed
	w := objfile.NewWriter(tmp)
	if err := w.WriteHeader(plumbing.BlobObject, size); err != nil {
		return plumbing.ZeroHash, fmt.Errorf("write a loose blob: %w", err)
	}
	chunk := make([]byte, 1<<20)
	for written := int64(0); written < size; written += int64(len(chunk)) {
		if _, err := w.Write(chunk[:min(int64(len(chunk)), size-written)]); err != nil {
			return plumbing.ZeroHash, fmt.Errorf("write a loose blob: %w", err)
		}
	}
	if err := w.Close(); err != nil {
		return plumbing.ZeroHash, fmt.Errorf("write a loose blob: %w", err)
	}
	if err := tmp.Close(); err != nil {
		return plumbing.ZeroHash, fmt.Errorf("write a loose blob: %w", err)
	}
	hash := w.Hash()
	dirOf := filepath.Join(objects, hash.String()[:2])
	if err := os.MkdirAll(dirOf, 0o755); err != nil {
		return plumbing.ZeroHash, fmt.Errorf("write a loose blob: %w", err)
	}
	if err := os.Rename(tmp.Name(), filepath.Join(dirOf, hash.String()[2:])); err != nil {
		return plumbing.ZeroHash, fmt.Errorf("write a loose blob: %w", err)
	}
	return hash, nil
}
