package gitsource

import (
	"context"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"

	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/object"
)

// exportRepo is a local repository made by go-git for the export tests.
type exportRepo struct {
	t    testing.TB
	dir  string
	repo *git.Repository
	// commits counts commits, so that each gets a distinct time.
	commits int
}

func newExportRepo(t testing.TB) *exportRepo {
	t.Helper()
	dir := t.TempDir()
	repo, err := git.PlainInit(dir, false)
	if err != nil {
		t.Fatalf("init repository: %v", err)
	}
	return &exportRepo{t: t, dir: dir, repo: repo}
}

// commit writes files into the work tree (a value starting with "-> " makes
// a symbolic link to the rest, an empty value deletes the file), stages
// everything and commits it on the current branch.
func (r *exportRepo) commit(files map[string]string) string {
	r.t.Helper()
	for name, content := range files {
		r.writeFile(name, content)
	}
	worktree, err := r.repo.Worktree()
	if err != nil {
		r.t.Fatal(err)
	}
	if err := worktree.AddWithOptions(&git.AddOptions{All: true}); err != nil {
		r.t.Fatalf("stage: %v", err)
	}
	hash, err := worktree.Commit("change", &git.CommitOptions{Author: r.signature(), AllowEmptyCommits: true})
	if err != nil {
		r.t.Fatalf("commit: %v", err)
	}
	return hash.String()
}

// writeFile writes one file of commit's files into the work tree.
func (r *exportRepo) writeFile(name, content string) {
	r.t.Helper()
	path := filepath.Join(r.dir, filepath.FromSlash(name))
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		r.t.Fatal(err)
	}
	_ = os.Remove(path)
	var err error
	switch {
	case content == "":
	case strings.HasPrefix(content, "-> "):
		err = os.Symlink(strings.TrimPrefix(content, "-> "), path)
	case strings.HasSuffix(name, ".sh"):
		err = os.WriteFile(path, []byte(content), 0o755)
	default:
		err = os.WriteFile(path, []byte(content), 0o644)
	}
	if err != nil {
		r.t.Fatal(err)
	}
}

func (r *exportRepo) signature() *object.Signature {
	r.commits++
	return &object.Signature{Name: "test", Email: "test@example.com", When: time.Date(2026, 1, 1, 0, r.commits, 0, 0, time.UTC)}
}

// rawCommit stores a commit of exactly entries, bypassing the work tree, so
// that tests can make trees no work tree could produce. It returns the
// commit; no branch moves. Parents need not exist, as in a shallow clone.
func (r *exportRepo) rawCommit(entries []object.TreeEntry, parents ...plumbing.Hash) string {
	r.t.Helper()
	treeHash := r.store(&object.Tree{Entries: entries})
	commit := &object.Commit{Author: *r.signature(), Committer: *r.signature(), Message: "raw", TreeHash: treeHash, ParentHashes: parents}
	return r.store(commit).String()
}

// rawBlob stores content as a blob.
func (r *exportRepo) rawBlob(content string) plumbing.Hash {
	r.t.Helper()
	obj := r.repo.Storer.NewEncodedObject()
	obj.SetType(plumbing.BlobObject)
	w, err := obj.Writer()
	if err != nil {
		r.t.Fatal(err)
	}
	if _, err := w.Write([]byte(content)); err != nil {
		r.t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		r.t.Fatal(err)
	}
	hash, err := r.repo.Storer.SetEncodedObject(obj)
	if err != nil {
		r.t.Fatal(err)
	}
	return hash
}

func (r *exportRepo) store(o interface {
	Encode(plumbing.EncodedObject) error
}) plumbing.Hash {
	r.t.Helper()
	obj := r.repo.Storer.NewEncodedObject()
	if err := o.Encode(obj); err != nil {
		r.t.Fatal(err)
	}
	hash, err := r.repo.Storer.SetEncodedObject(obj)
	if err != nil {
		r.t.Fatal(err)
	}
	return hash
}

func (r *exportRepo) tag(name, commit string, annotated bool) {
	r.t.Helper()
	var options *git.CreateTagOptions
	if annotated {
		options = &git.CreateTagOptions{Tagger: r.signature(), Message: "release " + name}
	}
	if _, err := r.repo.CreateTag(name, plumbing.NewHash(commit), options); err != nil {
		r.t.Fatalf("tag %s: %v", name, err)
	}
}

func (r *exportRepo) branch(name, commit string) {
	r.t.Helper()
	if err := r.repo.Storer.SetReference(plumbing.NewHashReference(plumbing.NewBranchReferenceName(name), plumbing.NewHash(commit))); err != nil {
		r.t.Fatalf("branch %s: %v", name, err)
	}
}

// exportedFiles lists what is under dir as "path: content" for files and
// "path -> target" for symbolic links, sorted; directories are implied.
func exportedFiles(g *WithT, dir string) []string {
	var files []string
	err := filepath.WalkDir(dir, func(path string, entry os.DirEntry, err error) error {
		if err != nil || path == dir || entry.IsDir() {
			return err
		}
		rel, err := filepath.Rel(dir, path)
		if err != nil {
			return err
		}
		rel = filepath.ToSlash(rel)
		if entry.Type()&os.ModeSymlink != 0 {
			target, err := os.Readlink(path)
			files = append(files, rel+" -> "+target)
			return err
		}
		content, err := os.ReadFile(path)
		files = append(files, rel+": "+string(content))
		return err
	})
	g.Expect(err).NotTo(HaveOccurred())
	sort.Strings(files)
	return files
}

func TestExportTreeResolvesRevisionsAsGitDoes(t *testing.T) {
	repo := newExportRepo(t)
	first := repo.commit(map[string]string{"overlays/dev/kustomization.yaml": "resources: [one]\n"})
	second := repo.commit(map[string]string{"overlays/dev/kustomization.yaml": "resources: [two]\n"})
	repo.tag("v1", first, false)
	repo.tag("v2", second, true)
	repo.branch("release", first)
	third := repo.commit(map[string]string{"overlays/dev/kustomization.yaml": "resources: [three]\n"})

	tests := []struct {
		name     string
		revision string
		commit   string
	}{
		{"an empty revision means HEAD", "", third},
		{"HEAD", "HEAD", third},
		{"the current branch", "master", third},
		{"another branch", "release", first},
		{"a branch by its full name", "refs/heads/release", first},
		{"a lightweight tag", "v1", first},
		{"an annotated tag, peeled to its commit", "v2", second},
		{"a full SHA-1", second, second},
		{"an abbreviated SHA-1", second[:10], second},
		{"the parent of HEAD", "HEAD~1", second},
		{"the grandparent of HEAD", "HEAD~2", first},
		{"the first parent of HEAD by caret", "HEAD^", second},
	}
	contents := map[string]string{first: "one", second: "two", third: "three"}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			dest := filepath.Join(t.TempDir(), "tree")

			commit, err := ExportTree(context.Background(), repo.dir, tc.revision, dest, 0)

			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(commit).To(Equal(tc.commit))
			g.Expect(exportedFiles(g, dest)).To(Equal([]string{"overlays/dev/kustomization.yaml: resources: [" + contents[tc.commit] + "]\n"}))
		})
	}
}

func TestExportTreeWritesOnlyCommittedContent(t *testing.T) {
	g := NewWithT(t)
	repo := newExportRepo(t)
	repo.commit(map[string]string{"profile.yaml": "committed\n"})
	g.Expect(os.WriteFile(filepath.Join(repo.dir, "profile.yaml"), []byte("edited\n"), 0o644)).To(Succeed())
	g.Expect(os.WriteFile(filepath.Join(repo.dir, "untracked.yaml"), []byte("new\n"), 0o644)).To(Succeed())
	dest := t.TempDir()

	_, err := ExportTree(context.Background(), repo.dir, "HEAD", dest, 0)

	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(exportedFiles(g, dest)).To(Equal([]string{"profile.yaml: committed\n"}), "no .git, no work tree edits, no untracked files")
}

func TestExportTreeRecreatesSymbolicLinksAndModes(t *testing.T) {
	g := NewWithT(t)
	repo := newExportRepo(t)
	repo.commit(map[string]string{
		"base/profiles.yaml":       "kind: CloudProfile\n",
		"overlays/dev/base":        "-> ../../base",
		"overlays/dev/escape.yaml": "-> ../../../outside.yaml",
		"hack/check.sh":            "#!/bin/sh\n",
	})
	dest := t.TempDir()

	_, err := ExportTree(context.Background(), repo.dir, "HEAD", dest, 0)

	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(exportedFiles(g, dest)).To(Equal([]string{
		"base/profiles.yaml: kind: CloudProfile\n",
		"hack/check.sh: #!/bin/sh\n",
		"overlays/dev/base -> ../../base",
		"overlays/dev/escape.yaml -> ../../../outside.yaml",
	}), "links are recreated as links with their targets as committed, also those leaving the tree")
	script, err := os.Stat(filepath.Join(dest, "hack", "check.sh"))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(script.Mode().Perm()&0o100).NotTo(BeZero(), "executable files stay executable")
	profiles, err := os.Stat(filepath.Join(dest, "base", "profiles.yaml"))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(profiles.Mode().Perm() & 0o111).To(BeZero())
}

func TestExportTreeKeepsAbsoluteLinkTargets(t *testing.T) {
	g := NewWithT(t)
	repo := newExportRepo(t)
	repo.commit(map[string]string{"ok.yaml": "ok\n"})
	// go-git's work tree stores an absolute target relative to the work
	// tree, so this link is committed without it, as git would store it.
	commit := repo.rawCommit([]object.TreeEntry{{Name: "passwd", Mode: filemode.Symlink, Hash: repo.rawBlob("/etc/passwd")}})
	dest := t.TempDir()

	_, err := ExportTree(context.Background(), repo.dir, commit, dest, 0)

	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(exportedFiles(g, dest)).To(Equal([]string{"passwd -> /etc/passwd"}), "the build, not the export, refuses links leaving the tree")
}

func TestExportTreeOpensTheRepositoryFromASubdirectory(t *testing.T) {
	g := NewWithT(t)
	repo := newExportRepo(t)
	head := repo.commit(map[string]string{"overlays/dev/kustomization.yaml": "resources: []\n"})

	commit, err := ExportTree(context.Background(), filepath.Join(repo.dir, "overlays", "dev"), "HEAD", t.TempDir(), 0)

	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(commit).To(Equal(head))
}

func TestExportTreeEnforcesTheSizeLimit(t *testing.T) {
	repo := newExportRepo(t)
	// 10 + 20 bytes of files and a 6-byte link target: 36 bytes in all.
	repo.commit(map[string]string{"a.yaml": strings.Repeat("a", 10), "b/c.yaml": strings.Repeat("c", 20), "link": "-> a.yaml"})

	tests := []struct {
		name     string
		maxBytes int64
		wantErr  string
	}{
		{"no limit", 0, ""},
		{"a limit the tree fits exactly", 36, ""},
		{"a limit one byte short", 35, "the checkout exceeds the maximum checkout size of 35 bytes: reached at "},
		{"a limit smaller than the first file, which its blob alone passes", 5, "read file a.yaml: blob 1a4ef0a13676bd250bc7a339220069966d340462 is 10 bytes, more than the maximum checkout size of 5 bytes"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			dest := filepath.Join(t.TempDir(), "tree")

			_, err := ExportTree(context.Background(), repo.dir, "HEAD", dest, tc.maxBytes)

			if tc.wantErr == "" {
				g.Expect(err).NotTo(HaveOccurred())
				g.Expect(exportedFiles(g, dest)).To(HaveLen(3))
				return
			}
			g.Expect(err).To(MatchError(ErrCheckoutTooLarge))
			g.Expect(err.Error()).To(ContainSubstring(tc.wantErr))
			g.Expect(dest).NotTo(BeAnExistingFile(), "a failed export removes the directory it created")
		})
	}
}

func TestAFailedExportEmptiesAnExistingDestination(t *testing.T) {
	g := NewWithT(t)
	repo := newExportRepo(t)
	repo.commit(map[string]string{"a.yaml": "a\n", "z/big.yaml": strings.Repeat("z", 100)})
	dest := t.TempDir()

	_, err := ExportTree(context.Background(), repo.dir, "HEAD", dest, 50)

	g.Expect(err).To(MatchError(ErrCheckoutTooLarge))
	g.Expect(dest).To(BeADirectory(), "a directory the caller made is kept")
	entries, err := os.ReadDir(dest)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(entries).To(BeEmpty(), "and left empty, not half written")
}

func TestExportTreeRefusesMalformedTrees(t *testing.T) {
	repo := newExportRepo(t)
	repo.commit(map[string]string{"ok.yaml": "ok\n"})
	blob := repo.rawBlob("payload\n")
	link := repo.rawBlob("/tmp")
	file := func(name string) object.TreeEntry {
		return object.TreeEntry{Name: name, Mode: filemode.Regular, Hash: blob}
	}
	dirOf := func(name string, entries ...object.TreeEntry) object.TreeEntry {
		return object.TreeEntry{Name: name, Mode: filemode.Dir, Hash: repo.store(&object.Tree{Entries: entries})}
	}

	tests := []struct {
		name    string
		entries []object.TreeEntry
		wantErr string
	}{
		{"a .git directory", []object.TreeEntry{dirOf(".git", file("config"))},
			`malformed tree: the top-level tree has an entry ".git"; a commit may not hold Git metadata`},
		{"a .git directory in another case", []object.TreeEntry{dirOf("sub", dirOf(".GiT", file("HEAD")))},
			`malformed tree: directory sub has an entry ".GiT"; a commit may not hold Git metadata`},
		{"an entry named ..", []object.TreeEntry{file("..")},
			`malformed tree: the top-level tree has an entry named ".."`},
		{"an entry with a slash", []object.TreeEntry{file("../../escape.yaml")},
			`malformed tree: the top-level tree has an entry "../../escape.yaml" with a slash or NUL byte`},
		{"a link and a directory of one name", []object.TreeEntry{
			{Name: "dir", Mode: filemode.Symlink, Hash: link}, dirOf("dir", file("x.yaml")),
		}, `malformed tree: dir appears twice`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			commit := repo.rawCommit(tc.entries)
			dest := filepath.Join(t.TempDir(), "tree")

			_, err := ExportTree(context.Background(), repo.dir, commit, dest, 0)

			g.Expect(err).To(MatchError(ErrMalformedTree))
			g.Expect(err.Error()).To(ContainSubstring(tc.wantErr))
			g.Expect(dest).NotTo(BeAnExistingFile())
		})
	}
}

func TestExportTreeWritesASubmoduleAsAnEmptyDirectory(t *testing.T) {
	g := NewWithT(t)
	repo := newExportRepo(t)
	repo.commit(map[string]string{"ok.yaml": "ok\n"})
	commit := repo.rawCommit([]object.TreeEntry{
		{Name: "ok.yaml", Mode: filemode.Regular, Hash: repo.rawBlob("ok\n")},
		{Name: "vendor", Mode: filemode.Submodule, Hash: plumbing.NewHash(strings.Repeat("ab", 20))},
	})
	dest := t.TempDir()

	_, err := ExportTree(context.Background(), repo.dir, commit, dest, 0)

	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(filepath.Join(dest, "vendor")).To(BeADirectory())
	g.Expect(exportedFiles(g, dest)).To(Equal([]string{"ok.yaml: ok\n"}))
}

func TestExportTreeRefusesWhatItCannotExport(t *testing.T) {
	repo := newExportRepo(t)
	repo.commit(map[string]string{"one.yaml": "1\n"})
	repo.commit(map[string]string{"two.yaml": "2\n"})
	// A commit whose parent is not in the object store, as the oldest
	// commit of a shallow clone.
	shallow := repo.rawCommit([]object.TreeEntry{{Name: "a.yaml", Mode: filemode.Regular, Hash: repo.rawBlob("a\n")}},
		plumbing.NewHash(strings.Repeat("cd", 20)))
	full := t.TempDir()
	if err := os.WriteFile(filepath.Join(full, "keep.txt"), []byte("mine\n"), 0o644); err != nil {
		t.Fatal(err)
	}

	tests := []struct {
		name     string
		repoDir  string
		revision string
		dest     string
		maxBytes int64
		match    error
		wantErr  string
	}{
		{"an unknown branch", repo.dir, "nope", "", 0, ErrReferenceNotFound, `reference not found: revision "nope" not found in `},
		{"an ancestor the history does not have", repo.dir, "HEAD~5", "", 0, ErrReferenceNotFound, `reference not found: revision "HEAD~5" not found in `},
		{"a parent a shallow clone lacks", repo.dir, shallow + "~1", "", 0, ErrReferenceNotFound, "in a shallow clone, fetch the history it needs first"},
		{"a directory that is no repository", t.TempDir(), "HEAD", "", 0, git.ErrRepositoryNotExists, "open Git repository "},
		{"a destination that is not empty", repo.dir, "HEAD", full, 0, nil, "export directory " + full + " is not empty"},
		{"a negative limit", repo.dir, "HEAD", "", -1, nil, "maximum export size -1 is negative; use 0 for no limit"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			dest := tc.dest
			if dest == "" {
				dest = filepath.Join(t.TempDir(), "tree")
			}

			_, err := ExportTree(context.Background(), tc.repoDir, tc.revision, dest, tc.maxBytes)

			g.Expect(err).To(HaveOccurred())
			if tc.match != nil {
				g.Expect(err).To(MatchError(tc.match))
			}
			g.Expect(err.Error()).To(ContainSubstring(tc.wantErr))
		})
	}
	g := NewWithT(t)
	g.Expect(exportedFiles(g, full)).To(Equal([]string{"keep.txt: mine\n"}), "a destination that is not empty is left alone")
}

func TestExportTreeHonoursTheContext(t *testing.T) {
	g := NewWithT(t)
	repo := newExportRepo(t)
	repo.commit(map[string]string{"a.yaml": "a\n"})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	dest := filepath.Join(t.TempDir(), "tree")

	_, err := ExportTree(ctx, repo.dir, "HEAD", dest, 0)

	g.Expect(err).To(MatchError(context.Canceled))
	g.Expect(dest).NotTo(BeAnExistingFile())
}
