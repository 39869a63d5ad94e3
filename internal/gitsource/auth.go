package gitsource

import (
	"fmt"
	"net"
	"net/url"
	"os"
	"path/filepath"

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

// defaultSSHUser is the ssh user when the URL names none; every major Git
// host expects it.
const defaultSSHUser = "git"

// clientAuth is what a request authenticates with.
type clientAuth struct {
	// method is nil when the request is anonymous, or when the URL's own
	// user information is used (go-git applies that itself).
	method transport.AuthMethod
	// secrets are the credential values to scrub from error text.
	secrets []string
}

// authFor turns a repository URL and a credentials map into a go-git
// authentication method.
//
// Choices:
//   - https: bearerToken, or username with optional password; both at once
//     is ambiguous and refused. ssh keys in the same map are ignored, so one
//     Secret may serve both protocols.
//   - plain http: credentials (from the map or the URL's user information)
//     are refused unless allowPlainHTTP, because they would cross the
//     network in clear text. Anonymous plain http is allowed.
//   - ssh: identity and known_hosts are required. The server's host key is
//     always checked against known_hosts; there is no way to skip it.
//   - any other scheme (file://, git://, scp-like addresses) is refused: a
//     file URL would let a ProfileSync read the operator's own disk.
func authFor(repoURL *url.URL, credentials map[string][]byte, allowPlainHTTP bool, tempDir string) (clientAuth, error) {
	secrets := credentialSecrets(repoURL, credentials)
	switch repoURL.Scheme {
	case "https", "http":
		auth, err := httpAuth(credentials)
		if err != nil {
			return clientAuth{secrets: secrets}, err
		}
		sendsCredentials := auth != nil || repoURL.User != nil
		if repoURL.Scheme == "http" && sendsCredentials && !allowPlainHTTP {
			return clientAuth{secrets: secrets}, fmt.Errorf(
				"%w: refusing to send credentials over plain http to %s; use https",
				ErrInvalidRequest, RedactURL(repoURL.String()))
		}
		return clientAuth{method: auth, secrets: secrets}, nil
	case "ssh":
		auth, err := sshAuth(repoURL, credentials, tempDir)
		return clientAuth{method: auth, secrets: secrets}, err
	default:
		return clientAuth{secrets: secrets}, fmt.Errorf("%w: unsupported URL scheme %q in %s: use https, http or ssh",
			ErrInvalidRequest, repoURL.Scheme, RedactURL(repoURL.String()))
	}
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
// and stays readable.
func credentialSecrets(repoURL *url.URL, credentials map[string][]byte) []string {
	var secrets []string
	addUser := func(username, password string) {
		if password != "" {
			secrets = append(secrets, password)
		} else if username != "" {
			secrets = append(secrets, username)
		}
	}
	addUser(string(credentials[CredentialUsername]), string(credentials[CredentialPassword]))
	if token := string(credentials[CredentialBearerToken]); token != "" {
		secrets = append(secrets, token)
	}
	if repoURL.User != nil {
		password, _ := repoURL.User.Password()
		username := repoURL.User.Username()
		if repoURL.Scheme == "ssh" {
			// ssh user names (git@host) are never tokens.
			username = ""
		}
		addUser(username, password)
	}
	return secrets
}
