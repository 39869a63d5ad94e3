package sources

import (
	"strings"
	"testing"
)

// FuzzSecretAuth feeds SecretAuth any docker config and any username and
// password: it never panics, it returns credentials or an error, and its
// error does not depend on what the password is (only on whether it is
// there and how long it is), so it cannot quote it.
func FuzzSecretAuth(f *testing.F) {
	f.Add([]byte(`{"auths": {"ghcr.io": {"username": "ci", "password": "s3cret"}}}`), "ci", "s3cret", true)
	f.Add([]byte(`{"auths": {"ghcr.io": {"auth": "Y2k6czNjcmV0"}}}`), "", "", true)
	f.Add([]byte(`{"auths": {"*.io/gardenlinux": {"identitytoken": "s3cret"}}}`), "", "", true)
	f.Add([]byte(`{"ghcr.io": {"password": s3cret}}`), "", "", false)
	f.Add([]byte(`{"auths": {"https://ghcr.io:443/v1/": {"auth": "!!"}}}`), "ci", "", true)
	f.Add([]byte(nil), "", "hold", true)
	source := ociSourceWithSecret("ghcr.io/gardenlinux/gardenlinux")
	secretAuth := func(t *testing.T, config []byte, username, password string, json bool) error {
		data := map[string][]byte{}
		switch {
		case len(config) > 0 && json:
			data[SecretKeyDockerConfigJSON] = config
		case len(config) > 0:
			data[SecretKeyDockerConfig] = config
		}
		if username != "" {
			data[SecretKeyUsername] = []byte(username)
		}
		if password != "" {
			data[SecretKeyPassword] = []byte(password)
		}
		auth, err := SecretAuth(source, data)
		if err == nil && auth == nil {
			t.Fatal("no error and no credentials")
		}
		return err
	}
	f.Fuzz(func(t *testing.T, config []byte, username, password string, json bool) {
		err := secretAuth(t, config, username, password, json)
		other := secretAuth(t, config, username, strings.Repeat("#", len(password)), json)
		if (err == nil) != (other == nil) || (err != nil && err.Error() != other.Error()) {
			t.Fatalf("the outcome depends on the password's text: %v, and with another password of its length: %v", err, other)
		}
	})
}
