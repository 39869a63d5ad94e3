package gitsource

import (
	"context"
	"os"
	"path/filepath"
	"runtime"
	"testing"

	. "github.com/onsi/gomega"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/object"

	"github.com/profilesync/profilesync/test/gitserver"
)

// looseZeros writes a loose blob of size zero bytes into the repository at dir
// (gitserver.WriteLooseZeros).
func looseZeros(t *testing.T, dir string, size int64) plumbing.Hash {
	t.Helper()
	hash, err := gitserver.WriteLooseZeros(dir, size)
	if err != nil {
		t.Fatal(err)
	}
	return hash
}

func TestExportTreeBoundsALooseBlobBeforeInflatingIt(t *testing.T) {
	g := NewWithT(t)
	repo := newExportRepo(t)
	repo.commit(map[string]string{"ok.yaml": "ok\n"})
	const size = 256 << 20
	blob := looseZeros(t, repo.dir, size)
	commit := repo.rawCommit([]object.TreeEntry{{Name: "zeros.yaml", Mode: filemode.Regular, Hash: blob}})

	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	_, err := ExportTree(context.Background(), repo.dir, commit, filepath.Join(t.TempDir(), "tree"), 1<<20)
	runtime.ReadMemStats(&after)

	g.Expect(err).To(MatchError(ErrCheckoutTooLarge))
	g.Expect(err).To(MatchError(ErrObjectTooLarge))
	g.Expect(err.Error()).To(ContainSubstring("read file zeros.yaml: blob " + blob.String() + " is 256 MiB, more than the maximum checkout size of 1 MiB"))
	g.Expect(after.TotalAlloc-before.TotalAlloc).To(BeNumerically("<", 32<<20), "the blob's size comes from its header, its content is never inflated")
}

func TestExportTreeStreamsALooseBlobWithinTheLimit(t *testing.T) {
	g := NewWithT(t)
	repo := newExportRepo(t)
	repo.commit(map[string]string{"ok.yaml": "ok\n"})
	const size = 64 << 20
	blob := looseZeros(t, repo.dir, size)
	commit := repo.rawCommit([]object.TreeEntry{{Name: "zeros.yaml", Mode: filemode.Regular, Hash: blob}})
	dest := filepath.Join(t.TempDir(), "tree")

	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	_, err := ExportTree(context.Background(), repo.dir, commit, dest, 0)
	runtime.ReadMemStats(&after)

	g.Expect(err).NotTo(HaveOccurred())
	info, err := os.Stat(filepath.Join(dest, "zeros.yaml"))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(info.Size()).To(BeEquivalentTo(size))
	g.Expect(after.TotalAlloc-before.TotalAlloc).To(BeNumerically("<", 32<<20), "the blob is copied as it is read, never held whole")
}
