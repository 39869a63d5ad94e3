package gitsource

import (
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/go-git/go-git/v5/plumbing/transport"
	githttp "github.com/go-git/go-git/v5/plumbing/transport/http"
	gitssh "github.com/go-git/go-git/v5/plumbing/transport/ssh"
)

// Keys of the credentials map, the data of the Secret a ProfileSync names
// in spec.secretRef. They match Flux's GitRepository secrets so that an
// existing Secret can be reused.
const (
	// CredentialUsername is the https user name for basic authentication.
	CredentialUsername = "username"
	// CredentialPassword is the https password (or access token used as a
	// password) for basic authentication, and for ssh the passphrase of an
	// encrypted identity.
	CredentialPassword = "password"
	// CredentialBearerToken is sent as "Authorization: Bearer <token>" over
	// https.
	CredentialBearerToken = "bearerToken"
	// CredentialIdentity is the PEM-encoded ssh private key.
	CredentialIdentity = "identity"
	// CredentialKnownHosts holds the ssh host keys of the server in
	// known_hosts format; the server's key is always verified against it.
	CredentialKnownHosts = "known_hosts"
)

// schemeSSH is the scheme of ssh URLs, and what scp-like addresses are.
const schemeSSH = "ssh"

// defaultSSHUser is the ssh user when the URL names none; every major Git
// host expects it.
const defaultSSHUser = "git"

// clientAuth is where a request goes and what it authenticates with.
type clientAuth struct {
	// remoteURL is the repository URL without user information. It is what
	// go-git is given, and so what the checkout's .git/config keeps, which
	// a kustomize build may read: credentials travel only in method.
	remoteURL string
	// method is nil when the request is anonymous.
	method transport.AuthMethod
}

// parseRepositoryURL parses a repository URL, refusing the ones go-git would
// misread. Its errors show the URL only through RedactURL and quote nothing
// of its user information.
func parseRepositoryURL(rawURL string) (*url.URL, error) {
	repo := RedactURL(rawURL)
	if userinfoIsAmbiguous(rawURL) {
		// url.Parse would take the part of a password before the "/" for
		// the host and connect to it, sending the rest as path.
		// Messages avoid the at sign itself: RedactURL would hide the text
		// up to it.
		return nil, fmt.Errorf("%w: repository URL %s is ambiguous: it has an at sign after a \"/\", \"?\" or \"#\", "+
			"so a password or token containing one of those would be taken for the host; percent-encode them "+
			"(/ as %%2F, ? as %%3F, # as %%23, and an at sign in a path as %%40) or move the credentials out of the URL",
			ErrInvalidRequest, repo)
	}
	repoURL, err := url.Parse(rawURL)
	if err != nil {
		reason := "it is not a valid URL"
		var urlError *url.Error
		if errors.As(err, &urlError) {
			reason = urlError.Err.Error()
		}
		if len(urlSecrets(rawURL)) > 0 {
			// The parser's reason quotes the offending part, which may be
			// a piece of the password too short to be scrubbed by value.
			reason = "it is not a valid URL; percent-encode special characters in the user name and password, " +
				"or move the credentials out of the URL"
		}
		return nil, fmt.Errorf("%w: parse repository URL %s: %s", ErrInvalidRequest, repo, reason)
	}
	if repoURL.RawQuery != "" || repoURL.ForceQuery || repoURL.Fragment != "" {
		// go-git appends "/info/refs" after the query, so it never works,
		// and a token in it would end up in the checkout's .git/config.
		return nil, fmt.Errorf("%w: repository URL %s has a query or fragment, which Git URLs cannot have; "+
			"move tokens to the credentials", ErrInvalidRequest, repo)
	}
	return repoURL, nil
}

// userinfoIsAmbiguous says whether rawURL has an "@" after the end of its
// authority, the first "/", "?" or "#" after "scheme://". That is either
// a password containing one of those characters unescaped, or an "@" in
// the path; they look the same, so both are refused.
func userinfoIsAmbiguous(rawURL string) bool {
	_, rest, hasScheme := strings.Cut(rawURL, "://")
	if !hasScheme {
		return false
	}
	authorityEnd := strings.IndexAny(rest, "/?#")
	return authorityEnd >= 0 && strings.Contains(rest[authorityEnd:], "@")
}

// withoutUserinfo is repoURL without user name and password.
func withoutUserinfo(repoURL *url.URL) string {
	stripped := *repoURL
	stripped.User = nil
	return stripped.String()
}

// authFor turns a repository URL and a credentials map into a go-git
// authentication method and the URL to give go-git.
//
// Choices:
//   - https: bearerToken, or username with optional password; both at once
//     is ambiguous and refused. User information in the URL is used as
//     basic authentication instead (a user without password being a token,
//     as GitHub and GitLab accept it) and removed from the URL; credentials
//     in both places are ambiguous and refused. ssh keys in the map are
//     ignored, so one Secret may serve both protocols.
//   - plain http: credentials (from the map or the URL's user information)
//     are refused unless allowPlainHTTP, because they would cross the
//     network in clear text. Anonymous plain http is allowed.
//   - ssh: identity and known_hosts are required. The server's host key is
//     always checked against known_hosts; there is no way to skip it. The
//     URL's user is the ssh user; a password in the URL is refused.
//   - any other scheme (file://, git://, scp-like addresses) is refused: a
//     file URL would let a ProfileSync read the operator's own disk.
func authFor(repoURL *url.URL, credentials map[string][]byte, allowPlainHTTP bool, tempDir string) (clientAuth, error) {
	remoteURL := withoutUserinfo(repoURL)
	switch repoURL.Scheme {
	case "https", "http":
		auth, err := httpAuth(credentials)
		if err != nil {
			return clientAuth{}, err
		}
		urlAuth, err := userinfoAuth(repoURL)
		if err != nil {
			return clientAuth{}, err
		}
		if urlAuth != nil {
			if auth != nil {
				return clientAuth{}, fmt.Errorf("%w: credentials set both in the URL %s and as %s; set one",
					ErrInvalidRequest, RedactURL(repoURL.String()), httpCredentialKeys(credentials))
			}
			auth = urlAuth
		}
		if repoURL.Scheme == "http" && auth != nil && !allowPlainHTTP {
			return clientAuth{}, fmt.Errorf(
				"%w: refusing to send credentials over plain http to %s; use https",
				ErrInvalidRequest, RedactURL(repoURL.String()))
		}
		return clientAuth{remoteURL: remoteURL, method: auth}, nil
	case schemeSSH:
		auth, err := sshAuth(repoURL, credentials, tempDir)
		return clientAuth{remoteURL: remoteURL, method: auth}, err
	default:
		return clientAuth{}, fmt.Errorf("%w: unsupported URL scheme %q in %s: use https, http or ssh",
			ErrInvalidRequest, repoURL.Scheme, RedactURL(repoURL.String()))
	}
}

// AuthMethod is the go-git authentication that credentials, a Secret's
// data with the Credential* keys, give for the repository at rawURL: the
// rules of a ProfileSync's own repository (authFor), ssh host keys always
// checked against known_hosts. It is for the readers of other repositories
// (the sources of new versions, internal/propose/sources), so that one
// Secret serves both and there is one way to authenticate. Unlike a
// ProfileSync's URL, rawURL may be scp-like (user@host:path), which is ssh
// to port 22; user information in an https URL is refused, since the caller
// keeps the URL as written. Nil for an anonymous request. tempDir holds
// known_hosts for the moment it is parsed ("" is the system's).
func AuthMethod(rawURL string, credentials map[string][]byte, allowPlainHTTP bool, tempDir string) (transport.AuthMethod, error) {
	repoURL, err := sourceURL(rawURL)
	if err != nil {
		return nil, err
	}
	if repoURL.Scheme != schemeSSH && repoURL.User != nil {
		return nil, fmt.Errorf("%w: the URL %s has user information; move the credentials to the Secret or the environment",
			ErrInvalidRequest, RedactURL(rawURL))
	}
	auth, err := authFor(repoURL, credentials, allowPlainHTTP, tempDir)
	if err != nil {
		return nil, err
	}
	return auth.method, nil
}

// AuthOptions is what the Fetcher's own requests authenticate with, for
// AuthMethod's callers that reach other repositories on its behalf (the
// VersionUpdate controller's Git sources): whether credentials may cross
// plain http (FetcherOptions.AllowCredentialsOverHTTP), and the directory
// known_hosts is parsed in.
func (f *Fetcher) AuthOptions() (allowPlainHTTP bool, tempDir string) {
	return f.options.AllowCredentialsOverHTTP, f.root
}

// sourceURL parses a repository URL, reading an scp-like address
// (user@host:path, which go-git reads as ssh) as ssh://user@host/path.
func sourceURL(rawURL string) (*url.URL, error) {
	if strings.Contains(rawURL, "://") {
		return parseRepositoryURL(rawURL)
	}
	endpoint, err := transport.NewEndpoint(rawURL)
	if err != nil || endpoint.Protocol != schemeSSH {
		return nil, fmt.Errorf("%w: %s is neither a URL nor an scp-like address (user@host:path)", ErrInvalidRequest, RedactURL(rawURL))
	}
	host := endpoint.Host
	if endpoint.Port > 0 && endpoint.Port != gitssh.DefaultPort {
		host = net.JoinHostPort(host, strconv.Itoa(endpoint.Port))
	}
	repoURL := &url.URL{Scheme: schemeSSH, Host: host, Path: "/" + strings.TrimPrefix(endpoint.Path, "/")}
	if strings.Contains(endpoint.User, ":") {
		return nil, fmt.Errorf("%w: ssh address %s has a password; ssh authenticates with the credentials' %s, so remove it",
			ErrInvalidRequest, RedactURL(rawURL), CredentialIdentity)
	}
	if endpoint.User != "" {
		repoURL.User = url.User(endpoint.User)
	}
	return repoURL, nil
}

// httpAuth returns the https authentication the credentials ask for, or nil
// for none.
func httpAuth(credentials map[string][]byte) (transport.AuthMethod, error) {
	username := string(credentials[CredentialUsername])
	password := string(credentials[CredentialPassword])
	token := string(credentials[CredentialBearerToken])
	switch {
	case token != "" && (username != "" || password != ""):
		return nil, fmt.Errorf("%w: credentials set both %s and %s/%s; set one",
			ErrInvalidRequest, CredentialBearerToken, CredentialUsername, CredentialPassword)
	case token != "":
		return &githttp.TokenAuth{Token: token}, nil
	case username != "":
		return &githttp.BasicAuth{Username: username, Password: password}, nil
	case password != "":
		return nil, fmt.Errorf("%w: credentials set %s without %s",
			ErrInvalidRequest, CredentialPassword, CredentialUsername)
	default:
		return nil, nil
	}
}

// httpCredentialKeys names the https credentials the map sets, for messages.
func httpCredentialKeys(credentials map[string][]byte) string {
	switch {
	case len(credentials[CredentialBearerToken]) > 0:
		return CredentialBearerToken
	case len(credentials[CredentialPassword]) > 0:
		return CredentialUsername + "/" + CredentialPassword
	default:
		return CredentialUsername
	}
}

// userinfoAuth is the basic authentication the URL's user information asks
// for, or nil for none. A user name alone is sent with an empty password,
// which is how Git hosts take access tokens (https://<token>@host/...).
func userinfoAuth(repoURL *url.URL) (transport.AuthMethod, error) {
	if repoURL.User == nil {
		return nil, nil
	}
	username := repoURL.User.Username()
	password, _ := repoURL.User.Password()
	switch {
	case username != "":
		return &githttp.BasicAuth{Username: username, Password: password}, nil
	case password != "":
		return nil, fmt.Errorf("%w: the URL %s sets a password without a user name",
			ErrInvalidRequest, RedactURL(repoURL.String()))
	default:
		return nil, nil
	}
}

// sshAuth returns public-key authentication that verifies the server's host
// key against the credentials' known_hosts.
func sshAuth(repoURL *url.URL, credentials map[string][]byte, tempDir string) (transport.AuthMethod, error) {
	identity := credentials[CredentialIdentity]
	knownHosts := credentials[CredentialKnownHosts]
	if len(identity) == 0 {
		return nil, fmt.Errorf("%w: ssh URL %s needs credentials with %s (a private key)",
			ErrInvalidRequest, RedactURL(repoURL.String()), CredentialIdentity)
	}
	if len(knownHosts) == 0 {
		return nil, fmt.Errorf("%w: ssh URL %s needs credentials with %s to verify the server",
			ErrInvalidRequest, RedactURL(repoURL.String()), CredentialKnownHosts)
	}
	if password, _ := repoURL.User.Password(); password != "" {
		return nil, fmt.Errorf("%w: ssh URL %s has a password; ssh authenticates with the credentials' %s, so remove it from the URL",
			ErrInvalidRequest, RedactURL(repoURL.String()), CredentialIdentity)
	}
	user := defaultSSHUser
	if repoURL.User != nil && repoURL.User.Username() != "" {
		user = repoURL.User.Username()
	}
	auth, err := gitssh.NewPublicKeys(user, identity, string(credentials[CredentialPassword]))
	if err != nil {
		return nil, fmt.Errorf("%w: parse ssh %s: %w", ErrInvalidRequest, CredentialIdentity, err)
	}

	// The known_hosts parser only reads files; it reads them completely
	// when called, so the file can go right after.
	knownHostsFile, err := os.CreateTemp(tempDir, knownHostsFilePattern)
	if err != nil {
		return nil, fmt.Errorf("write %s: %w", CredentialKnownHosts, err)
	}
	defer os.Remove(knownHostsFile.Name())
	_, writeErr := knownHostsFile.Write(knownHosts)
	if closeErr := knownHostsFile.Close(); writeErr == nil {
		writeErr = closeErr
	}
	if writeErr != nil {
		return nil, fmt.Errorf("write %s: %w", CredentialKnownHosts, writeErr)
	}
	hostKeys, err := gitssh.NewKnownHostsDb(filepath.Clean(knownHostsFile.Name()))
	if err != nil {
		return nil, fmt.Errorf("%w: parse %s: %w", ErrInvalidRequest, CredentialKnownHosts, err)
	}
	auth.HostKeyCallback = hostKeys.HostKeyCallback()
	// Offer only the key types known_hosts has for this host; otherwise the
	// server may present a different type of key and verification fails
	// although the right key is listed.
	auth.HostKeyAlgorithms = hostKeys.HostKeyAlgorithms(sshHostPort(repoURL))
	return auth, nil
}

// sshHostPort is host:port as the ssh client dials it, which is what host
// key lookups are keyed by.
func sshHostPort(repoURL *url.URL) string {
	port := repoURL.Port()
	if port == "" {
		port = "22"
	}
	return net.JoinHostPort(repoURL.Hostname(), port)
}

// credentialSecrets lists the values that must never appear in an error:
// passwords and tokens, and a user name that comes without a password,
// because that is how access tokens are often passed
// (https://<token>@host/...). A user name next to a password is not secret
// and stays readable. See urlSecrets for those of the URL.
func credentialSecrets(rawURL string, credentials map[string][]byte) []string {
	var secrets []string
	if password := string(credentials[CredentialPassword]); password != "" {
		secrets = append(secrets, password)
	} else if username := string(credentials[CredentialUsername]); username != "" {
		secrets = append(secrets, username)
	}
	if token := string(credentials[CredentialBearerToken]); token != "" {
		secrets = append(secrets, token)
	}
	return append(secrets, urlSecrets(rawURL)...)
}

// urlSecrets lists the credentials written into a URL: its password, or its
// user name when there is no password (except for ssh, whose user names are
// never tokens), and every query value, each also unescaped.
//
// It reads the text the way RedactURL does, not with url.Parse: the
// parser fails on malformed passwords and misreads passwords with "/",
// which is when an error is most likely to quote them.
func urlSecrets(rawURL string) []string {
	var secrets []string
	add := func(value string, unescape func(string) (string, error)) {
		if value == "" {
			return
		}
		secrets = append(secrets, value)
		if unescaped, err := unescape(value); err == nil && unescaped != value {
			secrets = append(secrets, unescaped)
		}
	}
	scheme, rest, hasScheme := strings.Cut(rawURL, "://")
	if !hasScheme {
		// scp-like, user@host:path, whose user is an ssh user.
		scheme, rest = schemeSSH, rawURL
	}
	if at := strings.LastIndexByte(rest, '@'); at >= 0 {
		username, password, _ := strings.Cut(rest[:at], ":")
		switch {
		case password != "":
			add(password, url.PathUnescape)
		case !strings.EqualFold(scheme, schemeSSH):
			add(username, url.PathUnescape)
		}
		rest = rest[at+1:]
	}
	if _, query, hasQuery := strings.Cut(rest, "?"); hasQuery {
		for _, part := range strings.Split(query, "&") {
			_, value, hasValue := strings.Cut(part, "=")
			if !hasValue {
				value = part
			}
			add(value, url.QueryUnescape)
			if beforeFragment, _, hasFragment := strings.Cut(value, "#"); hasFragment {
				add(beforeFragment, url.QueryUnescape)
			}
		}
	}
	return secrets
}
