package sources

import (
	"context"
	"encoding/base64"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/authn"
	. "github.com/onsi/gomega"

	"github.com/profilesync/profilesync/internal/propose"
)

// ociSourceWithSecret is an OCI source of repository whose credentials are
// the Secret registry-pull.
func ociSourceWithSecret(repository string) *propose.Source {
	f, err := propose.Decode(propose.FileName, []byte(versionsHeader+`sources:
- name: gardenlinux
  oci:
    repository: "`+repository+`"
    credentials: {secretName: registry-pull}
  feeds: [{file: base/cloudprofiles.yaml, cloudProfile: aws, machineImage: gardenlinux}]
`))
	if err != nil {
		panic(err)
	}
	return &f.Sources[0]
}

func dockerConfigJSON(auths string) map[string][]byte {
	return map[string][]byte{SecretKeyDockerConfigJSON: []byte(`{"auths": {` + auths + `}}`)}
}

func basicAuth(username, password string) string {
	return base64.StdEncoding.EncodeToString([]byte(username + ":" + password))
}

func TestSecretAuthFindsTheCredentialsOfTheSourcesRegistry(t *testing.T) {
	tests := []struct {
		name       string
		repository string
		data       map[string][]byte
		want       authn.AuthConfig
	}{
		{name: "a docker config's entry for the registry, with username and password",
			repository: "ghcr.io/gardenlinux/gardenlinux",
			data:       dockerConfigJSON(`"quay.io": {"username": "other", "password": "x"}, "ghcr.io": {"username": "ci", "password": "s3cret"}`),
			want:       authn.AuthConfig{Username: "ci", Password: "s3cret"}},
		{name: "a docker config's entry with auth, as kubectl create secret docker-registry writes it",
			repository: "ghcr.io/gardenlinux/gardenlinux",
			data:       dockerConfigJSON(`"https://ghcr.io": {"auth": "` + basicAuth("ci", "s3:cret") + `"}`),
			want:       authn.AuthConfig{Username: "ci", Password: "s3:cret"}},
		{name: "a registry with a port matches the key with that port only",
			repository: "registry.example.com:5000/images/gardenlinux",
			data:       dockerConfigJSON(`"registry.example.com": {"username": "no-port", "password": "x"}, "registry.example.com:5000": {"username": "ci", "password": "s3cret"}`),
			want:       authn.AuthConfig{Username: "ci", Password: "s3cret"}},
		{name: "a key with a path wins over the registry's key for the repositories under it",
			repository: "registry.example.com/images/gardenlinux",
			data:       dockerConfigJSON(`"registry.example.com": {"username": "registry", "password": "x"}, "registry.example.com/images": {"username": "images", "password": "y"}, "registry.example.com/other": {"username": "other", "password": "z"}`),
			want:       authn.AuthConfig{Username: "images", Password: "y"}},
		{name: "a glob label matches one label of the host",
			repository: "eu.registry.example.com/gardenlinux/gardenlinux",
			data:       dockerConfigJSON(`"*.registry.example.com": {"username": "ci", "password": "s3cret"}`),
			want:       authn.AuthConfig{Username: "ci", Password: "s3cret"}},
		{name: "a key without glob wins over a glob key for the same host",
			repository: "eu.registry.example.com/gardenlinux/gardenlinux",
			data:       dockerConfigJSON(`"*.registry.example.com": {"username": "glob", "password": "x"}, "eu.registry.example.com": {"username": "exact", "password": "y"}`),
			want:       authn.AuthConfig{Username: "exact", Password: "y"}},
		{name: "Docker Hub's repositories match its legacy key",
			repository: "gardenlinux/gardenlinux",
			data:       dockerConfigJSON(`"https://index.docker.io/v1/": {"username": "ci", "password": "s3cret"}`),
			want:       authn.AuthConfig{Username: "ci", Password: "s3cret"}},
		{name: "an identity token is passed on",
			repository: "registry.example.com/gardenlinux",
			data:       dockerConfigJSON(`"registry.example.com": {"identitytoken": "refresh-token"}`),
			want:       authn.AuthConfig{IdentityToken: "refresh-token"}},
		{name: "the older .dockercfg has no auths around its entries",
			repository: "ghcr.io/gardenlinux/gardenlinux",
			data:       map[string][]byte{SecretKeyDockerConfig: []byte(`{"ghcr.io": {"username": "ci", "password": "s3cret"}}`)},
			want:       authn.AuthConfig{Username: "ci", Password: "s3cret"}},
		{name: "username and password are for the source's registry whatever it is",
			repository: "ghcr.io/gardenlinux/gardenlinux",
			data:       map[string][]byte{SecretKeyUsername: []byte("ci"), SecretKeyPassword: []byte("s3cret"), "unrelated": []byte(strings.Repeat("x", 2*MaxSecretValueBytes))},
			want:       authn.AuthConfig{Username: "ci", Password: "s3cret"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			auth, err := SecretAuth(ociSourceWithSecret(tt.repository), tt.data)
			g.Expect(err).NotTo(HaveOccurred())
			got, err := auth.Authorization()
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(*got).To(Equal(tt.want))
		})
	}
}

func TestSecretAuthNamesTheSourceTheSecretAndTheKeyOfEveryProblem(t *testing.T) {
	const prefix = "source gardenlinux: Secret registry-pull (oci.credentials.secretName): "
	manyRegistries := make([]string, MaxDockerConfigRegistries+1)
	for i := range manyRegistries {
		manyRegistries[i] = fmt.Sprintf(`"r%d.example.com": {"username": "u", "password": "p"}`, i)
	}
	tests := []struct {
		name string
		data map[string][]byte
		want string
	}{
		{name: "a docker config for another registry names the registries it has",
			data: dockerConfigJSON(`"quay.io": {"username": "ci", "password": "s3cret"}, "https://ghcr.io.example.com": {"username": "ci", "password": "s3cret"}`),
			want: ".dockerconfigjson has no credentials for registry ghcr.io (it has ghcr.io.example.com, quay.io)"},
		{name: "a key with a path of another repository is not for the source",
			data: dockerConfigJSON(`"ghcr.io/other": {"username": "ci", "password": "s3cret"}`),
			want: ".dockerconfigjson has no credentials for registry ghcr.io (it has ghcr.io/other)"},
		{name: "an empty Secret",
			data: map[string][]byte{},
			want: "holds neither .dockerconfigjson nor username and password"},
		{name: "a Secret of other keys",
			data: map[string][]byte{"token": []byte("s3cret")},
			want: "holds neither .dockerconfigjson nor username and password"},
		{name: "a username without password",
			data: map[string][]byte{SecretKeyUsername: []byte("ci")},
			want: "holds username without password"},
		{name: "a password without username",
			data: map[string][]byte{SecretKeyPassword: []byte("s3cret")},
			want: "holds password without username"},
		{name: "an empty username",
			data: map[string][]byte{SecretKeyUsername: []byte(""), SecretKeyPassword: []byte("s3cret")},
			want: "username is empty"},
		{name: "a docker config and username and password",
			data: map[string][]byte{SecretKeyDockerConfigJSON: []byte(`{"auths": {}}`), SecretKeyUsername: []byte("ci"), SecretKeyPassword: []byte("s3cret")},
			want: "holds both .dockerconfigjson and username/password; keep one"},
		{name: "both kinds of docker config",
			data: map[string][]byte{SecretKeyDockerConfigJSON: []byte(`{"auths": {}}`), SecretKeyDockerConfig: []byte(`{}`)},
			want: "holds both .dockerconfigjson and .dockercfg; keep one"},
		{name: "malformed JSON is placed, not quoted",
			data: map[string][]byte{SecretKeyDockerConfigJSON: []byte(`{"auths": {"ghcr.io": {"password": s3cret}}}`)},
			want: ".dockerconfigjson is not a docker config: malformed JSON at byte 36"},
		{name: "JSON of the wrong shape",
			data: map[string][]byte{SecretKeyDockerConfigJSON: []byte(`{"auths": ["ghcr.io"]}`)},
			want: ".dockerconfigjson is not a docker config: auths is a JSON array, not an object"},
		{name: "an entry of the wrong shape",
			data: dockerConfigJSON(`"ghcr.io": {"username": ["ci"]}`),
			want: ".dockerconfigjson is not a docker config: auths.username is a JSON array, not a string"},
		{name: "a docker config without auths",
			data: map[string][]byte{SecretKeyDockerConfigJSON: []byte(`{"credsStore": "s3cret-helper"}`)},
			want: ".dockerconfigjson has no auths"},
		{name: "an auth that is not base64",
			data: dockerConfigJSON(`"ghcr.io": {"auth": "s3cret!"}`),
			want: ".dockerconfigjson: the entry for registry ghcr.io: auth is not base64"},
		{name: "an auth without a colon",
			data: dockerConfigJSON(`"ghcr.io": {"auth": "` + base64.StdEncoding.EncodeToString([]byte("s3cret")) + `"}`),
			want: ".dockerconfigjson: the entry for registry ghcr.io: auth is not base64 of username:password"},
		{name: "an auth that disagrees with the username",
			data: dockerConfigJSON(`"ghcr.io": {"username": "other", "auth": "` + basicAuth("ci", "s3cret") + `"}`),
			want: ".dockerconfigjson: the entry for registry ghcr.io: auth and username/password disagree; keep one"},
		{name: "an entry without credentials",
			data: dockerConfigJSON(`"ghcr.io": {"email": "ci@example.com"}`),
			want: ".dockerconfigjson: the entry for registry ghcr.io: it has no username, auth or token"},
		{name: "a value larger than a credential",
			data: map[string][]byte{SecretKeyUsername: []byte("ci"), SecretKeyPassword: []byte(strings.Repeat("s3cret", MaxSecretValueBytes))},
			want: fmt.Sprintf("password holds %d bytes, more than the %d a credential may have", 6*MaxSecretValueBytes, MaxSecretValueBytes)},
		{name: "a docker config of more registries than its bound",
			data: dockerConfigJSON(strings.Join(manyRegistries, ", ")),
			want: fmt.Sprintf(".dockerconfigjson lists %d registries, more than %d", MaxDockerConfigRegistries+1, MaxDockerConfigRegistries)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			_, err := SecretAuth(ociSourceWithSecret("ghcr.io/gardenlinux/gardenlinux"), tt.data)
			g.Expect(err).To(MatchError(prefix + tt.want))
			g.Expect(err.Error()).NotTo(ContainSubstring("s3cret"))
		})
	}
}

func TestSecretAuthRefusesASourceWithoutASecret(t *testing.T) {
	g := NewWithT(t)
	_, err := SecretAuth(ociSourceAt("ghcr.io/gardenlinux/gardenlinux"), map[string][]byte{SecretKeyUsername: []byte("ci"), SecretKeyPassword: []byte("s3cret")})
	g.Expect(err).To(MatchError("source gardenlinux: Secret  (oci.credentials.secretName): the versions file names no Secret"))
}

func TestAnOCISourceBehindCredentialsReadsThemFromItsSecret(t *testing.T) {
	g := NewWithT(t)
	repository := imageRegistry(t, "ci", "s3cret", map[string]time.Time{"1592.5": at("2026-11-26T09:30:00Z")})
	source := ociSourceWithSecret(repository)
	host, _, _ := strings.Cut(repository, "/")

	auth, err := SecretAuth(source, dockerConfigJSON(`"`+host+`": {"auth": "`+basicAuth("ci", "s3cret")+`"}`))
	g.Expect(err).NotTo(HaveOccurred())
	releases, err := ListOCI(context.Background(), source, OCIOptions{Auth: auth})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(releases).To(Equal([]propose.Release{{Version: "1592.5", Released: at("2026-11-26T09:30:00Z")}}))

	auth, err = SecretAuth(source, dockerConfigJSON(`"`+host+`": {"auth": "`+basicAuth("ci", "wrong")+`"}`))
	g.Expect(err).NotTo(HaveOccurred())
	_, err = ListOCI(context.Background(), source, OCIOptions{Auth: auth})
	g.Expect(err).To(HaveOccurred())
	g.Expect(err.Error()).To(HavePrefix("source gardenlinux: listing the tags of " + repository + ": "))
	g.Expect(err.Error()).To(ContainSubstring("401 Unauthorized"))
}
