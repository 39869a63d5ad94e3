package gitserver

import (
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
)

func startServer(t *testing.T, options Options) *Server {
	t.Helper()
	server, err := New(t.TempDir(), options)
	if err != nil {
		t.Fatalf("start server: %v", err)
	}
	t.Cleanup(func() { _ = server.Close() })
	return server
}

func TestServerServesSeededRepositoriesToTheGitClient(t *testing.T) {
	g := NewWithT(t)
	server := startServer(t, Options{})

	first, err := server.CreateRepo("profiles", map[string]string{"a.yaml": "a: 1\n", "dir/b.yaml": "b: 1\n"})
	g.Expect(err).NotTo(HaveOccurred())
	second, err := server.Commit("profiles", map[string]string{"a.yaml": "a: 2\n"}, "change a")
	g.Expect(err).NotTo(HaveOccurred())
	feature, err := server.CommitOnBranch("profiles", "feature", map[string]string{"c.yaml": "c: 1\n"}, "add c")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(server.Tag("profiles", "v1.0.0", first)).To(Succeed())
	tagObject, err := server.AnnotatedTag("profiles", "v2.0.0", second, "release 2")
	g.Expect(err).NotTo(HaveOccurred())

	listing, err := runGit(t.TempDir(), nil, "", "ls-remote", "--symref", server.RepoURL("profiles"))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(strings.Split(listing, "\n")).To(ConsistOf(
		"ref: refs/heads/main\tHEAD",
		second+"\tHEAD",
		feature+"\trefs/heads/feature",
		second+"\trefs/heads/main",
		first+"\trefs/tags/v1.0.0",
		tagObject+"\trefs/tags/v2.0.0",
		second+"\trefs/tags/v2.0.0^{}",
	))
	g.Expect(tagObject).NotTo(Equal(second))

	parent, err := runGit(server.Root()+"/profiles.git", nil, "", "rev-parse", feature+"^")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(parent).To(Equal(second), "a new branch starts at the default branch's tip")
	tree, err := runGit(server.Root()+"/profiles.git", nil, "", "ls-tree", "-r", "--name-only", feature)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(strings.Split(tree, "\n")).To(Equal([]string{"a.yaml", "c.yaml", "dir/b.yaml"}))

	g.Expect(server.SetHead("profiles", "feature")).To(Succeed())
	g.Expect(server.DeleteBranch("profiles", "feature")).To(Succeed())
	g.Expect(server.Requests().RefAdvertisements).To(Equal(int64(1)))
}

func TestServerRequiresTheConfiguredCredentials(t *testing.T) {
	g := NewWithT(t)
	server := startServer(t, Options{Username: "bot", Password: "pw", BearerToken: "tok"})
	_, err := server.CreateRepo("private", map[string]string{"a.yaml": "a: 1\n"})
	g.Expect(err).NotTo(HaveOccurred())
	infoRefs := server.RepoURL("private") + "/info/refs?service=git-upload-pack"
	status := func(authorize func(*http.Request)) int {
		req, err := http.NewRequest(http.MethodGet, infoRefs, nil)
		g.Expect(err).NotTo(HaveOccurred())
		authorize(req)
		res, err := http.DefaultClient.Do(req)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(res.Body.Close()).To(Succeed())
		return res.StatusCode
	}

	g.Expect(status(func(*http.Request) {})).To(Equal(http.StatusUnauthorized))
	g.Expect(status(func(r *http.Request) { r.SetBasicAuth("bot", "wrong") })).To(Equal(http.StatusUnauthorized))
	g.Expect(status(func(r *http.Request) { r.Header.Set("Authorization", "Bearer wrong") })).To(Equal(http.StatusUnauthorized))
	g.Expect(status(func(r *http.Request) { r.SetBasicAuth("bot", "pw") })).To(Equal(http.StatusOK))
	g.Expect(status(func(r *http.Request) { r.Header.Set("Authorization", "Bearer tok") })).To(Equal(http.StatusOK))
	g.Expect(server.Requests()).To(Equal(RequestCounts{RefAdvertisements: 5, Unauthorized: 3}))
}

func TestServerRejectsRepositoryNamesOutsideItsRoot(t *testing.T) {
	g := NewWithT(t)
	server := startServer(t, Options{})

	for _, name := range []string{"../escape", "a/b", "", "x.git", ".hidden"} {
		_, err := server.CreateRepo(name, nil)
		g.Expect(err).To(MatchError(ContainSubstring("use letters, digits")), "name %q", name)
	}
	_, err := server.CreateRepo("profiles", map[string]string{"../outside": "x"})
	g.Expect(err).To(MatchError(ContainSubstring(`file path "../outside" must be relative and inside the repository`)))
}

func TestServerAcceptsPushesOnlyWhenAllowed(t *testing.T) {
	for _, allow := range []bool{false, true} {
		name := "a push is refused by default"
		if allow {
			name = "a push is accepted with AllowPush"
		}
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			server := startServer(t, Options{AllowPush: allow})
			_, err := server.CreateRepo("profiles", map[string]string{"a.yaml": "a: 1\n"})
			g.Expect(err).NotTo(HaveOccurred())

			work := t.TempDir()
			_, err = runGit(work, nil, "", "clone", server.RepoURL("profiles"), ".")
			g.Expect(err).NotTo(HaveOccurred())
			_, err = runGit(work, nil, "", "commit", "--allow-empty", "-m", "pushed change")
			g.Expect(err).NotTo(HaveOccurred())
			pushed, err := runGit(work, nil, "", "rev-parse", "HEAD")
			g.Expect(err).NotTo(HaveOccurred())
			_, err = runGit(work, nil, "", "push", "origin", "main")
			if !allow {
				g.Expect(err).To(HaveOccurred())
				return
			}
			g.Expect(err).NotTo(HaveOccurred())
			onServer, err := runGit(server.Root()+"/profiles.git", nil, "", "rev-parse", "main")
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(onServer).To(Equal(pushed))
		})
	}
}

func TestReadTreeReadsEveryFileWithSlashPaths(t *testing.T) {
	g := NewWithT(t)
	dir := t.TempDir()
	g.Expect(os.MkdirAll(filepath.Join(dir, "overlays", "dev"), 0o755)).To(Succeed())
	g.Expect(os.WriteFile(filepath.Join(dir, "README.md"), []byte("readme\n"), 0o644)).To(Succeed())
	g.Expect(os.WriteFile(filepath.Join(dir, "overlays", "dev", "kustomization.yaml"), []byte("kind: Kustomization\n"), 0o644)).To(Succeed())

	files, err := ReadTree(dir)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(files).To(Equal(map[string]string{
		"README.md":                       "readme\n",
		"overlays/dev/kustomization.yaml": "kind: Kustomization\n",
	}))

	_, err = ReadTree(filepath.Join(dir, "missing"))
	g.Expect(err).To(MatchError(ContainSubstring("missing")))
}
