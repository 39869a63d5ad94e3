package gitsource

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"testing"

	"github.com/go-git/go-git/v5/plumbing/transport"
	. "github.com/onsi/gomega"
)

func TestRedactURL(t *testing.T) {
	tests := []struct {
		name string
		url  string
		want string
	}{
		{name: "a URL without user information is unchanged", url: "https://git.example.com/org/profiles.git", want: "https://git.example.com/org/profiles.git"},
		{name: "user and password", url: "https://bot:pa55@git.example.com/org/profiles.git", want: "https://***@git.example.com/org/profiles.git"},
		{name: "a token as user", url: "https://ghp_abc123@github.com/org/profiles", want: "https://***@github.com/org/profiles"},
		{name: "an escaped password with @", url: "https://bot:p%40ss@host:8443/r.git", want: "https://***@host:8443/r.git"},
		{name: "an unescaped @ in the password is hidden up to the last @", url: "https://bot:p@ss@w@rd@host/r.git", want: "https://***@host/r.git"},
		{name: "a / in the password, which url.Parse takes for the end of the host", url: "https://bot:pa/ss@host/r.git", want: "https://***@host/r.git"},
		{name: "a / in a token, which url.Parse takes for the host", url: "https://tok/en@host/r.git", want: "https://***@host/r.git"},
		{name: "a ? in the password hides what follows too, as it may have begun a query", url: "https://bot:pa?ss=x@host/r.git", want: "https://***@***"},
		{name: "a # in the password", url: "https://bot:pa#ss@host/r.git", want: "https://***@host/r.git"},
		{name: "spaces and quotes in the password", url: `https://bot:pa ss"wo'rd@host/r.git`, want: "https://***@host/r.git"},
		{name: "a bad escape in the password", url: "https://bot:pa%zzss@host/r.git", want: "https://***@host/r.git"},
		{name: "a password that looks like another URL", url: "https://bot:pa ss://wo@rd@host/r.git", want: "https://***@host/r.git"},
		{name: "an unparsable URL is still redacted", url: "https://bot:pa55@[::1/x", want: "https://***@[::1/x"},
		{name: "a token in the query", url: "https://host/r.git?access_token=tok123", want: "https://host/r.git?access_token=***"},
		{name: "every query value, and bare ones", url: "https://host/r.git?ref=main&private_token=tok123&tok456", want: "https://host/r.git?ref=***&private_token=***&***"},
		{name: "a query value with an unescaped #", url: "https://host/r.git?access_token=tok#123", want: "https://host/r.git?access_token=***"},
		{name: "an @ in a query value hides the query after it too", url: "https://host/r.git?email=a@b&access_token=tok123", want: "https://***@***&access_token=***"},
		{name: "user information and query", url: "https://bot:pa55@host/r.git?access_token=tok123", want: "https://***@host/r.git?access_token=***"},
		{name: "an ssh user", url: "ssh://git@github.com:22/org/profiles.git", want: "ssh://***@github.com:22/org/profiles.git"},
		{name: "an ssh user and password", url: "ssh://git:pa/ss@github.com/org/profiles.git", want: "ssh://***@github.com/org/profiles.git"},
		{name: "an scp-like address", url: "git@github.com:org/profiles.git", want: "***@github.com:org/profiles.git"},
		{name: "an scp-like address with a password", url: "bot:pa@ss@github.com:org/profiles.git", want: "***@github.com:org/profiles.git"},
		{name: "an scp-like address in a message", url: `unsupported URL scheme "" in git@host:org/r.git`, want: `unsupported URL scheme "" in ***@host:org/r.git`},
		{name: "an @ in the path is hidden with what comes before it, as it may end a password with a /", url: "https://host/org/@scope/r.git", want: "https://***@scope/r.git"},
		{name: "URLs inside a message", url: `Get "https://a:b@h1/x": via http://c@h2/y`, want: `Get "https://***@h1/x": via http://***@h2/y`},
		{name: "a query inside a message ends with its word", url: `Get "https://h/r.git/info/refs?service=git-upload-pack": refused`, want: `Get "https://h/r.git/info/refs?service=***": refused`},
		{name: "a redacted URL stays the same", url: "https://***@host/r.git?access_token=***", want: "https://***@host/r.git?access_token=***"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)

			g.Expect(RedactURL(tt.url)).To(Equal(tt.want))
		})
	}
}

func TestRedactErrorRemovesCredentialsAndKeepsSentinels(t *testing.T) {
	g := NewWithT(t)
	inner := &url.Error{Op: "Get", URL: "https://bot:hunter22@host/r.git/info/refs", Err: errors.New("token hunter22 rejected")}
	err := fmt.Errorf("list refs of %s: %w: %w", "https://bot:hunter22@host/r.git", transport.ErrAuthenticationRequired, inner)

	redacted := redactError(err, []string{"hunter22"})

	g.Expect(redacted.Error()).To(Equal(
		`list refs of https://***@host/r.git: authentication required: Get "https://***@host/r.git/info/refs": token *** rejected`))
	g.Expect(redacted).To(MatchError(transport.ErrAuthenticationRequired))
	var urlError *url.Error
	g.Expect(errors.As(redacted, &urlError)).To(BeFalse(), "errors that quote URLs cannot be dug out")
	for unwrapped := errors.Unwrap(redacted); unwrapped != nil; unwrapped = errors.Unwrap(unwrapped) {
		g.Expect(unwrapped.Error()).NotTo(ContainSubstring("hunter22"))
	}
	g.Expect(redactError(nil, nil)).To(Succeed())
}

func TestRedactErrorScrubsEscapedSecretsButNotShortOnes(t *testing.T) {
	g := NewWithT(t)
	err := errors.New("bad p@ss/word! (p%40ss%2Fword%21) near key abc")

	redacted := redactError(err, []string{"p@ss/word!", "abc"})

	g.Expect(redacted.Error()).To(Equal("bad *** (***) near key abc"))
}

func TestRedactErrorScrubsSecretsAsGoQuotesThem(t *testing.T) {
	g := NewWithT(t)
	secret := "pa\"ss\tword\""
	err := fmt.Errorf("parse %q: invalid", "https://h/"+secret)

	redacted := redactError(err, []string{secret})

	g.Expect(redacted.Error()).To(Equal(`parse "https://h/***": invalid`))
}

func TestRedactErrorKeepsContextErrors(t *testing.T) {
	g := NewWithT(t)

	redacted := redactError(fmt.Errorf("fetch: %w", context.DeadlineExceeded), nil)

	g.Expect(redacted).To(MatchError(context.DeadlineExceeded))
	g.Expect(redacted).NotTo(MatchError(context.Canceled))
}

func TestRedactErrorMakesOneLine(t *testing.T) {
	g := NewWithT(t)

	redacted := redactError(errors.New("authentication required: Invalid username\n  or token.\n\n"), nil)

	g.Expect(redacted.Error()).To(Equal("authentication required: Invalid username or token."))
}

func TestCacheDirName(t *testing.T) {
	g := NewWithT(t)

	name, err := cacheDirName("team-a/profiles")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(name).To(MatchRegexp(`^team-a_profiles-[0-9a-f]{8}$`))

	seen := map[string]string{}
	for _, key := range []string{"a/b", "a_b", "a:b", "../../etc", ".hidden", "ü/ß", strings.Repeat("x", 300)} {
		name, err := cacheDirName(key)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(name).To(MatchRegexp(`^[A-Za-z0-9_-][A-Za-z0-9._-]*-[0-9a-f]{8}$`), "key %q", key)
		g.Expect(len(name)).To(BeNumerically("<=", 109))
		g.Expect(seen).NotTo(HaveKey(name), "keys %q and %q share a directory", seen[name], key)
		seen[name] = key
	}

	again, err := cacheDirName("team-a/profiles")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(again).To(Equal(name), "the same key always gets the same directory")

	_, err = cacheDirName("")
	g.Expect(err).To(MatchError(ErrInvalidRequest))
}

func TestCommitOfRevision(t *testing.T) {
	tests := []struct {
		revision string
		want     string
	}{
		{revision: "main@sha1:0123456789abcdef0123456789abcdef01234567", want: "0123456789abcdef0123456789abcdef01234567"},
		{revision: "sha1:0123456789abcdef0123456789abcdef01234567", want: "0123456789abcdef0123456789abcdef01234567"},
		{revision: "release/sha1:x@sha1:abc", want: "abc"},
		{revision: "", want: ""},
		{revision: "main", want: ""},
	}
	for _, tt := range tests {
		t.Run(tt.revision, func(t *testing.T) {
			g := NewWithT(t)

			g.Expect(CommitOfRevision(tt.revision)).To(Equal(tt.want))
		})
	}
}

func TestRefOfRevision(t *testing.T) {
	for revision, want := range map[string]string{
		"main@sha1:0123456789abcdef0123456789abcdef01234567":    "main",
		"release/1.x@sha1:0123456789abcdef0123456789abcdef0123": "release/1.x",
		"sha1:0123456789abcdef0123456789abcdef01234567":         "",
		"main": "",
		"":     "",
	} {
		if got := RefOfRevision(revision); got != want {
			t.Errorf("RefOfRevision(%q) = %q, want %q", revision, got, want)
		}
	}
}
