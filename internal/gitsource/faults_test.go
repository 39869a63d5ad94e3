package gitsource

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	. "github.com/onsi/gomega"

	"github.com/profilesync/profilesync/test/gitserver"
)

// startFaultProxy puts a FaultProxy in front of server.
func startFaultProxy(t *testing.T, server *gitserver.Server) *gitserver.FaultProxy {
	t.Helper()
	proxy, err := gitserver.NewFaultProxy(server.URL())
	if err != nil {
		t.Fatalf("start fault proxy: %v", err)
	}
	t.Cleanup(func() { _ = proxy.Close() })
	return proxy
}

// A pack that arrives broken is refused whatever broke it, the checkout of
// the last good fetch stays as it was, and nothing of the broken fetch is
// left in the cache: the next fetch over a sound connection checks out
// the new commit.
func TestABrokenPackIsRefusedAndDoesNotPoisonTheCache(t *testing.T) {
	for _, mode := range []gitserver.FaultMode{gitserver.TruncatePack, gitserver.CorruptPack} {
		t.Run(mode.String(), func(t *testing.T) {
			g := NewWithT(t)
			server := startGitServer(t, gitserver.Options{})
			seededRepo(t, server, "profiles")
			proxy := startFaultProxy(t, server)
			fetcher := newTestFetcher(t, FetcherOptions{})
			request := Request{URL: proxy.RepoURL("profiles"), CacheKey: "ns/name"}
			good, err := fetch(fetcher, request)
			g.Expect(err).NotTo(HaveOccurred())
			next := commit(t, server, "profiles", "main", map[string]string{"profile.yaml": "version: 2\n"})

			g.Expect(proxy.SetMode(mode)).To(Succeed())
			request.LastRevision = good.Revision
			_, err = fetch(fetcher, request)
			g.Expect(err).To(MatchError(ContainSubstring("fetch HEAD of " + proxy.RepoURL("profiles"))))
			g.Expect(fileIn(g, good.Dir, "profile.yaml")).To(Equal("version: 1\n"), "the last good checkout stays")
			g.Expect(filepath.Glob(filepath.Join(fetcher.Root(), ".*"))).To(BeEmpty(), "nothing of the broken fetch is left")

			g.Expect(proxy.SetMode(gitserver.Pass)).To(Succeed())
			fixed, err := fetch(fetcher, request)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(fixed.Commit).To(Equal(next))
			g.Expect(fixed.Changed).To(BeTrue())
			g.Expect(fileIn(g, fixed.Dir, "profile.yaml")).To(Equal("version: 2\n"))
		})
	}
}

// A server that answers the listing and then stalls in the middle of the
// transfer is given up at Request.Timeout, like one that never answers.
func TestAFetchThatStallsInThePackTransferEndsAtTheTimeout(t *testing.T) {
	g := NewWithT(t)
	server := startGitServer(t, gitserver.Options{})
	seededRepo(t, server, "profiles")
	proxy := startFaultProxy(t, server)
	g.Expect(proxy.SetMode(gitserver.HangPack)).To(Succeed())
	fetcher := newTestFetcher(t, FetcherOptions{})

	started := time.Now()
	_, err := fetch(fetcher, Request{URL: proxy.RepoURL("profiles"), CacheKey: "ns/name", Timeout: 500 * time.Millisecond})

	g.Expect(err).To(MatchError(context.DeadlineExceeded))
	g.Expect(err).To(MatchError(ContainSubstring("timed out after 500ms")))
	g.Expect(time.Since(started)).To(BeNumerically("<", 5*time.Second))
	g.Expect(filepath.Glob(filepath.Join(fetcher.Root(), ".*"))).To(BeEmpty())
}
