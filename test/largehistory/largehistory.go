// Package largehistory writes, for tests and benchmarks only, the
// repository of issue 31's scale: a branch of tens of thousands of commits,
// one in ten a merge of a side branch, and an upstream landscape whose
// records name commits all along it. It writes with go-git's plumbing into
// memory and packs once, never through a work tree, and keeps what it wrote
// under TMPDIR, keyed by Version and the Spec, so that a second run reuses
// it. gitsource's BenchmarkDecideOnALargeHistory and internal/cli's
// TestRolloutStatusOnALargeHistoryWithinItsMemory share it.
package largehistory

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/go-git/go-billy/v5/osfs"
	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/cache"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/format/packfile"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/go-git/go-git/v5/plumbing/storer"
	"github.com/go-git/go-git/v5/storage/filesystem"
	"github.com/go-git/go-git/v5/storage/memory"

	"github.com/profilesync/profilesync/internal/rollout"
)

// Version names what Build writes: change it with anything that changes
// the repository, so that a cache of an older one is not reused.
const Version = 1

// Spec is the repository to write.
type Spec struct {
	// Commits on branch main, one in ten a side commit merged by the next.
	Commits int
	// Records of Upstream, one an hour from Start plus an hour, applying
	// mainline commits from the first to the tip, each Ready a minute
	// later.
	Records  int
	Upstream string
	// Start is the first commit's time; each next one is a second later.
	Start time.Time
	// Files is every commit's tree, by slash-separated path; none is an
	// empty tree.
	Files map[string]string
}

// History is the repository written.
type History struct {
	// Dir is a bare repository, its objects in one pack.
	Dir string
	// Mainline are the commits of main's first-parent line, oldest first.
	Mainline []string
}

// Build writes spec's repository under TMPDIR, the first time, and
// returns it.
func Build(tb testing.TB, spec Spec) History {
	tb.Helper()
	source, err := git.Init(memory.NewStorage(), nil)
	if err != nil {
		tb.Fatal(err)
	}
	tree, err := writeTree(source.Storer, spec.Files)
	if err != nil {
		tb.Fatal(err)
	}
	hashes, mainline, err := writeBranch(source.Storer, tree, spec)
	if err != nil {
		tb.Fatal(err)
	}
	names := make([]string, len(mainline))
	for i, m := range mainline {
		names[i] = hashes[m].String()
	}
	history := History{Dir: filepath.Join(os.TempDir(), "profilesync-largehistory-"+spec.key()), Mainline: names}
	if _, err := os.Stat(filepath.Join(history.Dir, "packed")); err == nil {
		return history
	}
	if err := source.Storer.SetReference(plumbing.NewHashReference(plumbing.NewBranchReferenceName("main"), hashes[len(hashes)-1])); err != nil {
		tb.Fatal(err)
	}
	if err := source.Storer.SetReference(plumbing.NewSymbolicReference(plumbing.HEAD, plumbing.NewBranchReferenceName("main"))); err != nil {
		tb.Fatal(err)
	}
	if spec.Records > 0 {
		if err := writeRecords(source, names, spec); err != nil {
			tb.Fatal(err)
		}
	}
	packed := Pack(tb, source)
	_ = os.RemoveAll(history.Dir)
	if err := os.Rename(packed, history.Dir); err != nil {
		tb.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(history.Dir, "packed"), nil, 0o600); err != nil {
		tb.Fatal(err)
	}
	return history
}

// key names spec's repository for the cache.
func (s Spec) key() string {
	hash := sha256.New()
	fmt.Fprintf(hash, "v%d %d %d %q %s\n", Version, s.Commits, s.Records, s.Upstream, s.Start.UTC().Format(time.RFC3339Nano))
	paths := make([]string, 0, len(s.Files))
	for p := range s.Files {
		paths = append(paths, p)
	}
	sort.Strings(paths)
	for _, p := range paths {
		fmt.Fprintf(hash, "%q %q\n", p, s.Files[p])
	}
	return fmt.Sprintf("%d-%d-%s", s.Commits, s.Records, hex.EncodeToString(hash.Sum(nil))[:16])
}

// writeBranch writes spec.Commits commits of tree and returns their hashes
// and the indexes of the mainline.
func writeBranch(objects storer.EncodedObjectStorer, tree plumbing.Hash, spec Spec) ([]plumbing.Hash, []int, error) {
	hashes := make([]plumbing.Hash, spec.Commits)
	var mainline []int
	for i := range spec.Commits {
		var parents []int
		switch {
		case i == 0:
		case i%10 == 0: // merging the side commit
			parents = []int{mainline[len(mainline)-1], i - 1}
		default: // a mainline commit, or (i%10 == 9) a side commit off it
			parents = []int{mainline[len(mainline)-1]}
		}
		signature := object.Signature{Name: "test", Email: "test@example.invalid", When: spec.Start.Add(time.Duration(i) * time.Second)}
		commit := &object.Commit{Author: signature, Committer: signature, Message: fmt.Sprintf("commit %d", i), TreeHash: tree}
		for _, p := range parents {
			commit.ParentHashes = append(commit.ParentHashes, hashes[p])
		}
		hash, err := store(objects, commit)
		if err != nil {
			return nil, nil, err
		}
		hashes[i] = hash
		if i%10 != 9 {
			mainline = append(mainline, i)
		}
	}
	return hashes, mainline, nil
}

// writeRecords writes spec.Records records of spec.Upstream, as the
// operator writes them: one record.json a commit, on the landscape's ref.
func writeRecords(source *git.Repository, mainline []string, spec Spec) error {
	var parent plumbing.Hash
	for i := range spec.Records {
		revision := mainline[i*(len(mainline)-1)/max(spec.Records-1, 1)]
		at := spec.Start.Add(time.Duration(i+1) * time.Hour)
		record := rollout.Record{Landscape: spec.Upstream, Kind: rollout.RecordApplied, Revision: revision, AppliedAt: at, ReadyAt: at.Add(time.Minute), OperatorVersion: "v0.1.0"}
		content, err := rollout.EncodeRecord(record)
		if err != nil {
			return err
		}
		tree, err := writeTree(source.Storer, map[string]string{rollout.RecordFileName: string(content)})
		if err != nil {
			return err
		}
		signature := object.Signature{Name: "profilesync", Email: "profilesync@profilesync.invalid", When: record.ReadyAt}
		commit := &object.Commit{Author: signature, Committer: signature, Message: fmt.Sprintf("%s: %s %s\n", record.Landscape, record.Kind, record.Revision), TreeHash: tree}
		if !parent.IsZero() {
			commit.ParentHashes = []plumbing.Hash{parent}
		}
		if parent, err = store(source.Storer, commit); err != nil {
			return err
		}
	}
	return source.Storer.SetReference(plumbing.NewHashReference(plumbing.ReferenceName(rollout.LandscapeRefPrefix+spec.Upstream), parent))
}

// writeTree writes files, by slash-separated path, as a tree and its
// subtrees, and returns the root's hash.
func writeTree(objects storer.EncodedObjectStorer, files map[string]string) (plumbing.Hash, error) {
	subtrees := map[string]map[string]string{}
	tree := &object.Tree{}
	for name, content := range files {
		if dir, rest, nested := strings.Cut(name, "/"); nested {
			if subtrees[dir] == nil {
				subtrees[dir] = map[string]string{}
			}
			subtrees[dir][rest] = content
			continue
		}
		blob := objects.NewEncodedObject()
		blob.SetType(plumbing.BlobObject)
		blob.SetSize(int64(len(content)))
		writer, err := blob.Writer()
		if err != nil {
			return plumbing.ZeroHash, err
		}
		if _, err := writer.Write([]byte(content)); err != nil {
			return plumbing.ZeroHash, err
		}
		if err := writer.Close(); err != nil {
			return plumbing.ZeroHash, err
		}
		hash, err := objects.SetEncodedObject(blob)
		if err != nil {
			return plumbing.ZeroHash, err
		}
		tree.Entries = append(tree.Entries, object.TreeEntry{Name: path.Clean(name), Mode: filemode.Regular, Hash: hash})
	}
	for dir, nested := range subtrees {
		hash, err := writeTree(objects, nested)
		if err != nil {
			return plumbing.ZeroHash, err
		}
		tree.Entries = append(tree.Entries, object.TreeEntry{Name: dir, Mode: filemode.Dir, Hash: hash})
	}
	// Git orders a tree's entries by name, a directory's as if it ended in '/'.
	sortKey := func(e object.TreeEntry) string {
		if e.Mode == filemode.Dir {
			return e.Name + "/"
		}
		return e.Name
	}
	slices.SortFunc(tree.Entries, func(a, b object.TreeEntry) int { return strings.Compare(sortKey(a), sortKey(b)) })
	return store(objects, tree)
}

// store encodes o into objects.
func store(objects storer.EncodedObjectStorer, o interface {
	Encode(plumbing.EncodedObject) error
}) (plumbing.Hash, error) {
	encoded := objects.NewEncodedObject()
	if err := o.Encode(encoded); err != nil {
		return plumbing.ZeroHash, err
	}
	return objects.SetEncodedObject(encoded)
}

// Pack writes every object and ref of an in-memory repository into a new
// bare repository on disk, the objects as one pack, and returns its
// directory.
func Pack(tb testing.TB, source *git.Repository) string {
	tb.Helper()
	dir := tb.TempDir()
	if _, err := git.PlainInit(dir, true); err != nil {
		tb.Fatal(err)
	}
	target := filesystem.NewStorage(osfs.New(dir), cache.NewObjectLRUDefault())
	defer target.Close()
	objects, err := source.Storer.IterEncodedObjects(plumbing.AnyObject)
	if err != nil {
		tb.Fatal(err)
	}
	var hashes []plumbing.Hash
	_ = objects.ForEach(func(object plumbing.EncodedObject) error {
		hashes = append(hashes, object.Hash())
		return nil
	})
	pack, err := target.PackfileWriter()
	if err != nil {
		tb.Fatal(err)
	}
	if _, err := packfile.NewEncoder(pack, source.Storer, false).Encode(hashes, 10); err != nil {
		tb.Fatal(err)
	}
	if err := pack.Close(); err != nil {
		tb.Fatal(err)
	}
	refs, err := source.Storer.IterReferences()
	if err != nil {
		tb.Fatal(err)
	}
	if err := refs.ForEach(func(ref *plumbing.Reference) error { return target.SetReference(ref) }); err != nil {
		tb.Fatal(err)
	}
	return dir
}
