package gitsource

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/go-git/go-billy/v5/osfs"
	. "github.com/onsi/gomega"

	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/object"

	"github.com/profilesync/profilesync/internal/rollout"
	"github.com/profilesync/profilesync/test/gitserver"
)

// bombSize is the inflated size of the hostile objects: 128 MiB of one
// byte, about 128 KiB on disk. The readers must refuse them from their
// headers, allocating far less (maxBombAlloc).
const (
	bombSize     = 128 << 20
	maxBombAlloc = 16 << 20
)

// commitHeader is the start of a commit of tree with parents, up to its
// message.
func commitHeader(tree plumbing.Hash, parents ...plumbing.Hash) []byte {
	var b strings.Builder
	fmt.Fprintf(&b, "tree %s\n", tree)
	for _, parent := range parents {
		fmt.Fprintf(&b, "parent %s\n", parent)
	}
	b.WriteString("author attacker <a@example.com> 1767225600 +0000\ncommitter attacker <a@example.com> 1767225600 +0000\n\n")
	return []byte(b.String())
}

// writeLoose writes a loose object of kind into gitDir: head, fill up to
// size, tail (gitserver.WriteLooseObject).
func writeLoose(t *testing.T, gitDir string, kind plumbing.ObjectType, head []byte, size int64, fill byte, tail []byte) plumbing.Hash {
	t.Helper()
	hash, err := gitserver.WriteLooseObject(gitDir, kind, head, size, fill, tail)
	if err != nil {
		t.Fatal(err)
	}
	return hash
}

// commitBomb writes a commit of tree whose message is size bytes, nearly
// all of one byte.
func commitBomb(t *testing.T, gitDir string, size int64, tree plumbing.Hash, parents ...plumbing.Hash) plumbing.Hash {
	return writeLoose(t, gitDir, plumbing.CommitObject, commitHeader(tree, parents...), size, 'a', []byte("\n"))
}

// treeBomb writes a tree of one file whose name is nearly size bytes.
func treeBomb(t *testing.T, gitDir string, size int64, blob plumbing.Hash) plumbing.Hash {
	return writeLoose(t, gitDir, plumbing.TreeObject, []byte("100644 "), size, 'n', append([]byte{0}, blob[:]...))
}

// setRef points ref of the repository at gitDir at hash.
func setRef(t *testing.T, gitDir, ref string, hash plumbing.Hash) {
	t.Helper()
	path := filepath.Join(gitDir, filepath.FromSlash(ref))
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(hash.String()+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
}

// runGit runs the git command line in dir, for what only it does in a test:
// packing a repository as `git gc` would.
func runGit(t testing.TB, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=true")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

// bounded runs read and returns what it allocated and how long it took,
// with its error.
func bounded(read func() error) (allocated uint64, took time.Duration, err error) {
	runtime.GC()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	started := time.Now()
	err = read()
	took = time.Since(started)
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc, took, err
}

// hostileRepo is a local repository holding, besides a good commit on
// main, one object of each kind over its bound, each reachable from its
// own ref.
type hostileRepo struct {
	dir                              string
	good                             string
	commitBomb, treeBomb, blobBomb   plumbing.Hash
	treeCommit, blobCommit           plumbing.Hash
	recordCommitBomb, recordBlobBomb plumbing.Hash
}

func newHostileRepo(t *testing.T, packed bool) *hostileRepo {
	repo := newExportRepo(t)
	good := repo.commit(map[string]string{"ok.yaml": "ok\n"})
	gitDir := filepath.Join(repo.dir, ".git")
	goodCommit, err := repo.repo.CommitObject(plumbing.NewHash(good))
	if err != nil {
		t.Fatal(err)
	}
	h := &hostileRepo{dir: repo.dir, good: good}
	h.commitBomb = commitBomb(t, gitDir, bombSize, goodCommit.TreeHash, goodCommit.Hash)
	setRef(t, gitDir, "refs/heads/commit-bomb", h.commitBomb)

	h.treeBomb = treeBomb(t, gitDir, bombSize, repo.rawBlob("ok\n"))
	h.treeCommit = plumbing.NewHash(repo.rawCommitOfTree(h.treeBomb, goodCommit.Hash))
	setRef(t, gitDir, "refs/heads/tree-bomb", h.treeCommit)

	h.blobBomb = writeLoose(t, gitDir, plumbing.BlobObject, nil, bombSize, 'b', nil)
	h.blobCommit = plumbing.NewHash(repo.rawCommit([]object.TreeEntry{{Name: "zeros.yaml", Mode: filemode.Regular, Hash: h.blobBomb}}, goodCommit.Hash))
	setRef(t, gitDir, "refs/heads/blob-bomb", h.blobCommit)

	// The records: dev's newest record commit is a bomb, qa's record file is.
	h.recordCommitBomb = commitBomb(t, gitDir, bombSize, goodCommit.TreeHash)
	setRef(t, gitDir, rollout.LandscapeRefPrefix+"dev", h.recordCommitBomb)
	h.recordBlobBomb = writeLoose(t, gitDir, plumbing.BlobObject, nil, bombSize, ' ', nil)
	setRef(t, gitDir, rollout.LandscapeRefPrefix+"qa",
		plumbing.NewHash(repo.rawCommit([]object.TreeEntry{{Name: rollout.RecordFileName, Mode: filemode.Regular, Hash: h.recordBlobBomb}})))
	if packed {
		runGit(t, repo.dir, "repack", "-a", "-d", "-q")
		loose, _ := filepath.Glob(filepath.Join(gitDir, "objects", "??", "*"))
		if len(loose) != 0 {
			t.Fatalf("repack left loose objects: %v", loose)
		}
	}
	return h
}

// rawCommitOfTree stores a commit of tree, for trees rawCommit cannot
// encode.
func (r *exportRepo) rawCommitOfTree(tree plumbing.Hash, parents ...plumbing.Hash) string {
	r.t.Helper()
	commit := &object.Commit{Author: *r.signature(), Committer: *r.signature(), Message: "raw", TreeHash: tree, ParentHashes: parents}
	return r.store(commit).String()
}

func TestEveryReaderRefusesAnObjectOverItsBoundFromItsHeader(t *testing.T) {
	for _, packed := range []bool{false, true} {
		form := "loose"
		if packed {
			form = "packed"
		}
		t.Run(form, func(t *testing.T) {
			h := newHostileRepo(t, packed)
			limits := ObjectLimitsFor(1 << 20)
			refusal := func(kind string, hash plumbing.Hash, bound string) string {
				if kind == "blob" {
					return fmt.Sprintf("blob %s is 128 MiB, more than the maximum checkout size of %s (raise it with --max-checkout-size)", hash, bound)
				}
				return fmt.Sprintf("%s %s is 128 MiB, more than the %s a %s may have (raise it with --max-checkout-size)", kind, hash, bound, kind)
			}
			landscapes := func() *Landscapes {
				l, err := OpenLandscapes(h.dir, limits)
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { _ = l.Close() })
				return l
			}
			tests := []struct {
				name string
				read func() error
				want string
			}{
				{
					name: "ExportTree refuses a commit whose message is huge",
					read: func() error {
						_, err := ExportTree(context.Background(), h.dir, "commit-bomb", filepath.Join(t.TempDir(), "tree"), 1<<20)
						return err
					},
					want: refusal("commit", h.commitBomb, "2 MiB"),
				},
				{
					name: "CommitTime refuses it too",
					read: func() error {
						_, err := CommitTime(h.dir, h.commitBomb.String(), limits)
						return err
					},
					want: refusal("commit", h.commitBomb, "2 MiB"),
				},
				{
					name: "ExportTree refuses a tree with a giant entry name",
					read: func() error {
						_, err := ExportTree(context.Background(), h.dir, "tree-bomb", filepath.Join(t.TempDir(), "tree"), 1<<20)
						return err
					},
					want: refusal("tree", h.treeBomb, "8 MiB"),
				},
				{
					name: "ExportTree refuses a blob larger than the checkout",
					read: func() error {
						_, err := ExportTree(context.Background(), h.dir, "blob-bomb", filepath.Join(t.TempDir(), "tree"), 1<<20)
						return err
					},
					want: refusal("blob", h.blobBomb, "1 MiB"),
				},
				{
					name: "Candidates refuses a branch tip whose message is huge",
					read: func() error {
						_, err := landscapes().Candidates("commit-bomb", "", 5)
						return err
					},
					want: refusal("commit", h.commitBomb, "2 MiB"),
				},
				{
					name: "Records refuses a record commit whose message is huge",
					read: func() error {
						_, err := landscapes().Records("dev", RecordLimits{})
						return err
					},
					// Packed, it may be a delta on the other commit bomb,
					// which is then named as its base.
					want: fmt.Sprintf("commit %s is 128 MiB", h.recordCommitBomb),
				},
				{
					name: "Records skips a record whose file is huge, with a warning naming it",
					read: func() error {
						history, err := landscapes().Records("qa", RecordLimits{})
						if err != nil || len(history.Warnings) != 1 {
							return fmt.Errorf("want one warning, got %v (error %v)", history.Warnings, err)
						}
						return history.Warnings[0]
					},
					want: refusal("blob", h.recordBlobBomb, "1 MiB"),
				},
			}
			for _, tt := range tests {
				t.Run(tt.name, func(t *testing.T) {
					g := NewWithT(t)
					allocated, took, err := bounded(tt.read)
					g.Expect(err).To(HaveOccurred())
					g.Expect(err.Error()).To(ContainSubstring(tt.want))
					g.Expect(allocated).To(BeNumerically("<", maxBombAlloc), "the object is refused from its header, never inflated")
					g.Expect(took).To(BeNumerically("<", 5*time.Second))
				})
			}
			t.Run("the good commit next to them is read", func(t *testing.T) {
				g := NewWithT(t)
				_, err := ExportTree(context.Background(), h.dir, h.good, filepath.Join(t.TempDir(), "tree"), 1<<20)
				g.Expect(err).NotTo(HaveOccurred())
				_, err = CommitTime(h.dir, h.good, limits)
				g.Expect(err).NotTo(HaveOccurred())
			})
		})
	}
}

// Git stores a commit much like another as a delta on it; the size the
// delta makes is read from its first bytes and its base's header, and
// refused, never applied.
func TestACommitStoredAsADeltaIsRefusedByTheSizeItsDeltaMakes(t *testing.T) {
	g := NewWithT(t)
	repo := newExportRepo(t)
	good := repo.commit(map[string]string{"ok.yaml": "ok\n"})
	gitDir := filepath.Join(repo.dir, ".git")
	goodCommit, err := repo.repo.CommitObject(plumbing.NewHash(good))
	g.Expect(err).NotTo(HaveOccurred())
	const size = 3 << 20 // over the 2 MiB bound, small enough for git to make deltas of
	first := commitBomb(t, gitDir, size, goodCommit.TreeHash, goodCommit.Hash)
	second := writeLoose(t, gitDir, plumbing.CommitObject, commitHeader(goodCommit.TreeHash, first), size, 'a', []byte("b\n"))
	setRef(t, gitDir, "refs/heads/deltas", second)
	runGit(t, repo.dir, "repack", "-a", "-d", "-q", "-f", "--window=10", "--depth=10")
	packs, _ := filepath.Glob(filepath.Join(gitDir, "objects", "pack", "*.idx"))
	g.Expect(packs).To(HaveLen(1))
	deltas := 0
	for _, line := range strings.Split(runGit(t, repo.dir, "verify-pack", "-v", packs[0]), "\n") {
		if fields := strings.Fields(line); len(fields) == 7 && fields[1] == "commit" {
			deltas++
		}
	}
	g.Expect(deltas).To(Equal(1), "one of the two commits is stored as a delta on the other")

	for _, commit := range []plumbing.Hash{first, second} {
		_, err := CommitTime(repo.dir, commit.String(), ObjectLimitsFor(1<<30))
		g.Expect(err).NotTo(HaveOccurred(), "within a larger bound, the delta and its base are read")
	}
	for _, commit := range []plumbing.Hash{first, second} {
		allocated, _, err := bounded(func() error {
			_, err := CommitTime(repo.dir, commit.String(), ObjectLimitsFor(0))
			return err
		})
		g.Expect(err).To(MatchError(ErrObjectTooLarge))
		g.Expect(err.Error()).To(ContainSubstring(fmt.Sprintf("commit %s is 3 MiB", commit)))
		g.Expect(allocated).To(BeNumerically("<", 2<<20))
	}
}

// The commit a branch's tip is, with a message of 128 MiB: about 128 KiB
// in the pack the server sends. The fetch refuses the pack by its headers
// before go-git indexes it (which would hold the commit whole), names the
// revision, and does not download it again while the branch stays there.
func TestAFetchRefusesAPackHoldingAnObjectOverItsBoundBeforeIndexingIt(t *testing.T) {
	g := NewWithT(t)
	server := startGitServer(t, gitserver.Options{})
	seeded := seededRepo(t, server, "profiles")
	bareDir := filepath.Join(server.Root(), "profiles.git")
	bare, err := git.PlainOpen(bareDir)
	g.Expect(err).NotTo(HaveOccurred())
	seededCommit, err := bare.CommitObject(plumbing.NewHash(seeded))
	g.Expect(err).NotTo(HaveOccurred())
	bomb := commitBomb(t, bareDir, bombSize, seededCommit.TreeHash, seededCommit.Hash)
	setRef(t, bareDir, "refs/heads/main", bomb)
	fetcher := newTestFetcher(t, FetcherOptions{MaxCheckoutSize: 64 << 20})
	request := Request{URL: server.RepoURL("profiles"), Ref: Ref{Branch: "main"}, CacheKey: "ns/tenant"}

	allocated, took, err := bounded(func() error {
		_, err := fetch(fetcher, request)
		return err
	})

	g.Expect(err).To(MatchError(ErrObjectTooLarge))
	g.Expect(err.Error()).To(HavePrefix("commit " + bomb.String() + " refused: fetch branch \"main\" of " + server.RepoURL("profiles") + ": commit number "))
	g.Expect(err.Error()).To(HaveSuffix(" is 128 MiB, more than the 2 MiB a commit may have (raise it with --max-checkout-size)"))
	var refused *RevisionRefusedError
	g.Expect(errors.As(err, &refused)).To(BeTrue())
	g.Expect(refused.Revision).To(Equal("main@sha1:" + bomb.String()))
	g.Expect(allocated).To(BeNumerically("<", maxBombAlloc), "the pack is refused by its headers, the commit never inflated in this process")
	g.Expect(took).To(BeNumerically("<", 10*time.Second))
	g.Expect(os.ReadDir(fetcher.Root())).To(BeEmpty(), "nothing of the refused fetch stays")

	uploads := server.Requests().UploadPacks
	_, again := fetch(fetcher, request)
	g.Expect(again).To(MatchError(ErrObjectTooLarge))
	g.Expect(server.Requests().UploadPacks).To(Equal(uploads), "the refused revision is not downloaded again")

	// A restarted process has forgotten the refusal: it downloads the
	// revision once more and refuses it again from the headers alone.
	restarted, err := New(fetcher.Root(), FetcherOptions{MaxCheckoutSize: 64 << 20})
	g.Expect(err).NotTo(HaveOccurred())
	allocated, _, err = bounded(func() error {
		_, err := fetch(restarted, request)
		return err
	})
	g.Expect(err).To(MatchError(ErrObjectTooLarge))
	g.Expect(server.Requests().UploadPacks).To(Equal(uploads+1), "downloaded once more after the restart")
	g.Expect(allocated).To(BeNumerically("<", maxBombAlloc), "and refused without inflating it")

	landscapes, err := fetchLandscapes(t, fetcher, LandscapeRequest{URL: server.RepoURL("profiles"), Branch: "main", CacheKey: "ns/tenant"})
	g.Expect(err).To(MatchError(ErrObjectTooLarge), "the mirror of a branch that holds it refuses it too")
	g.Expect(IsTransient(err)).To(BeFalse())
	g.Expect(landscapes).To(BeNil())
}

// dirSize is what the files under dir hold.
func dirSize(t *testing.T, dir string) int64 {
	t.Helper()
	var size int64
	err := filepath.Walk(dir, func(_ string, info os.FileInfo, err error) error {
		if err == nil && !info.IsDir() {
			size += info.Size()
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return size
}

func TestPushesToBranchesNoLandscapeFollowsDoNotGrowTheMirror(t *testing.T) {
	g := NewWithT(t)
	server := startGitServer(t, gitserver.Options{})
	seededRepo(t, server, "profiles")
	fetcher := newTestFetcher(t, FetcherOptions{MaxCheckoutSize: 1 << 20})
	request := LandscapeRequest{URL: server.RepoURL("profiles"), Branch: "main", CacheKey: "ns/dev"}
	mirror := filepath.Join(fetcher.Root(), mustCacheDirName(t, "ns/dev")+landscapesDirSuffix)
	_, err := fetchLandscapes(t, fetcher, request)
	g.Expect(err).NotTo(HaveOccurred())
	before := dirSize(t, mirror)

	for i := range 3 {
		commit(t, server, "profiles", fmt.Sprintf("feature-%d", i), map[string]string{"big.bin": incompressible(300 << 10)})
		tag(t, server, "profiles", fmt.Sprintf("v0.%d.0", i), commit(t, server, "profiles", fmt.Sprintf("feature-%d", i), map[string]string{"more.bin": incompressible(100 << 10)}))
		_, err := fetchLandscapes(t, fetcher, request)
		g.Expect(err).NotTo(HaveOccurred())
	}

	g.Expect(dirSize(t, mirror)).To(BeNumerically("<=", before+4<<10), "only refs changed, no object of another branch or a tag was fetched")

	// A mirror an older operator kept, with every branch and tag: the
	// refs it no longer wants go at the next fetch, and what only they
	// reached is collected with the mirror.
	for _, ref := range []string{"refs/tags/v9.0.0", "refs/heads/feature-0"} {
		setRef(t, mirror, ref, plumbing.NewHash(seededHead(t, server)))
	}
	_, err = fetchLandscapes(t, fetcher, request)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(filepath.Join(mirror, "refs", "tags", "v9.0.0")).NotTo(BeAnExistingFile())
	g.Expect(filepath.Join(mirror, "refs", "heads", "feature-0")).NotTo(BeAnExistingFile())
	g.Expect(filepath.Join(mirror, "refs", "heads", "main")).To(BeAnExistingFile())

	_, err = fetchLandscapes(t, fetcher, LandscapeRequest{URL: server.RepoURL("profiles"), Branch: "missing", CacheKey: "ns/dev"})
	g.Expect(err).To(MatchError(ErrReferenceNotFound))
	g.Expect(err).To(MatchError(ContainSubstring(`branch "missing" not found on `)))
}

// Each force-push of the followed branch leaves the previous history
// unreachable; the mirror is collected when it would pass its budget, so it
// holds at most the budget across fetches, where a budget per fetch let it
// grow with every push.
func TestTheMirrorStaysWithinItsBudgetAcrossFetches(t *testing.T) {
	g := NewWithT(t)
	server := startGitServer(t, gitserver.Options{})
	seeded := seededRepo(t, server, "profiles")
	const budget = 1 << 20
	fetcher := newTestFetcher(t, FetcherOptions{MaxCheckoutSize: budget})
	request := LandscapeRequest{URL: server.RepoURL("profiles"), Branch: "main", CacheKey: "ns/dev"}
	mirror := filepath.Join(fetcher.Root(), mustCacheDirName(t, "ns/dev")+landscapesDirSuffix)

	for i := range 6 {
		tip, err := server.ForcePush("profiles", "main", seeded, map[string]string{"big.bin": incompressible(300<<10 + i)}, fmt.Sprintf("push %d", i))
		g.Expect(err).NotTo(HaveOccurred())
		landscapes, err := fetchLandscapes(t, fetcher, request)
		g.Expect(err).NotTo(HaveOccurred(), "push %d", i)
		candidates, err := landscapes.Candidates("main", seeded, 0)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(candidates).To(Equal([]string{tip}))
		g.Expect(dirSize(t, mirror)).To(BeNumerically("<=", budget), "after push %d", i)
	}
}

// FuzzCheckPack feeds any bytes to the check of a fetched pack: it refuses
// or accepts them without panicking, and accepts nothing that is not a
// pack whose every entry is within the bounds.
func FuzzCheckPack(f *testing.F) {
	repo := newExportRepo(f)
	repo.commit(map[string]string{"a.yaml": "a: 1\n", "b/c.yaml": strings.Repeat("c", 300)})
	repo.commit(map[string]string{"a.yaml": "a: 2\n" + strings.Repeat("c", 300)})
	runGit(f, repo.dir, "repack", "-a", "-d", "-q")
	packs, _ := filepath.Glob(filepath.Join(repo.dir, ".git", "objects", "pack", "*.pack"))
	if len(packs) != 1 {
		f.Fatalf("want one pack, got %v", packs)
	}
	pack, err := os.ReadFile(packs[0])
	if err != nil {
		f.Fatal(err)
	}
	f.Add(pack)
	f.Add(pack[:len(pack)/2])
	f.Add([]byte("PACK\x00\x00\x00\x02\x00\x00\x00\x01\xff\xff\xff\xff\x0f"))
	storage := openBoundedStorage(osfs.New(filepath.Join(repo.dir, ".git")), ObjectLimits{Commit: 256, Tree: 256, Tag: 256, Blob: 256}, 1<<20, false)
	f.Cleanup(func() { _ = storage.Close() })
	f.Fuzz(func(t *testing.T, data []byte) {
		err := storage.checkPack(bytes.NewReader(data))
		var tooLarge *ObjectTooLargeError
		if errors.As(err, &tooLarge) && tooLarge.Size <= tooLarge.Limit {
			t.Fatalf("refused %d bytes within the bound of %d: %v", tooLarge.Size, tooLarge.Limit, err)
		}
	})
}

// seededHead is the commit main of the server's profiles repository holds.
func seededHead(t *testing.T, server *gitserver.Server) string {
	t.Helper()
	bare, err := git.PlainOpen(filepath.Join(server.Root(), "profiles.git"))
	if err != nil {
		t.Fatal(err)
	}
	ref, err := bare.Reference(plumbing.NewBranchReferenceName("main"), true)
	if err != nil {
		t.Fatal(err)
	}
	return ref.Hash().String()
}
