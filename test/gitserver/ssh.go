package gitserver

import (
	"crypto/ed25519"
	"crypto/rand"
	"encoding/binary"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"net"
	"os/exec"
	"path"
	"path/filepath"
	"strings"
	"sync"

	"golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/knownhosts"
)

// SSHServer serves the repositories under a root (a Server's Root) over ssh
// on a loopback address: a minimal in-process ssh server
// (golang.org/x/crypto/ssh) that runs the real `git upload-pack` for the
// "git-upload-pack '<repo>'" exec request a Git client sends, as a Git
// host's sshd does. It accepts only the client keys it is given, and
// presents an ed25519 host key of its own.
type SSHServer struct {
	listener net.Listener
	hostKey  ssh.PublicKey
	config   *ssh.ServerConfig
	root     string
	sessions sync.WaitGroup
}

// NewSSH starts an ssh server for the repositories under root that accepts
// clientKeys.
func NewSSH(root string, clientKeys ...ssh.PublicKey) (*SSHServer, error) {
	_, hostPrivate, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("generate host key: %w", err)
	}
	hostSigner, err := ssh.NewSignerFromKey(hostPrivate)
	if err != nil {
		return nil, fmt.Errorf("host signer: %w", err)
	}
	config := &ssh.ServerConfig{
		PublicKeyCallback: func(_ ssh.ConnMetadata, key ssh.PublicKey) (*ssh.Permissions, error) {
			for _, known := range clientKeys {
				if string(key.Marshal()) == string(known.Marshal()) {
					return nil, nil
				}
			}
			return nil, errors.New("unknown key")
		},
	}
	config.AddHostKey(hostSigner)
	listener, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("listen: %w", err)
	}
	server := &SSHServer{listener: listener, hostKey: hostSigner.PublicKey(), config: config, root: root}
	go server.serve()
	return server, nil
}

// NewSSHIdentity returns a new client key: the private key as an identity
// credential (PEM, unencrypted) and its public key, for NewSSH.
func NewSSHIdentity() ([]byte, ssh.PublicKey, error) {
	_, private, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		return nil, nil, fmt.Errorf("generate client key: %w", err)
	}
	block, err := ssh.MarshalPrivateKey(private, "")
	if err != nil {
		return nil, nil, fmt.Errorf("marshal client key: %w", err)
	}
	signer, err := ssh.NewSignerFromKey(private)
	if err != nil {
		return nil, nil, fmt.Errorf("client signer: %w", err)
	}
	return pem.EncodeToMemory(block), signer.PublicKey(), nil
}

// Addr is the server's host:port.
func (s *SSHServer) Addr() string { return s.listener.Addr().String() }

// HostKey is the key the server presents.
func (s *SSHServer) HostKey() ssh.PublicKey { return s.hostKey }

// RepoURL is the ssh URL of a repository under the root.
func (s *SSHServer) RepoURL(name string) string {
	return "ssh://git@" + s.Addr() + "/" + name + ".git"
}

// KnownHosts is a known_hosts line for this server's address with key
// (HostKey for the right one).
func (s *SSHServer) KnownHosts(key ssh.PublicKey) []byte {
	return []byte(knownhosts.Line([]string{knownhosts.Normalize(s.Addr())}, key) + "\n")
}

// Close stops listening and waits for the open sessions to end.
func (s *SSHServer) Close() error {
	err := s.listener.Close()
	s.sessions.Wait()
	return err
}

func (s *SSHServer) serve() {
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

func (s *SSHServer) handleConn(conn net.Conn) {
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
func (s *SSHServer) handleSession(channel ssh.Channel, requests <-chan *ssh.Request) {
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
