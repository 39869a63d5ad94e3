package gitsource

import (
	"errors"
	"testing"

	githttp "github.com/go-git/go-git/v5/plumbing/transport/http"
	gitssh "github.com/go-git/go-git/v5/plumbing/transport/ssh"
	. "github.com/onsi/gomega"
	"golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/knownhosts"
)

func TestAuthMethodTakesScpLikeAddressesAsSSHWithTheHostKeyChecked(t *testing.T) {
	identity, _ := newSSHIdentity(t)
	_, hostKey := newSSHIdentity(t)
	_, otherHostKey := newSSHIdentity(t)
	knownHostsOf := func(host string, key ssh.PublicKey) []byte {
		return []byte(knownhosts.Line([]string{knownhosts.Normalize(host)}, key) + "\n")
	}
	tests := []struct {
		name     string
		url      string
		wantUser string
		// hostPort is where the ssh client dials, and what known_hosts is
		// looked up by.
		hostPort string
	}{
		{name: "an scp-like address with a user", url: "deploy@git.example.com:kubernetes/kubernetes.git", wantUser: "deploy", hostPort: "git.example.com:22"},
		{name: "an scp-like address without user is git's", url: "git.example.com:kubernetes/kubernetes.git", wantUser: "git", hostPort: "git.example.com:22"},
		{name: "an ssh URL with a port", url: "ssh://git@git.example.com:2222/kubernetes.git", wantUser: "git", hostPort: "git.example.com:2222"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			auth, err := AuthMethod(tt.url, map[string][]byte{CredentialIdentity: identity, CredentialKnownHosts: knownHostsOf(tt.hostPort, hostKey)}, false, t.TempDir())
			g.Expect(err).NotTo(HaveOccurred())
			keys, ok := auth.(*gitssh.PublicKeys)
			g.Expect(ok).To(BeTrue(), "public-key authentication")
			g.Expect(keys.User).To(Equal(tt.wantUser))
			config, err := keys.ClientConfig()
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(config.HostKeyCallback(tt.hostPort, fakeAddr(tt.hostPort), hostKey)).To(Succeed())
			err = config.HostKeyCallback(tt.hostPort, fakeAddr(tt.hostPort), otherHostKey)
			var keyErr *knownhosts.KeyError
			g.Expect(errors.As(err, &keyErr)).To(BeTrue(), "another host key is refused")
		})
	}
}

func TestAuthMethodRefusesWhatAuthForRefuses(t *testing.T) {
	identity, _ := newSSHIdentity(t)
	tests := []struct {
		name        string
		url         string
		credentials map[string][]byte
		want        string
	}{
		{name: "ssh without known_hosts", url: "git@git.example.com:k.git", credentials: map[string][]byte{CredentialIdentity: identity},
			want: "ssh URL ssh://***@git.example.com/k.git needs credentials with known_hosts to verify the server"},
		{name: "ssh without identity", url: "ssh://git@git.example.com/k.git", credentials: nil,
			want: "ssh URL ssh://***@git.example.com/k.git needs credentials with identity (a private key)"},
		{name: "an scp-like address with a password", url: "git:s3cret@git.example.com:k.git",
			want: "ssh address ***@git.example.com:k.git has a password; ssh authenticates with the credentials' identity, so remove it"},
		{name: "a file URL", url: "file:///srv/k.git",
			want: `unsupported URL scheme "file" in file:///srv/k.git: use https, http or ssh`},
		{name: "a local path", url: "/srv/k.git",
			want: "/srv/k.git is neither a URL nor an scp-like address (user@host:path)"},
		{name: "user information in an https URL", url: "https://ci:s3cret@git.example.com/k.git",
			want: "the URL https://***@git.example.com/k.git has user information; move the credentials to the Secret or the environment"},
		{name: "credentials over plain http", url: "http://git.example.com/k.git", credentials: map[string][]byte{CredentialUsername: []byte("ci"), CredentialPassword: []byte("s3cret")},
			want: "refusing to send credentials over plain http to http://git.example.com/k.git; use https"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			_, err := AuthMethod(tt.url, tt.credentials, false, t.TempDir())
			g.Expect(err).To(MatchError(ContainSubstring(tt.want)))
			g.Expect(errors.Is(err, ErrInvalidRequest)).To(BeTrue())
			g.Expect(err.Error()).NotTo(ContainSubstring("s3cret"))
		})
	}
}

func TestAuthMethodGivesBasicAuthOverHTTPS(t *testing.T) {
	g := NewWithT(t)
	auth, err := AuthMethod("https://git.example.com/k.git", map[string][]byte{CredentialUsername: []byte("ci"), CredentialPassword: []byte("s3cret"), CredentialIdentity: []byte("ignored over https")}, false, "")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(auth).To(Equal(&githttp.BasicAuth{Username: "ci", Password: "s3cret"}))
	auth, err = AuthMethod("https://git.example.com/k.git", nil, false, "")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(auth).To(BeNil(), "anonymous")
}

type fakeAddr string

func (a fakeAddr) Network() string { return "tcp" }
func (a fakeAddr) String() string  { return string(a) }
