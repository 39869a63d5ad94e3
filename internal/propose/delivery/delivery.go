// Package delivery is the flow that both deliveries of proposals share,
// `profilesync propose` and the VersionUpdate controller: read the profiles
// and the versions file of a tree through the confined reader, discover the
// releases of every source (a failure is named by its source and changes
// nothing), run the engine once per policy, write the edits into the tree,
// and write the commit message. Committing is the delivery's own: the CLI
// commits in its checkout (CommitToCheckout), the controller in its mirror
// of the repository (internal/gitsource).
package delivery

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/go-git/go-git/v5/plumbing/transport"
	"github.com/google/go-containerregistry/pkg/authn"

	"github.com/profilesync/profilesync/internal/policy"
	"github.com/profilesync/profilesync/internal/propose"
	"github.com/profilesync/profilesync/internal/propose/sources"
	"github.com/profilesync/profilesync/internal/render/profile"
	"github.com/profilesync/profilesync/internal/repofile"
	"github.com/profilesync/profilesync/internal/rollout"
)

// Credentials say how each source is read: the CLI takes them from its
// environment, the controller from Secrets. A nil function reads anonymously.
type Credentials struct {
	// Git is the authentication of a Git source; nil for none.
	Git func(s *propose.Source) (transport.AuthMethod, error)
	// OCI is the authentication of an OCI source; nil for anonymous.
	OCI func(s *propose.Source) (authn.Authenticator, error)
}

// Options are what one run of the flow reads.
type Options struct {
	// Root is the top of the tree: the checkout of the profiles repository,
	// whose files the edits are written into.
	Root string
	// Label names the tree in messages (the CLI's --repo).
	Label string
	// Now is the time the proposals are made at.
	Now time.Time
	// ReadLimits bound every file read through the confined reader.
	ReadLimits repofile.Limits
	// SourceLimits bound what reading one source takes in.
	SourceLimits sources.Limits
	Credentials  Credentials
	// Transport carries the requests to the sources; http.DefaultTransport
	// when nil.
	Transport http.RoundTripper
	// ClusterOverrides are the NamespacedCloudProfiles on the cluster (the
	// operator's), whose overrides keep a version from retiring as those of
	// the repository do.
	ClusterOverrides []profile.Object
	// Build builds the landscapes of the tree, so that a proposal one of
	// them would refuse (an overlay's patch it breaks, the overlay's own
	// policy) is skipped (checkLandscapes); nil checks the profiles' files
	// alone.
	Build Build
}

// SourceOutcome is what reading one source gave.
type SourceOutcome struct {
	Name string
	// Versions are the versions it found (within its range and pattern),
	// in the order the source listed them.
	Versions []string
	// Err is why it failed, naming it; nil when it did not.
	Err error
}

// Outcome is what the flow found and proposes.
type Outcome struct {
	// Reader is the confined reader of the tree.
	Reader  *repofile.Reader
	File    *propose.File
	Sources []SourceOutcome
	// Result is the engine's, over every policy of the feeds.
	Result *propose.Result
}

// Failed reports whether a source failed.
func (o *Outcome) Failed() bool {
	for _, s := range o.Sources {
		if s.Err != nil {
			return true
		}
	}
	return false
}

// Message is the commit message of the proposals; empty when there is none.
func (o *Outcome) Message() string {
	if len(o.Result.Proposals) == 0 {
		return ""
	}
	return CommitMessage(o.Result.Proposals)
}

// Plan reads the tree and the sources, runs the engine and, with
// opts.Build, keeps the proposals every landscape of the tree accepts; it
// writes nothing into the tree. A tree without a versions file is an error that says what the
// file is for; a source that fails is in Outcome.Sources and contributes
// nothing.
func Plan(ctx context.Context, opts Options) (*Outcome, error) {
	label := opts.Label
	if label == "" {
		label = opts.Root
	}
	reader, err := repofile.Open(opts.Root, opts.ReadLimits)
	if err != nil {
		return nil, err
	}
	file, err := propose.Read(reader)
	if err != nil {
		return nil, err
	}
	if file == nil {
		return nil, fmt.Errorf("%s: no %s at the repository root: it declares the sources of new versions (docs/versions.md)", label, propose.FileName)
	}
	objects, err := Profiles(reader, file)
	if err != nil {
		return nil, err
	}
	discovered, outcomes := discover(ctx, file, objects, opts)
	result, err := proposeByPolicy(opts.Root, file, objects, opts.ClusterOverrides, discovered, opts.Now, opts.ReadLimits.MaxFileSize)
	if err != nil {
		return nil, err
	}
	if result, err = checkLandscapes(ctx, opts, reader, objects, result); err != nil {
		return nil, err
	}
	return &Outcome{Reader: reader, File: file, Sources: outcomes, Result: result}, nil
}

// isSettingsFile reports whether name is one of the settings files at a
// repository's root, which are no profiles.
func isSettingsFile(name string) bool {
	return policy.IsFileName(name) || rollout.IsFileName(name) || propose.IsFileName(name)
}

// Profiles decodes the CloudProfiles the sources feed, from their files,
// and every NamespacedCloudProfile of the repository's YAML files, whose
// overrides keep a version from retiring. Files of other YAML
// (kustomizations, patches) are not profiles and are passed over.
func Profiles(reader *repofile.Reader, file *propose.File) ([]profile.Object, error) {
	fed := map[string]bool{}
	for _, s := range file.Sources {
		for _, f := range s.Feeds {
			fed[f.File] = true
		}
	}
	isYAML := func(name string) bool {
		ext := path.Ext(name)
		return (ext == ".yaml" || ext == ".yml") && !isSettingsFile(path.Base(name))
	}
	files, err := reader.Files(".", isYAML)
	if err != nil {
		return nil, fmt.Errorf("listing the repository's YAML files: %w", err)
	}
	var objects []profile.Object
	for _, name := range files {
		data, err := reader.ReadFile(name)
		if err != nil {
			return nil, err
		}
		docs, err := profile.SplitDocuments(name, bytes.NewReader(data))
		if err != nil {
			if fed[name] {
				return nil, err
			}
			continue
		}
		decoded, problems := profile.DecodeDocuments(docs)
		if fed[name] && len(problems) > 0 {
			return nil, fmt.Errorf("%s does not decode:\n%w", name, problems)
		}
		for _, o := range decoded {
			if o.NamespacedCloudProfile != nil || fed[name] {
				objects = append(objects, o)
			}
		}
	}
	return objects, nil
}

// discover reads every source; one that fails is named in its outcome and
// contributes nothing.
func discover(ctx context.Context, file *propose.File, objects []profile.Object, opts Options) ([]propose.Discovered, []SourceOutcome) {
	var discovered []propose.Discovered
	outcomes := make([]SourceOutcome, 0, len(file.Sources))
	for i := range file.Sources {
		s := &file.Sources[i]
		releases, err := readSource(ctx, s, objects, opts)
		outcome := SourceOutcome{Name: s.Name, Err: err}
		if err == nil {
			for _, r := range releases {
				outcome.Versions = append(outcome.Versions, r.Version)
			}
			for _, feed := range s.Feeds {
				discovered = append(discovered, propose.Discovered{Source: s.Name, Cooldown: s.Cooldown, Target: feed, Releases: releases})
			}
		}
		outcomes = append(outcomes, outcome)
	}
	return discovered, outcomes
}

func readSource(ctx context.Context, s *propose.Source, objects []profile.Object, opts Options) ([]propose.Release, error) {
	if s.Git != nil {
		var auth transport.AuthMethod
		if opts.Credentials.Git != nil {
			var err error
			if auth, err = opts.Credentials.Git(s); err != nil {
				return nil, err
			}
		}
		return sources.ListGit(ctx, s, sources.GitOptions{Auth: auth, Transport: opts.Transport, Limits: opts.SourceLimits})
	}
	var auth authn.Authenticator
	if opts.Credentials.OCI != nil {
		var err error
		if auth, err = opts.Credentials.OCI(s); err != nil {
			return nil, err
		}
	}
	return sources.ListOCI(ctx, s, sources.OCIOptions{Auth: auth, Transport: opts.Transport, Limits: opts.SourceLimits,
		NeedsTime: func(version string) bool { return propose.NewerThanListed(objects, s.Feeds, version) }})
}

// proposeByPolicy runs the engine for the feeds of each policy (the one
// nearest to each feed's file), each run building on the one before.
func proposeByPolicy(root string, file *propose.File, objects, clusterOverrides []profile.Object, discovered []propose.Discovered, now time.Time, maxFileSize int64) (*propose.Result, error) {
	type group struct {
		policy     *policy.Policy
		discovered []propose.Discovered
	}
	var groups []*group
	byFile := map[string]*group{}
	for _, d := range discovered {
		p, policyFile, err := policy.Find(root, path.Dir(d.Target.File), maxFileSize)
		if err != nil {
			return nil, err
		}
		g, ok := byFile[policyFile]
		if !ok {
			g = &group{policy: p}
			byFile[policyFile] = g
			groups = append(groups, g)
		}
		g.discovered = append(g.discovered, d)
	}
	all := &propose.Result{Profiles: objects}
	for _, g := range groups {
		result, err := propose.Propose(propose.Input{Profiles: all.Profiles, ClusterOverrides: clusterOverrides, Policy: g.policy,
			Schedule: file.Schedule, Now: now, Discovered: g.discovered})
		if err != nil {
			return nil, err
		}
		all.Proposals = append(all.Proposals, result.Proposals...)
		all.Skipped = append(all.Skipped, result.Skipped...)
		all.Profiles = result.Profiles
	}
	return all, nil
}

// CommitMessage is a subject naming the count, then one line per proposal:
// the change and its reason.
func CommitMessage(proposals []propose.Proposal) string {
	noun := "changes"
	if len(proposals) == 1 {
		noun = "change"
	}
	var b strings.Builder
	fmt.Fprintf(&b, "profilesync propose: %d %s of versions\n\n", len(proposals), noun)
	for _, p := range proposals {
		fmt.Fprintf(&b, "- %s\n", p.Summary)
	}
	fmt.Fprintf(&b, "\nProposed from the sources of %s; see docs/versions.md.", propose.FileName)
	return b.String()
}

// WriteEdits makes the edits in their files, through the confined reader,
// and returns the files changed, sorted, with their new content.
func WriteEdits(reader *repofile.Reader, edits []propose.Edit) ([]EditedFile, error) {
	byFile := map[string][]propose.Edit{}
	for _, e := range edits {
		byFile[e.Target.File] = append(byFile[e.Target.File], e)
	}
	files := make([]string, 0, len(byFile))
	for f := range byFile {
		files = append(files, f)
	}
	sort.Strings(files)
	written := make([]EditedFile, 0, len(files))
	for _, f := range files {
		data, err := reader.ReadFile(f)
		if err != nil {
			return nil, err
		}
		edited, err := propose.EditFile(f, data, byFile[f])
		if err != nil {
			return nil, err
		}
		target := filepath.Join(reader.Root(), filepath.FromSlash(f))
		info, err := os.Stat(target)
		if err != nil {
			return nil, fmt.Errorf("writing %s: %w", f, err)
		}
		if err := os.WriteFile(target, edited, info.Mode().Perm()); err != nil {
			return nil, fmt.Errorf("writing %s: %w", f, err)
		}
		written = append(written, EditedFile{Path: f, Content: edited})
	}
	return written, nil
}

// EditedFile is a file the edits changed: its repository-relative,
// slash-separated path and its new content.
type EditedFile struct {
	Path    string
	Content []byte
}

// CopyTree copies the tree's regular files (not .git/) to dir.
func CopyTree(reader *repofile.Reader, dir string) error {
	files, err := reader.Files(".", func(string) bool { return true })
	if err != nil {
		return fmt.Errorf("copying the tree before the edits: %w", err)
	}
	for _, f := range files {
		data, err := reader.ReadFile(f)
		if err != nil {
			return fmt.Errorf("copying the tree before the edits: %w", err)
		}
		target := filepath.Join(dir, filepath.FromSlash(f))
		if err := os.MkdirAll(filepath.Dir(target), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(target, data, 0o644); err != nil {
			return err
		}
	}
	return nil
}
