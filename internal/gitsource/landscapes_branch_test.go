package gitsource

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
	. "github.com/onsi/gomega"

	"github.com/profilesync/profilesync/test/gitserver"
)

func TestTheDefaultBranchIsTheOneTheServersHEADNames(t *testing.T) {
	g := NewWithT(t)
	server := startGitServer(t, gitserver.Options{})
	seededRepo(t, server, "profiles")
	commit(t, server, "profiles", "release", map[string]string{"profile.yaml": "version: 2\n"})
	fetcher := newTestFetcher(t, FetcherOptions{})
	request := LandscapeRequest{URL: server.RepoURL("profiles"), Branch: "main", CacheKey: "status", Timeout: 20 * time.Second}

	branch, err := fetcher.DefaultBranch(context.Background(), request)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(branch).To(Equal(gitserver.DefaultBranch))

	g.Expect(server.SetHead("profiles", "release")).To(Succeed())
	branch, err = fetcher.DefaultBranch(context.Background(), request)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(branch).To(Equal("release"))

	_, err = fetcher.DefaultBranch(context.Background(), LandscapeRequest{URL: server.RepoURL("missing"), CacheKey: "status"})
	g.Expect(err).To(HaveOccurred())
}

func TestTheTreeOfARevisionIsExportedFromTheLandscapesMirror(t *testing.T) {
	g := NewWithT(t)
	server := startGitServer(t, gitserver.Options{})
	first := seededRepo(t, server, "profiles")
	commit(t, server, "profiles", "main", map[string]string{"profile.yaml": "version: 2\n"})
	landscapes, err := fetchLandscapes(t, newTestFetcher(t, FetcherOptions{}), LandscapeRequest{URL: server.RepoURL("profiles"), Branch: "main", CacheKey: "status"})
	g.Expect(err).NotTo(HaveOccurred())

	dest := filepath.Join(t.TempDir(), "tree")
	g.Expect(landscapes.ExportTree(context.Background(), first, dest, 0)).To(Succeed())
	content, err := os.ReadFile(filepath.Join(dest, "profile.yaml"))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(string(content)).To(Equal("version: 1\n"), "the revision asked for, not the tip")

	err = landscapes.ExportTree(context.Background(), first, filepath.Join(t.TempDir(), "small"), 4)
	g.Expect(err).To(MatchError(ErrCheckoutTooLarge))
}

func TestHeadBranchIsTheCheckedOutBranchAndNoneWhenDetached(t *testing.T) {
	g := NewWithT(t)
	dir := t.TempDir()
	repository, err := git.PlainInitWithOptions(dir, &git.PlainInitOptions{
		InitOptions: git.InitOptions{DefaultBranch: plumbing.NewBranchReferenceName("trunk")},
	})
	g.Expect(err).NotTo(HaveOccurred())
	landscapes, err := OpenLandscapes(dir, ObjectLimitsFor(0))
	g.Expect(err).NotTo(HaveOccurred())
	t.Cleanup(func() { _ = landscapes.Close() })
	g.Expect(landscapes.HeadBranch()).To(Equal("trunk"))

	detached := plumbing.NewHashReference(plumbing.HEAD, plumbing.NewHash("0123456789abcdef0123456789abcdef01234567"))
	g.Expect(repository.Storer.SetReference(detached)).To(Succeed())
	_, err = landscapes.HeadBranch()
	g.Expect(err).To(MatchError(ErrReferenceNotFound))
}
