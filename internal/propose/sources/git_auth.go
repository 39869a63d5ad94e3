package sources

import (
	"fmt"

	"github.com/go-git/go-git/v5/plumbing/transport"

	"github.com/profilesync/profilesync/internal/gitsource"
	"github.com/profilesync/profilesync/internal/propose"
)

// gitCredentialKeys are the keys of a Git source's Secret that are read:
// those of a ProfileSync's own Secret (gitsource.Credential*), so that one
// Secret may serve both.
var gitCredentialKeys = []string{
	gitsource.CredentialUsername, gitsource.CredentialPassword, gitsource.CredentialBearerToken,
	gitsource.CredentialIdentity, gitsource.CredentialKnownHosts,
}

// GitAuth is a Git source's credentials from the data of the Secret its
// credentials.secretName names, as the operator reads it: the keys of a
// ProfileSync's own Secret, read by the same function
// (gitsource.AuthMethod). Over https, username and password or bearerToken;
// over ssh (ssh:// or scp-like), identity (a private key, PEM) and
// known_hosts, against which the server's host key is always checked, and
// password as the identity's passphrase. Credentials are refused over plain
// http unless allowPlainHTTP. Every value is bounded by MaxSecretValueBytes.
// tempDir holds known_hosts for the moment it is parsed ("" is the
// system's). Errors name the source, the Secret and the key.
func GitAuth(s *propose.Source, data map[string][]byte, allowPlainHTTP bool, tempDir string) (transport.AuthMethod, error) {
	if s.Git == nil {
		return nil, fmt.Errorf("source %s is not a Git source", s.Name)
	}
	secretName := ""
	if s.Git.Credentials != nil {
		secretName = s.Git.Credentials.SecretName
	}
	for _, key := range gitCredentialKeys {
		if len(data[key]) > MaxSecretValueBytes {
			return nil, fmt.Errorf("source %s: Secret %s (git.credentials.secretName): %s holds %d bytes, more than the %d a credential may have",
				s.Name, secretName, key, len(data[key]), MaxSecretValueBytes)
		}
	}
	auth, err := gitsource.AuthMethod(s.Git.URL, data, allowPlainHTTP, tempDir)
	if err != nil {
		return nil, fmt.Errorf("source %s: Secret %s (git.credentials.secretName): %w", s.Name, secretName, err)
	}
	return auth, nil
}

// GitEnvironmentAuth is a Git source's credentials as the CLI reads them:
// from the environment variables its credentials name (lookup is
// os.LookupEnv, injected), each holding what the Secret's key of the same
// meaning holds: usernameEnv and passwordEnv (over ssh, passwordEnv is the
// identity's passphrase), identityEnv (the private key, PEM) and
// knownHostsEnv (known_hosts lines). Nil, and no error, when the source
// names no variable. Then the same rules as GitAuth.
func GitEnvironmentAuth(s *propose.Source, lookup func(string) (string, bool), allowPlainHTTP bool, tempDir string) (transport.AuthMethod, error) {
	if s.Git == nil {
		return nil, fmt.Errorf("source %s is not a Git source", s.Name)
	}
	c := s.Git.Credentials
	if c == nil || (c.UsernameEnv == "" && c.PasswordEnv == "" && c.IdentityEnv == "" && c.KnownHostsEnv == "") {
		return nil, nil
	}
	data := map[string][]byte{}
	for _, v := range []struct{ field, name, key string }{
		{"usernameEnv", c.UsernameEnv, gitsource.CredentialUsername},
		{"passwordEnv", c.PasswordEnv, gitsource.CredentialPassword},
		{"identityEnv", c.IdentityEnv, gitsource.CredentialIdentity},
		{"knownHostsEnv", c.KnownHostsEnv, gitsource.CredentialKnownHosts},
	} {
		if v.name == "" {
			continue
		}
		value, ok := lookup(v.name)
		if !ok {
			return nil, fmt.Errorf("source %s: the environment variable %s (git.credentials.%s) is not set", s.Name, v.name, v.field)
		}
		if len(value) > MaxSecretValueBytes {
			return nil, fmt.Errorf("source %s: the environment variable %s (git.credentials.%s) holds %d bytes, more than the %d a credential may have",
				s.Name, v.name, v.field, len(value), MaxSecretValueBytes)
		}
		data[v.key] = []byte(value)
	}
	auth, err := gitsource.AuthMethod(s.Git.URL, data, allowPlainHTTP, tempDir)
	if err != nil {
		return nil, fmt.Errorf("source %s: the credentials of git.credentials' variables: %w", s.Name, err)
	}
	return auth, nil
}
