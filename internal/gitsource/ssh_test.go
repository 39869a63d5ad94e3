package gitsource

import (
	"testing"

	. "github.com/onsi/gomega"
	"golang.org/x/crypto/ssh"

	"github.com/profilesync/profilesync/test/gitserver"
)

// startSSHGitServer serves the repositories under root over ssh
// (gitserver.SSHServer), accepting clientKey.
func startSSHGitServer(t *testing.T, root string, clientKey ssh.PublicKey) *gitserver.SSHServer {
	t.Helper()
	server, err := gitserver.NewSSH(root, clientKey)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = server.Close() })
	return server
}

// newSSHIdentity returns a client key as the identity credential (PEM) and
// its public key.
func newSSHIdentity(t *testing.T) ([]byte, ssh.PublicKey) {
	t.Helper()
	identity, public, err := gitserver.NewSSHIdentity()
	if err != nil {
		t.Fatal(err)
	}
	return identity, public
}

func TestFetchOverSSHVerifiesTheHostKey(t *testing.T) {
	httpServer := startGitServer(t, gitserver.Options{})
	mainTip := seededRepo(t, httpServer, "profiles")
	identity, clientKey := newSSHIdentity(t)
	sshServer := startSSHGitServer(t, httpServer.Root(), clientKey)
	// Any ed25519 key other than the server's will do as a wrong host key.
	_, otherHostKey := newSSHIdentity(t)
	strangerIdentity, _ := newSSHIdentity(t)

	t.Run("the listed host key and an authorised identity fetch the repository", func(t *testing.T) {
		g := NewWithT(t)
		fetcher := newTestFetcher(t, FetcherOptions{})

		result, err := fetch(fetcher, Request{URL: sshServer.RepoURL("profiles"), CacheKey: "ns/name", Credentials: map[string][]byte{
			CredentialIdentity: identity, CredentialKnownHosts: sshServer.KnownHosts(sshServer.HostKey()),
		}})

		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(result.Revision).To(Equal("main@sha1:" + mainTip))
		g.Expect(fileIn(g, result.Dir, "profile.yaml")).To(Equal("version: 1\n"))
	})

	t.Run("a host key that is not listed is refused", func(t *testing.T) {
		g := NewWithT(t)
		fetcher := newTestFetcher(t, FetcherOptions{})

		_, err := fetch(fetcher, Request{URL: sshServer.RepoURL("profiles"), CacheKey: "ns/name", Credentials: map[string][]byte{
			CredentialIdentity: identity, CredentialKnownHosts: sshServer.KnownHosts(otherHostKey),
		}})

		g.Expect(err).To(HaveOccurred())
		g.Expect(err.Error()).To(HavePrefix("list refs of " + RedactURL(sshServer.RepoURL("profiles")) + ": "))
		g.Expect(err.Error()).To(ContainSubstring("knownhosts: key mismatch"))
	})

	t.Run("an identity the server does not know is refused", func(t *testing.T) {
		g := NewWithT(t)
		fetcher := newTestFetcher(t, FetcherOptions{})

		_, err := fetch(fetcher, Request{URL: sshServer.RepoURL("profiles"), CacheKey: "ns/name", Credentials: map[string][]byte{
			CredentialIdentity: strangerIdentity, CredentialKnownHosts: sshServer.KnownHosts(sshServer.HostKey()),
		}})

		g.Expect(err).To(HaveOccurred())
		g.Expect(err.Error()).To(ContainSubstring("unable to authenticate"))
	})
}
