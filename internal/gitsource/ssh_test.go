package gitsource

import (
	"crypto/ed25519"
	"crypto/rand"
	"encoding/binary"
	"encoding/pem"
	"errors"
	"io"
	"net"
	"os/exec"
	"path"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	. "github.com/onsi/gomega"
	"golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/knownhosts"

	"github.com/profilesync/profilesync/test/gitserver"
)

// sshGitServer is a minimal in-process ssh server that runs
// `git upload-pack` for "git-upload-pack '<repo>'" exec requests, over the
// repositories of a gitserver.Server. It accepts one client key.
type sshGitServer struct {
	listener net.Listener
	hostKey  ssh.PublicKey
	config   *ssh.ServerConfig
	root     string
	sessions sync.WaitGroup
}

func startSSHGitServer(t *testing.T, root string, clientKey ssh.PublicKey) *sshGitServer {
	t.Helper()
	_, hostPrivate, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatalf("generate host key: %v", err)
	}
	hostSigner, err := ssh.NewSignerFromKey(hostPrivate)
	if err != nil {
		t.Fatalf("host signer: %v", err)
	}
	config := &ssh.ServerConfig{
		PublicKeyCallback: func(_ ssh.ConnMetadata, key ssh.PublicKey) (*ssh.Permissions, error) {
			if string(key.Marshal()) == string(clientKey.Marshal()) {
				return nil, nil
			}
			return nil, errors.New("unknown key")
		},
	}
	config.AddHostKey(hostSigner)
	listener, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("listen: %v", err)
	}
	server := &sshGitServer{listener: listener, hostKey: hostSigner.PublicKey(), config: config, root: root}
	go server.serve()
	t.Cleanup(func() {
		_ = listener.Close()
		server.sessions.Wait()
	})
	return server
}

// repoURL is the ssh URL of a repository of the gitserver.
func (s *sshGitServer) repoURL(name string) string {
	return "ssh://git@" + s.listener.Addr().String() + "/" + name + ".git"
}

// knownHosts is a known_hosts line for this server with key.
func (s *sshGitServer) knownHosts(key ssh.PublicKey) []byte {
	return []byte(knownhosts.Line([]string{knownhosts.Normalize(s.listener.Addr().String())}, key) + "\n")
}

func (s *sshGitServer) serve() {
	for {
		conn, err := s.listener.Accept()
		if err != nil {
			return
		}
		s.sessions.Add(1)
		go func() {
			defer s.sessions.Done()
			s.handleConn(conn)
		}()
	}
}

func (s *sshGitServer) handleConn(conn net.Conn) {
	defer conn.Close()
	serverConn, channels, requests, err := ssh.NewServerConn(conn, s.config)
	if err != nil {
		return
	}
	defer serverConn.Close()
	go ssh.DiscardRequests(requests)
	for newChannel := range channels {
		if newChannel.ChannelType() != "session" {
			_ = newChannel.Reject(ssh.UnknownChannelType, "sessions only")
			continue
		}
		channel, channelRequests, err := newChannel.Accept()
		if err != nil {
			return
		}
		s.handleSession(channel, channelRequests)
	}
}

// handleSession answers the exec request of one session and reports git's
// exit status, as sshd does.
func (s *sshGitServer) handleSession(channel ssh.Channel, requests <-chan *ssh.Request) {
	defer channel.Close()
	for request := range requests {
		if request.Type != "exec" || len(request.Payload) < 4 {
			_ = request.Reply(false, nil)
			continue
		}
		command := string(request.Payload[4:])
		repo, ok := strings.CutPrefix(command, "git-upload-pack ")
		if !ok {
			_ = request.Reply(false, nil)
			return
		}
		repo = path.Clean("/" + strings.Trim(repo, "'"))
		_ = request.Reply(true, nil)

		status := uint32(0)
		cmd := exec.Command("git", "upload-pack", filepath.Join(s.root, filepath.FromSlash(repo)))
		cmd.Env = []string{"GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=true"}
		cmd.Stdout = channel
		cmd.Stderr = channel.Stderr()
		// Not cmd.Stdin = channel: Wait would then wait for the client to
		// close its side, which it does only after seeing the exit status.
		stdin, err := cmd.StdinPipe()
		if err == nil {
			err = cmd.Start()
		}
		if err != nil {
			status = 127
		} else {
			go func() {
				_, _ = io.Copy(stdin, channel)
				_ = stdin.Close()
			}()
			if err := cmd.Wait(); err != nil {
				status = 1
			}
		}
		exitStatus := make([]byte, 4)
		binary.BigEndian.PutUint32(exitStatus, status)
		_, _ = channel.SendRequest("exit-status", false, exitStatus)
		return
	}
}

// newSSHIdentity returns a client key as the identity credential (PEM) and
// its public key.
func newSSHIdentity(t *testing.T) ([]byte, ssh.PublicKey) {
	t.Helper()
	_, private, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatalf("generate client key: %v", err)
	}
	block, err := ssh.MarshalPrivateKey(private, "")
	if err != nil {
		t.Fatalf("marshal client key: %v", err)
	}
	signer, err := ssh.NewSignerFromKey(private)
	if err != nil {
		t.Fatalf("client signer: %v", err)
	}
	return pem.EncodeToMemory(block), signer.PublicKey()
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

		result, err := fetch(fetcher, Request{URL: sshServer.repoURL("profiles"), CacheKey: "ns/name", Credentials: map[string][]byte{
			CredentialIdentity: identity, CredentialKnownHosts: sshServer.knownHosts(sshServer.hostKey),
		}})

		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(result.Revision).To(Equal("main@sha1:" + mainTip))
		g.Expect(fileIn(g, result.Dir, "profile.yaml")).To(Equal("version: 1\n"))
	})

	t.Run("a host key that is not listed is refused", func(t *testing.T) {
		g := NewWithT(t)
		fetcher := newTestFetcher(t, FetcherOptions{})

		_, err := fetch(fetcher, Request{URL: sshServer.repoURL("profiles"), CacheKey: "ns/name", Credentials: map[string][]byte{
			CredentialIdentity: identity, CredentialKnownHosts: sshServer.knownHosts(otherHostKey),
		}})

		g.Expect(err).To(HaveOccurred())
		g.Expect(err.Error()).To(HavePrefix("list refs of " + RedactURL(sshServer.repoURL("profiles")) + ": "))
		g.Expect(err.Error()).To(ContainSubstring("knownhosts: key mismatch"))
	})

	t.Run("an identity the server does not know is refused", func(t *testing.T) {
		g := NewWithT(t)
		fetcher := newTestFetcher(t, FetcherOptions{})

		_, err := fetch(fetcher, Request{URL: sshServer.repoURL("profiles"), CacheKey: "ns/name", Credentials: map[string][]byte{
			CredentialIdentity: strangerIdentity, CredentialKnownHosts: sshServer.knownHosts(sshServer.hostKey),
		}})

		g.Expect(err).To(HaveOccurred())
		g.Expect(err.Error()).To(ContainSubstring("unable to authenticate"))
	})
}
