package cli

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/config"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/hiddeco/sshsig"
	. "github.com/onsi/gomega"
	"golang.org/x/crypto/ssh"
	"k8s.io/utils/ptr"

	"github.com/profilesync/profilesync/internal/rollout"
	"github.com/profilesync/profilesync/test/gitserver"
)

// statusRollout makes prod wait a day after dev.
const statusRollout = rolloutHeader + "- {name: dev, path: overlays/dev}\n- {name: prod, path: overlays/prod, after: [dev], soak: 1d}\n"

// statusRepo is a repository for 'rollout status': on main, the diff
// fixture's main tree and then its pull request, each with statusRollout.
// Both landscapes applied the first commit; dev applied the second on 21
// November at 09:00, Ready at 09:05, so prod takes it a day later. Every
// commit has a fixed time, so the hashes the reports show never change.
type statusRepo struct {
	dir            string
	repo           *git.Repository
	first, second  string
	recordsWritten int
}

// statusAt is the status's time in the tests: between dev's hold of the
// second commit and the end of prod's soak.
const statusAt = "2026-11-22T00:00:00Z"

func newStatusRepo(t *testing.T) *statusRepo {
	t.Helper()
	return newStatusRepoSignedBy(t, nil)
}

// newStatusRepoSignedBy is newStatusRepo with dev's records signed by
// devKey (nil: unsigned), as dev's operator with spec.rollout.signingKey
// signs them; prod's records are unsigned.
func newStatusRepoSignedBy(t *testing.T, devKey ssh.Signer) *statusRepo {
	t.Helper()
	g := NewWithT(t)
	dir := t.TempDir()
	repo, err := git.PlainInitWithOptions(dir, &git.PlainInitOptions{
		InitOptions: git.InitOptions{DefaultBranch: plumbing.NewBranchReferenceName("main")},
	})
	g.Expect(err).NotTo(HaveOccurred())
	worktree, err := repo.Worktree()
	g.Expect(err).NotTo(HaveOccurred())
	r := &statusRepo{dir: dir, repo: repo}
	commit := func(minute int, fixture string) string {
		copyTree(t, fixture, dir)
		g.Expect(os.WriteFile(filepath.Join(dir, rollout.FileName), []byte(statusRollout), 0o644)).To(Succeed())
		g.Expect(worktree.AddWithOptions(&git.AddOptions{All: true})).To(Succeed())
		when := time.Date(2026, 11, 20, 12, minute, 0, 0, time.UTC)
		hash, err := worktree.Commit("fixture", &git.CommitOptions{Author: &object.Signature{Name: "test", Email: "test@example.com", When: when}})
		g.Expect(err).NotTo(HaveOccurred())
		return hash.String()
	}
	r.first = commit(1, diffFixtureMain)
	r.second = commit(2, diffFixturePR)

	day := func(d, h, m int) time.Time { return time.Date(2026, 11, d, h, m, 0, 0, time.UTC) }
	r.signedRecord(t, rollout.Record{Landscape: "dev", Kind: rollout.RecordApplied, Revision: r.first, AppliedAt: day(20, 12, 30), ReadyAt: day(20, 12, 31), OperatorVersion: "v0.1.0"}, devKey)
	r.record(t, rollout.Record{Landscape: "prod", Kind: rollout.RecordApplied, Revision: r.first, AppliedAt: day(20, 13, 0), ReadyAt: day(20, 13, 2), OperatorVersion: "v0.1.0"})
	r.signedRecord(t, rollout.Record{Landscape: "dev", Kind: rollout.RecordApplied, Revision: r.second, AppliedAt: day(21, 9, 0), ReadyAt: day(21, 9, 5), OperatorVersion: "v0.1.0"}, devKey)
	return r
}

// record writes record as the records of the operator are written: a
// commit holding one record.json on top of the landscape's ref.
func (r *statusRepo) record(t *testing.T, record rollout.Record) {
	t.Helper()
	r.signedRecord(t, record, nil)
}

// signedRecord is record, the commit signed by key (nil: unsigned) as git
// signs with gpg.format=ssh.
func (r *statusRepo) signedRecord(t *testing.T, record rollout.Record, key ssh.Signer) {
	t.Helper()
	content, err := rollout.EncodeRecord(record)
	NewWithT(t).Expect(err).NotTo(HaveOccurred())
	when := record.ReadyAt
	if when.IsZero() { // a refusal, a hold or its release
		when = record.AppliedAt
	}
	r.writeSignedRecordCommit(t, record.Landscape, content, when, key)
}

// writeRecordCommit puts content, as record.json, in a new commit on top of
// landscape's ref.
func (r *statusRepo) writeRecordCommit(t *testing.T, landscape string, content []byte, when time.Time) {
	t.Helper()
	r.writeSignedRecordCommit(t, landscape, content, when, nil)
}

// writeSignedRecordCommit is writeRecordCommit with the commit signed by
// key when it is not nil.
func (r *statusRepo) writeSignedRecordCommit(t *testing.T, landscape string, content []byte, when time.Time, key ssh.Signer) {
	t.Helper()
	g := NewWithT(t)
	storer := r.repo.Storer
	blob := storer.NewEncodedObject()
	blob.SetType(plumbing.BlobObject)
	writer, err := blob.Writer()
	g.Expect(err).NotTo(HaveOccurred())
	_, err = writer.Write(content)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(writer.Close()).To(Succeed())
	blobHash, err := storer.SetEncodedObject(blob)
	g.Expect(err).NotTo(HaveOccurred())
	treeObject := storer.NewEncodedObject()
	tree := &object.Tree{Entries: []object.TreeEntry{{Name: rollout.RecordFileName, Mode: filemode.Regular, Hash: blobHash}}}
	g.Expect(tree.Encode(treeObject)).To(Succeed())
	treeHash, err := storer.SetEncodedObject(treeObject)
	g.Expect(err).NotTo(HaveOccurred())

	refName := plumbing.ReferenceName(rollout.LandscapeRefPrefix + landscape)
	signature := object.Signature{Name: "profilesync", Email: "profilesync@profilesync.invalid", When: when}
	commit := &object.Commit{Author: signature, Committer: signature, Message: "record\n", TreeHash: treeHash}
	if tip, err := r.repo.Reference(refName, true); err == nil {
		commit.ParentHashes = []plumbing.Hash{tip.Hash()}
	}
	if key != nil {
		payload := &plumbing.MemoryObject{}
		g.Expect(commit.EncodeWithoutSignature(payload)).To(Succeed())
		reader, err := payload.Reader()
		g.Expect(err).NotTo(HaveOccurred())
		signature, err := sshsig.Sign(reader, key, sshsig.HashSHA512, "git")
		g.Expect(err).NotTo(HaveOccurred())
		commit.PGPSignature = string(sshsig.Armor(signature))
	}
	commitObject := storer.NewEncodedObject()
	g.Expect(commit.Encode(commitObject)).To(Succeed())
	commitHash, err := storer.SetEncodedObject(commitObject)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(storer.SetReference(plumbing.NewHashReference(refName, commitHash))).To(Succeed())
	r.recordsWritten++
}

// statusOutput runs 'rollout status' and replaces the repository's
// directory, which differs in every run, with REPO.
func statusOutput(t *testing.T, repoArg string, args ...string) (status int, stdout, stderr string) {
	t.Helper()
	status, stdout, stderr = run(t, "rollout", "", append([]string{"status", repoArg}, args...)...)
	return status, strings.ReplaceAll(stdout, repoArg, "REPO"), strings.ReplaceAll(stderr, repoArg, "REPO")
}

func TestRolloutStatusShowsWhatEachLandscapeRunsAndWaitsFor(t *testing.T) {
	repo := newStatusRepo(t)
	for _, tt := range []struct{ output, golden string }{
		{"table", "status.txt"},
		{"markdown", "status.md"},
		{"json", "status.json"},
	} {
		t.Run(tt.output, func(t *testing.T) {
			g := NewWithT(t)
			status, stdout, stderr := statusOutput(t, repo.dir, "--at", statusAt, "--output", tt.output)
			g.Expect(status).To(Equal(exitOK), stderr)
			g.Expect(stderr).To(BeEmpty())
			assertGolden(t, filepath.Join("testdata", "rollout", tt.golden), stdout)
		})
	}

	g := NewWithT(t)
	_, stdout, _ := statusOutput(t, repo.dir, "--at", statusAt, "--output", "json")
	var report rolloutStatus
	g.Expect(json.Unmarshal([]byte(stdout), &report)).To(Succeed())
	g.Expect(report.Branch).To(Equal("main"))
	g.Expect(report.Tip).To(Equal(repo.second))
	dev, prod := report.Landscapes[0], report.Landscapes[1]
	g.Expect(dev.Applied.Revision).To(Equal(repo.second))
	g.Expect(dev.Candidates).To(BeZero(), "dev runs the tip")
	g.Expect(dev.Waiting).To(BeNil())
	g.Expect(prod.Applied.Revision).To(Equal(repo.first))
	g.Expect(prod.Applied.AppliedAt).To(Equal(time.Date(2026, 11, 20, 13, 0, 0, 0, time.UTC)))
	g.Expect(prod.Takes).To(BeNil(), "dev has not held the second commit for a day")
	g.Expect(prod.Waiting.Revision).To(Equal(repo.second))
	g.Expect(*prod.Waiting.EligibleAt).To(Equal(time.Date(2026, 11, 22, 9, 5, 0, 0, time.UTC)), "dev's readyAt plus prod's soak")
	g.Expect(prod.Overlay).To(Equal(overlaySource{Revision: repo.first, From: overlayFromRecord}))

	// The matrix: dev supports 1.34.2 from 1 December, prod, which runs the
	// first commit, does not list it yet.
	var found bool
	for _, v := range report.Versions {
		if v.Profile == "CloudProfile/aws" && v.MachineImage == "" && v.Version == "1.34.2" {
			found = true
			g.Expect(v.Landscapes[0].Listed).To(BeTrue())
			g.Expect(v.Landscapes[0].Stages).To(ContainElement(stageStart{Classification: "supported", At: ptr.To(time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC))}))
		}
	}
	g.Expect(found).To(BeTrue(), "kubernetes 1.34.2 of CloudProfile/aws is in the matrix")

	// Once the soak is over, prod takes the second commit.
	status, stdout, stderr := statusOutput(t, repo.dir, "--at", "2026-11-22T09:05:00Z", "--output", "json")
	g.Expect(status).To(Equal(exitOK), stderr)
	report = rolloutStatus{}
	g.Expect(json.Unmarshal([]byte(stdout), &report)).To(Succeed())
	prod = report.Landscapes[1]
	g.Expect(prod.Waiting).To(BeNil())
	g.Expect(prod.Takes.Revision).To(Equal(repo.second))
	g.Expect(*prod.Takes.EligibleAt).To(Equal(time.Date(2026, 11, 22, 9, 5, 0, 0, time.UTC)))
}

func TestRolloutStatusAtTimeLeavesOutLaterRecords(t *testing.T) {
	g := NewWithT(t)
	repo := newStatusRepo(t)
	status, stdout, stderr := statusOutput(t, repo.dir, "--at", "2026-11-21T00:00:00Z", "--output", "json")
	g.Expect(status).To(Equal(exitOK), stderr)
	var report rolloutStatus
	g.Expect(json.Unmarshal([]byte(stdout), &report)).To(Succeed())
	dev, prod := report.Landscapes[0], report.Landscapes[1]
	g.Expect(dev.Applied.Revision).To(Equal(repo.first), "dev applied the second commit after --at")
	g.Expect(dev.Takes.Revision).To(Equal(repo.second), "without upstreams dev takes the tip at once")
	g.Expect(dev.Takes.EligibleAt).To(BeNil())
	g.Expect(prod.Waiting.Revision).To(Equal(repo.second))
	g.Expect(prod.Waiting.EligibleAt).To(BeNil(), "dev does not hold it yet")
	g.Expect(prod.Waiting.Holds).To(Equal([]holdStatus{{Landscape: "dev", Running: repo.first}}))
}

func TestRolloutStatusWarnsOfGarbledRecords(t *testing.T) {
	g := NewWithT(t)
	repo := newStatusRepo(t)
	repo.writeRecordCommit(t, "prod", []byte("{not a record"), time.Date(2026, 11, 21, 10, 0, 0, 0, time.UTC))
	unknown := strings.Repeat("ab", 20)
	content, err := rollout.EncodeRecord(rollout.Record{Landscape: "dev", Kind: rollout.RecordApplied, Revision: unknown,
		AppliedAt: time.Date(2026, 11, 21, 11, 0, 0, 0, time.UTC), ReadyAt: time.Date(2026, 11, 21, 11, 1, 0, 0, time.UTC), OperatorVersion: "v0.1.0"})
	g.Expect(err).NotTo(HaveOccurred())
	repo.writeRecordCommit(t, "dev", content, time.Date(2026, 11, 21, 11, 1, 0, 0, time.UTC))

	status, stdout, stderr := statusOutput(t, repo.dir, "--at", statusAt, "--output", "json")
	g.Expect(status).To(Equal(exitOK), stderr)
	g.Expect(stderr).To(ContainSubstring("warning: prod: record left out: garbled record refs/profilesync/landscapes/prod@"))
	g.Expect(stderr).To(ContainSubstring("warning: dev: record left out: the record names a commit unknown to the repository"))
	g.Expect(stderr).To(ContainSubstring(unknown))
	var report rolloutStatus
	g.Expect(json.Unmarshal([]byte(stdout), &report)).To(Succeed())
	g.Expect(report.Landscapes[0].Applied.Revision).To(Equal(repo.second), "dev's valid records still count")
	g.Expect(report.Landscapes[1].Applied.Revision).To(Equal(repo.first), "prod's valid records still count")
	// prod's own garbled record, and dev's record that its decision left out.
	g.Expect(report.Landscapes[1].Warnings).To(HaveLen(2))
	g.Expect(report.Landscapes[1].Warnings[1]).To(HavePrefix("record of upstream dev left out: the record names a commit unknown"))
	g.Expect(*report.Landscapes[1].Waiting.EligibleAt).To(Equal(time.Date(2026, 11, 22, 9, 5, 0, 0, time.UTC)))
}

func TestRolloutStatusOfAURLMatchesThatOfThePath(t *testing.T) {
	g := NewWithT(t)
	repo := newStatusRepo(t)
	server, err := gitserver.New(t.TempDir(), gitserver.Options{AllowPush: true})
	g.Expect(err).NotTo(HaveOccurred())
	t.Cleanup(func() { _ = server.Close() })
	bare, err := git.PlainInit(filepath.Join(server.Root(), "profiles.git"), true)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(bare.Storer.SetReference(plumbing.NewSymbolicReference(plumbing.HEAD, plumbing.NewBranchReferenceName("main")))).To(Succeed())
	url := server.RepoURL("profiles")
	_, err = repo.repo.CreateRemote(&config.RemoteConfig{Name: "server", URLs: []string{url}})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(repo.repo.PushContext(context.Background(), &git.PushOptions{
		RemoteName: "server",
		RefSpecs:   []config.RefSpec{"refs/heads/*:refs/heads/*", "refs/profilesync/*:refs/profilesync/*"},
	})).To(Succeed())

	for _, output := range []string{"table", "json"} {
		status, fromPath, stderr := statusOutput(t, repo.dir, "--at", statusAt, "--output", output)
		g.Expect(status).To(Equal(exitOK), stderr)
		status, fromURL, stderr := statusOutput(t, url, "--at", statusAt, "--output", output)
		g.Expect(status).To(Equal(exitOK), stderr)
		g.Expect(fromURL).To(Equal(fromPath), "the server's default branch and records are read as the work tree's")
	}

	status, _, stderr := statusOutput(t, url, "--at", statusAt, "--branch", "release")
	g.Expect(status).To(Equal(exitInvalidInput))
	g.Expect(stderr).To(ContainSubstring(`branch "release"`))

	status, _, stderr = statusOutput(t, url, "--at", statusAt, "--max-checkout-size", "1Ki")
	g.Expect(status).To(Equal(exitInvalidInput))
	g.Expect(stderr).To(ContainSubstring("raise it with --max-checkout-size"))
}

func TestRolloutStatusErrors(t *testing.T) {
	repo := newStatusRepo(t)
	noRepo := t.TempDir()
	for _, tt := range []struct {
		name   string
		args   []string
		status int
		stderr string
	}{
		{"not a repository", []string{"status", noRepo}, exitInvalidInput, "open Git repository"},
		{"an unknown branch", []string{"status", repo.dir, "--branch", "release"}, exitInvalidInput, `read branch "release"`},
		{"two repositories", []string{"status", repo.dir, repo.dir}, exitUsage, "one repository, PATH or URL, at most"},
		{"an unknown format", []string{"status", repo.dir, "-o", "csv"}, exitUsage, `not a report format: "csv"`},
		{"an unknown subcommand", []string{"stats"}, exitUsage, `unknown command "stats" for "profilesync rollout"`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			status, stdout, stderr := run(t, "rollout", "", tt.args...)
			g.Expect(status).To(Equal(tt.status), stderr)
			g.Expect(stdout).To(BeEmpty())
			g.Expect(stderr).To(ContainSubstring(tt.stderr))
		})
	}
}

func TestRolloutStatusNamesTheFieldOfABadRolloutFile(t *testing.T) {
	g := NewWithT(t)
	repo := newStatusRepo(t)
	worktree, err := repo.repo.Worktree()
	g.Expect(err).NotTo(HaveOccurred())
	bad := rolloutHeader + "- {name: dev, path: overlays/dev}\n- {name: prod, path: overlays/prod, after: [stagin]}\n"
	g.Expect(os.WriteFile(filepath.Join(repo.dir, rollout.FileName), []byte(bad), 0o644)).To(Succeed())
	_, err = worktree.Add(rollout.FileName)
	g.Expect(err).NotTo(HaveOccurred())
	_, err = worktree.Commit("bad rollout", &git.CommitOptions{Author: &object.Signature{Name: "test", Email: "test@example.com", When: time.Date(2026, 11, 21, 0, 0, 0, 0, time.UTC)}})
	g.Expect(err).NotTo(HaveOccurred())

	status, stdout, stderr := statusOutput(t, repo.dir, "--at", statusAt)
	g.Expect(status).To(Equal(exitInvalidInput))
	g.Expect(stdout).To(BeEmpty())
	g.Expect(stderr).To(ContainSubstring("branch main at "))
	g.Expect(stderr).To(ContainSubstring(`profilesync-rollout.yaml: landscapes[1].after[0]: unknown landscape "stagin"`))
}

func TestRolloutStatusHelpPrintsUsageWithAnExample(t *testing.T) {
	g := NewWithT(t)
	status, stdout, stderr := run(t, "rollout", "", "status", "--help")
	g.Expect(status).To(Equal(exitOK))
	g.Expect(stdout).To(ContainSubstring("Usage:\n  profilesync rollout status"))
	g.Expect(stdout).To(ContainSubstring("Examples:\n  profilesync rollout status"))
	g.Expect(stderr).To(BeEmpty())
}

func TestRolloutStatusOfALandscapeWithoutRecordsReadsTheTip(t *testing.T) {
	g := NewWithT(t)
	repo := newStatusRepo(t)
	g.Expect(repo.repo.Storer.RemoveReference(plumbing.ReferenceName(rollout.LandscapeRefPrefix + "prod"))).To(Succeed())
	repo.record(t, rollout.Record{Landscape: "dev", Kind: rollout.RecordHotfix, Revision: repo.second,
		AppliedAt: time.Date(2026, 11, 21, 10, 0, 0, 0, time.UTC), ReadyAt: time.Date(2026, 11, 21, 10, 1, 0, 0, time.UTC), OperatorVersion: "v0.1.0"})

	status, stdout, stderr := statusOutput(t, repo.dir, "--at", statusAt)
	g.Expect(status).To(Equal(exitOK), stderr)
	g.Expect(stdout).To(MatchRegexp(`\ndev +- +- +%s \(hotfix\) +2026-11-21T10:00:00Z +up to date\n`, repo.second[:7]))
	g.Expect(stdout).To(MatchRegexp(`\nprod +dev +1d +no record +- +takes %s now; %s eligible at 2026-11-22T09:05:00Z\n`, repo.first[:7], repo.second[:7]))
	g.Expect(stdout).To(ContainSubstring("prod has no record: its versions are those of the tip of main (" + repo.second[:7] + ")."))

	status, stdout, stderr = statusOutput(t, repo.dir, "--at", statusAt, "-o", "json")
	g.Expect(status).To(Equal(exitOK), stderr)
	var report rolloutStatus
	g.Expect(json.Unmarshal([]byte(stdout), &report)).To(Succeed())
	prod := report.Landscapes[1]
	g.Expect(prod.Applied).To(BeNil())
	g.Expect(prod.Candidates).To(Equal(2), "every commit of the branch")
	g.Expect(prod.Takes.Revision).To(Equal(repo.first), "dev has held the first commit for more than a day")
	g.Expect(prod.Overlay).To(Equal(overlaySource{Revision: repo.second, From: overlayFromTip}))
	g.Expect(*prod.Waiting.EligibleAt).To(Equal(time.Date(2026, 11, 22, 9, 5, 0, 0, time.UTC)),
		"dev has held the tip since its first record of it: the hotfix of the same revision does not interrupt")
}

func TestRolloutStatusShowsARefusalAndNeverPromotesIt(t *testing.T) {
	g := NewWithT(t)
	repo := newStatusRepo(t)
	worktree, err := repo.repo.Worktree()
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(os.WriteFile(filepath.Join(repo.dir, "README.md"), []byte("refused\n"), 0o644)).To(Succeed())
	_, err = worktree.Add("README.md")
	g.Expect(err).NotTo(HaveOccurred())
	third, err := worktree.Commit("third", &git.CommitOptions{Author: &object.Signature{Name: "test", Email: "test@example.com", When: time.Date(2026, 11, 21, 11, 0, 0, 0, time.UTC)}})
	g.Expect(err).NotTo(HaveOccurred())
	repo.record(t, rollout.Record{Landscape: "dev", Kind: rollout.RecordRefused, Revision: third.String(),
		AppliedAt: time.Date(2026, 11, 21, 11, 5, 0, 0, time.UTC), OperatorVersion: "v0.1.0", Reason: "ValidationFailed"})

	status, stdout, stderr := statusOutput(t, repo.dir, "--at", statusAt)
	g.Expect(status).To(Equal(exitOK), stderr)
	short := third.String()[:7]
	g.Expect(stdout).To(MatchRegexp(`\ndev +- +- +%s +2026-11-21T09:00:00Z +-\n`, repo.second[:7]), "dev keeps what it ran and does not take what it refused")
	g.Expect(stdout).To(ContainSubstring("dev refused " + short + " at 2026-11-21T11:05:00Z (ValidationFailed)."))
	g.Expect(stdout).To(MatchRegexp(`\nprod +dev +1d +%s +2026-11-20T13:00:00Z +%s eligible at 2026-11-22T09:05:00Z\n`, repo.first[:7], repo.second[:7]),
		"prod waits for the newest commit dev holds, not the refused tip")

	status, stdout, stderr = statusOutput(t, repo.dir, "--at", statusAt, "-o", "json")
	g.Expect(status).To(Equal(exitOK), stderr)
	var report rolloutStatus
	g.Expect(json.Unmarshal([]byte(stdout), &report)).To(Succeed())
	dev := report.Landscapes[0]
	g.Expect(dev.Refused).To(Equal(&refusedRevision{Revision: third.String(), RefusedAt: time.Date(2026, 11, 21, 11, 5, 0, 0, time.UTC),
		Reason: "ValidationFailed", Record: dev.Refused.Record}))
	g.Expect(dev.Takes).To(BeNil())
	g.Expect(dev.Candidates).To(Equal(1))
}

// statusDevKey is dev's record key in the tests: an Ed25519 key from a
// fixed seed, whose signatures (Ed25519 is deterministic) keep the record
// commits, and so the golden reports, the same in every run.
func statusDevKey(t *testing.T) ssh.Signer {
	t.Helper()
	signer, err := ssh.NewSignerFromKey(ed25519.NewKeyFromSeed(bytes.Repeat([]byte{7}, ed25519.SeedSize)))
	if err != nil {
		t.Fatal(err)
	}
	return signer
}

// TestRolloutStatusWithUpstreamKeysCountsOnlySignedRecords: dev signs its
// records; someone who can push writes an unsigned applied record claiming
// dev held the second commit since 1 November. Without keys, rollout status
// shows prod taking it at once; with --upstream-keys naming dev's key, the
// forged record is left out with a warning, prod waits its soak on dev's
// genuine record, and the report marks the unverified records (goldens
// status-signed.*).
func TestRolloutStatusWithUpstreamKeysCountsOnlySignedRecords(t *testing.T) {
	devKey := statusDevKey(t)
	repo := newStatusRepoSignedBy(t, devKey)
	forgedAt := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	repo.record(t, rollout.Record{Landscape: "dev", Kind: rollout.RecordApplied, Revision: repo.second, AppliedAt: forgedAt, ReadyAt: forgedAt, OperatorVersion: "v0.1.0"})
	forged, err := repo.repo.Reference(plumbing.ReferenceName(rollout.LandscapeRefPrefix+"dev"), true)
	NewWithT(t).Expect(err).NotTo(HaveOccurred())
	keys := filepath.Join(t.TempDir(), "record_signers")
	NewWithT(t).Expect(os.WriteFile(keys, append([]byte("dev "), ssh.MarshalAuthorizedKey(devKey.PublicKey())...), 0o600)).To(Succeed())

	t.Run("without keys the forged record makes prod skip its soak", func(t *testing.T) {
		g := NewWithT(t)
		status, stdout, stderr := statusOutput(t, repo.dir, "--at", statusAt, "--output", "json")
		g.Expect(status).To(Equal(exitOK), stderr)
		var report rolloutStatus
		g.Expect(json.Unmarshal([]byte(stdout), &report)).To(Succeed())
		g.Expect(report.Landscapes[1].Takes).NotTo(BeNil())
		g.Expect(report.Landscapes[1].Takes.Revision).To(Equal(repo.second))
	})

	for _, tt := range []struct{ output, golden string }{
		{"table", "status-signed.txt"},
		{"markdown", "status-signed.md"},
		{"json", "status-signed.json"},
	} {
		t.Run("with --upstream-keys, "+tt.output, func(t *testing.T) {
			g := NewWithT(t)
			status, stdout, stderr := statusOutput(t, repo.dir, "--at", statusAt, "--output", tt.output, "--upstream-keys", keys)
			g.Expect(status).To(Equal(exitOK), stderr)
			g.Expect(stderr).To(ContainSubstring("warning: prod: record of upstream dev left out: the record's signature does not verify: record " +
				forged.Hash().String() + " of landscape dev (applied " + repo.second + "): unsigned (signed by none): no signature; the record is ignored"))
			assertGolden(t, filepath.Join("testdata", "rollout", tt.golden), stdout)
		})
	}

	g := NewWithT(t)
	_, stdout, _ := statusOutput(t, repo.dir, "--at", statusAt, "--output", "json", "--upstream-keys", keys)
	var report rolloutStatus
	g.Expect(json.Unmarshal([]byte(stdout), &report)).To(Succeed())
	dev, prod := report.Landscapes[0], report.Landscapes[1]
	g.Expect(prod.Takes).To(BeNil(), "the forged record does not count")
	g.Expect(*prod.Waiting.EligibleAt).To(Equal(time.Date(2026, 11, 22, 9, 5, 0, 0, time.UTC)), "dev's genuine readyAt plus prod's soak")
	g.Expect(prod.Unverified).To(HaveLen(1))
	g.Expect(prod.Unverified[0].Record).To(Equal(forged.Hash().String()))
	g.Expect(prod.Unverified[0].Signature.Failure).To(Equal("unsigned"))
	g.Expect(dev.Applied.Signature.Verified).To(BeFalse(), "dev's own newest record is the forged one: marked, as what dev runs is read from it")
	g.Expect(prod.Applied.Signature.Failure).To(Equal("unsigned"), "prod signs nothing")

	t.Run("a keys file that cannot be read fails naming the flag and the line", func(t *testing.T) {
		g := NewWithT(t)
		bad := filepath.Join(t.TempDir(), "bad")
		g.Expect(os.WriteFile(bad, []byte("ssh-ed25519\n"), 0o600)).To(Succeed())
		status, _, stderr := statusOutput(t, repo.dir, "--upstream-keys", bad)
		g.Expect(status).To(Equal(exitInvalidInput))
		g.Expect(stderr).To(ContainSubstring("--upstream-keys " + bad + ": line 1"))
	})
}

// TestRolloutStatusReadsTheRolloutFileOnlyFromAVerifiedTip: with
// --verify-allowed-signers (or --verify-keys), the rollout file is read
// only from a tip signed by a trusted key, as the operator with spec.verify
// reads it: an unsigned tip, and one signed by a key not listed, fail
// naming the commit, the signer and why; a tip the key signed shows the
// same report as without the flags.
func TestRolloutStatusReadsTheRolloutFileOnlyFromAVerifiedTip(t *testing.T) {
	trusted, stranger := seededSSHKey(t, 3), seededSSHKey(t, 4)
	signers := filepath.Join(t.TempDir(), "allowed_signers")
	NewWithT(t).Expect(os.WriteFile(signers, append([]byte("release-manager "), ssh.MarshalAuthorizedKey(trusted.PublicKey())...), 0o600)).To(Succeed())
	// commitOnTop adds an empty commit on main, signed by key (nil: unsigned).
	commitOnTop := func(t *testing.T, repo *statusRepo, key ssh.Signer) string {
		t.Helper()
		g := NewWithT(t)
		worktree, err := repo.repo.Worktree()
		g.Expect(err).NotTo(HaveOccurred())
		options := &git.CommitOptions{AllowEmptyCommits: true,
			Author: &object.Signature{Name: "test", Email: "test@example.com", When: time.Date(2026, 11, 21, 10, 0, 0, 0, time.UTC)}}
		if key != nil {
			options.Signer = sshCommitSigner{key}
		}
		hash, err := worktree.Commit("on top", options)
		g.Expect(err).NotTo(HaveOccurred())
		return hash.String()
	}
	for _, tt := range []struct {
		name string
		key  ssh.Signer
		want []string // parts of the error; none: the report
	}{
		{"an unsigned tip fails, naming it", nil, []string{"unsigned", "signed by none"}},
		{"a tip signed by a key not listed fails, naming the key", stranger, []string{"unknown key", "SSH key " + ssh.FingerprintSHA256(stranger.PublicKey())}},
		{"a tip the trusted key signed shows the report", trusted, nil},
	} {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			repo := newStatusRepo(t)
			tip := commitOnTop(t, repo, tt.key)
			status, stdout, stderr := statusOutput(t, repo.dir, "--at", statusAt, "--output", "json", "--verify-allowed-signers", signers)
			if tt.want == nil {
				g.Expect(status).To(Equal(exitOK), stderr)
				_, unverified, _ := statusOutput(t, repo.dir, "--at", statusAt, "--output", "json")
				g.Expect(stdout).To(Equal(unverified), "the same report as without the keys")
				return
			}
			g.Expect(status).To(Equal(exitInvalidInput))
			g.Expect(stdout).To(BeEmpty(), "no report from a rollout file that does not verify")
			g.Expect(stderr).To(ContainSubstring("branch main at " + tip[:7] + ": " + rollout.FileName + " is read from it, and it does not verify"))
			g.Expect(stderr).To(ContainSubstring("commit " + tip + ": " + tt.want[0]))
			for _, w := range tt.want[1:] {
				g.Expect(stderr).To(ContainSubstring(w))
			}
		})
	}
}
