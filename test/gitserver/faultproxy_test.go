package gitserver

import (
	"context"
	"os/exec"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
)

func TestForcePushRewritesTheBranchAndMoveTagMovesTags(t *testing.T) {
	g := NewWithT(t)
	server := startServer(t, Options{})
	first, err := server.CreateRepo("profiles", map[string]string{"a.yaml": "a: 1\n"})
	g.Expect(err).NotTo(HaveOccurred())
	second, err := server.Commit("profiles", map[string]string{"a.yaml": "a: 2\n"}, "change a")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(server.Tag("profiles", "light", first)).To(Succeed())
	_, err = server.AnnotatedTag("profiles", "annotated", first, "release")
	g.Expect(err).NotTo(HaveOccurred())

	amended, err := server.ForcePush("profiles", "main", first, map[string]string{"b.yaml": "b: 1\n"}, "amend")
	g.Expect(err).NotTo(HaveOccurred())
	dir := server.Root() + "/profiles.git"
	head, err := runGit(dir, nil, "", "rev-parse", "refs/heads/main")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(head).To(Equal(amended))
	parent, err := runGit(dir, nil, "", "rev-parse", amended+"^")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(parent).To(Equal(first), "the rewritten branch no longer holds the old head")
	tree, err := runGit(dir, nil, "", "ls-tree", "-r", "--name-only", amended)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(strings.Split(tree, "\n")).To(Equal([]string{"a.yaml", "b.yaml"}))
	_, err = runGit(dir, nil, "", "merge-base", "--is-ancestor", second, amended)
	g.Expect(err).To(HaveOccurred(), "the old head is not in the new history")

	root, err := server.ForcePush("profiles", "orphan", "", map[string]string{"c.yaml": "c: 1\n"}, "root")
	g.Expect(err).NotTo(HaveOccurred())
	_, err = runGit(dir, nil, "", "rev-parse", "--verify", "--quiet", root+"^")
	g.Expect(err).To(HaveOccurred(), "an empty onto makes a commit without parent")

	g.Expect(server.MoveTag("profiles", "light", second)).To(Succeed())
	g.Expect(server.MoveTag("profiles", "annotated", second)).To(Succeed())
	light, err := runGit(dir, nil, "", "rev-parse", "refs/tags/light")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(light).To(Equal(second))
	kind, err := runGit(dir, nil, "", "cat-file", "-t", "refs/tags/annotated")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(kind).To(Equal("tag"), "an annotated tag stays annotated")
	peeled, err := runGit(dir, nil, "", "rev-parse", "refs/tags/annotated^{commit}")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(peeled).To(Equal(second))
	g.Expect(server.MoveTag("profiles", "missing", second)).To(MatchError(ContainSubstring("move tag missing")))
}

// cloneThrough runs `git clone` of the proxied repository into a fresh
// directory and returns its error and output.
func cloneThrough(t *testing.T, proxy *FaultProxy, timeout time.Duration) (string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, "git", "clone", "--quiet", proxy.RepoURL("profiles"), t.TempDir()+"/clone")
	cmd.Env = isolatedGitEnv()
	// git's http helper is a child process that keeps the output pipe open
	// after git itself is killed; stop waiting for it.
	cmd.WaitDelay = time.Second
	out, err := cmd.CombinedOutput()
	return string(out), err
}

func TestFaultProxyBreaksTheRepositoryBehindTheSameURL(t *testing.T) {
	g := NewWithT(t)
	server := startServer(t, Options{})
	_, err := server.CreateRepo("profiles", map[string]string{"a.yaml": strings.Repeat("profile data\n", 200)})
	g.Expect(err).NotTo(HaveOccurred())
	proxy, err := NewFaultProxy(server.URL())
	g.Expect(err).NotTo(HaveOccurred())
	t.Cleanup(func() { _ = proxy.Close() })
	url := proxy.URL()

	_, err = cloneThrough(t, proxy, 20*time.Second)
	g.Expect(err).NotTo(HaveOccurred(), "pass")

	g.Expect(proxy.SetMode(Down)).To(Succeed())
	out, err := cloneThrough(t, proxy, 20*time.Second)
	g.Expect(err).To(HaveOccurred())
	g.Expect(out).To(ContainSubstring("Failed to connect"))

	g.Expect(proxy.SetMode(Hang)).To(Succeed())
	g.Expect(proxy.URL()).To(Equal(url), "the same port after Down")
	started := time.Now()
	_, err = cloneThrough(t, proxy, time.Second)
	g.Expect(err).To(HaveOccurred())
	g.Expect(time.Since(started)).To(BeNumerically(">=", time.Second), "nothing answers until the client gives up")
	g.Expect(proxy.Requests(Hang)).To(Equal(1))

	g.Expect(proxy.SetMode(HangPack)).To(Succeed())
	started = time.Now()
	_, err = cloneThrough(t, proxy, time.Second)
	g.Expect(err).To(HaveOccurred())
	g.Expect(time.Since(started)).To(BeNumerically(">=", time.Second))
	g.Expect(proxy.Requests(HangPack)).To(BeNumerically(">=", 2), "the listing is answered, the pack request hangs")

	for _, mode := range []FaultMode{TruncatePack, CorruptPack} {
		g.Expect(proxy.SetMode(mode)).To(Succeed())
		_, err = cloneThrough(t, proxy, 20*time.Second)
		g.Expect(err).To(HaveOccurred(), mode.String())
		// The listing passes (git's protocol v2 lists in a POST of its own);
		// the pack request breaks.
		g.Expect(proxy.Requests(mode)).To(BeNumerically(">=", 2), mode.String())
	}

	g.Expect(proxy.SetMode(Pass)).To(Succeed())
	_, err = cloneThrough(t, proxy, 20*time.Second)
	g.Expect(err).NotTo(HaveOccurred(), "pass again")
	g.Expect(proxy.Close()).To(Succeed())
	g.Expect(proxy.SetMode(Pass)).To(MatchError(ContainSubstring("closed")))
}
