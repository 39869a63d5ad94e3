package sources

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/format/packfile"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/go-git/go-git/v5/plumbing/protocol/packp"
	"github.com/go-git/go-git/v5/plumbing/protocol/packp/capability"
	"github.com/go-git/go-git/v5/plumbing/protocol/packp/sideband"
	"github.com/go-git/go-git/v5/plumbing/transport"
	githttp "github.com/go-git/go-git/v5/plumbing/transport/http"
	"github.com/go-git/go-git/v5/storage/memory"

	"github.com/profilesync/profilesync/internal/gitsource"
	"github.com/profilesync/profilesync/internal/propose"
)

const tagPrefix = "refs/tags/"

// GitOptions are how a Git source is read.
type GitOptions struct {
	// Auth is the credentials (GitAuth, GitEnvironmentAuth); anonymous when
	// nil. An ssh source needs an ssh identity and known_hosts.
	Auth transport.AuthMethod
	// Transport carries the requests of an http or https source;
	// http.DefaultTransport when nil.
	Transport http.RoundTripper
	// Dial opens the connection of an ssh source; a net.Dialer's when nil.
	Dial   DialFunc
	Limits Limits
}

// ListGit lists the versions among the tags of a Git source's repository,
// with the time each was tagged: an annotated tag's tagger time, a
// lightweight tag's commit time. The tags come from the repository's ref
// advertisement, as go-git's remote listing reads it (no clone); the times
// from one fetch of the tag and commit objects alone (depth 1, no trees or
// blobs: the partial-fetch filter tree:0). A server that does not offer
// that filter (uploadpack.allowFilter) is not asked for more: the times are
// then unknown, and a cooldown waits for them. https, http and ssh
// (ssh:// or scp-like) URLs are read; every byte a source sends counts
// against limits.MaxBytes, and Limits.Timeout bounds the whole reading.
func ListGit(ctx context.Context, s *propose.Source, options GitOptions) ([]propose.Release, error) {
	if s.Git == nil {
		return nil, fmt.Errorf("source %s is not a Git source", s.Name)
	}
	limits := options.Limits
	if limits == (Limits{}) {
		limits = DefaultLimits()
	}
	budget := newByteBudget(limits.MaxBytes)
	fail := func(err error) ([]propose.Release, error) {
		switch spent := budget.spent(); {
		case spent != nil && !errors.Is(err, ErrSourceLimit):
			err = spent
		case ctx.Err() != nil && !errors.Is(err, ctx.Err()):
			// The connection was closed under a read: say why.
			err = fmt.Errorf("%w (%v)", ctx.Err(), err)
		}
		return nil, fmt.Errorf("source %s: listing the tags of %s: %w", s.Name, gitsource.RedactURL(s.Git.URL), err)
	}
	if limits.Timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, limits.Timeout)
		defer cancel()
	}
	endpoint, err := transport.NewEndpoint(s.Git.URL)
	if err != nil {
		return fail(err)
	}
	var session transport.UploadPackSession
	switch endpoint.Protocol {
	case "https", "http":
		client := githttp.NewClient(&http.Client{Transport: newBoundedTransport(options.Transport, budget)})
		session, err = client.NewUploadPackSession(endpoint, options.Auth)
	case "ssh":
		session, err = openSSHUploadPack(ctx, endpoint, options.Auth, options.Dial, budget)
	default:
		err = fmt.Errorf("a %s URL: only https, http and ssh URLs are read", endpoint.Protocol)
	}
	if err != nil {
		return fail(err)
	}
	defer session.Close()
	advertised, err := session.AdvertisedReferencesContext(ctx)
	if err != nil {
		return fail(err)
	}
	refs, err := advertised.AllReferences()
	if err != nil {
		return fail(err)
	}
	type tagged struct {
		version string
		hash    plumbing.Hash
	}
	var tags []tagged
	var tally tagTally
	for name, ref := range refs {
		if !strings.HasPrefix(string(name), tagPrefix) || strings.HasSuffix(string(name), "^{}") || ref.Type() != plumbing.HashReference {
			continue
		}
		if limits.MaxTags > 0 && len(tags) >= limits.MaxTags {
			return fail(fmt.Errorf("%w: more than %d tags are versions", ErrSourceLimit, limits.MaxTags))
		}
		tag := strings.TrimPrefix(string(name), tagPrefix)
		v, verdict := s.Classify(tag)
		tally.add(tag, v, verdict)
		if verdict == propose.TagIsVersion {
			tags = append(tags, tagged{version: v.Original(), hash: ref.Hash()})
		}
	}
	if err := tally.noVersions(s); err != nil {
		return fail(err)
	}
	releases := make([]propose.Release, len(tags))
	for i, t := range tags {
		releases[i] = propose.Release{Version: t.version}
	}
	if len(tags) == 0 || !advertised.Capabilities.Supports(capability.Filter) || !advertised.Capabilities.Supports(capability.Shallow) {
		return releases, nil
	}
	wants := make([]plumbing.Hash, 0, len(tags))
	for _, t := range tags {
		wants = append(wants, t.hash)
	}
	times, err := taggedTimes(ctx, session, advertised, wants)
	if err != nil {
		return fail(fmt.Errorf("reading when the tags were made: %w", err))
	}
	for i, t := range tags {
		releases[i].Released = times[t.hash]
	}
	return releases, nil
}

// taggedTimes fetches wants (tag objects and commits) without their trees
// and returns the tagger or committer time of each.
func taggedTimes(ctx context.Context, session transport.UploadPackSession, advertised *packp.AdvRefs, wants []plumbing.Hash) (map[plumbing.Hash]time.Time, error) {
	req := packp.NewUploadPackRequestFromCapabilities(advertised.Capabilities)
	req.Wants = wants
	req.Depth = packp.DepthCommits(1)
	req.Filter = packp.FilterTreeDepth(0)
	for _, c := range []capability.Capability{capability.Shallow, capability.Filter} {
		if err := req.Capabilities.Set(c); err != nil {
			return nil, err
		}
	}
	if advertised.Capabilities.Supports(capability.NoProgress) {
		if err := req.Capabilities.Set(capability.NoProgress); err != nil {
			return nil, err
		}
	}
	response, err := session.UploadPack(ctx, req)
	if err != nil {
		return nil, err
	}
	defer response.Close()
	storage := memory.NewStorage()
	var pack io.Reader = response
	switch {
	case req.Capabilities.Supports(capability.Sideband64k):
		pack = sideband.NewDemuxer(sideband.Sideband64k, response)
	case req.Capabilities.Supports(capability.Sideband):
		pack = sideband.NewDemuxer(sideband.Sideband, response)
	}
	if err := packfile.UpdateObjectStorage(storage, pack); err != nil {
		return nil, err
	}
	times := make(map[plumbing.Hash]time.Time, len(wants))
	for _, h := range wants {
		encoded, err := storage.EncodedObject(plumbing.AnyObject, h)
		if err != nil {
			continue // not sent: its time stays unknown
		}
		switch encoded.Type() {
		case plumbing.TagObject:
			tag, err := object.DecodeTag(storage, encoded)
			if err == nil {
				times[h] = tag.Tagger.When.UTC()
			}
		case plumbing.CommitObject:
			commit, err := object.DecodeCommit(storage, encoded)
			if err == nil {
				times[h] = commit.Committer.When.UTC()
			}
		}
	}
	return times, nil
}
