package sources

import (
	"context"
	"errors"
	"path/filepath"
	"sort"
	"testing"
	"time"

	"github.com/go-git/go-git/v5"
	githttp "github.com/go-git/go-git/v5/plumbing/transport/http"
	. "github.com/onsi/gomega"

	"github.com/profilesync/profilesync/internal/propose"
	"github.com/profilesync/profilesync/test/gitserver"
)

// kubernetesRepo serves a repository tagged like kubernetes/kubernetes:
// v1.34.2 (lightweight), v1.34.3 (annotated), a release candidate and a
// tag that is no version.
func kubernetesRepo(t *testing.T, options gitserver.Options, allowFilter bool) (*gitserver.Server, string) {
	t.Helper()
	server, err := gitserver.New(t.TempDir(), options)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = server.Close() })
	first, err := server.CreateRepo("kubernetes", map[string]string{"README.md": "kubernetes\n"})
	if err != nil {
		t.Fatal(err)
	}
	second, err := server.Commit("kubernetes", map[string]string{"README.md": "kubernetes 1.34.3\n"}, "release 1.34.3")
	if err != nil {
		t.Fatal(err)
	}
	for name, sha := range map[string]string{"v1.34.2": first, "v1.35.0-rc.1": second, "latest": second} {
		if err := server.Tag("kubernetes", name, sha); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := server.AnnotatedTag("kubernetes", "v1.34.3", second, "Kubernetes v1.34.3"); err != nil {
		t.Fatal(err)
	}
	if allowFilter {
		repo, err := git.PlainOpen(filepath.Join(server.Root(), "kubernetes.git"))
		if err != nil {
			t.Fatal(err)
		}
		cfg, err := repo.Config()
		if err != nil {
			t.Fatal(err)
		}
		cfg.Raw.Section("uploadpack").SetOption("allowFilter", "true")
		if err := repo.SetConfig(cfg); err != nil {
			t.Fatal(err)
		}
	}
	return server, server.RepoURL("kubernetes")
}

func gitSourceAt(url string) *propose.Source {
	f, err := propose.Decode(propose.FileName, []byte(versionsHeader+"sources:\n- name: kubernetes\n  git: {url: \""+url+"\"}\n  feeds: [{file: base/cloudprofiles.yaml, cloudProfile: aws}]\n"))
	if err != nil {
		panic(err)
	}
	return &f.Sources[0]
}

func TestGitTagsAppearWithTheTimeTheyWereTagged(t *testing.T) {
	g := NewWithT(t)
	before := time.Now().Add(-time.Second).Truncate(time.Second)
	server, url := kubernetesRepo(t, gitserver.Options{}, true)
	after := time.Now().Add(time.Second)
	releases, err := ListGit(context.Background(), gitSourceAt(url), GitOptions{})
	g.Expect(err).NotTo(HaveOccurred())
	sort.Slice(releases, func(i, j int) bool { return releases[i].Version < releases[j].Version })
	g.Expect(releases).To(HaveLen(2), "the release candidate and the tag that is no version are not versions")
	for i, want := range []string{"1.34.2", "1.34.3"} {
		g.Expect(releases[i].Version).To(Equal(want))
		g.Expect(releases[i].Released).To(BeTemporally(">=", before), want)
		g.Expect(releases[i].Released).To(BeTemporally("<=", after), want)
	}
	g.Expect(server.Requests().UploadPacks).To(BeNumerically(">=", 1), "the times come from one fetch of the tag and commit objects")
}

func TestAServerWithoutFilteredFetchesGivesTagsWithoutTimes(t *testing.T) {
	g := NewWithT(t)
	server, url := kubernetesRepo(t, gitserver.Options{}, false)
	releases, err := ListGit(context.Background(), gitSourceAt(url), GitOptions{})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(releases).To(ConsistOf(propose.Release{Version: "1.34.2"}, propose.Release{Version: "1.34.3"}))
	g.Expect(server.Requests().UploadPacks).To(BeZero(), "nothing is fetched that would bring trees or blobs")
}

func TestAGitSourceThatFailsIsNamed(t *testing.T) {
	_, url := kubernetesRepo(t, gitserver.Options{Username: "ci", Password: "s3cret"}, true)
	tests := []struct {
		name   string
		url    string
		auth   *githttp.BasicAuth
		limits Limits
		want   []string
		is     error
	}{
		{name: "behind credentials it does not have", url: url,
			want: []string{"source kubernetes: listing the tags of " + url + ": ", "authentication required"}},
		{name: "behind credentials that are wrong", url: url, auth: &githttp.BasicAuth{Username: "ci", Password: "wrong"},
			want: []string{"source kubernetes: listing the tags of " + url + ": "}},
		{name: "larger than its limit", url: url, auth: &githttp.BasicAuth{Username: "ci", Password: "s3cret"}, limits: Limits{MaxBytes: 64, MaxTags: 10},
			want: []string{"source kubernetes: listing the tags of " + url + ": ", "the responses hold more than 64 bytes"}, is: ErrSourceLimit},
		{name: "with more tags than its limit", url: url, auth: &githttp.BasicAuth{Username: "ci", Password: "s3cret"}, limits: Limits{MaxBytes: 1 << 20, MaxTags: 1},
			want: []string{"source kubernetes: listing the tags of " + url + ": ", "more than 1 tags are versions"}, is: ErrSourceLimit},
		// The versions file refuses it; ListGit does not rely on that.
		{name: "of another scheme", url: "file:///srv/kubernetes.git",
			want: []string{"source kubernetes: listing the tags of file:///srv/kubernetes.git: a file URL: only https, http and ssh URLs are read"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			options := GitOptions{Limits: tt.limits}
			if tt.auth != nil {
				options.Auth = tt.auth
			}
			var source *propose.Source
			if tt.url == url {
				source = gitSourceAt(tt.url)
			} else {
				source = gitSourceAt("https://example.invalid/kubernetes.git")
				source.Git.URL = tt.url
			}
			_, err := ListGit(context.Background(), source, options)
			g.Expect(err).To(HaveOccurred())
			for _, part := range tt.want {
				g.Expect(err.Error()).To(ContainSubstring(part))
			}
			g.Expect(err.Error()).NotTo(ContainSubstring("s3cret"))
			if tt.is != nil {
				g.Expect(errors.Is(err, tt.is)).To(BeTrue())
			}
		})
	}
}
