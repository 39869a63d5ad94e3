package gitsource

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"path/filepath"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"

	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/go-git/go-git/v5/plumbing/transport"

	"github.com/profilesync/profilesync/internal/rollout"
	"github.com/profilesync/profilesync/test/gitserver"
)

var recordTime = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

// appliedRecord is a valid record of landscape applying revision, Ready
// at recordTime plus ready.
func appliedRecord(landscape, revision string, ready time.Duration) rollout.Record {
	return rollout.Record{
		Landscape: landscape, Kind: rollout.RecordApplied, Revision: revision,
		AppliedAt: recordTime.Add(ready - time.Minute), ReadyAt: recordTime.Add(ready), OperatorVersion: "v0.4.0",
	}
}

// pushRecord pushes with a generous test timeout.
func pushRecord(fetcher *Fetcher, req LandscapeRequest, record rollout.Record) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	return fetcher.PushRecord(ctx, req, record)
}

// fetchLandscapes fetches with a generous test timeout; what it opens is
// closed when the test ends.
func fetchLandscapes(t *testing.T, fetcher *Fetcher, req LandscapeRequest) (*Landscapes, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	landscapes, err := fetcher.FetchLandscapes(ctx, req)
	if err == nil {
		t.Cleanup(func() { _ = landscapes.Close() })
	}
	return landscapes, err
}

// serverRefs lists the refs of a repository of server, read from its disk.
func serverRefs(t *testing.T, server *gitserver.Server, repo string) map[string]string {
	t.Helper()
	repository, err := git.PlainOpen(filepath.Join(server.Root(), repo+".git"))
	if err != nil {
		t.Fatalf("open %s on the server: %v", repo, err)
	}
	refs, err := repository.References()
	if err != nil {
		t.Fatalf("list refs of %s: %v", repo, err)
	}
	all := map[string]string{}
	_ = refs.ForEach(func(ref *plumbing.Reference) error {
		if ref.Type() == plumbing.HashReference {
			all[ref.Name().String()] = ref.Hash().String()
		}
		return nil
	})
	return all
}

func TestARecordPushedToItsLandscapeRefIsReadBackNewestFirst(t *testing.T) {
	g := NewWithT(t)
	server := startGitServer(t, gitserver.Options{AllowPush: true})
	first := seededRepo(t, server, "profiles")
	second := commit(t, server, "profiles", "main", map[string]string{"profile.yaml": "version: 2\n"})
	before := serverRefs(t, server, "profiles")
	fetcher := newTestFetcher(t, FetcherOptions{})
	request := LandscapeRequest{URL: server.RepoURL("profiles"), Branch: "main", CacheKey: "ns/dev"}

	firstRecord, err := pushRecord(fetcher, request, appliedRecord("dev", first, 0))
	g.Expect(err).NotTo(HaveOccurred())
	secondRecord, err := pushRecord(fetcher, request, appliedRecord("dev", second, time.Hour))
	g.Expect(err).NotTo(HaveOccurred())

	after := serverRefs(t, server, "profiles")
	g.Expect(after).To(HaveKeyWithValue("refs/profilesync/landscapes/dev", secondRecord))
	delete(after, "refs/profilesync/landscapes/dev")
	g.Expect(after).To(Equal(before), "no other ref moved")

	// Another landscape's operator, with a cache of its own, reads them.
	landscapes, err := fetchLandscapes(t, newTestFetcher(t, FetcherOptions{}), LandscapeRequest{URL: server.RepoURL("profiles"), Branch: "main", CacheKey: "ns/prod"})
	g.Expect(err).NotTo(HaveOccurred())
	history, err := landscapes.Records("dev", RecordLimits{})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(history.Warnings).To(BeEmpty())
	g.Expect(history.Truncated).To(BeFalse())
	g.Expect(history.Records).To(HaveLen(2))
	g.Expect(history.Records[0].Revision).To(Equal(second))
	g.Expect(history.Records[0].Commit).To(Equal(secondRecord))
	g.Expect(history.Records[1].Revision).To(Equal(first))
	g.Expect(history.Records[1].Commit).To(Equal(firstRecord))
	g.Expect(history.Records[1].ReadyAt.Equal(recordTime)).To(BeTrue())

	none, err := landscapes.Records("staging", RecordLimits{})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(none).To(Equal(RecordHistory{}), "a landscape that never recorded has no records")
	contains, err := landscapes.IsAncestor(first, second)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(contains).To(BeTrue(), "the branch's history came with the records")
}

func TestARecordIsPushedWithTheRequestsCredentials(t *testing.T) {
	g := NewWithT(t)
	server := startGitServer(t, gitserver.Options{AllowPush: true, Username: "operator", Password: "s3cret-token"})
	revision := seededRepo(t, server, "profiles")
	fetcher := newTestFetcher(t, FetcherOptions{AllowCredentialsOverHTTP: true})
	request := LandscapeRequest{URL: server.RepoURL("profiles"), Branch: "main", CacheKey: "ns/dev"}

	_, err := pushRecord(fetcher, request, appliedRecord("dev", revision, 0))
	g.Expect(err).To(MatchError(transport.ErrAuthenticationRequired))
	g.Expect(IsTransient(err)).To(BeFalse(), "credentials the server refuses are not retried")

	request.Credentials = map[string][]byte{CredentialUsername: []byte("operator"), CredentialPassword: []byte("s3cret-token")}
	recordCommit, err := pushRecord(fetcher, request, appliedRecord("dev", revision, 0))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(serverRefs(t, server, "profiles")).To(HaveKeyWithValue("refs/profilesync/landscapes/dev", recordCommit))
}

// The ref a record is pushed to is made from the record's landscape name
// alone, and a name that would make any other ref is refused before the
// server is asked anything.
func TestARecordCannotBePushedToAnyOtherRef(t *testing.T) {
	g := NewWithT(t)
	server := startGitServer(t, gitserver.Options{AllowPush: true})
	revision := seededRepo(t, server, "profiles")
	before := serverRefs(t, server, "profiles")
	fetcher := newTestFetcher(t, FetcherOptions{})
	request := LandscapeRequest{URL: server.RepoURL("profiles"), Branch: "main", CacheKey: "ns/dev"}

	for _, landscape := range []string{
		"../../heads/main", "../heads/main", "dev:refs/heads/main", "dev refs/heads/main", "+dev", "dev/../../heads/main",
		"refs/heads/main", "main", "", "dev*", "Dev",
	} {
		record := appliedRecord(landscape, revision, 0)
		if landscape == "main" {
			// A landscape may be called main; its ref is still its own.
			recordCommit, err := pushRecord(fetcher, request, record)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(serverRefs(t, server, "profiles")).To(HaveKeyWithValue("refs/profilesync/landscapes/main", recordCommit))
			g.Expect(serverRefs(t, server, "profiles")).To(HaveKeyWithValue("refs/heads/main", before["refs/heads/main"]))
			continue
		}
		_, err := pushRecord(fetcher, request, record)
		g.Expect(err).To(MatchError(ErrInvalidRequest), "landscape %q", landscape)
		g.Expect(IsTransient(err)).To(BeFalse())
	}
	after := serverRefs(t, server, "profiles")
	delete(after, "refs/profilesync/landscapes/main")
	g.Expect(after).To(Equal(before))
	g.Expect(server.Requests().RefAdvertisements).To(BeNumerically("==", 1), "only the landscape called main reached the server")
}

// The fault case: the Git server is down when a record is pushed. The
// error is transient and nothing is half-written: the server's ref and
// the mirror stay at the last record, and the next push, once the server
// is back, builds on that record.
func TestARecordPushedWhileTheServerIsDownFailsTransientlyAndWritesNothing(t *testing.T) {
	g := NewWithT(t)
	root := t.TempDir()
	server, err := gitserver.New(root, gitserver.Options{AllowPush: true})
	g.Expect(err).NotTo(HaveOccurred())
	revision := seededRepo(t, server, "profiles")
	fetcher := newTestFetcher(t, FetcherOptions{})
	request := LandscapeRequest{URL: server.RepoURL("profiles"), Branch: "main", CacheKey: "ns/dev", Timeout: 5 * time.Second}
	firstRecord, err := pushRecord(fetcher, request, appliedRecord("dev", revision, 0))
	g.Expect(err).NotTo(HaveOccurred())
	address := strings.TrimPrefix(server.URL(), "http://")
	g.Expect(server.Close()).To(Succeed())

	_, err = pushRecord(fetcher, request, appliedRecord("dev", revision, time.Hour))
	g.Expect(err).To(MatchError(ErrConnectionFailed))
	g.Expect(IsTransient(err)).To(BeTrue())

	mirror, err := OpenLandscapes(filepath.Join(fetcher.Root(), mustCacheDirName(t, "ns/dev")+landscapesDirSuffix), ObjectLimitsFor(0))
	g.Expect(err).NotTo(HaveOccurred())
	defer mirror.Close()
	tip, err := mirror.repository.Reference(plumbing.ReferenceName(rollout.LandscapeRefPrefix+"dev"), false)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(tip.Hash().String()).To(Equal(firstRecord))
	_, err = mirror.repository.Reference(plumbing.ReferenceName(outgoingRefPrefix+"dev"), false)
	g.Expect(err).To(MatchError(plumbing.ErrReferenceNotFound), "the record waiting to be pushed is not left behind")

	restarted, err := gitserver.New(root, gitserver.Options{AllowPush: true, Address: address})
	g.Expect(err).NotTo(HaveOccurred())
	t.Cleanup(func() { _ = restarted.Close() })
	g.Expect(serverRefs(t, restarted, "profiles")).To(HaveKeyWithValue("refs/profilesync/landscapes/dev", firstRecord))
	secondRecord, err := pushRecord(fetcher, request, appliedRecord("dev", revision, time.Hour))
	g.Expect(err).NotTo(HaveOccurred())
	landscapes, err := fetchLandscapes(t, fetcher, request)
	g.Expect(err).NotTo(HaveOccurred())
	history, err := landscapes.Records("dev", RecordLimits{})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(history.Records).To(HaveLen(2))
	g.Expect(history.Records[0].Commit).To(Equal(secondRecord))
	g.Expect(history.Records[1].Commit).To(Equal(firstRecord))
}

func mustCacheDirName(t *testing.T, key string) string {
	t.Helper()
	name, err := cacheDirName(key)
	if err != nil {
		t.Fatal(err)
	}
	return name
}

func TestARefThatMovedIsTransientAndARejectionIsNot(t *testing.T) {
	g := NewWithT(t)
	for _, message := range []string{
		"non-fast-forward update: refs/profilesync/landscapes/dev",
		"command error on refs/profilesync/landscapes/dev: fetch first",
		"command error on refs/profilesync/landscapes/dev: failed to update ref",
	} {
		err := classifyPushError(errors.New(message))
		g.Expect(err).To(MatchError(ErrRecordRefMoved), message)
		g.Expect(IsTransient(redactError(err, nil))).To(BeTrue(), message)
	}
	for _, message := range []string{
		"command error on refs/profilesync/landscapes/dev: pre-receive hook declined",
		"unpack error: index-pack abnormal exit",
	} {
		err := classifyPushError(errors.New(message))
		g.Expect(err).To(MatchError(ErrRecordPushRejected), message)
		g.Expect(IsTransient(redactError(err, nil))).To(BeFalse(), message)
	}
	g.Expect(IsTransient(redactError(fmt.Errorf("push: %w", context.DeadlineExceeded), nil))).To(BeTrue())
	g.Expect(IsTransient(nil)).To(BeFalse())
}

// recordRepo is a local repository made by go-git, with a branch and
// hand-written record commits, garbled ones included.
type recordRepo struct {
	t          *testing.T
	repository *git.Repository
	// tips are the tips of the refs written so far.
	tips map[plumbing.ReferenceName]plumbing.Hash
	when time.Time
}

func newRecordRepo(t *testing.T) *recordRepo {
	t.Helper()
	repository, err := git.PlainInit(t.TempDir(), true)
	if err != nil {
		t.Fatalf("init repository: %v", err)
	}
	return &recordRepo{t: t, repository: repository, tips: map[plumbing.ReferenceName]plumbing.Hash{}, when: recordTime}
}

// commit adds a commit with one file per entry of files on top of ref's tip
// and moves ref to it.
func (r *recordRepo) commit(ref string, files map[string][]byte) string {
	r.t.Helper()
	storer := r.repository.Storer
	tree := &object.Tree{}
	for _, name := range sortedKeys(files) {
		blob := storer.NewEncodedObject()
		blob.SetType(plumbing.BlobObject)
		writer, _ := blob.Writer()
		_, _ = writer.Write(files[name])
		_ = writer.Close()
		hash, err := storer.SetEncodedObject(blob)
		if err != nil {
			r.t.Fatal(err)
		}
		tree.Entries = append(tree.Entries, object.TreeEntry{Name: name, Mode: filemode.Regular, Hash: hash})
	}
	treeObject := storer.NewEncodedObject()
	if err := tree.Encode(treeObject); err != nil {
		r.t.Fatal(err)
	}
	treeHash, err := storer.SetEncodedObject(treeObject)
	if err != nil {
		r.t.Fatal(err)
	}
	r.when = r.when.Add(time.Second)
	signature := object.Signature{Name: "test", Email: "test@example.invalid", When: r.when}
	commit := &object.Commit{Author: signature, Committer: signature, Message: "test", TreeHash: treeHash}
	name := plumbing.ReferenceName(ref)
	if tip, ok := r.tips[name]; ok {
		commit.ParentHashes = []plumbing.Hash{tip}
	}
	commitObject := storer.NewEncodedObject()
	if err := commit.Encode(commitObject); err != nil {
		r.t.Fatal(err)
	}
	hash, err := storer.SetEncodedObject(commitObject)
	if err != nil {
		r.t.Fatal(err)
	}
	if err := storer.SetReference(plumbing.NewHashReference(name, hash)); err != nil {
		r.t.Fatal(err)
	}
	r.tips[name] = hash
	return hash.String()
}

// record commits a record file with content on the ref of landscape.
func (r *recordRepo) record(landscape string, content []byte) string {
	return r.commit(rollout.LandscapeRefPrefix+landscape, map[string][]byte{rollout.RecordFileName: content})
}

// recordOf commits a valid record on the ref of its landscape.
func (r *recordRepo) recordOf(record rollout.Record) string {
	r.t.Helper()
	content, err := rollout.EncodeRecord(record)
	if err != nil {
		r.t.Fatal(err)
	}
	return r.record(record.Landscape, content)
}

func (r *recordRepo) landscapes() *Landscapes {
	return &Landscapes{repository: r.repository}
}

func sortedKeys(files map[string][]byte) []string {
	keys := make([]string, 0, len(files))
	for key := range files {
		keys = append(keys, key)
	}
	for i := range keys {
		for j := i + 1; j < len(keys); j++ {
			if keys[j] < keys[i] {
				keys[i], keys[j] = keys[j], keys[i]
			}
		}
	}
	return keys
}

// Records are untrusted: each garbled one is skipped with a warning naming
// the ref, the record commit and what is wrong, and the records around it
// are read as if it were not there.
func TestGarbledRecordsAreSkippedWithAWarningNamingTheRefAndCommit(t *testing.T) {
	g := NewWithT(t)
	repo := newRecordRepo(t)
	revision := repo.commit("refs/heads/main", map[string][]byte{"profile.yaml": []byte("version: 1\n")})
	oldest := repo.recordOf(appliedRecord("dev", revision, 0))
	good, err := rollout.EncodeRecord(appliedRecord("dev", revision, time.Hour))
	g.Expect(err).NotTo(HaveOccurred())
	type garbled struct {
		commit, warning string
		sentinel        error
	}
	var garbledRecords []garbled
	add := func(commit, warning string, sentinel error) {
		garbledRecords = append(garbledRecords, garbled{commit, warning, sentinel})
	}
	add(repo.record("dev", []byte(`{"version": 1, "landscape": "dev", "hold": true}`)), `unknown field "hold"`, ErrGarbledRecord)
	add(repo.record("dev", append(good, make([]byte, rollout.MaxRecordSize)...)), "more than the 4096 bytes a record may have", ErrGarbledRecord)
	add(repo.commit(rollout.LandscapeRefPrefix+"dev", map[string][]byte{rollout.RecordFileName: good, "extra": nil}),
		"its tree must hold exactly one regular file, record.json", ErrGarbledRecord)
	add(repo.commit(rollout.LandscapeRefPrefix+"dev", map[string][]byte{"record.yaml": good}),
		"its tree must hold exactly one regular file, record.json", ErrGarbledRecord)
	prodRecord, err := rollout.EncodeRecord(appliedRecord("prod", revision, time.Hour))
	g.Expect(err).NotTo(HaveOccurred())
	add(repo.record("dev", prodRecord), `landscape: Invalid value "prod": the record is under the ref of "dev"`, ErrGarbledRecord)
	unknown := appliedRecord("dev", strings.Repeat("ab", 20), time.Hour)
	add(repo.recordOf(unknown), "revision: "+strings.Repeat("ab", 20), ErrUnknownRevision)
	newest := repo.recordOf(appliedRecord("dev", revision, 2*time.Hour))

	history, err := repo.landscapes().Records("dev", RecordLimits{})
	g.Expect(err).NotTo(HaveOccurred())
	var commits []string
	for _, record := range history.Records {
		commits = append(commits, record.Commit)
	}
	g.Expect(history.Warnings).To(HaveLen(len(garbledRecords)))
	for i, record := range garbledRecords {
		warning := history.Warnings[len(garbledRecords)-1-i] // newest first
		g.Expect(warning).To(MatchError(record.sentinel))
		g.Expect(warning).To(MatchError(ContainSubstring("refs/profilesync/landscapes/dev@" + record.commit)))
		g.Expect(warning).To(MatchError(ContainSubstring(record.warning)))
	}
	g.Expect(commits).To(Equal([]string{newest, oldest}))
}

func TestRecordsStopOnceTheSoakWindowIsCoveredOrAtTheMaximum(t *testing.T) {
	g := NewWithT(t)
	repo := newRecordRepo(t)
	revision := repo.commit("refs/heads/main", map[string][]byte{"profile.yaml": []byte("version: 1\n")})
	for hour := range 10 {
		repo.recordOf(appliedRecord("dev", revision, time.Duration(hour)*time.Hour))
	}
	refusal := rollout.Record{Landscape: "dev", Kind: rollout.RecordRefused, Revision: revision, AppliedAt: recordTime.Add(10 * time.Hour),
		OperatorVersion: "v0.4.0", Reason: "BuildFailed"}
	repo.recordOf(refusal)
	for _, kind := range []rollout.RecordKind{rollout.RecordHeld, rollout.RecordReleased} {
		repo.recordOf(rollout.Record{Landscape: "dev", Kind: kind, Revision: revision, AppliedAt: recordTime.Add(11 * time.Hour), OperatorVersion: "v0.4.0"})
	}
	landscapes := repo.landscapes()

	history, err := landscapes.Records("dev", RecordLimits{Since: recordTime.Add(7*time.Hour + 30*time.Minute)})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(history.Records).To(HaveLen(6), "the release, the hold, the refusal, 9h, 8h and 7h, the first record Ready before the window: "+
		"a hold or its release, never Ready, does not end the reading")
	g.Expect(history.Records[0].Kind).To(Equal(rollout.RecordReleased))
	g.Expect(history.Records[5].ReadyAt).To(Equal(recordTime.Add(7 * time.Hour)))
	g.Expect(history.Truncated).To(BeFalse())

	history, err = landscapes.Records("dev", RecordLimits{Since: recordTime.Add(time.Hour), Max: 3})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(history.Records).To(HaveLen(3))
	g.Expect(history.Truncated).To(BeTrue())

	history, err = landscapes.Records("dev", RecordLimits{})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(history.Records).To(HaveLen(13))
	g.Expect(history.Truncated).To(BeFalse())

	_, err = landscapes.Records("../heads/main", RecordLimits{})
	g.Expect(err).To(MatchError(ErrInvalidRequest))
}

func TestCandidatesAreTheBranchsCommitsAfterTheRunningOneNewestFirst(t *testing.T) {
	g := NewWithT(t)
	repo := newRecordRepo(t)
	var commits []string
	for i := range 5 {
		commits = append(commits, repo.commit("refs/heads/main", map[string][]byte{"profile.yaml": []byte(fmt.Sprint(i))}))
	}
	landscapes := repo.landscapes()
	candidates, err := landscapes.Candidates("main", commits[1], 0)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(candidates).To(Equal([]string{commits[4], commits[3], commits[2]}))
	candidates, err = landscapes.Candidates("main", "", 2)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(candidates).To(Equal([]string{commits[4], commits[3]}))
	candidates, err = landscapes.Candidates("main", "", 0)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(candidates).To(HaveLen(5))

	ancestor, err := landscapes.IsAncestor(commits[1], commits[3])
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(ancestor).To(BeTrue())
	ancestor, err = landscapes.IsAncestor(commits[3], commits[1])
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(ancestor).To(BeFalse())
	_, err = landscapes.IsAncestor(strings.Repeat("ab", 20), commits[1])
	g.Expect(err).To(MatchError(plumbing.ErrObjectNotFound))
}

func TestForgetRemovesTheLandscapesMirrorToo(t *testing.T) {
	g := NewWithT(t)
	server := startGitServer(t, gitserver.Options{})
	seededRepo(t, server, "profiles")
	fetcher := newTestFetcher(t, FetcherOptions{})
	_, err := fetchLandscapes(t, fetcher, LandscapeRequest{URL: server.RepoURL("profiles"), Branch: "main", CacheKey: "ns/prod"})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(filepath.Join(fetcher.Root(), mustCacheDirName(t, "ns/prod")+landscapesDirSuffix)).To(BeADirectory())

	g.Expect(fetcher.Forget("ns/prod")).To(Succeed())
	g.Expect(filepath.Glob(filepath.Join(fetcher.Root(), "*"))).To(BeEmpty())
}

// A mirror fetch is bounded like a checkout: a landscape ref (or the
// followed branch) pointing at more data than the limit is refused, not
// downloaded.
func TestTheLandscapesMirrorIsBoundedByTheMaximumCheckoutSize(t *testing.T) {
	g := NewWithT(t)
	server := startGitServer(t, gitserver.Options{})
	seededRepo(t, server, "profiles")
	random := make([]byte, 256<<10)
	_, _ = rand.NewChaCha8([32]byte{}).Read(random) // incompressible
	commit(t, server, "profiles", "records-bomb", map[string]string{"large": fmt.Sprintf("%x", random)})
	fetcher := newTestFetcher(t, FetcherOptions{MaxCheckoutSize: 64 << 10})

	_, err := fetchLandscapes(t, fetcher, LandscapeRequest{URL: server.RepoURL("profiles"), Branch: "records-bomb", CacheKey: "ns/prod"})
	g.Expect(err).To(MatchError(ErrCheckoutTooLarge))
	g.Expect(err).To(MatchError(ContainSubstring("64 KiB (raise it with --max-checkout-size)")))
	g.Expect(IsTransient(err)).To(BeFalse())
}

// Another writer moves the landscape's ref between the operator's read and
// its push (two operators of one landscape): the server keeps the other
// writer's record, and the error says the ref moved, which is transient.
func TestARecordPushedOverARefThatMovedIsRefusedAndTransient(t *testing.T) {
	g := NewWithT(t)
	server := startGitServer(t, gitserver.Options{AllowPush: true})
	revision := seededRepo(t, server, "profiles")
	fetcher := newTestFetcher(t, FetcherOptions{})
	_, err := pushRecord(fetcher, LandscapeRequest{URL: server.RepoURL("profiles"), Branch: "main", CacheKey: "ns/dev"}, appliedRecord("dev", revision, 0))
	g.Expect(err).NotTo(HaveOccurred())

	// In front of the server, a proxy that lets the other writer push just
	// before the operator's pack arrives.
	var theirs string
	backend, err := url.Parse(server.URL())
	g.Expect(err).NotTo(HaveOccurred())
	forward := httputil.NewSingleHostReverseProxy(backend)
	proxy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost && strings.HasSuffix(r.URL.Path, "/git-receive-pack") && theirs == "" {
			theirs = writeOnServer(t, server, "profiles", appliedRecord("dev", revision, time.Minute))
		}
		forward.ServeHTTP(w, r)
	}))
	t.Cleanup(proxy.Close)

	_, err = pushRecord(fetcher, LandscapeRequest{URL: proxy.URL + "/profiles.git", CacheKey: "ns/dev"}, appliedRecord("dev", revision, time.Hour))
	g.Expect(err).To(MatchError(ErrRecordRefMoved))
	g.Expect(IsTransient(err)).To(BeTrue())
	g.Expect(err).To(MatchError(ContainSubstring("failed to update ref")))
	g.Expect(theirs).NotTo(BeEmpty())
	g.Expect(serverRefs(t, server, "profiles")).To(HaveKeyWithValue("refs/profilesync/landscapes/dev", theirs))
}

// writeOnServer adds a record on top of its landscape's ref directly in the
// server's repository, as another writer's push would, and returns it.
func writeOnServer(t *testing.T, server *gitserver.Server, repo string, record rollout.Record) string {
	t.Helper()
	repository, err := git.PlainOpen(filepath.Join(server.Root(), repo+".git"))
	if err != nil {
		t.Fatalf("open %s on the server: %v", repo, err)
	}
	ref := plumbing.ReferenceName(rollout.LandscapeRefPrefix + record.Landscape)
	tip, err := repository.Reference(ref, false)
	if err != nil {
		t.Fatalf("read %s on the server: %v", ref, err)
	}
	content, err := rollout.EncodeRecord(record)
	if err != nil {
		t.Fatal(err)
	}
	commit, err := writeRecordCommit(repository, record, content, tip.Hash(), nil)
	if err != nil {
		t.Fatalf("write a record on the server: %v", err)
	}
	if err := repository.Storer.SetReference(plumbing.NewHashReference(ref, commit)); err != nil {
		t.Fatalf("move %s on the server: %v", ref, err)
	}
	return commit.String()
}
