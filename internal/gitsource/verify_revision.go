package gitsource

import (
	"errors"
	"fmt"
	"strings"
	"time"

	git "github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"
)

// VerifyMode is what of a revision must be signed, as Flux's
// spec.verify.mode.
type VerifyMode string

// The modes of VerifyRevision.
const (
	// VerifyModeHEAD: the commit the revision points at (and, with path
	// rules, every commit since the last applied one).
	VerifyModeHEAD VerifyMode = "HEAD"
	// VerifyModeTag: the annotated tag the revision's tag ref points at;
	// a revision that is no tag, or a lightweight tag, is refused.
	VerifyModeTag VerifyMode = "Tag"
	// VerifyModeTagAndHEAD: both.
	VerifyModeTagAndHEAD VerifyMode = "TagAndHEAD"
)

// RevisionCheck says what VerifyRevision checks of a revision.
type RevisionCheck struct {
	// Mode is what must be signed; empty is VerifyModeHEAD.
	Mode VerifyMode
	// Tag is the tag the revision was taken from (spec.ref.tag or the tag
	// a semver range chose); empty when it was taken from no tag.
	Tag string
	// LastApplied is the commit applied before (empty: none). With path
	// rules, the commits from it to the revision are verified.
	LastApplied string
	// EveryCommit verifies every commit since LastApplied even without
	// path rules (the CLI's range), not the revision's alone.
	EveryCommit bool
	Range       RangeOptions
}

// VerifyRevision verifies the revision commit of the repository at repoDir
// (a fetch's Result.Dir), read within limits, as check says, at now. It
// returns every verdict, the tag's first (Object names it), then the
// commits' newest first; FirstRefusal of them is the revision's refusal.
// An error is a repository that cannot be read or a range too long.
func VerifyRevision(repoDir, commit string, check RevisionCheck, keys TrustedKeys, now time.Time, limits ObjectLimits) ([]CommitVerdict, error) {
	repository, storage, err := openLocalRepository(repoDir, limits)
	if err != nil {
		return nil, err
	}
	defer storage.Close()
	return VerifyRevisionOf(repository, commit, check, keys, now)
}

// VerifyRevisionOf is VerifyRevision over an open repository.
func VerifyRevisionOf(repository *git.Repository, commit string, check RevisionCheck, keys TrustedKeys, now time.Time) ([]CommitVerdict, error) {
	mode := check.Mode
	if mode == "" {
		mode = VerifyModeHEAD
	}
	var verdicts []CommitVerdict
	if mode == VerifyModeTag || mode == VerifyModeTagAndHEAD {
		verdict, err := verifyTagOf(repository, commit, check, keys, now, mode == VerifyModeTag)
		if err != nil {
			return nil, err
		}
		verdicts = append(verdicts, verdict)
	}
	if mode == VerifyModeHEAD || mode == VerifyModeTagAndHEAD {
		if len(check.Range.Rules) == 0 && !check.EveryCommit {
			read, err := repository.CommitObject(plumbing.NewHash(commit))
			if err != nil {
				return nil, fmt.Errorf("read commit %s: %w", commit, err)
			}
			verdicts = append(verdicts, verifyOne(read, nil, keys, now, nil))
		} else {
			commits, err := VerifyRange(repository, check.LastApplied, commit, keys, now, check.Range)
			if err != nil {
				return nil, err
			}
			verdicts = append(verdicts, commits...)
		}
	}
	if len(verdicts) == 0 {
		return nil, fmt.Errorf("verify mode %q is not one of HEAD, Tag, TagAndHEAD", mode)
	}
	return verdicts, nil
}

// verifyTagOf verifies the annotated tag check.Tag, which must point at
// commit. In mode Tag alone (pathRulesOnTag) the path rules judge the
// tag's signer on every path changed since check.LastApplied: the tag
// vouches for the whole change, as no commit is checked.
func verifyTagOf(repository *git.Repository, commit string, check RevisionCheck, keys TrustedKeys, now time.Time, pathRulesOnTag bool) (CommitVerdict, error) {
	refused := func(detail string) CommitVerdict {
		return CommitVerdict{Object: "tag", Commit: commit, Err: &VerificationError{Object: "revision of commit", Commit: commit, Failure: Unsigned, Detail: detail}}
	}
	if check.Tag == "" {
		return refused("mode " + string(check.Mode) + " verifies the annotated tag of the revision, and the revision is taken from no tag (set spec.ref.tag or spec.ref.semver, or mode HEAD)"), nil
	}
	ref, err := repository.Reference(plumbing.NewTagReferenceName(check.Tag), true)
	if err != nil {
		return CommitVerdict{}, fmt.Errorf("read tag %q: %w", check.Tag, err)
	}
	tag, err := repository.TagObject(ref.Hash())
	if errors.Is(err, plumbing.ErrObjectNotFound) {
		return refused(fmt.Sprintf("tag %q is a lightweight tag, which carries no signature; sign an annotated tag (git tag -s)", check.Tag)), nil
	}
	if err != nil {
		return CommitVerdict{}, fmt.Errorf("read tag %q: %w", check.Tag, err)
	}
	if tag.TargetType != plumbing.CommitObject || tag.Target.String() != commit {
		return refused(fmt.Sprintf("tag %q (%s) points at %s %s, not the revision's commit", check.Tag, tag.Hash, tag.TargetType, tag.Target)), nil
	}
	verdict := CommitVerdict{Object: fmt.Sprintf("tag %q", check.Tag), Commit: tag.Hash.String()}
	verdict.Signer, verdict.Err = VerifyTagSignature(tag, keys, now)
	if verdict.Err != nil || !pathRulesOnTag || len(check.Range.Rules) == 0 {
		return verdict, nil
	}
	target, err := repository.CommitObject(tag.Target)
	if err != nil {
		return CommitVerdict{}, fmt.Errorf("read commit %s of tag %q: %w", tag.Target, check.Tag, err)
	}
	var since []*object.Commit
	if check.LastApplied != "" {
		if base, err := repository.CommitObject(plumbing.NewHash(check.LastApplied)); err == nil {
			since = []*object.Commit{base}
		}
	}
	if verdict.Changed, err = changedPaths(target, since); err != nil {
		return CommitVerdict{}, err
	}
	if denied := DeniedPaths(verdict.Changed, check.Range.Rules, verdict.Signer); len(denied) > 0 {
		failed := pathRuleError(verdict.Commit, verdict.Signer, denied).(*VerificationError)
		failed.Object = verdict.Object
		verdict.Err = failed
	}
	return verdict, nil
}

// VerifyLocal verifies revisionRange of the local repository at repoDir
// (a work tree, a directory in one, or a bare repository), read within
// limits, as `profilesync verify` does for CI: "BASE..HEAD" verifies every
// commit reachable from HEAD and not from BASE (git's BASE..HEAD), "REV"
// verifies REV alone as the first revision a landscape applies (with path
// rules, every file of its tree counts as changed). Each side is anything
// go-git's ResolveRevision reads (a branch, origin/main, a tag, a SHA-1,
// HEAD~1). When HEAD names a tag, it is the tag modes Tag and TagAndHEAD
// verify, unless check.Tag names one.
func VerifyLocal(repoDir, revisionRange string, check RevisionCheck, keys TrustedKeys, now time.Time, limits ObjectLimits) ([]CommitVerdict, error) {
	if strings.Contains(revisionRange, "...") {
		return nil, fmt.Errorf("%w: revision range %q: use BASE..HEAD (two dots) or one revision", ErrInvalidRequest, revisionRange)
	}
	base, head, isRange := strings.Cut(revisionRange, "..")
	if !isRange {
		base, head = "", revisionRange
	}
	if head == "" {
		head = string(plumbing.HEAD)
	}
	repository, storage, err := openLocalRepository(repoDir, limits)
	if err != nil {
		return nil, err
	}
	defer storage.Close()
	commit, err := resolveLocalRevision(repository, repoDir, head)
	if err != nil {
		return nil, err
	}
	if isRange {
		if base == "" {
			base = string(plumbing.HEAD)
		}
		from, err := resolveLocalRevision(repository, repoDir, base)
		if err != nil {
			return nil, err
		}
		check.LastApplied = from.String()
	}
	if check.Tag == "" {
		if _, err := repository.Reference(plumbing.NewTagReferenceName(head), false); err == nil {
			check.Tag = head
		}
	}
	check.EveryCommit = true
	return VerifyRevisionOf(repository, commit.String(), check, keys, now)
}
