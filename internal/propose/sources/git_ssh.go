package sources

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"sync"

	"github.com/go-git/go-git/v5/plumbing/format/pktline"
	"github.com/go-git/go-git/v5/plumbing/protocol/packp"
	"github.com/go-git/go-git/v5/plumbing/transport"
	gitssh "github.com/go-git/go-git/v5/plumbing/transport/ssh"
	"golang.org/x/crypto/ssh"

	"github.com/profilesync/profilesync/internal/repofile"
)

// DialFunc opens a network connection, as net.Dialer.DialContext does.
type DialFunc func(ctx context.Context, network, address string) (net.Conn, error)

// maxServerMessageBytes bounds what is kept of the server's stderr for a
// message; the rest is read (and counted against the budget) and dropped.
const maxServerMessageBytes = 4 << 10

// sshUploadPack is a git-upload-pack session over ssh, speaking go-git's
// protocol encoders (packp) on an ssh session of our own connection.
// go-git's ssh transport dials its connection itself, so what it reads
// could not be bounded, and it reads ~/.ssh/config, which could send an
// operator's requests elsewhere; here every byte read, the handshake
// included, draws on the source's budget, and the context closes the
// connection. Authentication and the host key check are the credentials'
// (gitsource.AuthMethod): the host key is always checked.
type sshUploadPack struct {
	client     *ssh.Client
	session    *ssh.Session
	stdin      io.WriteCloser
	stdout     io.Reader
	stderr     *headBuffer
	stopCancel func() bool
	advertised *packp.AdvRefs
}

var _ transport.UploadPackSession = (*sshUploadPack)(nil)

// openSSHUploadPack connects to the endpoint's host with auth and starts
// git-upload-pack for its path.
func openSSHUploadPack(ctx context.Context, endpoint *transport.Endpoint, auth transport.AuthMethod, dial DialFunc, budget *byteBudget) (*sshUploadPack, error) {
	keys, ok := auth.(gitssh.AuthMethod)
	if !ok || auth == nil {
		return nil, errors.New("an ssh source needs an ssh identity and known_hosts (credentials.secretName for the operator; identityEnv and knownHostsEnv for the CLI)")
	}
	config, err := keys.ClientConfig()
	if err != nil {
		return nil, err
	}
	if config.HostKeyCallback == nil {
		return nil, errors.New("refusing an ssh connection without known_hosts to check the server's host key")
	}
	if dial == nil {
		dial = (&net.Dialer{}).DialContext
	}
	port := endpoint.Port
	if port <= 0 {
		port = gitssh.DefaultPort
	}
	address := net.JoinHostPort(endpoint.Host, strconv.Itoa(port))
	conn, err := dial(ctx, "tcp", address)
	if err != nil {
		return nil, err
	}
	bounded := &boundedConn{Conn: conn, budget: budget}
	// The handshake and every read after it stop when ctx does.
	stopCancel := context.AfterFunc(ctx, func() { _ = conn.Close() })
	clientConn, channels, requests, err := ssh.NewClientConn(bounded, address, config)
	if err != nil {
		stopCancel()
		_ = conn.Close()
		return nil, err
	}
	client := ssh.NewClient(clientConn, channels, requests)
	s := &sshUploadPack{client: client, stopCancel: stopCancel, stderr: &headBuffer{max: maxServerMessageBytes}}
	if s.session, err = client.NewSession(); err == nil {
		s.session.Stderr = s.stderr
		if s.stdin, err = s.session.StdinPipe(); err == nil {
			if s.stdout, err = s.session.StdoutPipe(); err == nil {
				err = s.session.Start(transport.UploadPackServiceName + " " + shellQuote(endpoint.Path))
			}
		}
	}
	if err != nil {
		_ = s.Close()
		return nil, err
	}
	return s, nil
}

func (s *sshUploadPack) AdvertisedReferences() (*packp.AdvRefs, error) {
	return s.AdvertisedReferencesContext(context.Background())
}

// AdvertisedReferencesContext reads the server's ref advertisement. The
// context is the connection's, given when it was opened.
func (s *sshUploadPack) AdvertisedReferencesContext(context.Context) (*packp.AdvRefs, error) {
	if s.advertised != nil {
		return s.advertised, nil
	}
	advertised := packp.NewAdvRefs()
	if err := advertised.Decode(s.stdout); err != nil {
		var errLine *pktline.ErrorLine
		switch {
		case errors.As(err, &errLine):
			return nil, fmt.Errorf("the server said: %s", repofile.OneLine(errLine.Text))
		case errors.Is(err, packp.ErrEmptyAdvRefs):
			return nil, transport.ErrEmptyRemoteRepository
		}
		// A repository that does not exist ends upload-pack before it
		// writes anything, with the reason on stderr.
		_ = s.session.Wait()
		if message := s.stderr.firstLine(); message != "" {
			return nil, fmt.Errorf("the server said: %s", message)
		}
		return nil, err
	}
	if advertised.IsEmpty() {
		return nil, transport.ErrEmptyRemoteRepository
	}
	transport.FilterUnsupportedCapabilities(advertised.Capabilities)
	s.advertised = advertised
	return advertised, nil
}

// UploadPack sends the request, without haves, and returns the response,
// whose pack is read from the session.
func (s *sshUploadPack) UploadPack(ctx context.Context, req *packp.UploadPackRequest) (*packp.UploadPackResponse, error) {
	if err := req.Validate(); err != nil {
		return nil, err
	}
	if _, err := s.AdvertisedReferencesContext(ctx); err != nil {
		return nil, err
	}
	if err := req.UploadRequest.Encode(s.stdin); err != nil {
		return nil, fmt.Errorf("sending the request: %w", err)
	}
	if err := req.UploadHaves.Encode(s.stdin, true); err != nil {
		return nil, fmt.Errorf("sending the request: %w", err)
	}
	if err := pktline.NewEncoder(s.stdin).Encodef("done\n"); err != nil {
		return nil, fmt.Errorf("sending the request: %w", err)
	}
	if err := s.stdin.Close(); err != nil {
		return nil, fmt.Errorf("sending the request: %w", err)
	}
	response := packp.NewUploadPackResponse(req)
	if err := response.Decode(io.NopCloser(s.stdout)); err != nil {
		return nil, fmt.Errorf("reading the response: %w", err)
	}
	return response, nil
}

// Close ends the session and the connection.
func (s *sshUploadPack) Close() error {
	if s.session != nil {
		_ = s.session.Close()
	}
	s.stopCancel()
	err := s.client.Close()
	if errors.Is(err, net.ErrClosed) {
		return nil
	}
	return err
}

// shellQuote quotes a repository path for the remote shell as Git does
// (quote.c's sq_quote_buf): in single quotes, with ' and ! escaped outside
// them.
func shellQuote(s string) string {
	var b strings.Builder
	b.WriteByte('\'')
	for _, c := range []byte(s) {
		if c == '\'' || c == '!' {
			b.WriteString(`'\`)
			b.WriteByte(c)
			b.WriteByte('\'')
			continue
		}
		b.WriteByte(c)
	}
	b.WriteByte('\'')
	return b.String()
}

// headBuffer keeps the first max bytes written to it and drops the rest.
type headBuffer struct {
	mu  sync.Mutex
	max int
	buf bytes.Buffer
}

func (h *headBuffer) Write(p []byte) (int, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if room := h.max - h.buf.Len(); room > 0 {
		h.buf.Write(p[:min(room, len(p))])
	}
	return len(p), nil
}

// firstLine is the first non-empty line written, on one line.
func (h *headBuffer) firstLine() string {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, line := range strings.Split(h.buf.String(), "\n") {
		if line = strings.TrimSpace(line); line != "" {
			return repofile.OneLine(line)
		}
	}
	return ""
}
