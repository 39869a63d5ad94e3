package gitsource

import (
	"bytes"
	"container/heap"
	"errors"
	"fmt"

	"github.com/go-git/go-git/v5/plumbing"

	"github.com/profilesync/profilesync/internal/rollout"
)

// MaxAncestryWalk bounds the commits one ancestry walk reads: far more
// than lie between a branch's candidates and the revisions the landscapes
// recorded in a profiles repository, and few enough to read in seconds.
const MaxAncestryWalk = 500_000

// ErrHistoryTooLong marks an ancestry walk that would read more than
// MaxAncestryWalk commits.
var ErrHistoryTooLong = errors.New("the history to walk is longer than the most one decision reads")

// Ancestry answers, from one walk of the history, which of commits each
// of tips contains; it implements rollout.Repository. commits, newest
// first, are consecutive first-parent commits of one branch (the
// candidates of a decision), so nothing at or below the first parent of the
// oldest (the base) contains any of them.
//
// The walk paints the history down from the tips, each tip a bit that its
// ancestors inherit, and from the base as "stale" (an ancestor of the
// base). It reads commits newest first by committer time and stops once
// every commit left to read is stale: no candidate lies below. A clock
// that lies only costs work, never a wrong answer: a commit that gains a
// bit or the stale mark after it was read is read again. Each commit is
// read at most once from the repository, through l.repository. A tip the
// repository does not have contains nothing.
func (l *Landscapes) Ancestry(tips, commits []string) (rollout.Ancestry, error) {
	walk := &ancestryWalk{l: l, nodes: map[plumbing.Hash]*walkNode{}, tipIndex: map[string]int{}}
	for _, tip := range tips {
		if _, seen := walk.tipIndex[tip]; !seen {
			walk.tipIndex[tip] = len(walk.tipIndex)
		}
	}
	walk.words = (len(walk.tipIndex) + 63) / 64
	if len(commits) > 0 {
		oldest, err := walk.node(plumbing.NewHash(commits[len(commits)-1]))
		if err != nil {
			return nil, err
		}
		if len(oldest.parents) > 0 {
			base, err := walk.node(oldest.parents[0])
			if err != nil {
				return nil, err
			}
			walk.markStale(base)
		}
	}
	for tip, index := range walk.tipIndex {
		node, err := walk.node(plumbing.NewHash(tip))
		if err != nil {
			continue // unknown to the repository: contains nothing
		}
		if node.reach == nil {
			node.reach = make([]uint64, walk.words)
		}
		node.reach[index/64] |= 1 << (index % 64)
		walk.push(node)
	}
	if err := walk.run(); err != nil {
		return nil, err
	}
	answer := &containment{tipIndex: walk.tipIndex, reach: make(map[string][]uint64, len(commits))}
	for _, commit := range commits {
		if node := walk.nodes[plumbing.NewHash(commit)]; node != nil && !node.stale {
			answer.reach[commit] = node.reach
		} else {
			answer.reach[commit] = nil
		}
	}
	return answer, nil
}

// walkNode is one commit of an ancestry walk.
type walkNode struct {
	hash    plumbing.Hash
	parents []plumbing.Hash
	when    int64
	// reach has the bit of every tip that contains this commit, as far as
	// the walk has painted it.
	reach []uint64
	// stale marks an ancestor of the base; its bits need not travel on.
	stale  bool
	queued bool
}

type ancestryWalk struct {
	l        *Landscapes
	nodes    map[plumbing.Hash]*walkNode
	tipIndex map[string]int
	words    int
	queue    walkQueue
	// live counts the queued commits that are not stale: the walk ends
	// when none is left.
	live int
}

// node reads commit once.
func (w *ancestryWalk) node(hash plumbing.Hash) (*walkNode, error) {
	if node, ok := w.nodes[hash]; ok {
		return node, nil
	}
	if len(w.nodes) >= MaxAncestryWalk {
		return nil, fmt.Errorf("%w (%d commits)", ErrHistoryTooLong, MaxAncestryWalk)
	}
	commit, err := w.l.repository.CommitObject(hash)
	if err != nil {
		return nil, fmt.Errorf("read commit %s: %w", hash, err)
	}
	node := &walkNode{hash: hash, parents: commit.ParentHashes, when: commit.Committer.When.Unix()}
	w.nodes[hash] = node
	return node, nil
}

func (w *ancestryWalk) push(node *walkNode) {
	if node.queued {
		return
	}
	node.queued = true
	if !node.stale {
		w.live++
	}
	heap.Push(&w.queue, node)
}

func (w *ancestryWalk) markStale(node *walkNode) {
	if node.stale {
		return
	}
	node.stale = true
	if node.queued {
		w.live--
	}
	// Its bits no longer matter.
	node.reach = nil
	w.push(node)
}

func (w *ancestryWalk) run() error {
	for w.live > 0 {
		node := heap.Pop(&w.queue).(*walkNode)
		node.queued = false
		if !node.stale {
			w.live--
		}
		for _, parentHash := range node.parents {
			parent, err := w.node(parentHash)
			if err != nil {
				return err
			}
			if node.stale {
				w.markStale(parent)
				continue
			}
			if parent.stale {
				continue
			}
			if parent.reach == nil {
				parent.reach = make([]uint64, w.words)
			}
			if orInto(parent.reach, node.reach) {
				w.push(parent)
			}
		}
	}
	return nil
}

// orInto adds the bits of from to into and says whether any was new.
func orInto(into, from []uint64) bool {
	added := false
	for i, word := range from {
		if word&^into[i] != 0 {
			into[i] |= word
			added = true
		}
	}
	return added
}

// walkQueue orders commits newest first by committer time.
type walkQueue []*walkNode

func (q walkQueue) Len() int { return len(q) }
func (q walkQueue) Less(i, j int) bool {
	if q[i].when != q[j].when {
		return q[i].when > q[j].when
	}
	return bytes.Compare(q[i].hash[:], q[j].hash[:]) < 0
}
func (q walkQueue) Swap(i, j int) { q[i], q[j] = q[j], q[i] }
func (q *walkQueue) Push(x any)   { *q = append(*q, x.(*walkNode)) }
func (q *walkQueue) Pop() any {
	old := *q
	node := old[len(old)-1]
	*q = old[:len(old)-1]
	return node
}

// containment is the answer of one walk.
type containment struct {
	tipIndex map[string]int
	// reach has, per commit, the bits of the tips that contain it.
	reach map[string][]uint64
}

// IsAncestor says whether descendant, a tip of the walk, contains
// ancestor, a commit of the walk.
func (c *containment) IsAncestor(ancestor, descendant string) (bool, error) {
	if ancestor == descendant {
		return true, nil
	}
	index, isTip := c.tipIndex[descendant]
	reach, isCommit := c.reach[ancestor]
	if !isTip || !isCommit {
		return false, fmt.Errorf("is %s an ancestor of %s: the ancestry walk did not cover it", ancestor, descendant)
	}
	return reach != nil && reach[index/64]&(1<<(index%64)) != 0, nil
}
