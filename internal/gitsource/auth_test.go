package gitsource

import (
	"context"
	"errors"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/go-git/go-git/v5/plumbing/transport"
	. "github.com/onsi/gomega"

	"github.com/profilesync/profilesync/internal/gitsource/gitserver"
)

const (
	testUser     = "profile-bot"
	testPassword = "s3cret-Passw0rd"
	testToken    = "tok-0123456789abcdef"
)

func TestFetchWithBasicAuth(t *testing.T) {
	server := startGitServer(t, gitserver.Options{Username: testUser, Password: testPassword})
	seededRepo(t, server, "private")
	repoURL := server.RepoURL("private")
	withUserinfo := func(userinfo string) string {
		return strings.Replace(repoURL, "http://", "http://"+userinfo+"@", 1)
	}

	t.Run("the right user and password are accepted", func(t *testing.T) {
		g := NewWithT(t)
		fetcher := newTestFetcher(t, FetcherOptions{AllowCredentialsOverHTTP: true})

		result, err := fetch(fetcher, Request{URL: repoURL, CacheKey: "ns/name", Credentials: map[string][]byte{
			CredentialUsername: []byte(testUser), CredentialPassword: []byte(testPassword),
		}})

		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(fileIn(g, result.Dir, "profile.yaml")).To(Equal("version: 1\n"))
	})

	t.Run("credentials in the URL are accepted", func(t *testing.T) {
		g := NewWithT(t)
		fetcher := newTestFetcher(t, FetcherOptions{AllowCredentialsOverHTTP: true})

		_, err := fetch(fetcher, Request{URL: withUserinfo(testUser + ":" + testPassword), CacheKey: "ns/name"})

		g.Expect(err).NotTo(HaveOccurred())
	})

	tests := []struct {
		name        string
		url         string
		credentials map[string][]byte
		// secret must not appear in the error.
		secret string
	}{
		{
			name:   "no credentials",
			url:    repoURL,
			secret: testPassword,
		},
		{
			name:        "a wrong password",
			url:         repoURL,
			credentials: map[string][]byte{CredentialUsername: []byte(testUser), CredentialPassword: []byte("wrong-Passw0rd")},
			secret:      "wrong-Passw0rd",
		},
		{
			name:   "a wrong password in the URL",
			url:    withUserinfo(testUser + ":wrong-Passw0rd"),
			secret: "wrong-Passw0rd",
		},
		{
			name:   "a wrong token as the URL's user",
			url:    withUserinfo("ghp_wrongtoken123"),
			secret: "ghp_wrongtoken123",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name+" is refused without leaking credentials", func(t *testing.T) {
			g := NewWithT(t)
			fetcher := newTestFetcher(t, FetcherOptions{AllowCredentialsOverHTTP: true})
			refusedBefore := server.Requests().Unauthorized

			_, err := fetch(fetcher, Request{URL: tt.url, Credentials: tt.credentials, CacheKey: "ns/name"})

			g.Expect(err).To(MatchError(transport.ErrAuthenticationRequired))
			g.Expect(err.Error()).To(HavePrefix("list refs of " + RedactURL(tt.url) + ": authentication required"))
			g.Expect(err.Error()).NotTo(ContainSubstring(tt.secret))
			g.Expect(server.Requests().Unauthorized).To(BeNumerically(">", refusedBefore))
		})
	}
}

func TestFetchWithBearerToken(t *testing.T) {
	server := startGitServer(t, gitserver.Options{BearerToken: testToken})
	seededRepo(t, server, "private")

	t.Run("the right token is accepted", func(t *testing.T) {
		g := NewWithT(t)
		fetcher := newTestFetcher(t, FetcherOptions{AllowCredentialsOverHTTP: true})

		result, err := fetch(fetcher, Request{URL: server.RepoURL("private"), CacheKey: "ns/name",
			Credentials: map[string][]byte{CredentialBearerToken: []byte(testToken)}})

		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(fileIn(g, result.Dir, "profile.yaml")).To(Equal("version: 1\n"))
	})

	t.Run("a wrong token is refused and not shown", func(t *testing.T) {
		g := NewWithT(t)
		fetcher := newTestFetcher(t, FetcherOptions{AllowCredentialsOverHTTP: true})

		_, err := fetch(fetcher, Request{URL: server.RepoURL("private"), CacheKey: "ns/name",
			Credentials: map[string][]byte{CredentialBearerToken: []byte("tok-wrong-987654")}})

		g.Expect(err).To(MatchError(transport.ErrAuthenticationRequired))
		g.Expect(err.Error()).NotTo(ContainSubstring("tok-wrong-987654"))
	})
}

func TestCredentialsAreNotSentOverPlainHTTPByDefault(t *testing.T) {
	server := startGitServer(t, gitserver.Options{Username: testUser, Password: testPassword})
	seededRepo(t, server, "private")
	tests := []struct {
		name        string
		url         string
		credentials map[string][]byte
	}{
		{name: "basic auth from the credentials", url: server.RepoURL("private"),
			credentials: map[string][]byte{CredentialUsername: []byte(testUser), CredentialPassword: []byte(testPassword)}},
		{name: "a bearer token", url: server.RepoURL("private"),
			credentials: map[string][]byte{CredentialBearerToken: []byte(testToken)}},
		{name: "user information in the URL",
			url: strings.Replace(server.RepoURL("private"), "http://", "http://"+testUser+":"+testPassword+"@", 1)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			fetcher := newTestFetcher(t, FetcherOptions{})
			before := server.Requests()

			_, err := fetch(fetcher, Request{URL: tt.url, Credentials: tt.credentials, CacheKey: "ns/name"})

			g.Expect(err).To(MatchError(ErrInvalidRequest))
			g.Expect(err.Error()).To(ContainSubstring("refusing to send credentials over plain http to " + RedactURL(tt.url) + "; use https"))
			g.Expect(err.Error()).NotTo(ContainSubstring(testPassword))
			g.Expect(server.Requests()).To(Equal(before), "nothing was sent")
		})
	}
}

func TestFetchFromAStoppedServerNamesTheURL(t *testing.T) {
	g := NewWithT(t)
	server, err := gitserver.New(t.TempDir(), gitserver.Options{})
	g.Expect(err).NotTo(HaveOccurred())
	seededRepo(t, server, "profiles")
	g.Expect(server.Close()).To(Succeed())
	fetcher := newTestFetcher(t, FetcherOptions{AllowCredentialsOverHTTP: true})
	repoURL := strings.Replace(server.RepoURL("profiles"), "http://", "http://"+testUser+":"+testPassword+"@", 1)

	_, err = fetch(fetcher, Request{URL: repoURL, CacheKey: "ns/name"})

	g.Expect(err).To(HaveOccurred())
	g.Expect(err.Error()).To(HavePrefix("list refs of " + RedactURL(repoURL) + ": "))
	g.Expect(err.Error()).To(ContainSubstring("connection refused"))
	g.Expect(err.Error()).NotTo(ContainSubstring(testPassword))
	g.Expect(err.Error()).NotTo(ContainSubstring(testUser + ":"))
}

func TestFetchHonoursTheTimeout(t *testing.T) {
	g := NewWithT(t)
	repoURL := unresponsiveServer(t)
	fetcher := newTestFetcher(t, FetcherOptions{})
	started := time.Now()

	_, err := fetcher.Fetch(context.Background(), Request{URL: repoURL, CacheKey: "ns/name", Timeout: 300 * time.Millisecond})

	g.Expect(time.Since(started)).To(BeNumerically("<", 5*time.Second))
	g.Expect(errors.Is(err, context.DeadlineExceeded)).To(BeTrue(), "got %v", err)
	g.Expect(err.Error()).To(HavePrefix("list refs of " + repoURL + ": timed out after 300ms"))
}

func TestFetchHonoursTheContext(t *testing.T) {
	g := NewWithT(t)
	repoURL := unresponsiveServer(t)
	fetcher := newTestFetcher(t, FetcherOptions{})
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()

	_, err := fetcher.Fetch(ctx, Request{URL: repoURL, CacheKey: "ns/name"})

	g.Expect(errors.Is(err, context.DeadlineExceeded)).To(BeTrue(), "got %v", err)
	g.Expect(err.Error()).To(HavePrefix("list refs of " + repoURL + ": "))
}

func TestFetchRejectsInvalidRequestsBeforeContactingTheServer(t *testing.T) {
	server := startGitServer(t, gitserver.Options{})
	seededRepo(t, server, "profiles")
	sshURL := "ssh://git@127.0.0.1:1/profiles.git"
	tests := []struct {
		name        string
		url         string
		ref         Ref
		credentials map[string][]byte
		cacheKey    string
		wantMessage string
	}{
		{name: "tag and semver together", ref: Ref{Tag: "v1", SemVer: ">=1"}, wantMessage: "ref sets more than one of tag, semver and commit"},
		{name: "branch with tag", ref: Ref{Branch: "main", Tag: "v1"}, wantMessage: "branch may be combined only with commit"},
		{name: "a short commit", ref: Ref{Commit: "abc123"}, wantMessage: `ref commit "abc123" is not a full lowercase SHA-1`},
		{name: "an empty cache key", cacheKey: "-", wantMessage: "empty cache key"},
		{name: "a file URL", url: "file:///etc", wantMessage: `unsupported URL scheme "file" in file:///etc`},
		{name: "both token and password", credentials: map[string][]byte{
			CredentialBearerToken: []byte("t"), CredentialUsername: []byte("u"), CredentialPassword: []byte("p"),
		}, wantMessage: "credentials set both bearerToken and username/password"},
		{name: "ssh without credentials", url: sshURL, wantMessage: "ssh URL " + RedactURL(sshURL) + " needs credentials with identity"},
		{name: "ssh without known_hosts", url: sshURL, credentials: map[string][]byte{CredentialIdentity: []byte("key")},
			wantMessage: "needs credentials with known_hosts to verify the server"},
		{name: "ssh with a broken key", url: sshURL, credentials: map[string][]byte{
			CredentialIdentity: []byte("not a key"), CredentialKnownHosts: []byte("127.0.0.1 ssh-ed25519 AAAA"),
		}, wantMessage: "parse ssh identity"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			fetcher := newTestFetcher(t, FetcherOptions{})
			req := Request{URL: server.RepoURL("profiles"), Ref: tt.ref, Credentials: tt.credentials, CacheKey: "ns/name"}
			if tt.url != "" {
				req.URL = tt.url
			}
			switch tt.cacheKey {
			case "-":
				req.CacheKey = ""
			case "":
			default:
				req.CacheKey = tt.cacheKey
			}
			before := server.Requests()

			_, err := fetch(fetcher, req)

			g.Expect(err).To(MatchError(ErrInvalidRequest))
			g.Expect(err.Error()).To(ContainSubstring(tt.wantMessage))
			g.Expect(server.Requests()).To(Equal(before))
		})
	}
}

func TestCredentialSecretsKeepUserNamesNextToPasswordsReadable(t *testing.T) {
	tests := []struct {
		name        string
		url         string
		credentials map[string][]byte
		want        []string
	}{
		{name: "user and password", url: "https://host/r.git",
			credentials: map[string][]byte{CredentialUsername: []byte("bot"), CredentialPassword: []byte("pw")}, want: []string{"pw"}},
		{name: "a user without password is a token", url: "https://host/r.git",
			credentials: map[string][]byte{CredentialUsername: []byte("tok")}, want: []string{"tok"}},
		{name: "a bearer token", url: "https://host/r.git",
			credentials: map[string][]byte{CredentialBearerToken: []byte("tok")}, want: []string{"tok"}},
		{name: "a token as the URL's user", url: "https://tok@host/r.git", want: []string{"tok"}},
		{name: "the URL's password", url: "https://bot:pw@host/r.git", want: []string{"pw"}},
		{name: "an ssh user is no secret", url: "ssh://git@host/r.git"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			repoURL, err := url.Parse(tt.url)
			g.Expect(err).NotTo(HaveOccurred())

			g.Expect(credentialSecrets(repoURL, tt.credentials)).To(Equal(tt.want))
		})
	}
}
