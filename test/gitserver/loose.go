package gitserver

import (
	"bytes"
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
	return WriteLooseObject(filepath.Join(dir, ".git"), plumbing.BlobObject, nil, size, 0, nil)
}

// WriteLooseObject writes a loose object of kind into the Git directory (a
// work tree's .git or a bare repository) gitDir, streaming: head, then fill
// repeated up to size bytes in all, then tail. A commit whose message is
// 1 GiB of one byte is about 1 MiB on disk; tests use it for objects that
// are small on disk and huge inflated (hostile commits, trees, blobs).
func WriteLooseObject(gitDir string, kind plumbing.ObjectType, head []byte, size int64, fill byte, tail []byte) (plumbing.Hash, error) {
	fail := func(err error) (plumbing.Hash, error) {
		return plumbing.ZeroHash, fmt.Errorf("write a loose %s: %w", kind, err)
	}
	fillSize := size - int64(len(head)) - int64(len(tail))
	if fillSize < 0 {
		return fail(fmt.Errorf("head and tail are longer than %d bytes", size))
	}
	objects := filepath.Join(gitDir, "objects")
	tmp, err := os.CreateTemp(objects, "loose-")
	if err != nil {
		return fail(err)
	}
	defer os.Remove(tmp.Name()) // a no-op once renamed
	w := objfile.NewWriter(tmp)
	if err := w.WriteHeader(kind, size); err != nil {
		return fail(err)
	}
	if _, err := w.Write(head); err != nil {
		return fail(err)
	}
	chunk := bytes.Repeat([]byte{fill}, 1<<20)
	for written := int64(0); written < fillSize; written += int64(len(chunk)) {
		if _, err := w.Write(chunk[:min(int64(len(chunk)), fillSize-written)]); err != nil {
			return fail(err)
		}
	}
	if _, err := w.Write(tail); err != nil {
		return fail(err)
	}
	if err := w.Close(); err != nil {
		return fail(err)
	}
	if err := tmp.Close(); err != nil {
		return fail(err)
	}
	hash := w.Hash()
	dirOf := filepath.Join(objects, hash.String()[:2])
	if err := os.MkdirAll(dirOf, 0o755); err != nil {
		return fail(err)
	}
	if err := os.Rename(tmp.Name(), filepath.Join(dirOf, hash.String()[2:])); err != nil {
		return fail(err)
	}
	return hash, nil
}
