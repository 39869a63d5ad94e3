package gitsource

import (
	"context"
	"fmt"
	"regexp"
	"sort"
	"strings"

	"github.com/Masterminds/semver/v3"
	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/config"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/storage/memory"
)

// peeledSuffix marks the entry of a ref listing that gives the commit an
// annotated tag points at.
const peeledSuffix = "^{}"

// maxNamesInError bounds how many branch or tag names an error lists, so a
// repository with thousands of tags does not produce a page-long condition
// message.
const maxNamesInError = 10

// commitPattern is a full lowercase SHA-1, as the API requires for
// spec.ref.commit.
var commitPattern = regexp.MustCompile(`^[0-9a-f]{40}$`)

// Ref says which commit to fetch. It mirrors the API's GitReference: set at
// most one of Tag, SemVer and Commit; Branch may be combined with Commit
// only. The zero Ref follows the remote's HEAD (its default branch).
type Ref struct {
	// Branch is a branch name like "main" (not refs/heads/main).
	Branch string
	// Tag is a tag name like "v1.2.0" (not refs/tags/v1.2.0).
	Tag string
	// SemVer is a Masterminds semver constraint like ">=1.2.0 <2.0.0"; the
	// highest tag satisfying it is fetched.
	SemVer string
	// Commit is a full 40-hex-digit SHA-1.
	Commit string
}

// String describes the ref for messages, like `branch "main"`.
func (r Ref) String() string {
	switch {
	case r.Branch != "" && r.Commit != "":
		return fmt.Sprintf("commit %s on branch %q", r.Commit, r.Branch)
	case r.Branch != "":
		return fmt.Sprintf("branch %q", r.Branch)
	case r.Tag != "":
		return fmt.Sprintf("tag %q", r.Tag)
	case r.SemVer != "":
		return fmt.Sprintf("semver %q", r.SemVer)
	case r.Commit != "":
		return fmt.Sprintf("commit %s", r.Commit)
	default:
		return "HEAD"
	}
}

// validate rejects combinations the API's validation also rejects, so that
// callers other than the controller get the same answer.
func (r Ref) validate() error {
	exclusive := 0
	for _, set := range []bool{r.Tag != "", r.SemVer != "", r.Commit != ""} {
		if set {
			exclusive++
		}
	}
	if exclusive > 1 {
		return fmt.Errorf("%w: ref sets more than one of tag, semver and commit", ErrInvalidRequest)
	}
	if r.Branch != "" && (r.Tag != "" || r.SemVer != "") {
		return fmt.Errorf("%w: ref combines branch with tag or semver; branch may be combined only with commit", ErrInvalidRequest)
	}
	if r.Commit != "" && !commitPattern.MatchString(r.Commit) {
		return fmt.Errorf("%w: ref commit %q is not a full lowercase SHA-1 (40 hex digits)", ErrInvalidRequest, r.Commit)
	}
	return nil
}

// resolution is where a Ref points on the remote right now.
type resolution struct {
	// revisionName is the name put before "@sha1:" in the revision: the
	// branch or tag; empty for a bare commit.
	revisionName string
	// commit is the commit to check out.
	commit plumbing.Hash
	// cloneRef is the ref to clone. Empty means "all branches and tags",
	// for a commit that is not the tip of any ref.
	cloneRef plumbing.ReferenceName
	// shallow says cloneRef's tip is commit, so history is not needed.
	shallow bool
}

// remoteRefs is one listing of a remote: every ref with the commit or tag
// object it points at, the commits annotated tags point at, and HEAD.
type remoteRefs struct {
	hashes map[plumbing.ReferenceName]plumbing.Hash
	// peeled maps an annotated tag's ref to its commit.
	peeled map[plumbing.ReferenceName]plumbing.Hash
	// head is HEAD's reference: symbolic to the default branch normally,
	// a hash when the remote's HEAD is detached, nil when absent.
	head *plumbing.Reference
}

// listRemote lists the refs of the repository, which is what `git
// ls-remote` does, without any local storage.
func listRemote(ctx context.Context, auth clientAuth) (remoteRefs, error) {
	remote := git.NewRemote(memory.NewStorage(), &config.RemoteConfig{Name: "origin", URLs: []string{auth.remoteURL}})
	refs, err := remote.ListContext(ctx, &git.ListOptions{Auth: auth.method, PeelingOption: git.AppendPeeled})
	if err != nil {
		return remoteRefs{}, err
	}
	listing := remoteRefs{
		hashes: make(map[plumbing.ReferenceName]plumbing.Hash, len(refs)),
		peeled: make(map[plumbing.ReferenceName]plumbing.Hash),
	}
	for _, ref := range refs {
		name := ref.Name()
		switch {
		case name == plumbing.HEAD:
			listing.head = ref
		case strings.HasSuffix(string(name), peeledSuffix):
			listing.peeled[plumbing.ReferenceName(strings.TrimSuffix(string(name), peeledSuffix))] = ref.Hash()
		case ref.Type() == plumbing.HashReference:
			listing.hashes[name] = ref.Hash()
		}
	}
	return listing, nil
}

// commitOf is the commit a listed ref points at, peeling annotated tags.
func (l remoteRefs) commitOf(name plumbing.ReferenceName) (plumbing.Hash, bool) {
	if commit, ok := l.peeled[name]; ok {
		return commit, true
	}
	hash, ok := l.hashes[name]
	return hash, ok
}

// names lists the short names of refs with prefix ("refs/heads/"), sorted.
func (l remoteRefs) names(prefix string) []string {
	var names []string
	for name := range l.hashes {
		if short, ok := strings.CutPrefix(string(name), prefix); ok {
			names = append(names, short)
		}
	}
	sort.Strings(names)
	return names
}

// resolve decides which commit ref means in listing. repo is the redacted
// URL, for messages.
func resolve(ref Ref, listing remoteRefs, repo string) (resolution, error) {
	switch {
	case ref.Commit != "":
		return resolveCommit(ref, listing, repo)
	case ref.Branch != "":
		name := plumbing.NewBranchReferenceName(ref.Branch)
		commit, ok := listing.commitOf(name)
		if !ok {
			return resolution{}, fmt.Errorf("%w: branch %q not found in %s (branches: %s)",
				ErrReferenceNotFound, ref.Branch, repo, someNames(listing.names("refs/heads/")))
		}
		return resolution{revisionName: ref.Branch, commit: commit, cloneRef: name, shallow: true}, nil
	case ref.Tag != "":
		name := plumbing.NewTagReferenceName(ref.Tag)
		commit, ok := listing.commitOf(name)
		if !ok {
			return resolution{}, fmt.Errorf("%w: tag %q not found in %s (tags: %s)",
				ErrReferenceNotFound, ref.Tag, repo, someNames(listing.names("refs/tags/")))
		}
		return resolution{revisionName: ref.Tag, commit: commit, cloneRef: name, shallow: true}, nil
	case ref.SemVer != "":
		return resolveSemVer(ref.SemVer, listing, repo)
	default:
		return resolveHead(listing, repo)
	}
}

// resolveHead follows the remote's HEAD to its default branch.
func resolveHead(listing remoteRefs, repo string) (resolution, error) {
	head := listing.head
	switch {
	case head == nil:
		return resolution{}, fmt.Errorf("%w: %s advertises no HEAD; set a branch, tag, semver or commit",
			ErrReferenceNotFound, repo)
	case head.Type() == plumbing.SymbolicReference:
		branch := head.Target()
		commit, ok := listing.commitOf(branch)
		if !ok || !branch.IsBranch() {
			return resolution{}, fmt.Errorf("%w: HEAD of %s points at %s, which does not exist",
				ErrReferenceNotFound, repo, branch)
		}
		return resolution{revisionName: branch.Short(), commit: commit, cloneRef: branch, shallow: true}, nil
	default:
		// A detached HEAD has no branch name to report.
		return resolution{commit: head.Hash(), cloneRef: plumbing.HEAD, shallow: true}, nil
	}
}

// resolveSemVer picks the highest tag that satisfies constraint. Tags that
// are not semantic versions are ignored; "v1.2.3" and "1.2.3" both count.
func resolveSemVer(constraint string, listing remoteRefs, repo string) (resolution, error) {
	constraints, err := semver.NewConstraint(constraint)
	if err != nil {
		return resolution{}, fmt.Errorf("%w: semver %q is not a valid range: %w", ErrInvalidRequest, constraint, err)
	}
	type versionTag struct {
		version *semver.Version
		tag     string
	}
	var all []versionTag
	for _, tag := range listing.names("refs/tags/") {
		if version, err := semver.NewVersion(tag); err == nil {
			all = append(all, versionTag{version: version, tag: tag})
		}
	}
	// Highest first; equal versions ("v1.0.0", "1.0.0") in name order so the
	// choice does not depend on map order.
	sort.Slice(all, func(i, j int) bool {
		if c := all[i].version.Compare(all[j].version); c != 0 {
			return c > 0
		}
		return all[i].tag < all[j].tag
	})
	for _, candidate := range all {
		if constraints.Check(candidate.version) {
			name := plumbing.NewTagReferenceName(candidate.tag)
			commit, _ := listing.commitOf(name)
			return resolution{revisionName: candidate.tag, commit: commit, cloneRef: name, shallow: true}, nil
		}
	}
	tags := make([]string, 0, len(all))
	for _, candidate := range all {
		tags = append(tags, candidate.tag)
	}
	return resolution{}, fmt.Errorf("%w: no tag matches semver %q in %s (semver tags, highest first: %s)",
		ErrReferenceNotFound, constraint, repo, someNames(tags))
}

// resolveCommit plans how to get a pinned commit. go-git cannot ask a server
// for an arbitrary SHA-1 (servers only allow it when configured to), so:
//   - with a branch, the branch must exist. When the commit is its tip, a
//     shallow clone suffices; otherwise the whole branch is cloned and the
//     commit must be in its history.
//   - without a branch, when the commit is the tip of some branch or tag
//     that ref is cloned shallowly; otherwise every branch and tag is cloned
//     in full and the commit looked up. That can be slow for large
//     repositories; naming the branch is cheaper.
func resolveCommit(ref Ref, listing remoteRefs, repo string) (resolution, error) {
	commit := plumbing.NewHash(ref.Commit)
	if ref.Branch != "" {
		name := plumbing.NewBranchReferenceName(ref.Branch)
		tip, ok := listing.commitOf(name)
		if !ok {
			return resolution{}, fmt.Errorf("%w: branch %q (for commit %s) not found in %s (branches: %s)",
				ErrReferenceNotFound, ref.Branch, ref.Commit, repo, someNames(listing.names("refs/heads/")))
		}
		return resolution{revisionName: ref.Branch, commit: commit, cloneRef: name, shallow: tip == commit}, nil
	}
	// Branches before tags, each in name order, so the same listing always
	// picks the same ref.
	for _, prefix := range []string{"refs/heads/", "refs/tags/"} {
		for _, short := range listing.names(prefix) {
			name := plumbing.ReferenceName(prefix + short)
			if tip, _ := listing.commitOf(name); tip == commit {
				return resolution{commit: commit, cloneRef: name, shallow: true}, nil
			}
		}
	}
	return resolution{commit: commit}, nil
}

// someNames joins up to maxNamesInError names for a message.
func someNames(names []string) string {
	if len(names) == 0 {
		return "none"
	}
	if len(names) > maxNamesInError {
		return strings.Join(names[:maxNamesInError], ", ") + fmt.Sprintf(", … %d more", len(names)-maxNamesInError)
	}
	return strings.Join(names, ", ")
}
