package sources

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"path"
	"reflect"
	"sort"
	"strings"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"

	"github.com/profilesync/profilesync/internal/propose"
)

// Keys of the Secret an OCI source's credentials.secretName names: a
// kubernetes.io/dockerconfigjson Secret (what `kubectl create secret
// docker-registry` writes), the older kubernetes.io/dockercfg, or a Secret
// with username and password (kubernetes.io/basic-auth, or Opaque).
const (
	SecretKeyDockerConfigJSON = ".dockerconfigjson"
	SecretKeyDockerConfig     = ".dockercfg"
	SecretKeyUsername         = "username"
	SecretKeyPassword         = "password"
)

// MaxSecretValueBytes bounds every value of a credentials Secret that is
// read. A docker config with credentials for dozens of registries is a few
// KiB and a known_hosts file of the large Git hosts about one; anything
// larger is not credentials, and is refused before it is decoded.
const MaxSecretValueBytes = 64 << 10

// MaxDockerConfigRegistries bounds the registries of one docker config.
const MaxDockerConfigRegistries = 500

// dockerHubAliases are the names a docker config may file Docker Hub's
// credentials under; go-containerregistry names its registry index.docker.io.
// Keys are compared without scheme and trailing slash.
var dockerHubAliases = map[string]bool{
	name.DefaultRegistry:      true,
	"index.docker.io/v1":      true,
	"docker.io":               true,
	"registry-1.docker.io":    true,
	"registry.hub.docker.com": true,
}

// dockerConfigEntry is one registry's credentials in a docker config.
type dockerConfigEntry struct {
	Username      string `json:"username,omitempty"`
	Password      string `json:"password,omitempty"`
	Auth          string `json:"auth,omitempty"`
	IdentityToken string `json:"identitytoken,omitempty"`
	RegistryToken string `json:"registrytoken,omitempty"`
}

// SecretAuth turns the data of the Secret that an OCI source's
// credentials.secretName names into the credentials for the source's
// registry. The Secret holds either .dockerconfigjson (or the older
// .dockercfg), whose entry for the registry is used (matched as the
// kubelet matches image pull secrets: the host, with its port, where a
// label may be a glob like *.example.com, and a path that is a prefix of the
// repository's, the longest winning), or username and password, used for
// the source's registry whatever it is. Every value is bounded by
// MaxSecretValueBytes. Errors name the source, the Secret and the key; they
// never quote a credential.
func SecretAuth(s *propose.Source, data map[string][]byte) (authn.Authenticator, error) {
	if s.OCI == nil {
		return nil, fmt.Errorf("source %s is not an OCI source", s.Name)
	}
	secretName := ""
	if s.OCI.Credentials != nil {
		secretName = s.OCI.Credentials.SecretName
	}
	fail := func(format string, args ...any) (authn.Authenticator, error) {
		return nil, fmt.Errorf("source %s: Secret %s (oci.credentials.secretName): %s", s.Name, secretName, fmt.Sprintf(format, args...))
	}
	if secretName == "" {
		return fail("the versions file names no Secret")
	}
	repository, err := name.NewRepository(s.OCI.Repository)
	if err != nil {
		return fail("reading oci.repository %q: %v", s.OCI.Repository, err)
	}
	for key, value := range data {
		if len(value) > MaxSecretValueBytes && isCredentialKey(key) {
			return fail("%s holds %d bytes, more than the %d a credential may have", key, len(value), MaxSecretValueBytes)
		}
	}
	configKey := ""
	for _, key := range []string{SecretKeyDockerConfigJSON, SecretKeyDockerConfig} {
		if _, ok := data[key]; ok {
			if configKey != "" {
				return fail("holds both %s and %s; keep one", configKey, key)
			}
			configKey = key
		}
	}
	_, hasUsername := data[SecretKeyUsername]
	_, hasPassword := data[SecretKeyPassword]
	switch {
	case configKey != "" && (hasUsername || hasPassword):
		return fail("holds both %s and username/password; keep one", configKey)
	case configKey != "":
		entries, err := decodeDockerConfig(configKey, data[configKey])
		if err != nil {
			return fail("%v", err)
		}
		entry, ok := dockerConfigFor(repository, entries)
		if !ok {
			return fail("%s has no credentials for registry %s (it has %s)", configKey, repository.RegistryStr(), registriesOf(entries))
		}
		config, err := entry.authConfig()
		if err != nil {
			return fail("%s: the entry for registry %s: %v", configKey, repository.RegistryStr(), err)
		}
		return authn.FromConfig(config), nil
	case hasUsername && hasPassword:
		username := string(data[SecretKeyUsername])
		if username == "" {
			return fail("username is empty")
		}
		return authn.FromConfig(authn.AuthConfig{Username: username, Password: string(data[SecretKeyPassword])}), nil
	case hasUsername:
		return fail("holds username without password")
	case hasPassword:
		return fail("holds password without username")
	default:
		return fail("holds neither %s nor username and password", SecretKeyDockerConfigJSON)
	}
}

func isCredentialKey(key string) bool {
	switch key {
	case SecretKeyDockerConfigJSON, SecretKeyDockerConfig, SecretKeyUsername, SecretKeyPassword:
		return true
	}
	return false
}

// decodeDockerConfig reads a .dockerconfigjson ({"auths": {registry: entry}})
// or a .dockercfg ({registry: entry}). The JSON decoder's messages name
// offsets and types, never the text.
func decodeDockerConfig(key string, data []byte) (map[string]dockerConfigEntry, error) {
	var entries map[string]dockerConfigEntry
	decoder := json.NewDecoder(bytes.NewReader(data))
	if key == SecretKeyDockerConfigJSON {
		var config struct {
			Auths map[string]dockerConfigEntry `json:"auths"`
		}
		if err := decoder.Decode(&config); err != nil {
			return nil, fmt.Errorf("%s is not a docker config: %s", key, jsonProblem(err))
		}
		if config.Auths == nil {
			return nil, fmt.Errorf("%s has no auths", key)
		}
		entries = config.Auths
	} else if err := decoder.Decode(&entries); err != nil {
		return nil, fmt.Errorf("%s is not a docker config: %s", key, jsonProblem(err))
	}
	if len(entries) > MaxDockerConfigRegistries {
		return nil, fmt.Errorf("%s lists %d registries, more than %d", key, len(entries), MaxDockerConfigRegistries)
	}
	return entries, nil
}

// jsonProblem says what is wrong with a JSON document without quoting it:
// a syntax error's message is the offending character, which may be a
// piece of a password.
func jsonProblem(err error) string {
	var syntax *json.SyntaxError
	var typeErr *json.UnmarshalTypeError
	switch {
	case errors.As(err, &syntax):
		return fmt.Sprintf("malformed JSON at byte %d", syntax.Offset)
	case errors.As(err, &typeErr):
		return fmt.Sprintf("%s is a JSON %s, not %s", typeErr.Field, typeErr.Value, jsonKind(typeErr.Type))
	default:
		return "malformed JSON"
	}
}

// jsonKind names what JSON value decodes into t.
func jsonKind(t reflect.Type) string {
	switch t.Kind() {
	case reflect.Map, reflect.Struct:
		return "an object"
	case reflect.Slice, reflect.Array:
		return "an array"
	case reflect.String:
		return "a string"
	default:
		return "a " + t.Kind().String()
	}
}

// authConfig is the entry's credentials: username and password, or the
// auth field (base64 of "username:password"), or a token.
func (e dockerConfigEntry) authConfig() (authn.AuthConfig, error) {
	config := authn.AuthConfig{Username: e.Username, Password: e.Password, IdentityToken: e.IdentityToken, RegistryToken: e.RegistryToken}
	if e.Auth != "" {
		decoded, err := base64.StdEncoding.DecodeString(e.Auth)
		if err != nil {
			return authn.AuthConfig{}, errors.New("auth is not base64")
		}
		username, password, ok := strings.Cut(string(decoded), ":")
		if !ok {
			return authn.AuthConfig{}, errors.New("auth is not base64 of username:password")
		}
		if (config.Username != "" && config.Username != username) || (config.Password != "" && config.Password != password) {
			return authn.AuthConfig{}, errors.New("auth and username/password disagree; keep one")
		}
		config.Username, config.Password = username, password
	}
	if config.Username == "" && config.IdentityToken == "" && config.RegistryToken == "" {
		return authn.AuthConfig{}, errors.New("it has no username, auth or token")
	}
	return config, nil
}

// dockerConfigKey is a docker config's registry key, read as the kubelet
// reads it: with or without scheme, host with optional port, optional path.
type dockerConfigKey struct {
	hostLabels []string
	port       string
	path       string
}

func parseDockerConfigKey(key string) (dockerConfigKey, bool) {
	if !strings.Contains(key, "://") {
		key = "https://" + key
	}
	parsed, err := url.Parse(key)
	if err != nil || parsed.Host == "" {
		return dockerConfigKey{}, false
	}
	return dockerConfigKey{
		hostLabels: strings.Split(strings.ToLower(parsed.Hostname()), "."),
		port:       parsed.Port(),
		path:       strings.Trim(parsed.Path, "/"),
	}, true
}

// matches says whether the key is for repository: the same number of host
// labels, each matching (a label of the key may be a glob), the same port,
// and the key's path a prefix of the repository's, segment by segment.
func (k dockerConfigKey) matches(host, port, repositoryPath string) bool {
	labels := strings.Split(strings.ToLower(host), ".")
	if len(labels) != len(k.hostLabels) || k.port != port {
		return false
	}
	for i, pattern := range k.hostLabels {
		if ok, err := path.Match(pattern, labels[i]); err != nil || !ok {
			return false
		}
	}
	return k.path == "" || repositoryPath == k.path || strings.HasPrefix(repositoryPath, k.path+"/")
}

// dockerConfigFor is the entry of entries for repository: of the keys that
// match it, the one with the longest path, then without a glob.
func dockerConfigFor(repository name.Repository, entries map[string]dockerConfigEntry) (dockerConfigEntry, bool) {
	registry := repository.RegistryStr()
	if registry == name.DefaultRegistry {
		for key, entry := range entries {
			if parsed, ok := parseDockerConfigKey(key); ok && dockerHubAliases[parsed.String()] {
				return entry, true
			}
		}
	}
	host, port := registry, ""
	if h, p, ok := strings.Cut(registry, ":"); ok {
		host, port = h, p
	}
	best, bestKey, found := dockerConfigEntry{}, dockerConfigKey{}, false
	for _, key := range sortedKeys(entries) {
		parsed, ok := parseDockerConfigKey(key)
		if !ok || !parsed.matches(host, port, repository.RepositoryStr()) {
			continue
		}
		if !found || len(parsed.path) > len(bestKey.path) || (len(parsed.path) == len(bestKey.path) && !parsed.hasGlob() && bestKey.hasGlob()) {
			best, bestKey, found = entries[key], parsed, true
		}
	}
	return best, found
}

// String is the key without scheme, for messages and Docker Hub's aliases:
// a registry's name is no secret, a user name written into the key might be.
func (k dockerConfigKey) String() string {
	s := strings.Join(k.hostLabels, ".")
	if k.port != "" {
		s += ":" + k.port
	}
	if k.path != "" {
		s += "/" + k.path
	}
	return s
}

func (k dockerConfigKey) hasGlob() bool {
	return strings.ContainsAny(strings.Join(k.hostLabels, "."), "*?[")
}

func sortedKeys(entries map[string]dockerConfigEntry) []string {
	keys := make([]string, 0, len(entries))
	for key := range entries {
		keys = append(keys, key)
	}
	sort.Strings(keys)
	return keys
}

// registriesOf names the registries of a docker config, for messages: a
// registry's name is no secret.
func registriesOf(entries map[string]dockerConfigEntry) string {
	if len(entries) == 0 {
		return "none"
	}
	var keys []string
	for _, key := range sortedKeys(entries) {
		if parsed, ok := parseDockerConfigKey(key); ok {
			keys = append(keys, parsed.String())
		} else {
			keys = append(keys, "a key that is no registry")
		}
	}
	const shown = 5
	if len(keys) > shown {
		return strings.Join(keys[:shown], ", ") + fmt.Sprintf(" and %d more", len(keys)-shown)
	}
	return strings.Join(keys, ", ")
}
