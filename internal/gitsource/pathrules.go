package gitsource

import (
	"container/heap"
	"errors"
	"fmt"
	"path"
	"sort"
	"strings"
	"time"

	git "github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"
)

// PathRule says who may sign a change of some paths: a commit that changes
// a file matched by Paths must be signed by a key with one of Principals
// (an allowed_signers principal, or an email of an OpenPGP key's user IDs).
type PathRule struct {
	// Paths are globs over repository paths, / separated: * and ? match
	// within a segment, ** any number of segments; a pattern also covers
	// everything under a directory it matches (overlays/prod is
	// overlays/prod/**).
	Paths      []string
	Principals []string
}

// DefaultMaxVerifiedCommits bounds the commits one range verification
// reads when the caller sets no bound.
const DefaultMaxVerifiedCommits = 100

// ValidatePathRules refuses a rule without paths or principals, or with a
// malformed glob, naming it (source is where the rules come from).
func ValidatePathRules(source string, rules []PathRule) error {
	for i, rule := range rules {
		if len(rule.Paths) == 0 || len(rule.Principals) == 0 {
			return fmt.Errorf("%s[%d]: a path rule needs paths and principals", source, i)
		}
		for _, pattern := range rule.Paths {
			if _, err := matchPathGlob(pattern, "x"); err != nil || strings.TrimSpace(pattern) == "" {
				return fmt.Errorf("%s[%d].paths: %q is no glob: %w", source, i, pattern, errors.Join(err, errors.New("empty or malformed")))
			}
		}
	}
	return nil
}

// matchPathGlob says whether pattern matches name or a directory above it.
func matchPathGlob(pattern, name string) (bool, error) {
	patternSegments := strings.Split(strings.Trim(pattern, "/"), "/")
	nameSegments := strings.Split(name, "/")
	for end := len(nameSegments); end > 0; end-- {
		matched, err := matchSegments(patternSegments, nameSegments[:end])
		if err != nil || matched {
			return matched, err
		}
	}
	return false, nil
}

// matchSegments matches path segments against pattern segments, ** any
// number of them, by dynamic programming over (pattern, name) suffixes: a
// pattern of many ** costs their number times the path's depth, never
// their power (a tenant's ProfileSync writes the pattern).
func matchSegments(pattern, name []string) (bool, error) {
	// matches[j] says whether pattern[i:] matches name[j:], for the i of
	// the row being computed; next is the row of i+1.
	next := make([]bool, len(name)+1)
	next[len(name)] = true // the empty pattern matches the empty rest
	matches := make([]bool, len(name)+1)
	for i := len(pattern) - 1; i >= 0; i-- {
		for j := len(name); j >= 0; j-- {
			switch {
			case pattern[i] == "**":
				// Zero segments (pattern[i+1:] on name[j:]) or one more.
				matches[j] = next[j] || (j < len(name) && matches[j+1])
			case j == len(name):
				matches[j] = false
			default:
				matched, err := path.Match(pattern[i], name[j])
				if err != nil {
					return false, err
				}
				matches[j] = matched && next[j+1]
			}
		}
		next, matches = matches, next
	}
	return next[0], nil
}

// PathRuleDenial is a changed path the signer may not change: the rule's
// globs and the principals it needs.
type PathRuleDenial struct {
	Path       string
	Rule       PathRule
	RuleIndex  int
	Principals []string
}

// DeniedPaths is the one decision of path rules: of changed, the paths
// that a rule matches and whose signer holds none of that rule's
// principals (every rule matching a path must be satisfied). A path no
// rule matches needs only a trusted key, which the signature check
// already asked. Rules are assumed valid (ValidatePathRules).
func DeniedPaths(changed []string, rules []PathRule, signer Signer) []PathRuleDenial {
	var denied []PathRuleDenial
	for _, name := range changed {
		for i, rule := range rules {
			if !ruleMatches(rule, name) || signer.HasPrincipal(rule.Principals) {
				continue
			}
			denied = append(denied, PathRuleDenial{Path: name, Rule: rule, RuleIndex: i, Principals: rule.Principals})
		}
	}
	return denied
}

func ruleMatches(rule PathRule, name string) bool {
	for _, pattern := range rule.Paths {
		if matched, _ := matchPathGlob(pattern, name); matched {
			return true
		}
	}
	return false
}

// PathRuleRefused is the failure of a commit whose signer may not change
// a path it changes.
const PathRuleRefused SignatureFailure = "path rule"

// maxDeniedInMessage bounds the paths one refusal lists.
const maxDeniedInMessage = 5

// pathRuleError is the VerificationError of a commit's denied paths.
func pathRuleError(commit string, signer Signer, denied []PathRuleDenial) error {
	var parts []string
	for i, d := range denied {
		if i == maxDeniedInMessage {
			parts = append(parts, fmt.Sprintf("and %d more", len(denied)-i))
			break
		}
		parts = append(parts, fmt.Sprintf("%s needs a principal of %s (rule %d: %s)", d.Path, strings.Join(d.Principals, ","), d.RuleIndex, strings.Join(d.Rule.Paths, ",")))
	}
	principals := noneName
	if len(signer.Principals) > 0 {
		principals = strings.Join(signer.Principals, ",")
	}
	return &VerificationError{Object: commitObjectName, Commit: commit, Signer: signer.String(), Failure: PathRuleRefused,
		Detail: fmt.Sprintf("%s, and the signer's principals are %s", strings.Join(parts, "; "), principals)}
}

// CommitVerdict is one commit of a verified range: its signer, the paths
// it changed, and its refusal (nil when it verifies).
type CommitVerdict struct {
	// Object is what was verified: "commit" (when empty) or the tag.
	Object  string
	Commit  string
	Signer  Signer
	Changed []string
	Err     error
}

// RangeOptions bound a range verification.
type RangeOptions struct {
	Rules []PathRule
	// MaxCommits bounds the commits verified (DefaultMaxVerifiedCommits
	// when zero); LimitName is the field or flag that raises it, named in
	// the refusal.
	MaxCommits int
	LimitName  string
}

// ErrRangeTooLong: a range holds more commits than RangeOptions.MaxCommits.
var ErrRangeTooLong = errors.New("too many commits to verify")

// VerifyRange verifies every commit reachable from to and not from from
// (git's from..to), each signed by a trusted key at now and allowed by the
// path rules to change the paths it changes (against its parent; for a
// merge, the paths that differ from every parent: what the merge itself
// brings). So a chain of commits cannot bring a change through a commit its
// signer may not make, whatever commit comes last. from empty (nothing
// applied before), or not in the repository (history rewritten): to alone
// is verified, and every file of its tree counts as changed. The verdicts
// come newest first; an error is the range unreadable or too long, not a
// refusal.
func VerifyRange(repository *git.Repository, from, to string, keys TrustedKeys, now time.Time, options RangeOptions) ([]CommitVerdict, error) {
	limit := options.MaxCommits
	if limit <= 0 {
		limit = DefaultMaxVerifiedCommits
	}
	tip, err := repository.CommitObject(plumbing.NewHash(to))
	if err != nil {
		return nil, fmt.Errorf("read commit %s: %w", to, err)
	}
	var base *object.Commit
	if from != "" {
		base, _ = repository.CommitObject(plumbing.NewHash(from))
	}
	if base == nil {
		return []CommitVerdict{verifyOne(tip, nil, keys, now, options.Rules)}, nil
	}
	commits, err := commitsBetween(base, tip, limit)
	if errors.Is(err, ErrRangeTooLong) {
		return nil, fmt.Errorf("%w: %s..%s holds more than %d commits; raise %s, or apply a revision in between", err, from, to, limit, options.LimitName)
	}
	if err != nil {
		return nil, err
	}
	verdicts := make([]CommitVerdict, 0, len(commits))
	for _, commit := range commits {
		parents, err := parentsOf(commit)
		if err != nil {
			return nil, err
		}
		verdicts = append(verdicts, verifyOne(commit, parents, keys, now, options.Rules))
	}
	return verdicts, nil
}

// The marks of commitsBetween's walk.
const (
	fromTip  = 1 << iota // an ancestor of the tip (or the tip)
	fromBase             // an ancestor of the base (or the base): not in the range
)

// commitsBetween are the commits reachable from tip and not from base,
// newest first, as `git rev-list base..tip` finds them: one walk newest
// first by committer time, painting the ancestors of either, that stops
// once every commit left to read is the base's. A branch merged after it
// forked below base is walked down to where it forked, and no further.
// More than limit commits is ErrRangeTooLong; the walk reads at most
// MaxAncestryWalk commits. A committer clock that lies can only put a
// commit of the base's in the range (verified for nothing), never leave
// one of the tip's out: each is marked the tip's before it is read.
func commitsBetween(base, tip *object.Commit, limit int) ([]*object.Commit, error) {
	marks := map[plumbing.Hash]uint8{tip.Hash: fromTip}
	marks[base.Hash] |= fromBase
	queue := &commitQueue{}
	heap.Push(queue, tip)
	if base.Hash != tip.Hash {
		heap.Push(queue, base)
	}
	done := map[plumbing.Hash]uint8{}
	var order []*object.Commit
	for read := 0; queue.Len() > 0 && queue.anyOutside(marks); read++ {
		if read == MaxAncestryWalk {
			return nil, fmt.Errorf("%w: more than %d commits read", ErrHistoryTooLong, MaxAncestryWalk)
		}
		commit := heap.Pop(queue).(*object.Commit)
		mark := marks[commit.Hash]
		if done[commit.Hash] == mark {
			continue
		}
		if done[commit.Hash] == 0 {
			order = append(order, commit)
		}
		done[commit.Hash] = mark
		parents, err := parentsOf(commit)
		if err != nil {
			return nil, err
		}
		for _, parent := range parents {
			if marks[parent.Hash]|mark != marks[parent.Hash] {
				marks[parent.Hash] |= mark
				heap.Push(queue, parent)
			}
		}
	}
	var between []*object.Commit
	for _, commit := range order {
		if marks[commit.Hash] == fromTip {
			if len(between) == limit {
				return nil, ErrRangeTooLong
			}
			between = append(between, commit)
		}
	}
	return between, nil
}

// commitQueue is a max-heap of commits by committer time.
type commitQueue []*object.Commit

func (q commitQueue) Len() int           { return len(q) }
func (q commitQueue) Less(i, j int) bool { return q[i].Committer.When.After(q[j].Committer.When) }
func (q commitQueue) Swap(i, j int)      { q[i], q[j] = q[j], q[i] }
func (q *commitQueue) Push(x any)        { *q = append(*q, x.(*object.Commit)) }
func (q *commitQueue) Pop() any {
	old := *q
	last := old[len(old)-1]
	*q = old[:len(old)-1]
	return last
}

// anyOutside says whether a queued commit is not yet known to be the
// base's: while one is, the range may go on below it.
func (q commitQueue) anyOutside(marks map[plumbing.Hash]uint8) bool {
	for _, commit := range q {
		if marks[commit.Hash]&fromBase == 0 {
			return true
		}
	}
	return false
}

func parentsOf(commit *object.Commit) ([]*object.Commit, error) {
	var parents []*object.Commit
	err := commit.Parents().ForEach(func(parent *object.Commit) error {
		parents = append(parents, parent)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("read the parents of commit %s: %w", commit.Hash, err)
	}
	return parents, nil
}

// verifyOne is the verdict of one commit: its signature, then, with rules,
// the paths it changed against parents (nil: every file of its tree).
func verifyOne(commit *object.Commit, parents []*object.Commit, keys TrustedKeys, now time.Time, rules []PathRule) CommitVerdict {
	verdict := CommitVerdict{Object: commitObjectName, Commit: commit.Hash.String()}
	verdict.Signer, verdict.Err = VerifyCommitSignature(commit, keys, now)
	if verdict.Err != nil || len(rules) == 0 {
		return verdict
	}
	changed, err := changedPaths(commit, parents)
	if err != nil {
		verdict.Err = err
		return verdict
	}
	verdict.Changed = changed
	if denied := DeniedPaths(changed, rules, verdict.Signer); len(denied) > 0 {
		verdict.Err = pathRuleError(verdict.Commit, verdict.Signer, denied)
	}
	return verdict
}

// changedPaths are the paths commit changes against each of parents (the
// paths that differ from all of them), sorted; every file of its tree
// when it has none.
func changedPaths(commit *object.Commit, parents []*object.Commit) ([]string, error) {
	tree, err := commit.Tree()
	if err != nil {
		return nil, fmt.Errorf("read the tree of commit %s: %w", commit.Hash, err)
	}
	if len(parents) == 0 {
		var all []string
		err := tree.Files().ForEach(func(f *object.File) error {
			all = append(all, f.Name)
			return nil
		})
		if err != nil {
			return nil, fmt.Errorf("list the files of commit %s: %w", commit.Hash, err)
		}
		sort.Strings(all)
		return all, nil
	}
	counts := map[string]int{}
	for _, parent := range parents {
		parentTree, err := parent.Tree()
		if err != nil {
			return nil, fmt.Errorf("read the tree of commit %s: %w", parent.Hash, err)
		}
		changes, err := object.DiffTree(parentTree, tree)
		if err != nil {
			return nil, fmt.Errorf("diff commit %s with its parent %s: %w", commit.Hash, parent.Hash, err)
		}
		names := map[string]bool{}
		for _, change := range changes {
			names[change.From.Name] = true
			names[change.To.Name] = true
		}
		delete(names, "")
		for name := range names {
			counts[name]++
		}
	}
	var changed []string
	for name, count := range counts {
		if count == len(parents) {
			changed = append(changed, name)
		}
	}
	sort.Strings(changed)
	return changed, nil
}

// FirstRefusal is the refusal of the oldest refused commit of verdicts
// (newest first), nil when every commit verifies.
func FirstRefusal(verdicts []CommitVerdict) error {
	for i := len(verdicts) - 1; i >= 0; i-- {
		if verdicts[i].Err != nil {
			return verdicts[i].Err
		}
	}
	return nil
}
