package sources

import (
	"context"
	"errors"
	"net"
	"sort"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/knownhosts"

	"github.com/profilesync/profilesync/internal/gitsource"
	"github.com/profilesync/profilesync/internal/propose"
	"github.com/profilesync/profilesync/test/gitserver"
)

// sshKubernetesRepo serves kubernetesRepo's repository (its tags, with
// uploadpack.allowFilter) over ssh too, to the client key it returns.
func sshKubernetesRepo(t *testing.T) (server *gitserver.SSHServer, identity []byte) {
	t.Helper()
	httpServer, _ := kubernetesRepo(t, gitserver.Options{}, true)
	identity, clientKey, err := gitserver.NewSSHIdentity()
	if err != nil {
		t.Fatal(err)
	}
	server, err = gitserver.NewSSH(httpServer.Root(), clientKey)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = server.Close() })
	return server, identity
}

func sshSourceAt(url, credentials string) *propose.Source {
	f, err := propose.Decode(propose.FileName, []byte(versionsHeader+"sources:\n- name: kubernetes\n  git:\n    url: \""+url+"\"\n    credentials: "+credentials+"\n  feeds: [{file: base/cloudprofiles.yaml, cloudProfile: aws}]\n"))
	if err != nil {
		panic(err)
	}
	return &f.Sources[0]
}

func sortedReleases(releases []propose.Release) []propose.Release {
	sort.Slice(releases, func(i, j int) bool { return releases[i].Version < releases[j].Version })
	return releases
}

func TestGitTagsAppearOverSSHWithTheCredentialsOfTheSourcesSecret(t *testing.T) {
	g := NewWithT(t)
	before := time.Now().Add(-time.Second).Truncate(time.Second)
	server, identity := sshKubernetesRepo(t)
	source := sshSourceAt(server.RepoURL("kubernetes"), "{secretName: kubernetes-deploy-key}")
	auth, err := GitAuth(source, map[string][]byte{
		gitsource.CredentialIdentity: identity, gitsource.CredentialKnownHosts: server.KnownHosts(server.HostKey()),
	}, false, t.TempDir())
	g.Expect(err).NotTo(HaveOccurred())

	releases, err := ListGit(context.Background(), source, GitOptions{Auth: auth})

	g.Expect(err).NotTo(HaveOccurred())
	releases = sortedReleases(releases)
	g.Expect(releases).To(HaveLen(2))
	for i, want := range []string{"1.34.2", "1.34.3"} {
		g.Expect(releases[i].Version).To(Equal(want))
		g.Expect(releases[i].Released).To(BeTemporally(">=", before), "the time comes from the filtered fetch over ssh: "+want)
		g.Expect(releases[i].Released).To(BeTemporally("<=", time.Now().Add(time.Second)), want)
	}
}

func TestGitTagsAppearOverSSHAtAnScpLikeAddressWithTheCLIsVariables(t *testing.T) {
	g := NewWithT(t)
	server, identity := sshKubernetesRepo(t)
	// An scp-like address has no port: it is port 22 of its host, which
	// the test's dialer sends to the server. known_hosts lists the host as
	// the address names it, so the host key is checked for that name.
	const host = "git.kubernetes.example"
	source := sshSourceAt("git@"+host+":kubernetes.git", "{identityEnv: GIT_SSH_KEY, knownHostsEnv: GIT_KNOWN_HOSTS}")
	env := map[string]string{
		"GIT_SSH_KEY":     string(identity),
		"GIT_KNOWN_HOSTS": knownhosts.Line([]string{knownhosts.Normalize(host + ":22")}, server.HostKey()) + "\n",
	}
	auth, err := GitEnvironmentAuth(source, func(k string) (string, bool) { v, ok := env[k]; return v, ok }, false, t.TempDir())
	g.Expect(err).NotTo(HaveOccurred())
	var dialed []string
	dial := func(ctx context.Context, network, address string) (net.Conn, error) {
		dialed = append(dialed, address)
		return (&net.Dialer{}).DialContext(ctx, network, server.Addr())
	}

	releases, err := ListGit(context.Background(), source, GitOptions{Auth: auth, Dial: dial})

	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(dialed).To(Equal([]string{host + ":22"}))
	g.Expect(sortedReleases(releases)).To(HaveLen(2))
	g.Expect(releases[0].Version).To(Equal("1.34.2"))

	delete(env, "GIT_KNOWN_HOSTS")
	_, err = GitEnvironmentAuth(source, func(k string) (string, bool) { v, ok := env[k]; return v, ok }, false, t.TempDir())
	g.Expect(err).To(MatchError("source kubernetes: the environment variable GIT_KNOWN_HOSTS (git.credentials.knownHostsEnv) is not set"))
}

func TestAGitSourceOverSSHThatFailsIsNamedAndBoundedLikeAnyOther(t *testing.T) {
	server, identity := sshKubernetesRepo(t)
	strangerIdentity, _, err := gitserver.NewSSHIdentity()
	if err != nil {
		t.Fatal(err)
	}
	_, otherHostKey, err := gitserver.NewSSHIdentity()
	if err != nil {
		t.Fatal(err)
	}
	// A listener that accepts and never speaks: the handshake waits for
	// the timeout.
	silent, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = silent.Close() })
	go func() {
		for {
			conn, err := silent.Accept()
			if err != nil {
				return
			}
			t.Cleanup(func() { _ = conn.Close() })
		}
	}()
	// A port nothing listens on.
	closed, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closedAddr := closed.Addr().String()
	_ = closed.Close()

	knownHosts := func(addr string, key ssh.PublicKey) []byte {
		return []byte(knownhosts.Line([]string{knownhosts.Normalize(addr)}, key) + "\n")
	}
	url := server.RepoURL("kubernetes")
	tests := []struct {
		name       string
		url        string
		identity   []byte
		knownHosts []byte
		noAuth     bool
		limits     Limits
		want       []string
		is         error
	}{
		{name: "a server whose host key is not the listed one", url: url, identity: identity, knownHosts: server.KnownHosts(otherHostKey),
			want: []string{"knownhosts: key mismatch"}},
		{name: "an identity the server does not know", url: url, identity: strangerIdentity, knownHosts: server.KnownHosts(server.HostKey()),
			want: []string{"unable to authenticate"}},
		{name: "no credentials", url: url, noAuth: true,
			want: []string{"an ssh source needs an ssh identity and known_hosts (credentials.secretName for the operator; identityEnv and knownHostsEnv for the CLI)"}},
		{name: "a repository the server does not have", url: strings.Replace(url, "kubernetes.git", "kubernetes-missing.git", 1), identity: identity, knownHosts: server.KnownHosts(server.HostKey()),
			want: []string{"the server said: fatal: ", "kubernetes-missing.git", "does not appear to be a git repository"}},
		{name: "an unreachable server", url: "ssh://git@" + closedAddr + "/kubernetes.git", identity: identity, knownHosts: knownHosts(closedAddr, server.HostKey()),
			want: []string{"connection refused"}},
		{name: "a server that never answers, past the timeout", url: "ssh://git@" + silent.Addr().String() + "/kubernetes.git", identity: identity,
			knownHosts: knownHosts(silent.Addr().String(), server.HostKey()), limits: Limits{MaxBytes: 1 << 20, MaxTags: 10, Timeout: 300 * time.Millisecond},
			want: []string{"context deadline exceeded"}, is: context.DeadlineExceeded},
		{name: "more bytes than its limit", url: url, identity: identity, knownHosts: server.KnownHosts(server.HostKey()), limits: Limits{MaxBytes: 512, MaxTags: 10},
			want: []string{"the responses hold more than 512 bytes"}, is: ErrSourceLimit},
		{name: "more tags than its limit", url: url, identity: identity, knownHosts: server.KnownHosts(server.HostKey()), limits: Limits{MaxBytes: 1 << 20, MaxTags: 1},
			want: []string{"more than 1 tags are versions"}, is: ErrSourceLimit},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			source := sshSourceAt(tt.url, "{secretName: kubernetes-deploy-key}")
			options := GitOptions{Limits: tt.limits}
			if !tt.noAuth {
				options.Auth, err = GitAuth(source, map[string][]byte{gitsource.CredentialIdentity: tt.identity, gitsource.CredentialKnownHosts: tt.knownHosts}, false, t.TempDir())
				g.Expect(err).NotTo(HaveOccurred())
			}
			started := time.Now()
			_, err := ListGit(context.Background(), source, options)
			g.Expect(time.Since(started)).To(BeNumerically("<", 30*time.Second))
			g.Expect(err).To(HaveOccurred())
			g.Expect(err.Error()).To(HavePrefix("source kubernetes: listing the tags of " + gitsource.RedactURL(tt.url) + ": "))
			for _, part := range tt.want {
				g.Expect(err.Error()).To(ContainSubstring(part))
			}
			if tt.is != nil {
				g.Expect(errors.Is(err, tt.is)).To(BeTrue(), err.Error())
			}
		})
	}
}

func TestGitAuthNamesTheSourceAndTheSecretOfEveryProblem(t *testing.T) {
	identity, _, err := gitserver.NewSSHIdentity()
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		url  string
		data map[string][]byte
		want string
	}{
		{name: "ssh without known_hosts", url: "git@github.com:kubernetes/kubernetes.git", data: map[string][]byte{gitsource.CredentialIdentity: identity},
			want: "source kubernetes: Secret kubernetes-deploy-key (git.credentials.secretName): invalid git source: ssh URL ssh://***@github.com/kubernetes/kubernetes.git needs credentials with known_hosts to verify the server"},
		{name: "ssh with an identity that is no key", url: "ssh://git@github.com/kubernetes/kubernetes.git",
			data: map[string][]byte{gitsource.CredentialIdentity: []byte("not a key"), gitsource.CredentialKnownHosts: []byte("github.com ssh-ed25519 AAAA\n")},
			want: "source kubernetes: Secret kubernetes-deploy-key (git.credentials.secretName): invalid git source: parse ssh identity: ssh: no key found"},
		{name: "credentials over plain http", url: "http://git.example.com/kubernetes.git",
			data: map[string][]byte{gitsource.CredentialUsername: []byte("ci"), gitsource.CredentialPassword: []byte("s3cret")},
			want: "source kubernetes: Secret kubernetes-deploy-key (git.credentials.secretName): invalid git source: refusing to send credentials over plain http to http://git.example.com/kubernetes.git; use https"},
		{name: "a value larger than a credential", url: "ssh://git@github.com/kubernetes/kubernetes.git",
			data: map[string][]byte{gitsource.CredentialIdentity: identity, gitsource.CredentialKnownHosts: make([]byte, MaxSecretValueBytes+1)},
			want: "source kubernetes: Secret kubernetes-deploy-key (git.credentials.secretName): known_hosts holds 65537 bytes, more than the 65536 a credential may have"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			_, err := GitAuth(sshSourceAt(tt.url, "{secretName: kubernetes-deploy-key}"), tt.data, false, t.TempDir())
			g.Expect(err).To(MatchError(tt.want))
		})
	}
}
