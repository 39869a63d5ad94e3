// Package gitserver serves bare Git repositories over Git's smart HTTP
// protocol on a loopback address, for tests and for the local demo.
//
// It runs the real `git http-backend` through net/http/cgi, so clients talk to
// the same server code as they would in production, and it seeds repositories
// with the git command line. It therefore needs git installed, which is why it
// must only be imported by tests (controllers e2e, gitsource) and by the local
// demo command — never by code paths of the operator itself, which reads Git
// with go-git only.
//
// Every git command runs with GIT_CONFIG_GLOBAL=/dev/null and
// GIT_CONFIG_NOSYSTEM=true so that the developer's own configuration (hooks,
// signing, default branch names) cannot change what the tests see.
package gitserver

import (
	"bytes"
	"context"
	"crypto/subtle"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"net/http"
	"net/http/cgi"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// DefaultBranch is the branch CreateRepo creates and points HEAD at.
const DefaultBranch = "main"

// Options configure a Server. The zero value serves every repository without
// authentication on a random loopback port.
type Options struct {
	// Address is the TCP address to listen on; "127.0.0.1:0" (a free
	// loopback port) when empty. The local demo sets a fixed port here.
	Address string

	// Username and Password, when Username is set, make the server require
	// HTTP basic authentication with exactly these credentials.
	Username string
	Password string

	// BearerToken, when set, makes the server require
	// "Authorization: Bearer <token>". With Username also set, either
	// credential is accepted.
	BearerToken string

	// AllowPush lets clients push (git-receive-pack) to the repositories, as
	// the local demo needs so a person can clone, commit and push a change.
	// Off by default: tests seed repositories through the Server's methods.
	AllowPush bool
	// BackendLog receives what git http-backend writes to its standard
	// error, such as "Not a git repository"; discarded when nil.
	BackendLog io.Writer
}

// RequestCounts says how many Git protocol requests the server answered,
// whatever their outcome. Tests use it to prove that a client only listed
// refs and did not fetch.
type RequestCounts struct {
	// RefAdvertisements counts GET .../info/refs?service=git-upload-pack, the
	// request behind `git ls-remote` and the first step of every fetch.
	RefAdvertisements int64
	// UploadPacks counts POST .../git-upload-pack, the request that
	// transfers objects; a client that fetches nothing makes none.
	UploadPacks int64
	// Unauthorized counts requests refused for missing or wrong credentials.
	Unauthorized int64
}

// Server is a running smart-HTTP Git server over the bare repositories in its
// root directory. Its methods are safe for concurrent use.
type Server struct {
	root     string
	options  Options
	listener net.Listener
	http     *http.Server
	served   chan error

	closeOnce sync.Once
	closeErr  error

	// seeding serialises the seeding commands so that concurrent commits to
	// one repository cannot race on its refs.
	seeding sync.Mutex

	refAdvertisements atomic.Int64
	uploadPacks       atomic.Int64
	unauthorized      atomic.Int64
}

// repoNamePattern limits repository names to what is safe as a path segment
// and in a URL, so a name can never point outside the root.
var repoNamePattern = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]*$`)

// New starts a server for the bare repositories under root (created if
// missing). Close it when done.
func New(root string, options Options) (*Server, error) {
	backend, err := httpBackendPath()
	if err != nil {
		return nil, err
	}
	absRoot, err := filepath.Abs(root)
	if err != nil {
		return nil, fmt.Errorf("resolve repository root %q: %w", root, err)
	}
	if err := os.MkdirAll(absRoot, 0o755); err != nil {
		return nil, fmt.Errorf("create repository root: %w", err)
	}
	address := options.Address
	if address == "" {
		address = "127.0.0.1:0"
	}
	listener, err := net.Listen("tcp", address)
	if err != nil {
		return nil, fmt.Errorf("listen on %s: %w", address, err)
	}

	s := &Server{root: absRoot, options: options, listener: listener, served: make(chan error, 1)}
	backendLog := options.BackendLog
	if backendLog == nil {
		backendLog = io.Discard
	}
	backendEnv := append(isolatedGitEnv(),
		"GIT_PROJECT_ROOT="+absRoot,
		"GIT_HTTP_EXPORT_ALL=1",
	)
	if options.AllowPush {
		// http-backend refuses receive-pack to anonymous clients unless
		// http.receivepack is set in the repository's configuration; the
		// environment sets it without touching the repositories.
		backendEnv = append(backendEnv, "GIT_CONFIG_COUNT=1", "GIT_CONFIG_KEY_0=http.receivepack", "GIT_CONFIG_VALUE_0=true")
	}
	backendHandler := &cgi.Handler{
		Path:   backend,
		Stderr: backendLog,
		Root:   "/",
		Env:    backendEnv,
	}
	s.http = &http.Server{
		Handler:           s.countRequests(s.requireCredentials(backendHandler)),
		ReadHeaderTimeout: 10 * time.Second,
	}
	go func() { s.served <- s.http.Serve(listener) }()
	return s, nil
}

// URL is the server's base URL, like http://127.0.0.1:34567, without a
// trailing slash.
func (s *Server) URL() string {
	return "http://" + s.listener.Addr().String()
}

// ReadTree reads every file below dir as slash-separated path relative to
// dir → content: the shape CreateRepo and Commit take, to seed a repository
// from a directory such as a fixture or examples/profiles-repo.
func ReadTree(dir string) (map[string]string, error) {
	files := map[string]string{}
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(dir, path)
		files[filepath.ToSlash(rel)] = string(data)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", dir, err)
	}
	return files, nil
}

// RepoURL is the clone URL of the named repository.
func (s *Server) RepoURL(name string) string {
	return s.URL() + "/" + name + ".git"
}

// Root is the directory holding the bare repositories, <name>.git each.
func (s *Server) Root() string {
	return s.root
}

// Requests returns how many requests the server answered so far.
func (s *Server) Requests() RequestCounts {
	return RequestCounts{
		RefAdvertisements: s.refAdvertisements.Load(),
		UploadPacks:       s.uploadPacks.Load(),
		Unauthorized:      s.unauthorized.Load(),
	}
}

// Close stops the server and drops open connections. The repositories stay
// on disk. Closing again returns the first result.
func (s *Server) Close() error {
	s.closeOnce.Do(func() {
		if err := s.http.Close(); err != nil {
			s.closeErr = fmt.Errorf("close git server: %w", err)
			return
		}
		if err := <-s.served; err != nil && !errors.Is(err, http.ErrServerClosed) {
			s.closeErr = fmt.Errorf("git server stopped: %w", err)
		}
	})
	return s.closeErr
}

// CreateRepo creates the bare repository name with one commit of files
// (slash-separated path → content) on DefaultBranch, which HEAD points at,
// and returns that commit's SHA-1.
func (s *Server) CreateRepo(name string, files map[string]string) (string, error) {
	dir, err := s.repoDir(name)
	if err != nil {
		return "", err
	}
	s.seeding.Lock()
	defer s.seeding.Unlock()
	if _, err := os.Stat(dir); err == nil {
		return "", fmt.Errorf("create repository %q: already exists", name)
	}
	if _, err := runGit(s.root, nil, "", "init", "--quiet", "--bare", "--initial-branch="+DefaultBranch, dir); err != nil {
		return "", fmt.Errorf("create repository %q: %w", name, err)
	}
	sha, err := s.commitLocked(dir, DefaultBranch, files, "initial commit", nil)
	if err != nil {
		// Leave no half-made repository that a retry would trip over.
		_ = os.RemoveAll(dir)
		return "", fmt.Errorf("create repository %q: %w", name, err)
	}
	return sha, nil
}

// Commit adds or replaces files on DefaultBranch of repo in one new commit
// and returns its SHA-1. Files not named keep their content.
func (s *Server) Commit(repo string, files map[string]string, message string) (string, error) {
	return s.CommitOnBranch(repo, DefaultBranch, files, message)
}

// CommitOnBranch is Commit on branch. A branch that does not exist yet
// starts from DefaultBranch's tip.
func (s *Server) CommitOnBranch(repo, branch string, files map[string]string, message string) (string, error) {
	dir, err := s.existingRepoDir(repo)
	if err != nil {
		return "", err
	}
	s.seeding.Lock()
	defer s.seeding.Unlock()
	return s.commitLocked(dir, branch, files, message, nil)
}

// SignFunc signs a commit's payload (the commit as Git stores it, without
// its signature) and returns the armored signature, as `git commit -S`
// asks gpg to.
type SignFunc func(payload io.Reader) (string, error)

// CommitSigned is Commit with the new commit signed by sign.
func (s *Server) CommitSigned(repo string, files map[string]string, message string, sign SignFunc) (string, error) {
	dir, err := s.existingRepoDir(repo)
	if err != nil {
		return "", err
	}
	s.seeding.Lock()
	defer s.seeding.Unlock()
	return s.commitLocked(dir, DefaultBranch, files, message, sign)
}

// Tag creates the lightweight tag name pointing at commit sha.
func (s *Server) Tag(repo, name, sha string) error {
	dir, err := s.existingRepoDir(repo)
	if err != nil {
		return err
	}
	s.seeding.Lock()
	defer s.seeding.Unlock()
	if _, err := runGit(dir, nil, "", "tag", name, sha); err != nil {
		return fmt.Errorf("tag %s in %q: %w", name, repo, err)
	}
	return nil
}

// AnnotatedTag creates the annotated tag name on commit sha with message and
// returns the SHA-1 of the tag object (not of the commit).
func (s *Server) AnnotatedTag(repo, name, sha, message string) (string, error) {
	dir, err := s.existingRepoDir(repo)
	if err != nil {
		return "", err
	}
	s.seeding.Lock()
	defer s.seeding.Unlock()
	if _, err := runGit(dir, nil, "", "tag", "--annotate", "--message", message, name, sha); err != nil {
		return "", fmt.Errorf("annotated tag %s in %q: %w", name, repo, err)
	}
	tagObject, err := runGit(dir, nil, "", "rev-parse", "refs/tags/"+name)
	if err != nil {
		return "", fmt.Errorf("annotated tag %s in %q: %w", name, repo, err)
	}
	return tagObject, nil
}

// SetHead points repo's HEAD, the branch clients get by default, at branch.
func (s *Server) SetHead(repo, branch string) error {
	dir, err := s.existingRepoDir(repo)
	if err != nil {
		return err
	}
	s.seeding.Lock()
	defer s.seeding.Unlock()
	if _, err := runGit(dir, nil, "", "symbolic-ref", "HEAD", "refs/heads/"+branch); err != nil {
		return fmt.Errorf("point HEAD of %q at %s: %w", repo, branch, err)
	}
	return nil
}

// DeleteBranch removes branch from repo; its commits stay in the repository
// as long as another branch or a tag reaches them.
func (s *Server) DeleteBranch(repo, branch string) error {
	dir, err := s.existingRepoDir(repo)
	if err != nil {
		return err
	}
	s.seeding.Lock()
	defer s.seeding.Unlock()
	if _, err := runGit(dir, nil, "", "update-ref", "-d", "refs/heads/"+branch); err != nil {
		return fmt.Errorf("delete branch %s of %q: %w", branch, repo, err)
	}
	return nil
}

// ForcePush replaces branch of repo with a new commit whose parent is onto
// (a commit SHA; empty for a commit without parent) and whose tree is onto's
// with files added or replaced, whatever the branch held before, as `git
// push --force` of an amended or rebased branch does. The branch's old
// commits become unreachable from it. It returns the new commit's SHA-1.
func (s *Server) ForcePush(repo, branch, onto string, files map[string]string, message string) (string, error) {
	dir, err := s.existingRepoDir(repo)
	if err != nil {
		return "", err
	}
	s.seeding.Lock()
	defer s.seeding.Unlock()
	commit, err := writeCommit(dir, onto, files, message)
	if err != nil {
		return "", fmt.Errorf("force-push to %s of %q: %w", branch, repo, err)
	}
	if _, err := runGit(dir, nil, "", "update-ref", "refs/heads/"+branch, commit); err != nil {
		return "", fmt.Errorf("force-push to %s of %q: move branch: %w", branch, repo, err)
	}
	return commit, nil
}

// MoveTag points the existing lightweight or annotated tag name at commit
// sha, as `git tag --force` and a forced push of the tag do; an annotated
// tag stays annotated, with a new tag object.
func (s *Server) MoveTag(repo, name, sha string) error {
	dir, err := s.existingRepoDir(repo)
	if err != nil {
		return err
	}
	s.seeding.Lock()
	defer s.seeding.Unlock()
	kind, err := runGit(dir, nil, "", "cat-file", "-t", "refs/tags/"+name)
	if err != nil {
		return fmt.Errorf("move tag %s in %q: %w", name, repo, err)
	}
	args := []string{"--force", name, sha}
	if kind == "tag" { // an annotated tag's ref names a tag object
		args = []string{"--force", "--annotate", "--message", "moved to " + sha, name, sha}
	}
	args = append([]string{"tag"}, args...)
	if _, err := runGit(dir, nil, "", args...); err != nil {
		return fmt.Errorf("move tag %s in %q: %w", name, repo, err)
	}
	return nil
}

// commitLocked writes files into a new commit on branch (see writeCommit)
// and moves the branch with a compare-and-swap so a concurrent writer
// outside this Server is detected.
func (s *Server) commitLocked(dir, branch string, files map[string]string, message string, sign SignFunc) (string, error) {
	parent := ""
	if sha, err := runGit(dir, nil, "", "rev-parse", "--verify", "--quiet", "refs/heads/"+branch+"^{commit}"); err == nil {
		parent = sha
	} else if sha, err := runGit(dir, nil, "", "rev-parse", "--verify", "--quiet", "refs/heads/"+DefaultBranch+"^{commit}"); err == nil {
		parent = sha
	}
	commit, err := writeCommit(dir, parent, files, message)
	if err != nil {
		return "", fmt.Errorf("commit to %s: %w", branch, err)
	}
	if sign != nil {
		if commit, err = signCommit(dir, commit, sign); err != nil {
			return "", fmt.Errorf("commit to %s: %w", branch, err)
		}
	}
	oldValue, _ := runGit(dir, nil, "", "rev-parse", "--verify", "--quiet", "refs/heads/"+branch)
	// An empty old value makes update-ref insist that the branch is new.
	if _, err := runGit(dir, nil, "", "update-ref", "refs/heads/"+branch, commit, oldValue); err != nil {
		return "", fmt.Errorf("commit to %s: move branch: %w", branch, err)
	}
	return commit, nil
}

// writeCommit writes files into a new commit on top of parent (none when
// empty) without a worktree and without moving any ref: it reads the
// parent's tree into a throw-away index, adds each file as a blob, and
// writes the tree and commit. It returns the commit's SHA-1.
func writeCommit(dir, parent string, files map[string]string, message string) (string, error) {
	indexFile, err := os.CreateTemp("", "gitserver-index-*")
	if err != nil {
		return "", fmt.Errorf("create temporary index: %w", err)
	}
	indexPath := indexFile.Name()
	_ = indexFile.Close()
	// git refuses an existing empty file as an index; it wants none at all.
	if err := os.Remove(indexPath); err != nil {
		return "", fmt.Errorf("prepare temporary index: %w", err)
	}
	defer os.Remove(indexPath)
	indexEnv := []string{"GIT_INDEX_FILE=" + indexPath}

	if parent != "" {
		if _, err := runGit(dir, indexEnv, "", "read-tree", parent); err != nil {
			return "", err
		}
	}

	// Sorted so that the same files always produce the same sequence of
	// commands, which keeps failures reproducible.
	paths := make([]string, 0, len(files))
	for p := range files {
		paths = append(paths, p)
	}
	sort.Strings(paths)
	for _, p := range paths {
		clean := path.Clean(p)
		if clean == "." || strings.HasPrefix(clean, "../") || clean == ".." || path.IsAbs(clean) {
			return "", fmt.Errorf("file path %q must be relative and inside the repository", p)
		}
		blob, err := runGit(dir, nil, files[p], "hash-object", "-w", "--stdin")
		if err != nil {
			return "", fmt.Errorf("store %s: %w", clean, err)
		}
		if _, err := runGit(dir, indexEnv, "", "update-index", "--add", "--cacheinfo", "100644,"+blob+","+clean); err != nil {
			return "", fmt.Errorf("add %s: %w", clean, err)
		}
	}
	tree, err := runGit(dir, indexEnv, "", "write-tree")
	if err != nil {
		return "", err
	}
	commitArgs := []string{"commit-tree", tree, "-m", message}
	if parent != "" {
		commitArgs = append(commitArgs, "-p", parent)
	}
	return runGit(dir, nil, "", commitArgs...)
}

// countRequests counts Git protocol requests by kind before handing them on.
func (s *Server) countRequests(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case r.Method == http.MethodGet && strings.HasSuffix(r.URL.Path, "/info/refs") &&
			r.URL.Query().Get("service") == "git-upload-pack":
			s.refAdvertisements.Add(1)
		case r.Method == http.MethodPost && strings.HasSuffix(r.URL.Path, "/git-upload-pack"):
			s.uploadPacks.Add(1)
		}
		next.ServeHTTP(w, r)
	})
}

// requireCredentials refuses requests without the configured credentials,
// answering 401 with a challenge like real Git hosts do so that clients
// report "authentication required".
func (s *Server) requireCredentials(next http.Handler) http.Handler {
	if s.options.Username == "" && s.options.BearerToken == "" {
		return next
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if s.authorized(r) {
			next.ServeHTTP(w, r)
			return
		}
		s.unauthorized.Add(1)
		w.Header().Set("WWW-Authenticate", `Basic realm="gitserver"`)
		http.Error(w, "invalid credentials", http.StatusUnauthorized)
	})
}

func (s *Server) authorized(r *http.Request) bool {
	if s.options.Username != "" {
		if user, password, ok := r.BasicAuth(); ok &&
			constantTimeEqual(user, s.options.Username) && constantTimeEqual(password, s.options.Password) {
			return true
		}
	}
	if s.options.BearerToken != "" {
		if token, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer "); ok &&
			constantTimeEqual(token, s.options.BearerToken) {
			return true
		}
	}
	return false
}

func constantTimeEqual(a, b string) bool {
	return subtle.ConstantTimeCompare([]byte(a), []byte(b)) == 1
}

func (s *Server) repoDir(name string) (string, error) {
	if !repoNamePattern.MatchString(name) || strings.HasSuffix(name, ".git") {
		return "", fmt.Errorf("repository name %q: use letters, digits, '.', '_' and '-', without .git", name)
	}
	return filepath.Join(s.root, name+".git"), nil
}

func (s *Server) existingRepoDir(name string) (string, error) {
	dir, err := s.repoDir(name)
	if err != nil {
		return "", err
	}
	if _, err := os.Stat(dir); err != nil {
		return "", fmt.Errorf("repository %q: %w", name, err)
	}
	return dir, nil
}

// httpBackendPath finds git-http-backend in git's exec path; it is not on
// PATH in most installations.
func httpBackendPath() (string, error) {
	execPath, err := runGit("", nil, "", "--exec-path")
	if err != nil {
		return "", fmt.Errorf("find git-http-backend (is git installed?): %w", err)
	}
	backend := filepath.Join(execPath, "git-http-backend")
	if _, err := os.Stat(backend); err != nil {
		return "", fmt.Errorf("find git-http-backend: %w", err)
	}
	return backend, nil
}

// isolatedGitEnv is the environment every git process gets: no user or
// system configuration, and a fixed identity for commits and tags.
func isolatedGitEnv() []string {
	return []string{
		"PATH=" + os.Getenv("PATH"),
		"HOME=" + os.TempDir(),
		"GIT_CONFIG_GLOBAL=/dev/null",
		"GIT_CONFIG_NOSYSTEM=true",
		"GIT_AUTHOR_NAME=gitserver",
		"GIT_AUTHOR_EMAIL=gitserver@example.invalid",
		"GIT_COMMITTER_NAME=gitserver",
		"GIT_COMMITTER_EMAIL=gitserver@example.invalid",
		"GIT_TERMINAL_PROMPT=0",
	}
}

// runGit runs git in dir with stdin and returns its trimmed standard output;
// a failure carries git's standard error.
func runGit(dir string, extraEnv []string, stdin string, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "git", args...)
	cmd.Dir = dir
	cmd.Env = append(isolatedGitEnv(), extraEnv...)
	cmd.Stdin = strings.NewReader(stdin)
	var stdout, stderr bytes.Buffer
	cmd.Stdout = &stdout
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("git %s: %w: %s", args[0], err, strings.TrimSpace(stderr.String()))
	}
	return strings.TrimSpace(stdout.String()), nil
}

// StartForTest starts a server under the test's temporary directory and
// closes it when the test ends; a server that does not start fails the
// test.
func StartForTest(tb testing.TB, options Options) *Server {
	tb.Helper()
	server, err := New(tb.TempDir(), options)
	if err != nil {
		tb.Fatalf("start git server: %v", err)
	}
	tb.Cleanup(func() { _ = server.Close() })
	return server
}
