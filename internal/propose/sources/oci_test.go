package sources

import (
	"context"
	"errors"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	. "github.com/onsi/gomega"

	"github.com/profilesync/profilesync/internal/propose"
)

// imageRegistry serves go-containerregistry's in-process registry (the
// distribution API), behind basic authentication when username is set,
// with an image pushed for each tag, made at the time given.
func imageRegistry(t *testing.T, username, password string, tags map[string]time.Time) string {
	t.Helper()
	handler := registry.New(registry.Logger(log.New(io.Discard, "", 0)))
	if username != "" {
		next := handler
		handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if u, p, ok := r.BasicAuth(); !ok || u != username || p != password {
				w.Header().Set("WWW-Authenticate", `Basic realm="registry"`)
				w.WriteHeader(http.StatusUnauthorized)
				return
			}
			next.ServeHTTP(w, r)
		})
	}
	server := httptest.NewServer(handler)
	t.Cleanup(server.Close)
	host := strings.TrimPrefix(server.URL, "http://")
	auth := remote.WithAuth(authn.FromConfig(authn.AuthConfig{Username: username, Password: password}))
	for tag, created := range tags {
		image, err := random.Image(64, 1)
		if err != nil {
			t.Fatal(err)
		}
		image, err = mutate.CreatedAt(image, v1.Time{Time: created})
		if err != nil {
			t.Fatal(err)
		}
		ref, err := name.NewTag(host + "/gardenlinux/gardenlinux:" + tag)
		if err != nil {
			t.Fatal(err)
		}
		if err := remote.Write(ref, image, auth); err != nil {
			t.Fatal(err)
		}
	}
	return host + "/gardenlinux/gardenlinux"
}

func ociSourceAt(repository string) *propose.Source {
	f, err := propose.Decode(propose.FileName, []byte(versionsHeader+`sources:
- name: gardenlinux
  oci:
    repository: "`+repository+`"
    credentials: {usernameEnv: REGISTRY_USER, passwordEnv: REGISTRY_PASSWORD}
  feeds: [{file: base/cloudprofiles.yaml, cloudProfile: aws, machineImage: gardenlinux}]
`))
	if err != nil {
		panic(err)
	}
	return &f.Sources[0]
}

func TestOCITagsAppearWithTheTimeTheirImageWasMade(t *testing.T) {
	g := NewWithT(t)
	repository := imageRegistry(t, "", "", map[string]time.Time{
		"1592.4":     at("2026-11-01T08:00:00Z"),
		"1592.5":     at("2026-11-26T09:30:00Z"),
		"1592.5-dev": at("2026-11-27T00:00:00Z"),
		"latest":     at("2026-11-27T00:00:00Z"),
	})
	source := ociSourceAt(repository)
	releases, err := ListOCI(context.Background(), source, OCIOptions{})
	g.Expect(err).NotTo(HaveOccurred())
	sort.Slice(releases, func(i, j int) bool { return releases[i].Version < releases[j].Version })
	g.Expect(releases).To(Equal([]propose.Release{
		{Version: "1592.4", Released: at("2026-11-01T08:00:00Z")},
		{Version: "1592.5", Released: at("2026-11-26T09:30:00Z")},
	}))

	// Only the versions the caller needs cost a request for their time.
	releases, err = ListOCI(context.Background(), source, OCIOptions{NeedsTime: func(v string) bool { return v == "1592.5" }})
	g.Expect(err).NotTo(HaveOccurred())
	sort.Slice(releases, func(i, j int) bool { return releases[i].Version < releases[j].Version })
	g.Expect(releases).To(Equal([]propose.Release{{Version: "1592.4"}, {Version: "1592.5", Released: at("2026-11-26T09:30:00Z")}}))
}

func TestAnOCISourceBehindCredentialsReadsThemFromTheEnvironment(t *testing.T) {
	g := NewWithT(t)
	repository := imageRegistry(t, "ci", "s3cret", map[string]time.Time{"1592.5": at("2026-11-26T09:30:00Z")})
	source := ociSourceAt(repository)
	env := map[string]string{"REGISTRY_USER": "ci", "REGISTRY_PASSWORD": "s3cret"}
	auth, err := EnvironmentAuth(source, func(k string) (string, bool) { v, ok := env[k]; return v, ok })
	g.Expect(err).NotTo(HaveOccurred())
	releases, err := ListOCI(context.Background(), source, OCIOptions{Auth: auth})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(releases).To(Equal([]propose.Release{{Version: "1592.5", Released: at("2026-11-26T09:30:00Z")}}))

	delete(env, "REGISTRY_PASSWORD")
	_, err = EnvironmentAuth(source, func(k string) (string, bool) { v, ok := env[k]; return v, ok })
	g.Expect(err).To(MatchError("source gardenlinux: the environment variable REGISTRY_PASSWORD (credentials.passwordEnv) is not set"))
}

func TestAnOCISourceThatFailsIsNamed(t *testing.T) {
	repository := imageRegistry(t, "ci", "s3cret", map[string]time.Time{"1592.5": at("2026-11-26T09:30:00Z"), "1592.6": at("2026-11-27T09:30:00Z")})
	tests := []struct {
		name    string
		options OCIOptions
		want    string
		is      error
	}{
		{name: "without credentials", want: "401 Unauthorized"},
		{name: "with bad credentials", options: OCIOptions{Auth: authn.FromConfig(authn.AuthConfig{Username: "ci", Password: "wrong"})}, want: "401 Unauthorized"},
		{name: "with more tags than its limit", options: OCIOptions{Auth: authn.FromConfig(authn.AuthConfig{Username: "ci", Password: "s3cret"}), Limits: Limits{MaxBytes: 1 << 20, MaxTags: 1}},
			want: "2 tags are more than 1", is: ErrSourceLimit},
		{name: "with more bytes than its limit", options: OCIOptions{Auth: authn.FromConfig(authn.AuthConfig{Username: "ci", Password: "s3cret"}), Limits: Limits{MaxBytes: 40, MaxTags: 10}},
			want: "the responses hold more than 40 bytes", is: ErrSourceLimit},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			_, err := ListOCI(context.Background(), ociSourceAt(repository), tt.options)
			g.Expect(err).To(HaveOccurred())
			g.Expect(err.Error()).To(HavePrefix("source gardenlinux: listing the tags of " + repository + ": "))
			g.Expect(err.Error()).To(ContainSubstring(tt.want))
			g.Expect(err.Error()).NotTo(ContainSubstring("s3cret"))
			if tt.is != nil {
				g.Expect(errors.Is(err, tt.is)).To(BeTrue(), err.Error())
			}
		})
	}
}
