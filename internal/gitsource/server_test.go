package gitsource

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	. "github.com/onsi/gomega"

	"github.com/profilesync/profilesync/test/gitserver"
)

// startGitServer starts a real git http-backend server on loopback over a
// fresh root, stopped when the test ends.
func startGitServer(t *testing.T, options gitserver.Options) *gitserver.Server {
	t.Helper()
	server, err := gitserver.New(t.TempDir(), options)
	if err != nil {
		t.Fatalf("start git server: %v", err)
	}
	t.Cleanup(func() {
		if err := server.Close(); err != nil {
			t.Errorf("stop git server: %v", err)
		}
	})
	return server
}

// seededRepo creates repository name on server with one commit holding
// profile.yaml and returns that commit.
func seededRepo(t *testing.T, server *gitserver.Server, name string) string {
	t.Helper()
	sha, err := server.CreateRepo(name, map[string]string{
		"profile.yaml":               "version: 1\n",
		"overlays/dev/kustomization": "resources: []\n",
	})
	if err != nil {
		t.Fatalf("create repository %s: %v", name, err)
	}
	return sha
}

// commit adds files to branch and returns the new commit.
func commit(t *testing.T, server *gitserver.Server, repo, branch string, files map[string]string) string {
	t.Helper()
	sha, err := server.CommitOnBranch(repo, branch, files, "change "+branch)
	if err != nil {
		t.Fatalf("commit to %s of %s: %v", branch, repo, err)
	}
	return sha
}

// tag creates a lightweight tag.
func tag(t *testing.T, server *gitserver.Server, repo, name, sha string) {
	t.Helper()
	if err := server.Tag(repo, name, sha); err != nil {
		t.Fatalf("tag %s: %v", name, err)
	}
}

// newTestFetcher returns a Fetcher over a fresh cache root.
func newTestFetcher(t *testing.T, options FetcherOptions) *Fetcher {
	t.Helper()
	fetcher, err := New(filepath.Join(t.TempDir(), "cache"), options)
	if err != nil {
		t.Fatalf("new fetcher: %v", err)
	}
	return fetcher
}

// fetch runs Fetch with a generous test timeout.
func fetch(fetcher *Fetcher, req Request) (*Result, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	return fetcher.Fetch(ctx, req)
}

// fileIn reads a file of a checkout; "" when it does not exist.
func fileIn(g *WithT, dir, name string) string {
	content, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(name)))
	if os.IsNotExist(err) {
		return ""
	}
	g.Expect(err).NotTo(HaveOccurred())
	return string(content)
}

// unresponsiveServer accepts connections and never answers, for timeouts.
// It returns its URL.
func unresponsiveServer(t *testing.T) string {
	t.Helper()
	listener, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("listen: %v", err)
	}
	done := make(chan struct{})
	go func() {
		var held []net.Conn
		defer func() {
			for _, conn := range held {
				_ = conn.Close()
			}
		}()
		for {
			conn, err := listener.Accept()
			if err != nil {
				<-done
				return
			}
			held = append(held, conn)
		}
	}()
	t.Cleanup(func() {
		_ = listener.Close()
		close(done)
	})
	return "http://" + listener.Addr().String() + "/profiles.git"
}
