package sources

import (
	"context"
	"fmt"
	"net/http"
	"time"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"github.com/profilesync/profilesync/internal/propose"
)

// createdAnnotation is the OCI annotation of when an image was built.
const createdAnnotation = "org.opencontainers.image.created"

// OCIOptions are how an OCI source is read.
type OCIOptions struct {
	// Auth is the registry credentials; anonymous when nil.
	Auth authn.Authenticator
	// Transport carries the requests; http.DefaultTransport when nil. Every
	// response read through it counts against Limits.MaxBytes.
	Transport http.RoundTripper
	Limits    Limits
	// NeedsTime says which versions the caller needs the release time of
	// (those newer than what the profile lists): each costs a request or
	// two. Nil asks for every version's.
	NeedsTime func(version string) bool
}

// ListOCI lists the versions among the tags of an OCI source's repository
// (go-containerregistry, the distribution API's tag list), with the time
// each was made: the manifest's or index's org.opencontainers.image.created
// annotation, else the image configuration's created time. A source that
// fails (unreachable, bad credentials, more than its limits) is an error
// naming it.
func ListOCI(ctx context.Context, s *propose.Source, options OCIOptions) ([]propose.Release, error) {
	if s.OCI == nil {
		return nil, fmt.Errorf("source %s is not an OCI source", s.Name)
	}
	fail := func(err error) ([]propose.Release, error) {
		return nil, fmt.Errorf("source %s: listing the tags of %s: %w", s.Name, s.OCI.Repository, err)
	}
	limits := options.Limits
	if limits == (Limits{}) {
		limits = DefaultLimits()
	}
	if limits.Timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, limits.Timeout)
		defer cancel()
	}
	repository, err := name.NewRepository(s.OCI.Repository)
	if err != nil {
		return fail(err)
	}
	auth := options.Auth
	if auth == nil {
		auth = authn.Anonymous
	}
	remoteOptions := []remote.Option{
		remote.WithContext(ctx),
		remote.WithAuth(auth),
		remote.WithTransport(newBoundedTransport(options.Transport, newByteBudget(limits.MaxBytes))),
	}
	tags, err := remote.List(repository, remoteOptions...)
	if err != nil {
		return fail(err)
	}
	if limits.MaxTags > 0 && len(tags) > limits.MaxTags {
		return fail(fmt.Errorf("%w: %d tags are more than %d", ErrSourceLimit, len(tags), limits.MaxTags))
	}
	var tally tagTally
	for _, tag := range tags {
		v, verdict := s.Classify(tag)
		tally.add(tag, v, verdict)
	}
	if err := tally.noVersions(s); err != nil {
		return fail(err)
	}
	var releases []propose.Release
	for _, tag := range tags {
		v, ok := s.Version(tag)
		if !ok {
			continue
		}
		release := propose.Release{Version: v.Original()}
		if options.NeedsTime == nil || options.NeedsTime(release.Version) {
			release.Released, err = createdAt(repository.Tag(tag), remoteOptions)
			if err != nil {
				return fail(fmt.Errorf("reading when %s was made: %w", tag, err))
			}
		}
		releases = append(releases, release)
	}
	return releases, nil
}

// createdAt is when the image or index at ref was made; zero when it does
// not say.
func createdAt(ref name.Tag, options []remote.Option) (time.Time, error) {
	descriptor, err := remote.Get(ref, options...)
	if err != nil {
		return time.Time{}, err
	}
	if descriptor.MediaType.IsIndex() {
		index, err := descriptor.ImageIndex()
		if err != nil {
			return time.Time{}, err
		}
		manifest, err := index.IndexManifest()
		if err != nil {
			return time.Time{}, err
		}
		if t, ok := parseCreated(manifest.Annotations); ok {
			return t, nil
		}
		if len(manifest.Manifests) == 0 {
			return time.Time{}, nil
		}
		image, err := index.Image(manifest.Manifests[0].Digest)
		if err != nil {
			return time.Time{}, err
		}
		config, err := image.ConfigFile()
		if err != nil {
			return time.Time{}, err
		}
		return config.Created.UTC(), nil
	}
	image, err := descriptor.Image()
	if err != nil {
		return time.Time{}, err
	}
	manifest, err := image.Manifest()
	if err != nil {
		return time.Time{}, err
	}
	if t, ok := parseCreated(manifest.Annotations); ok {
		return t, nil
	}
	config, err := image.ConfigFile()
	if err != nil {
		return time.Time{}, err
	}
	return config.Created.UTC(), nil
}

func parseCreated(annotations map[string]string) (time.Time, bool) {
	value, ok := annotations[createdAnnotation]
	if !ok {
		return time.Time{}, false
	}
	t, err := time.Parse(time.RFC3339, value)
	return t.UTC(), err == nil
}

// EnvironmentAuth is the credentials of an OCI source as the CLI reads them:
// from the environment variables the versions file names (lookup is
// os.LookupEnv, injected). Nil, anonymous, when the source names none; an
// error naming the source and the variable when one is not set.
func EnvironmentAuth(s *propose.Source, lookup func(string) (string, bool)) (authn.Authenticator, error) {
	if s.OCI == nil || s.OCI.Credentials == nil || s.OCI.Credentials.UsernameEnv == "" {
		return nil, nil
	}
	c := s.OCI.Credentials
	username, ok := lookup(c.UsernameEnv)
	if !ok {
		return nil, fmt.Errorf("source %s: the environment variable %s (credentials.usernameEnv) is not set", s.Name, c.UsernameEnv)
	}
	password, ok := lookup(c.PasswordEnv)
	if !ok {
		return nil, fmt.Errorf("source %s: the environment variable %s (credentials.passwordEnv) is not set", s.Name, c.PasswordEnv)
	}
	return authn.FromConfig(authn.AuthConfig{Username: username, Password: password}), nil
}
