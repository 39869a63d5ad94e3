package gitsource

import (
	"context"
	"errors"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing/transport"
	. "github.com/onsi/gomega"

	"github.com/profilesync/profilesync/test/gitserver"
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
	g.Expect(err).To(MatchError(ErrConnectionFailed), "a refused connection may be retried")
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
	g.Expect(errors.Is(err, ErrConnectionFailed)).To(BeFalse(), "a timed-out fetch already took its time: not repeated")
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
		{name: "an ssh URL with a password", url: "ssh://git:pw@127.0.0.1:1/profiles.git", credentials: map[string][]byte{
			CredentialIdentity: []byte("not a key"), CredentialKnownHosts: []byte("127.0.0.1 ssh-ed25519 AAAA"),
		}, wantMessage: "ssh URL ssh://***@127.0.0.1:1/profiles.git has a password; ssh authenticates with the credentials' identity, so remove it from the URL"},
		{name: "user information after the host, which url.Parse would take for the host",
			url:         strings.Replace(server.RepoURL("profiles"), "http://", "http://tok/en@", 1),
			wantMessage: "repository URL " + RedactURL(strings.Replace(server.RepoURL("profiles"), "http://", "http://tok/en@", 1)) + " is ambiguous"},
		{name: "a URL url.Parse rejects, without repeating the parser's quote of it",
			url:         strings.Replace(server.RepoURL("profiles"), "http://", "http://bot:p%zz@", 1),
			wantMessage: "parse repository URL " + RedactURL(strings.Replace(server.RepoURL("profiles"), "http://", "http://bot:p%zz@", 1)) + ": it is not a valid URL; percent-encode special characters"},
		{name: "a URL url.Parse rejects gets the parser's reason when it holds no credentials",
			url: server.RepoURL("pro%zzfiles"), wantMessage: `parse repository URL ` + server.RepoURL("pro%zzfiles") + `: invalid URL escape "%zz"`},
		{name: "a query", url: server.RepoURL("profiles") + "?private_token=tok123",
			wantMessage: "repository URL " + server.RepoURL("profiles") + "?private_token=*** has a query or fragment, which Git URLs cannot have"},
		{name: "a fragment", url: server.RepoURL("profiles") + "#main", wantMessage: "has a query or fragment"},
		{name: "a password without a user name in the URL", url: strings.Replace(server.RepoURL("profiles"), "http://", "http://:"+testPassword+"@", 1),
			wantMessage: "the URL " + RedactURL(strings.Replace(server.RepoURL("profiles"), "http://", "http://:"+testPassword+"@", 1)) + " sets a password without a user name"},
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
		{name: "an ssh password is", url: "ssh://git:pw@host/r.git", want: []string{"pw"}},
		{name: "an scp-like user is no secret", url: "git@host:org/r.git"},
		{name: "an escaped password as written and unescaped", url: "https://bot:p%40ss@host/r.git", want: []string{"p%40ss", "p@ss"}},
		{name: "a password with an @, up to the last @", url: "https://bot:p@ss@host/r.git", want: []string{"p@ss"}},
		{name: "a password with a / that url.Parse misreads", url: "https://bot:pa/ss@host/r.git", want: []string{"pa/ss"}},
		{name: "a token with a / that url.Parse takes for the host", url: "https://tok/en@host/r.git", want: []string{"tok/en"}},
		{name: "a password url.Parse rejects", url: `https://bot:p%zz "s@host/r.git`, want: []string{`p%zz "s`}},
		{name: "query values", url: "https://host/r.git?access_token=tok1&private_token=tok%2B2", want: []string{"tok1", "tok%2B2", "tok+2"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)

			g.Expect(credentialSecrets(tt.url, tt.credentials)).To(Equal(tt.want))
		})
	}
}

func TestFetchNeverStoresCredentialsInTheCheckout(t *testing.T) {
	withUserinfo := func(repoURL, userinfo string) string {
		return strings.Replace(repoURL, "http://", "http://"+userinfo+"@", 1)
	}
	tests := []struct {
		name        string
		server      gitserver.Options
		userinfo    string
		credentials map[string][]byte
		// mustNotAppear is every credential string of the case.
		mustNotAppear []string
	}{
		{
			name:          "a user and password in the URL",
			server:        gitserver.Options{Username: testUser, Password: testPassword},
			userinfo:      testUser + ":" + testPassword,
			mustNotAppear: []string{testUser, testPassword},
		},
		{
			name:          "an escaped password in the URL",
			server:        gitserver.Options{Username: testUser, Password: "p@ss/w0rd-" + testPassword},
			userinfo:      testUser + ":" + url.PathEscape("p@ss/w0rd-"+testPassword),
			mustNotAppear: []string{testUser, testPassword, url.PathEscape("p@ss/w0rd-" + testPassword)},
		},
		{
			name:          "a token as the URL's user",
			server:        gitserver.Options{Username: testToken},
			userinfo:      testToken,
			mustNotAppear: []string{testToken},
		},
		{
			name:     "user information in the URL next to ssh keys in the credentials, which https ignores",
			server:   gitserver.Options{Username: testUser, Password: testPassword},
			userinfo: testUser + ":" + testPassword,
			credentials: map[string][]byte{
				CredentialIdentity: []byte("ssh key, unused over http"), CredentialKnownHosts: []byte("unused"),
			},
			mustNotAppear: []string{testUser, testPassword},
		},
		{
			name:   "a user and password in the credentials",
			server: gitserver.Options{Username: testUser, Password: testPassword},
			credentials: map[string][]byte{
				CredentialUsername: []byte(testUser), CredentialPassword: []byte(testPassword),
			},
			mustNotAppear: []string{testUser, testPassword},
		},
		{
			name:          "a bearer token in the credentials",
			server:        gitserver.Options{BearerToken: testToken},
			credentials:   map[string][]byte{CredentialBearerToken: []byte(testToken)},
			mustNotAppear: []string{testToken},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			server := startGitServer(t, tt.server)
			seededRepo(t, server, "private")
			repoURL := server.RepoURL("private")
			if tt.userinfo != "" {
				repoURL = withUserinfo(repoURL, tt.userinfo)
			}
			fetcher := newTestFetcher(t, FetcherOptions{AllowCredentialsOverHTTP: true})
			req := Request{URL: repoURL, Credentials: tt.credentials, CacheKey: "ns/name"}

			result, err := fetch(fetcher, req)

			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(fileIn(g, result.Dir, "profile.yaml")).To(Equal("version: 1\n"))
			repository, err := git.PlainOpen(result.Dir)
			g.Expect(err).NotTo(HaveOccurred())
			origin, err := repository.Remote(git.DefaultRemoteName)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(origin.Config().URLs).To(Equal([]string{server.RepoURL("private")}), "the remote URL has no user information")
			// Every file, .git included, whatever go-git chose to write.
			files := 0
			err = filepath.WalkDir(result.Dir, func(path string, entry fs.DirEntry, err error) error {
				if err != nil || entry.IsDir() {
					return err
				}
				var content []byte
				if entry.Type()&fs.ModeSymlink != 0 {
					target, err := os.Readlink(path)
					content = []byte(target)
					g.Expect(err).NotTo(HaveOccurred())
				} else {
					content, err = os.ReadFile(path)
					g.Expect(err).NotTo(HaveOccurred())
				}
				files++
				for _, secret := range tt.mustNotAppear {
					g.Expect(string(content)).NotTo(ContainSubstring(secret), "%s holds a credential", path)
				}
				return nil
			})
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(files).To(BeNumerically(">", 5), "the walk saw the .git directory")

			// The stripped URL is good for finding the checkout again.
			uploadsBefore := server.Requests().UploadPacks
			req.LastRevision = result.Revision
			again, err := fetch(fetcher, req)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(again.Changed).To(BeFalse())
			g.Expect(server.Requests().UploadPacks).To(Equal(uploadsBefore), "the checkout is reused")
		})
	}
}

func TestFetchRefusesCredentialsBothInTheURLAndInTheCredentials(t *testing.T) {
	server := startGitServer(t, gitserver.Options{Username: testUser, Password: testPassword})
	seededRepo(t, server, "private")
	withUserinfo := func(userinfo string) string {
		return strings.Replace(server.RepoURL("private"), "http://", "http://"+userinfo+"@", 1)
	}
	tests := []struct {
		name        string
		url         string
		credentials map[string][]byte
		wantMessage string
	}{
		{
			name:        "a password in both",
			url:         withUserinfo(testUser + ":" + testPassword),
			credentials: map[string][]byte{CredentialUsername: []byte(testUser), CredentialPassword: []byte(testPassword)},
			wantMessage: "credentials set both in the URL " + RedactURL(withUserinfo(testUser+":"+testPassword)) + " and as username/password; set one",
		},
		{
			name:        "a token in the URL and a bearer token",
			url:         withUserinfo(testToken),
			credentials: map[string][]byte{CredentialBearerToken: []byte(testToken)},
			wantMessage: "credentials set both in the URL " + RedactURL(withUserinfo(testToken)) + " and as bearerToken; set one",
		},
		{
			name:        "a token in the URL and a user name",
			url:         withUserinfo(testToken),
			credentials: map[string][]byte{CredentialUsername: []byte(testUser)},
			wantMessage: "credentials set both in the URL " + RedactURL(withUserinfo(testToken)) + " and as username; set one",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			fetcher := newTestFetcher(t, FetcherOptions{AllowCredentialsOverHTTP: true})
			before := server.Requests()

			_, err := fetch(fetcher, Request{URL: tt.url, Credentials: tt.credentials, CacheKey: "ns/name"})

			g.Expect(err).To(MatchError(ErrInvalidRequest))
			g.Expect(err.Error()).To(Equal("invalid git source: " + tt.wantMessage))
			g.Expect(err.Error()).NotTo(ContainSubstring(testPassword))
			g.Expect(err.Error()).NotTo(ContainSubstring(testToken))
			g.Expect(server.Requests()).To(Equal(before), "nothing was sent")
		})
	}
}

func TestFetchErrorsNeverContainAnyPartOfThePassword(t *testing.T) {
	// Nothing listens on port 1 of loopback: URLs that get as far as the
	// network fail there, without leaving the machine.
	const (
		// passwordParts are distinctive pieces, so that finding any of them
		// in a message means a piece of the password leaked.
		first  = "Kq7xWv"
		second = "Zr9mJp"
	)
	identity, _ := newSSHIdentity(t)
	sshCredentials := map[string][]byte{
		CredentialIdentity: identity, CredentialKnownHosts: []byte("127.0.0.1 ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIA1n6bIBbDKrdBnxXlKIVSTXO4H6R8B7bLzI3kvsQ5hA\n"),
	}
	tests := []struct {
		name        string
		url         string
		credentials map[string][]byte
		// otherParts are further pieces of the password to look for.
		otherParts []string
		// hidesTheHost is set where the host may be part of a query value.
		hidesTheHost bool
	}{
		{name: "a / in the password", url: "https://bot:" + first + "/" + second + "@127.0.0.1:1/r.git"},
		{name: "a / in a token, which url.Parse would take for the host", url: "https://" + first + "/" + second + "@127.0.0.1:1/r.git"},
		{name: "a ? in the password", url: "https://bot:" + first + "?" + second + "@127.0.0.1:1/r.git", hidesTheHost: true},
		{name: "a # in the password", url: "https://bot:" + first + "#" + second + "@127.0.0.1:1/r.git"},
		{name: "a space in the password", url: "https://bot:" + first + " " + second + "@127.0.0.1:1/r.git"},
		{name: "a quote in the password", url: "https://bot:" + first + `"` + second + "@127.0.0.1:1/r.git"},
		{name: "a bad escape in the password", url: "https://bot:" + first + "%zz" + second + "@127.0.0.1:1/r.git", otherParts: []string{"%zz"}},
		{name: "an @ in the password", url: "https://bot:" + first + "@" + second + "@127.0.0.1:1/r.git"},
		{name: "an escaped @ in the password", url: "https://bot:" + first + "%40" + second + "@127.0.0.1:1/r.git"},
		{name: "a token as user", url: "https://" + first + second + "@127.0.0.1:1/r.git"},
		{name: "a token in the query", url: "https://127.0.0.1:1/r.git?access_token=" + first + second},
		{name: "a token among query values", url: "https://127.0.0.1:1/r.git?ref=main&private_token=" + first + "&" + second},
		{name: "a password in an ssh URL", url: "ssh://git:" + first + second + "@127.0.0.1:1/r.git", credentials: sshCredentials},
		{name: "a / in the password of an ssh URL", url: "ssh://git:" + first + "/" + second + "@127.0.0.1:1/r.git", credentials: sshCredentials},
		{name: "a token as the user of an scp-like address", url: first + second + "@127.0.0.1:r.git"},
		{name: "a password in an scp-like address", url: "bot:" + first + second + "@127.0.0.1:r.git"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			fetcher := newTestFetcher(t, FetcherOptions{})

			_, err := fetch(fetcher, Request{URL: tt.url, Credentials: tt.credentials, CacheKey: "ns/name"})

			g.Expect(err).To(HaveOccurred())
			t.Log(err)
			if !tt.hidesTheHost {
				g.Expect(err.Error()).To(ContainSubstring("127.0.0.1"), "the message still says which repository")
			}
			for _, part := range append([]string{first, second}, tt.otherParts...) {
				g.Expect(err.Error()).NotTo(ContainSubstring(part))
			}
		})
	}
}
