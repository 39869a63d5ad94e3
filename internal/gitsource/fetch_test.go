package gitsource

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	. "github.com/onsi/gomega"

	"github.com/profilesync/profilesync/test/gitserver"
)

func TestFetchBranchChecksOutItsTip(t *testing.T) {
	g := NewWithT(t)
	server := startGitServer(t, gitserver.Options{})
	seededRepo(t, server, "profiles")
	releaseTip := commit(t, server, "profiles", "release", map[string]string{"profile.yaml": "version: release\n"})
	fetcher := newTestFetcher(t, FetcherOptions{})

	result, err := fetch(fetcher, Request{URL: server.RepoURL("profiles"), Ref: Ref{Branch: "release"}, CacheKey: "team-a/profiles"})

	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(result.Revision).To(Equal("release@sha1:" + releaseTip))
	g.Expect(result.Commit).To(Equal(releaseTip))
	g.Expect(result.Changed).To(BeTrue())
	g.Expect(result.Dir).To(BeADirectory())
	g.Expect(filepath.Dir(result.Dir)).To(Equal(fetcher.Root()))
	g.Expect(fileIn(g, result.Dir, "profile.yaml")).To(Equal("version: release\n"))
	g.Expect(fileIn(g, result.Dir, "overlays/dev/kustomization")).To(Equal("resources: []\n"))
}

func TestFetchMissingBranchNamesTheBranchesThereAre(t *testing.T) {
	g := NewWithT(t)
	server := startGitServer(t, gitserver.Options{})
	seededRepo(t, server, "profiles")
	fetcher := newTestFetcher(t, FetcherOptions{})

	_, err := fetch(fetcher, Request{URL: server.RepoURL("profiles"), Ref: Ref{Branch: "nope"}, CacheKey: "ns/name"})

	g.Expect(err).To(MatchError(ErrReferenceNotFound))
	g.Expect(err.Error()).To(Equal(`reference not found: branch "nope" not found in ` + server.RepoURL("profiles") + ` (branches: main)`))
}

func TestFetchWithoutRefFollowsTheRemoteHead(t *testing.T) {
	g := NewWithT(t)
	server := startGitServer(t, gitserver.Options{})
	mainTip := seededRepo(t, server, "profiles")
	fetcher := newTestFetcher(t, FetcherOptions{})

	result, err := fetch(fetcher, Request{URL: server.RepoURL("profiles"), CacheKey: "ns/name"})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(result.Revision).To(Equal("main@sha1:" + mainTip))

	developTip := commit(t, server, "profiles", "develop", map[string]string{"profile.yaml": "version: develop\n"})
	g.Expect(server.SetHead("profiles", "develop")).To(Succeed())

	result, err = fetch(fetcher, Request{URL: server.RepoURL("profiles"), CacheKey: "ns/name", LastRevision: result.Revision})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(result.Revision).To(Equal("develop@sha1:" + developTip))
	g.Expect(result.Changed).To(BeTrue())
	g.Expect(fileIn(g, result.Dir, "profile.yaml")).To(Equal("version: develop\n"))
}

func TestFetchTagReportsTheTaggedCommit(t *testing.T) {
	server := startGitServer(t, gitserver.Options{})
	first := seededRepo(t, server, "profiles")
	tag(t, server, "profiles", "v1.0.0", first)
	second := commit(t, server, "profiles", "main", map[string]string{"profile.yaml": "version: 2\n"})
	if _, err := server.AnnotatedTag("profiles", "v2.0.0", second, "release 2"); err != nil {
		t.Fatalf("annotated tag: %v", err)
	}
	commit(t, server, "profiles", "main", map[string]string{"profile.yaml": "version: 3\n"})

	tests := []struct {
		name        string
		tag         string
		wantCommit  string
		wantProfile string
	}{
		{name: "a lightweight tag", tag: "v1.0.0", wantCommit: first, wantProfile: "version: 1\n"},
		{name: "an annotated tag is peeled to its commit", tag: "v2.0.0", wantCommit: second, wantProfile: "version: 2\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			fetcher := newTestFetcher(t, FetcherOptions{})

			result, err := fetch(fetcher, Request{URL: server.RepoURL("profiles"), Ref: Ref{Tag: tt.tag}, CacheKey: "ns/name"})

			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(result.Revision).To(Equal(tt.tag + "@sha1:" + tt.wantCommit))
			g.Expect(fileIn(g, result.Dir, "profile.yaml")).To(Equal(tt.wantProfile))
		})
	}
}

func TestFetchSemVerPicksTheHighestMatchingTag(t *testing.T) {
	server := startGitServer(t, gitserver.Options{})
	v100 := seededRepo(t, server, "profiles")
	tag(t, server, "profiles", "v1.0.0", v100)
	v120 := commit(t, server, "profiles", "main", map[string]string{"profile.yaml": "version: 1.2.0\n"})
	if _, err := server.AnnotatedTag("profiles", "v1.2.0", v120, "release 1.2.0"); err != nil {
		t.Fatalf("annotated tag: %v", err)
	}
	v110 := commit(t, server, "profiles", "main", map[string]string{"profile.yaml": "version: 1.1.0\n"})
	tag(t, server, "profiles", "1.1.0", v110)
	v200 := commit(t, server, "profiles", "main", map[string]string{"profile.yaml": "version: 2.0.0\n"})
	tag(t, server, "profiles", "v2.0.0", v200)
	tag(t, server, "profiles", "latest", v200)

	tests := []struct {
		name         string
		semver       string
		wantRevision string
	}{
		{name: "a range below 2 picks the highest 1.x, not the newest commit", semver: ">=1.0.0 <2.0.0", wantRevision: "v1.2.0@sha1:" + v120},
		{name: "a tilde range", semver: "~1.1", wantRevision: "1.1.0@sha1:" + v110},
		{name: "an open range picks the highest of all", semver: ">=1.0.0", wantRevision: "v2.0.0@sha1:" + v200},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			fetcher := newTestFetcher(t, FetcherOptions{})

			result, err := fetch(fetcher, Request{URL: server.RepoURL("profiles"), Ref: Ref{SemVer: tt.semver}, CacheKey: "ns/name"})

			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(result.Revision).To(Equal(tt.wantRevision))
		})
	}

	t.Run("no matching tag is an error listing the versions there are", func(t *testing.T) {
		g := NewWithT(t)
		fetcher := newTestFetcher(t, FetcherOptions{})

		_, err := fetch(fetcher, Request{URL: server.RepoURL("profiles"), Ref: Ref{SemVer: ">=3.0"}, CacheKey: "ns/name"})

		g.Expect(err).To(MatchError(ErrReferenceNotFound))
		g.Expect(err.Error()).To(ContainSubstring(`no tag matches semver ">=3.0" in ` + server.RepoURL("profiles") +
			` (semver tags, highest first: v2.0.0, v1.2.0, 1.1.0, v1.0.0)`))
	})

	t.Run("an invalid range is an invalid request", func(t *testing.T) {
		g := NewWithT(t)
		fetcher := newTestFetcher(t, FetcherOptions{})

		_, err := fetch(fetcher, Request{URL: server.RepoURL("profiles"), Ref: Ref{SemVer: "not a range"}, CacheKey: "ns/name"})

		g.Expect(err).To(MatchError(ErrInvalidRequest))
		g.Expect(err.Error()).To(ContainSubstring(`semver "not a range" is not a valid range`))
	})
}

func TestFetchCommit(t *testing.T) {
	server := startGitServer(t, gitserver.Options{})
	first := seededRepo(t, server, "profiles")
	second := commit(t, server, "profiles", "main", map[string]string{"profile.yaml": "version: 2\n"})
	commit(t, server, "profiles", "main", map[string]string{"profile.yaml": "version: 3\n"})
	featureOnly := commit(t, server, "profiles", "feature", map[string]string{"profile.yaml": "version: feature\n"})
	commit(t, server, "profiles", "feature", map[string]string{"profile.yaml": "version: feature 2\n"})
	taggedOnly := commit(t, server, "profiles", "doomed", map[string]string{"profile.yaml": "version: tagged\n"})
	tag(t, server, "profiles", "keep", taggedOnly)
	if err := server.DeleteBranch("profiles", "doomed"); err != nil {
		t.Fatalf("delete branch: %v", err)
	}

	tests := []struct {
		name         string
		ref          Ref
		wantRevision string
		wantProfile  string
	}{
		{name: "an old commit of the default branch", ref: Ref{Commit: first}, wantRevision: "sha1:" + first, wantProfile: "version: 1\n"},
		{name: "a commit only on another branch", ref: Ref{Commit: featureOnly}, wantRevision: "sha1:" + featureOnly, wantProfile: "version: feature\n"},
		{name: "a commit reachable only from a tag", ref: Ref{Commit: taggedOnly}, wantRevision: "sha1:" + taggedOnly, wantProfile: "version: tagged\n"},
		{name: "a commit in the history of its branch", ref: Ref{Branch: "main", Commit: second}, wantRevision: "main@sha1:" + second, wantProfile: "version: 2\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			fetcher := newTestFetcher(t, FetcherOptions{})

			result, err := fetch(fetcher, Request{URL: server.RepoURL("profiles"), Ref: tt.ref, CacheKey: "ns/name"})

			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(result.Revision).To(Equal(tt.wantRevision))
			g.Expect(fileIn(g, result.Dir, "profile.yaml")).To(Equal(tt.wantProfile))
		})
	}

	t.Run("a commit that is a branch tip is fetched shallowly", func(t *testing.T) {
		g := NewWithT(t)
		fetcher := newTestFetcher(t, FetcherOptions{})
		tip := commit(t, server, "profiles", "main", map[string]string{"profile.yaml": "version: tip\n"})

		result, err := fetch(fetcher, Request{URL: server.RepoURL("profiles"), Ref: Ref{Commit: tip}, CacheKey: "ns/name"})

		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(result.Revision).To(Equal("sha1:" + tip))
		g.Expect(filepath.Join(result.Dir, ".git", "shallow")).To(BeARegularFile())
	})

	t.Run("a commit not on the named branch is refused", func(t *testing.T) {
		g := NewWithT(t)
		fetcher := newTestFetcher(t, FetcherOptions{})

		_, err := fetch(fetcher, Request{URL: server.RepoURL("profiles"), Ref: Ref{Branch: "main", Commit: featureOnly}, CacheKey: "ns/name"})

		g.Expect(err).To(MatchError(ErrReferenceNotFound))
		g.Expect(err.Error()).To(ContainSubstring(`commit ` + featureOnly + ` is not on branch "main" of ` + server.RepoURL("profiles")))
	})

	t.Run("an unknown commit is reported as not found", func(t *testing.T) {
		g := NewWithT(t)
		fetcher := newTestFetcher(t, FetcherOptions{})
		unknown := "0123456789abcdef0123456789abcdef01234567"

		_, err := fetch(fetcher, Request{URL: server.RepoURL("profiles"), Ref: Ref{Commit: unknown}, CacheKey: "ns/name"})

		g.Expect(err).To(MatchError(ErrReferenceNotFound))
		g.Expect(err.Error()).To(ContainSubstring("commit " + unknown + " not found on any branch or tag of " + server.RepoURL("profiles")))
	})
}

func TestFetchSkipsTheDownloadWhenTheCommitIsAlreadyCheckedOut(t *testing.T) {
	g := NewWithT(t)
	server := startGitServer(t, gitserver.Options{})
	seededRepo(t, server, "profiles")
	fetcher := newTestFetcher(t, FetcherOptions{})
	req := Request{URL: server.RepoURL("profiles"), Ref: Ref{Branch: "main"}, CacheKey: "ns/name"}

	first, err := fetch(fetcher, req)
	g.Expect(err).NotTo(HaveOccurred())
	before := server.Requests()
	inodeBefore := inodeOf(g, first.Dir)

	req.LastRevision = first.Revision
	second, err := fetch(fetcher, req)

	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(second.Changed).To(BeFalse())
	g.Expect(second.Revision).To(Equal(first.Revision))
	g.Expect(second.Dir).To(Equal(first.Dir))
	after := server.Requests()
	g.Expect(after.RefAdvertisements).To(Equal(before.RefAdvertisements+1), "the refs are listed every time")
	g.Expect(after.UploadPacks).To(Equal(before.UploadPacks), "nothing is downloaded")
	g.Expect(inodeOf(g, second.Dir)).To(Equal(inodeBefore), "the checkout is not replaced")
}

func TestFetchOfAnUnchangedCommitWithoutLastRevisionReportsAChange(t *testing.T) {
	g := NewWithT(t)
	server := startGitServer(t, gitserver.Options{})
	seededRepo(t, server, "profiles")
	fetcher := newTestFetcher(t, FetcherOptions{})
	req := Request{URL: server.RepoURL("profiles"), CacheKey: "ns/name"}
	_, err := fetch(fetcher, req)
	g.Expect(err).NotTo(HaveOccurred())
	before := server.Requests()

	// As after a restart of the operator: the cache has the commit, the
	// caller has nothing applied yet.
	result, err := fetch(fetcher, req)

	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(result.Changed).To(BeTrue())
	g.Expect(server.Requests().UploadPacks).To(Equal(before.UploadPacks))
}

func TestFetchOfANewCommitReplacesTheCheckout(t *testing.T) {
	g := NewWithT(t)
	server := startGitServer(t, gitserver.Options{})
	seededRepo(t, server, "profiles")
	fetcher := newTestFetcher(t, FetcherOptions{})
	req := Request{URL: server.RepoURL("profiles"), Ref: Ref{Branch: "main"}, CacheKey: "ns/name"}
	first, err := fetch(fetcher, req)
	g.Expect(err).NotTo(HaveOccurred())
	before := server.Requests()

	next := commit(t, server, "profiles", "main", map[string]string{"profile.yaml": "version: 2\n", "extra.yaml": "x: 1\n"})
	req.LastRevision = first.Revision
	second, err := fetch(fetcher, req)

	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(second.Changed).To(BeTrue())
	g.Expect(second.Revision).To(Equal("main@sha1:" + next))
	g.Expect(second.Dir).To(Equal(first.Dir))
	g.Expect(fileIn(g, second.Dir, "profile.yaml")).To(Equal("version: 2\n"))
	g.Expect(fileIn(g, second.Dir, "extra.yaml")).To(Equal("x: 1\n"))
	g.Expect(server.Requests().UploadPacks).To(BeNumerically(">", before.UploadPacks))
	g.Expect(filepath.Glob(filepath.Join(fetcher.Root(), ".*"))).To(BeEmpty(), "no temporary directories are left behind")
}

func TestAFailedFetchKeepsThePreviousCheckout(t *testing.T) {
	g := NewWithT(t)
	server := startGitServer(t, gitserver.Options{})
	seededRepo(t, server, "profiles")
	fetcher := newTestFetcher(t, FetcherOptions{})
	good, err := fetch(fetcher, Request{URL: server.RepoURL("profiles"), CacheKey: "ns/name"})
	g.Expect(err).NotTo(HaveOccurred())
	unknown := "0123456789abcdef0123456789abcdef01234567"

	_, err = fetch(fetcher, Request{URL: server.RepoURL("profiles"), Ref: Ref{Commit: unknown}, CacheKey: "ns/name"})

	g.Expect(err).To(HaveOccurred())
	g.Expect(fileIn(g, good.Dir, "profile.yaml")).To(Equal("version: 1\n"))
	g.Expect(filepath.Glob(filepath.Join(fetcher.Root(), ".*"))).To(BeEmpty(), "no temporary directories are left behind")
}

func TestFetchKeepsOneCheckoutPerCacheKey(t *testing.T) {
	g := NewWithT(t)
	server := startGitServer(t, gitserver.Options{})
	seededRepo(t, server, "profiles")
	commit(t, server, "profiles", "canary", map[string]string{"profile.yaml": "version: canary\n"})
	fetcher := newTestFetcher(t, FetcherOptions{})

	dev, err := fetch(fetcher, Request{URL: server.RepoURL("profiles"), CacheKey: "dev/profiles"})
	g.Expect(err).NotTo(HaveOccurred())
	canary, err := fetch(fetcher, Request{URL: server.RepoURL("profiles"), Ref: Ref{Branch: "canary"}, CacheKey: "canary/profiles"})
	g.Expect(err).NotTo(HaveOccurred())

	g.Expect(dev.Dir).NotTo(Equal(canary.Dir))
	g.Expect(fileIn(g, dev.Dir, "profile.yaml")).To(Equal("version: 1\n"))
	g.Expect(fileIn(g, canary.Dir, "profile.yaml")).To(Equal("version: canary\n"))

	g.Expect(fetcher.Forget("dev/profiles")).To(Succeed())
	g.Expect(dev.Dir).NotTo(BeAnExistingFile())
	g.Expect(canary.Dir).To(BeADirectory())
	g.Expect(fetcher.Forget("never/fetched")).To(Succeed())
}

func TestNewRemovesLeftoversOfInterruptedFetches(t *testing.T) {
	g := NewWithT(t)
	root := t.TempDir()
	g.Expect(os.MkdirAll(filepath.Join(root, ".incoming-123", "x"), 0o755)).To(Succeed())
	g.Expect(os.MkdirAll(filepath.Join(root, ".outgoing-456"), 0o755)).To(Succeed())
	g.Expect(os.WriteFile(filepath.Join(root, ".known_hosts-789"), []byte("h k"), 0o600)).To(Succeed())
	g.Expect(os.MkdirAll(filepath.Join(root, "ns_name-0011aabb"), 0o755)).To(Succeed())

	_, err := New(root, FetcherOptions{})

	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(filepath.Join(root, ".incoming-123")).NotTo(BeAnExistingFile())
	g.Expect(filepath.Join(root, ".outgoing-456")).NotTo(BeAnExistingFile())
	g.Expect(filepath.Join(root, ".known_hosts-789")).NotTo(BeAnExistingFile())
	g.Expect(filepath.Join(root, "ns_name-0011aabb")).To(BeADirectory(), "checkouts stay")
}

func inodeOf(g *WithT, path string) uint64 {
	info, err := os.Stat(path)
	g.Expect(err).NotTo(HaveOccurred())
	stat, ok := info.Sys().(*syscall.Stat_t)
	g.Expect(ok).To(BeTrue(), "inode numbers need a Unix file system")
	return stat.Ino
}

func TestAPinnedCommitIsReusedOnlyForTheBranchItWasCheckedOn(t *testing.T) {
	g := NewWithT(t)
	server := startGitServer(t, gitserver.Options{})
	pinned := seededRepo(t, server, "profiles")
	commit(t, server, "profiles", "main", map[string]string{"profile.yaml": "version: 2\n"})
	commit(t, server, "profiles", "release", map[string]string{"profile.yaml": "version: release\n"})
	fetcher := newTestFetcher(t, FetcherOptions{})
	onMain := Request{URL: server.RepoURL("profiles"), Ref: Ref{Branch: "main", Commit: pinned}, CacheKey: "ns/name"}
	first, err := fetch(fetcher, onMain)
	g.Expect(err).NotTo(HaveOccurred())
	before := server.Requests().UploadPacks

	onMain.LastRevision = first.Revision
	again, err := fetch(fetcher, onMain)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(again.Changed).To(BeFalse())
	g.Expect(server.Requests().UploadPacks).To(Equal(before), "same commit on the same branch: nothing downloaded")

	// The release branch also contains the commit, but that must be
	// checked by fetching it, not assumed from the checkout of main.
	onRelease := Request{URL: server.RepoURL("profiles"), Ref: Ref{Branch: "release", Commit: pinned}, CacheKey: "ns/name",
		LastRevision: first.Revision}
	switched, err := fetch(fetcher, onRelease)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(switched.Revision).To(Equal("release@sha1:" + pinned))
	g.Expect(switched.Changed).To(BeFalse(), "the content is the same commit")
	g.Expect(server.Requests().UploadPacks).To(BeNumerically(">", before))
	g.Expect(fileIn(g, switched.Dir, "profile.yaml")).To(Equal("version: 1\n"))
}

func TestConcurrentFetchesOfOneCacheKeyDoNotCollide(t *testing.T) {
	g := NewWithT(t)
	server := startGitServer(t, gitserver.Options{})
	tip := seededRepo(t, server, "profiles")
	fetcher := newTestFetcher(t, FetcherOptions{})
	const fetches = 4
	results := make(chan string, fetches)
	failures := make(chan error, fetches)

	for range fetches {
		go func() {
			result, err := fetch(fetcher, Request{URL: server.RepoURL("profiles"), CacheKey: "ns/name"})
			if err != nil {
				failures <- err
				return
			}
			results <- result.Revision
		}()
	}

	for range fetches {
		select {
		case revision := <-results:
			g.Expect(revision).To(Equal("main@sha1:" + tip))
		case err := <-failures:
			t.Fatalf("concurrent fetch failed: %v", err)
		}
	}
	g.Expect(server.Requests().UploadPacks).To(Equal(int64(1)), "one clone; the other fetches find its commit checked out")
}

// testCheckoutLimit keeps the repositories of the size tests small.
const testCheckoutLimit = 256 << 10

// incompressible is size bytes that no compression shrinks, so that a pack
// holding them is at least as large.
func incompressible(size int) string {
	content := make([]byte, size)
	_, _ = rand.NewChaCha8([32]byte{}).Read(content)
	return string(content)
}

// compressible is size bytes that compress to almost nothing: a pack of
// them is small, their checkout is not.
func compressible(size int) string {
	return strings.Repeat("0", size)
}

func TestFetchRefusesACheckoutLargerThanTheLimit(t *testing.T) {
	server := startGitServer(t, gitserver.Options{})
	tooLarge := ": the checkout exceeds the maximum checkout size of 256 KiB (raise it with --max-checkout-size)"
	tests := []struct {
		name string
		// setup seeds repo and returns what to fetch and how the error
		// names it.
		setup func(repo string) (ref Ref, what string)
		// inflated: the file's blob is over the limit by itself, so the
		// fetched pack is refused by its header before anything inflates it.
		inflated bool
	}{
		{
			name: "a branch with an incompressible file just over the limit is stopped while it downloads",
			setup: func(repo string) (Ref, string) {
				commit(t, server, repo, "main", map[string]string{"big.bin": incompressible(testCheckoutLimit + 1)})
				return Ref{Branch: "main"}, `branch "main"`
			},
		},
		{
			name:     "a branch with a file that compresses well is stopped by its blob's header before it is inflated",
			inflated: true,
			setup: func(repo string) (Ref, string) {
				commit(t, server, repo, "main", map[string]string{"big.bin": compressible(testCheckoutLimit + 1)})
				return Ref{Branch: "main"}, `branch "main"`
			},
		},
		{
			name:     "a commit on no branch tip, cloned with all branches and tags, is stopped by its blob's header",
			inflated: true,
			setup: func(repo string) (Ref, string) {
				big := commit(t, server, repo, "main", map[string]string{"big.bin": compressible(testCheckoutLimit + 1)})
				commit(t, server, repo, "main", map[string]string{"big.bin": "small now\n"})
				return Ref{Commit: big}, "all branches and tags (looking for commit " + big + ")"
			},
		},
		{
			name: "a commit on no branch tip whose history is too large to download is stopped",
			setup: func(repo string) (Ref, string) {
				big := commit(t, server, repo, "main", map[string]string{"big.bin": incompressible(testCheckoutLimit + 1)})
				commit(t, server, repo, "main", map[string]string{"big.bin": "small now\n"})
				return Ref{Commit: big}, "all branches and tags (looking for commit " + big + ")"
			},
		},
		{
			name:     "an older commit of its branch is stopped by its blob's header in the clone",
			inflated: true,
			setup: func(repo string) (Ref, string) {
				big := commit(t, server, repo, "main", map[string]string{"big.bin": compressible(testCheckoutLimit + 1)})
				commit(t, server, repo, "main", map[string]string{"big.bin": "small now\n"})
				return Ref{Branch: "main", Commit: big}, "commit " + big + ` on branch "main"`
			},
		},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			repo := fmt.Sprintf("profiles-%d", i)
			seededRepo(t, server, repo)
			ref, what := tt.setup(repo)
			fetcher := newTestFetcher(t, FetcherOptions{MaxCheckoutSize: testCheckoutLimit})

			_, err := fetch(fetcher, Request{URL: server.RepoURL(repo), Ref: ref, CacheKey: "ns/name"})

			g.Expect(err).To(MatchError(ErrCheckoutTooLarge))
			if tt.inflated {
				g.Expect(err).To(MatchError(ErrObjectTooLarge))
				var refused *RevisionRefusedError
				g.Expect(errors.As(err, &refused)).To(BeTrue(), "the revision is refused for what it holds")
				g.Expect(err.Error()).To(HavePrefix("commit " + CommitOfRevision(refused.Revision) + " refused: fetch " + what + " of " + server.RepoURL(repo) + ": blob number "))
				g.Expect(err.Error()).To(HaveSuffix(" is 262145 bytes, more than the maximum checkout size of 256 KiB (raise it with --max-checkout-size)"))
			} else {
				g.Expect(err.Error()).To(Equal("fetch " + what + " of " + server.RepoURL(repo) + tooLarge))
			}
			g.Expect(os.ReadDir(fetcher.Root())).To(BeEmpty(), "the partial clone is removed")
		})
	}
}

func TestFetchAcceptsACheckoutUnderTheLimit(t *testing.T) {
	server := startGitServer(t, gitserver.Options{})
	// A file replaced when a pinned commit is checked out over the branch
	// tip is on disk once: counting both versions would exceed the limit.
	const tipSize, pinnedSize = 120 << 10, 200 << 10
	tests := []struct {
		name     string
		setup    func(repo string) Ref
		wantSize int
	}{
		{
			name: "a branch with an incompressible file a quarter of the limit",
			setup: func(repo string) Ref {
				commit(t, server, repo, "main", map[string]string{"big.bin": incompressible(testCheckoutLimit / 4)})
				return Ref{Branch: "main"}
			},
			wantSize: testCheckoutLimit / 4,
		},
		{
			name: "an older commit of its branch counts a file it replaces once",
			setup: func(repo string) Ref {
				pinned := commit(t, server, repo, "main", map[string]string{"big.bin": compressible(pinnedSize)})
				commit(t, server, repo, "main", map[string]string{"big.bin": compressible(tipSize)})
				return Ref{Branch: "main", Commit: pinned}
			},
			wantSize: pinnedSize,
		},
		{
			name: "a commit on no branch tip, cloned with all branches and tags, counts a file it replaces once",
			setup: func(repo string) Ref {
				pinned := commit(t, server, repo, "main", map[string]string{"big.bin": compressible(pinnedSize)})
				commit(t, server, repo, "main", map[string]string{"big.bin": compressible(tipSize)})
				return Ref{Commit: pinned}
			},
			wantSize: pinnedSize,
		},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			repo := fmt.Sprintf("profiles-%d", i)
			seededRepo(t, server, repo)
			ref := tt.setup(repo)
			fetcher := newTestFetcher(t, FetcherOptions{MaxCheckoutSize: testCheckoutLimit})

			result, err := fetch(fetcher, Request{URL: server.RepoURL(repo), Ref: ref, CacheKey: "ns/name"})

			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(fileIn(g, result.Dir, "big.bin")).To(HaveLen(tt.wantSize))
			g.Expect(fileIn(g, result.Dir, "profile.yaml")).To(Equal("version: 1\n"))
		})
	}
}

func TestAnOversizedFetchKeepsThePreviousCheckout(t *testing.T) {
	g := NewWithT(t)
	server := startGitServer(t, gitserver.Options{})
	seededRepo(t, server, "profiles")
	fetcher := newTestFetcher(t, FetcherOptions{MaxCheckoutSize: testCheckoutLimit})
	req := Request{URL: server.RepoURL("profiles"), Ref: Ref{Branch: "main"}, CacheKey: "ns/name"}
	good, err := fetch(fetcher, req)
	g.Expect(err).NotTo(HaveOccurred())

	commit(t, server, "profiles", "main", map[string]string{"big.bin": incompressible(testCheckoutLimit + 1)})
	_, err = fetch(fetcher, req)

	g.Expect(err).To(MatchError(ErrCheckoutTooLarge))
	g.Expect(fileIn(g, good.Dir, "profile.yaml")).To(Equal("version: 1\n"))
	g.Expect(fileIn(g, good.Dir, "overlays/dev/kustomization")).To(Equal("resources: []\n"))
	g.Expect(filepath.Join(good.Dir, "big.bin")).NotTo(BeAnExistingFile())
	g.Expect(filepath.Glob(filepath.Join(fetcher.Root(), ".*"))).To(BeEmpty(), "no temporary directories are left behind")

	next := commit(t, server, "profiles", "main", map[string]string{"big.bin": "small again\n", "profile.yaml": "version: 2\n"})
	result, err := fetch(fetcher, req)

	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(result.Revision).To(Equal("main@sha1:" + next))
	g.Expect(result.Dir).To(Equal(good.Dir))
	g.Expect(fileIn(g, result.Dir, "profile.yaml")).To(Equal("version: 2\n"))
	g.Expect(fileIn(g, result.Dir, "big.bin")).To(Equal("small again\n"))
}

func TestNewRefusesANegativeCheckoutSize(t *testing.T) {
	g := NewWithT(t)

	_, err := New(t.TempDir(), FetcherOptions{MaxCheckoutSize: -1})

	g.Expect(err).To(MatchError(ContainSubstring("maximum checkout size -1 is negative; use 0 for no limit")))
}

func TestFormatBytes(t *testing.T) {
	tests := []struct {
		size int64
		want string
	}{
		{size: 64 << 20, want: "64 MiB"},
		{size: 256 << 10, want: "256 KiB"},
		{size: 2 << 30, want: "2 GiB"},
		{size: 1536 << 10, want: "1536 KiB"},
		{size: 1000, want: "1000 bytes"},
	}
	for _, tt := range tests {
		t.Run(tt.want, func(t *testing.T) {
			g := NewWithT(t)

			g.Expect(formatBytes(tt.size)).To(Equal(tt.want))
		})
	}
}
