package gitsource

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"
	. "github.com/onsi/gomega"

	"github.com/profilesync/profilesync/test/gitserver"
)

// serverBranch is the commit a branch of repo is at on server; empty when
// it does not exist.
func serverBranch(t *testing.T, server *gitserver.Server, repo, branch string) string {
	t.Helper()
	repository, err := git.PlainOpen(filepath.Join(server.Root(), repo+".git"))
	if err != nil {
		t.Fatal(err)
	}
	ref, err := repository.Reference(plumbing.NewBranchReferenceName(branch), true)
	if err != nil {
		return ""
	}
	return ref.Hash().String()
}

func TestAProposalIsOneCommitOnItsBaseAndIsUpdatedInPlace(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	server := startGitServer(t, gitserver.Options{Username: "user", Password: "s3cret", AllowPush: true})
	base := seededRepo(t, server, "profiles")
	fetcher, err := New(t.TempDir(), FetcherOptions{AllowCredentialsOverHTTP: true, MaxCheckoutSize: 1 << 20})
	g.Expect(err).NotTo(HaveOccurred())
	req := ProposalRequest{URL: server.RepoURL("profiles"), CacheKey: "versionupdate/ns/versions",
		Credentials: map[string][]byte{CredentialUsername: []byte("user"), CredentialPassword: []byte("s3cret")},
		Base:        gitserver.DefaultBranch, Branch: "profilesync/versions"}
	author := object.Signature{Name: "bot", Email: "bot@example.com", When: time.Date(2026, 11, 28, 0, 0, 0, 0, time.UTC)}
	change := ProposalCommit{Files: map[string][]byte{"overlays/dev/kustomization": []byte("resources: [a.yaml]\n")}, Message: "propose\n", Author: author}

	tree := filepath.Join(t.TempDir(), "tree")
	started, err := fetcher.FetchProposalBase(ctx, req, tree, 0)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(started).To(Equal(&ProposalBase{Commit: base}))
	content, err := os.ReadFile(filepath.Join(tree, "profile.yaml"))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(string(content)).To(Equal("version: 1\n"), "the base's tree is written out")

	first, pushed, err := fetcher.PushProposal(ctx, req, started, change)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(pushed).To(BeTrue())
	g.Expect(serverBranch(t, server, "profiles", req.Branch)).To(Equal(first))
	repository, err := git.PlainOpen(filepath.Join(server.Root(), "profiles.git"))
	g.Expect(err).NotTo(HaveOccurred())
	proposal, err := repository.CommitObject(plumbing.NewHash(first))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(proposal.ParentHashes).To(Equal([]plumbing.Hash{plumbing.NewHash(base)}))
	g.Expect(proposal.Author.Email).To(Equal("bot@example.com"))
	edited, err := proposal.File("overlays/dev/kustomization")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(edited.Contents()).To(Equal("resources: [a.yaml]\n"))
	kept, err := proposal.File("profile.yaml")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(kept.Contents()).To(Equal("version: 1\n"), "what the proposal does not change is the base's")

	// The same change on the same base, later: nothing is pushed.
	again, err := fetcher.FetchProposalBase(ctx, req, filepath.Join(t.TempDir(), "tree"), 0)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(again).To(Equal(&ProposalBase{Commit: base, BranchCommit: first}))
	later := change
	later.Author.When = author.When.Add(time.Hour)
	same, pushed, err := fetcher.PushProposal(ctx, req, again, later)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(pushed).To(BeFalse())
	g.Expect(same).To(Equal(first))

	// The base moved: the branch is made again on it, one commit, replacing
	// the old proposal.
	moved := commit(t, server, "profiles", gitserver.DefaultBranch, map[string]string{"README.md": "moved\n"})
	stale := again
	_, _, err = fetcher.PushProposal(ctx, req, stale, later)
	g.Expect(errors.Is(err, ErrBaseMoved)).To(BeTrue(), "%v", err)
	g.Expect(serverBranch(t, server, "profiles", req.Branch)).To(Equal(first), "nothing is pushed on a stale base")
	fresh, err := fetcher.FetchProposalBase(ctx, req, filepath.Join(t.TempDir(), "tree"), 0)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(fresh.Commit).To(Equal(moved))
	second, pushed, err := fetcher.PushProposal(ctx, req, fresh, later)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(pushed).To(BeTrue())
	replaced, err := repository.CommitObject(plumbing.NewHash(second))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(replaced.ParentHashes).To(Equal([]plumbing.Hash{plumbing.NewHash(moved)}))
	g.Expect(serverBranch(t, server, "profiles", gitserver.DefaultBranch)).To(Equal(moved), "the base branch is never pushed to")
}

func TestAProposalRefusesWhatIsNoBranchOrNoFileOfTheBase(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	server := startGitServer(t, gitserver.Options{AllowPush: true})
	seededRepo(t, server, "profiles")
	fetcher, err := New(t.TempDir(), FetcherOptions{})
	g.Expect(err).NotTo(HaveOccurred())
	req := ProposalRequest{URL: server.RepoURL("profiles"), CacheKey: "versionupdate/ns/versions", Base: gitserver.DefaultBranch, Branch: "a..b"}
	_, err = fetcher.FetchProposalBase(ctx, req, filepath.Join(t.TempDir(), "tree"), 0)
	g.Expect(errors.Is(err, ErrInvalidRequest)).To(BeTrue(), "%v", err)

	req.Branch = "profilesync/versions"
	req.Base = "missing"
	_, err = fetcher.FetchProposalBase(ctx, req, filepath.Join(t.TempDir(), "tree"), 0)
	g.Expect(errors.Is(err, ErrReferenceNotFound)).To(BeTrue(), "%v", err)

	req.Base = gitserver.DefaultBranch
	started, err := fetcher.FetchProposalBase(ctx, req, filepath.Join(t.TempDir(), "tree"), 0)
	g.Expect(err).NotTo(HaveOccurred())
	_, _, err = fetcher.PushProposal(ctx, req, started, ProposalCommit{Files: map[string][]byte{"overlays/prod/kustomization": []byte("x")}, Message: "m"})
	g.Expect(err).To(MatchError(ContainSubstring("overlays/prod: file does not exist")))
	_, _, err = fetcher.PushProposal(ctx, req, started, ProposalCommit{Files: map[string][]byte{"../escape": []byte("x")}, Message: "m"})
	g.Expect(errors.Is(err, ErrInvalidRequest)).To(BeTrue(), "%v", err)
	g.Expect(serverBranch(t, server, "profiles", req.Branch)).To(BeEmpty())
}
