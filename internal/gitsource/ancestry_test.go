package gitsource

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/go-git/go-git/v5/plumbing/storer"
	"github.com/go-git/go-git/v5/storage/memory"
	. "github.com/onsi/gomega"
)

// graphCommit is one commit of a history written by writeGraph: its
// parents, as indexes of earlier commits, and its committer time.
type graphCommit struct {
	parents []int
	when    time.Time
}

// writeGraph writes commits, in order, with an empty tree and returns
// their hashes. A commit's index in the returned slice is its own.
func writeGraph(t testing.TB, objects storer.EncodedObjectStorer, commits []graphCommit) []plumbing.Hash {
	t.Helper()
	treeObject := objects.NewEncodedObject()
	if err := (&object.Tree{}).Encode(treeObject); err != nil {
		t.Fatal(err)
	}
	treeHash, err := objects.SetEncodedObject(treeObject)
	if err != nil {
		t.Fatal(err)
	}
	hashes := make([]plumbing.Hash, len(commits))
	for i, c := range commits {
		signature := object.Signature{Name: "test", Email: "test@example.invalid", When: c.when}
		commit := &object.Commit{Author: signature, Committer: signature, Message: fmt.Sprintf("commit %d", i), TreeHash: treeHash}
		for _, p := range c.parents {
			commit.ParentHashes = append(commit.ParentHashes, hashes[p])
		}
		encoded := objects.NewEncodedObject()
		if err := commit.Encode(encoded); err != nil {
			t.Fatal(err)
		}
		if hashes[i], err = objects.SetEncodedObject(encoded); err != nil {
			t.Fatal(err)
		}
	}
	return hashes
}

// mergingHistory is a branch of n commits (mainline, each the first parent
// of the next) with side branches forked from older commits and merged
// back as second parents, and a few commits off the branch; one commit in
// skewed has a committer time from before its parents. It returns the
// commits and the indexes of the mainline, oldest first.
func mergingHistory(random *rand.Rand, n int, skewed float64) ([]graphCommit, []int) {
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	var commits []graphCommit
	var mainline []int
	add := func(parents ...int) int {
		when := start.Add(time.Duration(len(commits)) * time.Minute)
		if random.Float64() < skewed {
			when = start.Add(-time.Duration(random.IntN(1000)) * time.Hour)
		}
		commits = append(commits, graphCommit{parents: parents, when: when})
		return len(commits) - 1
	}
	mainline = append(mainline, add())
	var open []int // side branches' tips not merged yet
	for len(mainline) < n {
		head := mainline[len(mainline)-1]
		switch r := random.IntN(10); {
		case r < 2: // a side branch from an older mainline commit
			open = append(open, add(mainline[random.IntN(len(mainline))]))
		case r < 4 && len(open) > 0: // a side branch grows
			i := random.IntN(len(open))
			open[i] = add(open[i])
		case r < 6 && len(open) > 0: // merged as the second parent
			i := random.IntN(len(open))
			mainline = append(mainline, add(head, open[i]))
			if random.IntN(3) > 0 {
				open = append(open[:i], open[i+1:]...)
			}
		default:
			mainline = append(mainline, add(head))
		}
	}
	return commits, mainline
}

func TestOneAncestryWalkAnswersAsGitDoesWhateverTheClock(t *testing.T) {
	for _, tc := range []struct {
		name   string
		seed   uint64
		skewed float64
	}{
		{"a history with merges and honest clocks", 1, 0},
		{"a history with merges where one commit in five has a clock before its parents", 2, 0.2},
		{"a history where half the clocks lie", 3, 0.5},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			random := rand.New(rand.NewPCG(tc.seed, tc.seed))
			commits, mainline := mergingHistory(random, 300, tc.skewed)
			repository, err := git.Init(memory.NewStorage(), nil)
			g.Expect(err).NotTo(HaveOccurred())
			hashes := writeGraph(t, repository.Storer, commits)
			landscapes := &Landscapes{repository: repository}

			// The candidates: the newest 40 commits of the mainline.
			var candidates []string
			for i := len(mainline) - 1; i >= len(mainline)-40; i-- {
				candidates = append(candidates, hashes[mainline[i]].String())
			}
			// The tips: any commit, on the mainline, on a side branch, off
			// the branch, and a candidate itself.
			var tips []string
			for range 60 {
				tips = append(tips, hashes[random.IntN(len(hashes))].String())
			}
			tips = append(tips, candidates[5], hashes[len(hashes)-1].String())

			answer, err := landscapes.Ancestry(tips, candidates)
			g.Expect(err).NotTo(HaveOccurred())
			contained := 0
			for _, tip := range tips {
				for _, candidate := range candidates {
					got, err := answer.IsAncestor(candidate, tip)
					g.Expect(err).NotTo(HaveOccurred())
					want, err := landscapes.IsAncestor(candidate, tip)
					g.Expect(err).NotTo(HaveOccurred())
					g.Expect(got).To(Equal(want), "does %s contain %s", tip, candidate)
					if want {
						contained++
					}
				}
			}
			g.Expect(contained).To(BeNumerically(">", 0), "some tips contain some candidates")
		})
	}
}

func TestAnAncestryWalkAnswersOnlyWhatItWasAsked(t *testing.T) {
	g := NewWithT(t)
	repository, err := git.Init(memory.NewStorage(), nil)
	g.Expect(err).NotTo(HaveOccurred())
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	hashes := writeGraph(t, repository.Storer, []graphCommit{{when: start}, {parents: []int{0}, when: start.Add(time.Minute)}, {parents: []int{1}, when: start.Add(2 * time.Minute)}})
	landscapes := &Landscapes{repository: repository}
	unknown := "abababababababababababababababababababab"
	answer, err := landscapes.Ancestry([]string{hashes[2].String(), unknown}, []string{hashes[2].String(), hashes[1].String()})
	g.Expect(err).NotTo(HaveOccurred())
	contains, err := answer.IsAncestor(hashes[1].String(), hashes[2].String())
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(contains).To(BeTrue())
	contains, err = answer.IsAncestor(hashes[1].String(), unknown)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(contains).To(BeFalse(), "a tip the repository does not have contains nothing")
	_, err = answer.IsAncestor(hashes[0].String(), hashes[2].String())
	g.Expect(err).To(MatchError(ContainSubstring("the ancestry walk did not cover it")))
}
