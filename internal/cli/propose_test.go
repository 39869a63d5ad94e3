package cli

import (
	"encoding/json"
	"io"
	"io/fs"
	"log"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	. "github.com/onsi/gomega"

	"github.com/profilesync/profilesync/test/gitserver"
)

// proposeFixture is a profiles repository (testdata/propose) on a Git
// server that takes pushes, a Kubernetes repository tagged v1.34.2 and
// v1.34.3 on another, and a registry behind credentials with
// gardenlinux:1592.5, as CI would find them.
type proposeFixture struct {
	profiles *gitserver.Server
	url      string
	// tags serves the Kubernetes repository.
	tags *gitserver.Server
	// at is the time propose runs at: two days after the tags were made.
	at time.Time
}

const proposeBranch = "profilesync/versions"

func newProposeFixture(t *testing.T) proposeFixture {
	t.Helper()
	g := NewWithT(t)

	tags, err := gitserver.New(t.TempDir(), gitserver.Options{})
	g.Expect(err).NotTo(HaveOccurred())
	t.Cleanup(func() { _ = tags.Close() })
	first, err := tags.CreateRepo("kubernetes", map[string]string{"README.md": "kubernetes\n"})
	g.Expect(err).NotTo(HaveOccurred())
	second, err := tags.Commit("kubernetes", map[string]string{"README.md": "1.34.3\n"}, "release 1.34.3")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(tags.Tag("kubernetes", "v1.34.2", first)).To(Succeed())
	_, err = tags.AnnotatedTag("kubernetes", "v1.34.3", second, "Kubernetes v1.34.3")
	g.Expect(err).NotTo(HaveOccurred())
	tagsRepo, err := git.PlainOpen(filepath.Join(tags.Root(), "kubernetes.git"))
	g.Expect(err).NotTo(HaveOccurred())
	cfg, err := tagsRepo.Config()
	g.Expect(err).NotTo(HaveOccurred())
	cfg.Raw.Section("uploadpack").SetOption("allowFilter", "true")
	g.Expect(tagsRepo.SetConfig(cfg)).To(Succeed())

	handler := registry.New(registry.Logger(log.New(io.Discard, "", 0)))
	images := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if u, p, ok := r.BasicAuth(); !ok || u != "ci" || p != "s3cret" {
			w.Header().Set("WWW-Authenticate", `Basic realm="registry"`)
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		handler.ServeHTTP(w, r)
	}))
	t.Cleanup(images.Close)
	host := strings.TrimPrefix(images.URL, "http://")
	image, err := random.Image(64, 1)
	g.Expect(err).NotTo(HaveOccurred())
	image, err = mutate.CreatedAt(image, v1.Time{Time: time.Now().Add(-time.Hour)})
	g.Expect(err).NotTo(HaveOccurred())
	ref, err := name.NewTag(host + "/gardenlinux/gardenlinux:1592.5")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(remote.Write(ref, image, remote.WithAuth(authn.FromConfig(authn.AuthConfig{Username: "ci", Password: "s3cret"})))).To(Succeed())

	files := map[string]string{}
	root := filepath.Join("testdata", "propose")
	g.Expect(filepath.WalkDir(root, func(path string, entry fs.DirEntry, err error) error {
		if err != nil || entry.IsDir() {
			return err
		}
		data, err := os.ReadFile(path)
		rel, _ := filepath.Rel(root, path)
		files[filepath.ToSlash(rel)] = string(data)
		return err
	})).To(Succeed())
	files["profilesync-versions.yaml"] = `apiVersion: versions.profilesync.io/v1alpha1
kind: VersionSources
schedule:
  previewDuration: 7d
sources:
- name: kubernetes
  git:
    url: ` + tags.RepoURL("kubernetes") + `
  cooldown: 1d
  feeds:
  - {file: base/cloudprofiles.yaml, cloudProfile: aws}
- name: gardenlinux
  oci:
    repository: "` + host + `/gardenlinux/gardenlinux"
    credentials: {usernameEnv: REGISTRY_USER, passwordEnv: REGISTRY_PASSWORD}
  feeds:
  - {file: base/cloudprofiles.yaml, cloudProfile: aws, machineImage: gardenlinux}
`
	profiles, err := gitserver.New(t.TempDir(), gitserver.Options{AllowPush: true})
	g.Expect(err).NotTo(HaveOccurred())
	t.Cleanup(func() { _ = profiles.Close() })
	_, err = profiles.CreateRepo("profiles", files)
	g.Expect(err).NotTo(HaveOccurred())
	return proposeFixture{profiles: profiles, url: profiles.RepoURL("profiles"), tags: tags, at: time.Now().UTC().Add(48 * time.Hour).Truncate(time.Second)}
}

// checkout clones the profiles repository's main branch, as CI does.
func (f proposeFixture) checkout(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	_, err := git.PlainClone(dir, false, &git.CloneOptions{URL: f.url})
	if err != nil {
		t.Fatal(err)
	}
	return dir
}

// branch returns the pushed branch's commit, its message and its first
// parent, as the server holds them.
func (f proposeFixture) branch(t *testing.T, branch string) (hash, message string, parent plumbing.Hash, file string) {
	t.Helper()
	g := NewWithT(t)
	repo, err := git.PlainOpen(filepath.Join(f.profiles.Root(), "profiles.git"))
	g.Expect(err).NotTo(HaveOccurred())
	ref, err := repo.Reference(plumbing.NewBranchReferenceName(branch), true)
	g.Expect(err).NotTo(HaveOccurred())
	commit, err := repo.CommitObject(ref.Hash())
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(commit.ParentHashes).To(HaveLen(1))
	content, err := commit.File("base/cloudprofiles.yaml")
	g.Expect(err).NotTo(HaveOccurred())
	file, err = content.Contents()
	g.Expect(err).NotTo(HaveOccurred())
	return commit.Hash.String(), commit.Message, commit.ParentHashes[0], file
}

func dateOf(t time.Time) string { return t.Format(time.DateOnly) }

// ceilDay is t rounded up to midnight UTC, as proposals write dates.
func ceilDay(t time.Time) time.Time {
	if m := t.Truncate(24 * time.Hour); !m.Equal(t) {
		return m.Add(24 * time.Hour)
	}
	return t
}

func TestProposePushesABranchThatASecondRunUpdatesInPlace(t *testing.T) {
	g := NewWithT(t)
	f := newProposeFixture(t)
	t.Setenv("REGISTRY_USER", "ci")
	t.Setenv("REGISTRY_PASSWORD", "s3cret")
	at := f.at.Format(time.RFC3339)
	takeover := ceilDay(f.at.Add(30 * 24 * time.Hour))
	expiry := takeover.Add(120 * 24 * time.Hour)

	checkout := f.checkout(t)
	status, stdout, stderr := run(t, "propose", "", "--repo", checkout, "--at", at, "--push-branch", proposeBranch)
	g.Expect(status).To(Equal(0), stderr)
	kubernetesLine := "- kubernetes 1.34.3 (tagged " + dateOf(time.Now().UTC()) + ") supported from " + dateOf(takeover) +
		"; 1.34.2 deprecated from " + dateOf(takeover) + " with 30 days' notice, expires " + dateOf(expiry)
	imageLine := "- gardenlinux 1592.5 (tagged " + dateOf(time.Now().UTC().Add(-time.Hour)) + ") supported from " + dateOf(takeover) +
		"; 1592.4.0 deprecated from " + dateOf(takeover) + " with 30 days' notice, expires " + dateOf(expiry)
	g.Expect(stdout).To(HavePrefix("profilesync propose: 2 changes of versions\n\n" + kubernetesLine + "\n" + imageLine + "\n"))
	g.Expect(stdout).To(ContainSubstring("Base "+checkout+" before the proposal, head "+checkout+" with the proposal; at "+at), "the report of diff follows the message")
	g.Expect(stdout).To(ContainSubstring("Policy of dev (profilesync-policy.yaml): satisfied."))
	g.Expect(stdout).To(ContainSubstring("1.34.3"))

	mainRepo, err := git.PlainOpen(filepath.Join(f.profiles.Root(), "profiles.git"))
	g.Expect(err).NotTo(HaveOccurred())
	mainRef, err := mainRepo.Reference(plumbing.NewBranchReferenceName(gitserver.DefaultBranch), true)
	g.Expect(err).NotTo(HaveOccurred())
	firstHash, message, parent, file := f.branch(t, proposeBranch)
	g.Expect(parent).To(Equal(mainRef.Hash()), "the branch is one commit on main")
	g.Expect(message).To(ContainSubstring(kubernetesLine))
	g.Expect(message).To(ContainSubstring(imageLine))
	g.Expect(file).To(ContainSubstring("    # 1.34: the newest minor.\n    - version: 1.34.2\n      lifecycle:\n      - classification: supported\n      - classification: deprecated\n"),
		"the file is edited in place, its comments kept")
	g.Expect(file).To(ContainSubstring("    - version: 1.34.3\n      lifecycle:\n      - classification: preview\n"))

	// Run on its own result, it proposes nothing.
	status, stdout, stderr = run(t, "propose", "", "--repo", checkout, "--at", at, "--push-branch", proposeBranch)
	g.Expect(status).To(Equal(0), stderr)
	g.Expect(stdout).To(HavePrefix("Nothing to propose"))

	// The next scheduled run, from main, replaces the branch: one
	// proposal, not two.
	status, _, stderr = run(t, "propose", "", "--repo", f.checkout(t), "--at", at, "--push-branch", proposeBranch)
	g.Expect(status).To(Equal(0), stderr)
	secondHash, _, parent, secondFile := f.branch(t, proposeBranch)
	g.Expect(parent).To(Equal(mainRef.Hash()))
	g.Expect(secondFile).To(Equal(file))
	g.Expect(secondHash).To(Equal(firstHash), "the same proposal at the same time is the same commit")
}

func TestASourceBehindBadCredentialsFailsByNameAndChangesNothing(t *testing.T) {
	g := NewWithT(t)
	f := newProposeFixture(t)
	t.Setenv("REGISTRY_USER", "ci")
	t.Setenv("REGISTRY_PASSWORD", "wrong")
	checkout := f.checkout(t)
	before, err := os.ReadFile(filepath.Join(checkout, "base", "cloudprofiles.yaml"))
	g.Expect(err).NotTo(HaveOccurred())

	status, stdout, stderr := run(t, "propose", "", "--repo", checkout, "--at", f.at.Format(time.RFC3339))
	g.Expect(status).To(Equal(1))
	g.Expect(stderr).To(MatchRegexp(`error: source gardenlinux: listing the tags of 127\.0\.0\.1:\d+/gardenlinux/gardenlinux: .*401 Unauthorized; it changes nothing`))
	g.Expect(stderr).NotTo(ContainSubstring("wrong"))
	g.Expect(stdout).To(HavePrefix("profilesync propose: 1 change of versions\n\n- kubernetes 1.34.3"))
	after, err := os.ReadFile(filepath.Join(checkout, "base", "cloudprofiles.yaml"))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(string(after)).NotTo(Equal(string(before)))
	g.Expect(string(after)).To(ContainSubstring("    - version: 1592.4.0\n      architectures: [amd64, arm64]\n      cri:\n      - name: containerd\n      lifecycle:\n      - classification: supported\n  machineTypes:"),
		"the image the failed source feeds is as it was")
}

func TestProposeWithJSONOutputPrintsTheReportAloneOnStdout(t *testing.T) {
	g := NewWithT(t)
	f := newProposeFixture(t)
	t.Setenv("REGISTRY_USER", "ci")
	t.Setenv("REGISTRY_PASSWORD", "s3cret")
	status, stdout, stderr := run(t, "propose", "", "--repo", f.checkout(t), "--at", f.at.Format(time.RFC3339), "--output", "json")
	g.Expect(status).To(Equal(0), stderr)
	var report map[string]any
	g.Expect(json.Unmarshal([]byte(stdout), &report)).To(Succeed(), stdout)
	g.Expect(stderr).To(HavePrefix("profilesync propose: 2 changes of versions\n"))
}

// TestASourceThatFailsOrHasBadTagsIsNamedAndChangesNothing: the Kubernetes
// source of the fixture's versions file made unreachable, or given tags
// none of which is one of its versions, or more than --max-source-tags: it
// is named on stderr, the Kubernetes versions stay as they were, and the
// machine image source is still proposed.
func TestASourceThatFailsOrHasBadTagsIsNamedAndChangesNothing(t *testing.T) {
	f := newProposeFixture(t)
	t.Setenv("REGISTRY_USER", "ci")
	t.Setenv("REGISTRY_PASSWORD", "s3cret")
	closed := httptest.NewServer(http.NotFoundHandler())
	closedURL := closed.URL + "/kubernetes.git"
	closed.Close()
	tests := []struct {
		name string
		// edit changes the Kubernetes source of the versions file.
		edit  func(versions string) string
		flags []string
		want  string
	}{
		{name: "unreachable", edit: func(v string) string {
			return regexpReplace(v, `url: http://\S+`, "url: "+closedURL)
		}, want: `error: source kubernetes: listing the tags of ` + closedURL + `: .*connection refused; it changes nothing`},
		{name: "a tag pattern that matches none of its tags", edit: func(v string) string {
			return strings.Replace(v, "  cooldown: 1d\n", "  cooldown: 1d\n  tagPattern: '^release-(.*)$'\n", 1)
		}, want: `error: source kubernetes: listing the tags of .*: no tag is one of the source's versions: none of its 2 tags matches tagPattern \^release-\(\.\*\)\$ \("v1\.34\.2" is one\); it changes nothing`},
		{name: "a semver range that none of its tags is in", edit: func(v string) string {
			return strings.Replace(v, "  cooldown: 1d\n", "  cooldown: 1d\n  versions: \">= 1.40\"\n", 1)
		}, want: `error: source kubernetes: listing the tags of .*: no tag is one of the source's versions: 2 tags are release versions, and none is in the range versions ">=1.40" \(the newest is 1\.34\.3\); it changes nothing`},
		{name: "more tags than --max-source-tags", edit: func(v string) string { return v }, flags: []string{"--max-source-tags", "1"},
			want: `error: source kubernetes: listing the tags of .*: source limit exceeded: more than 1 tags are versions; it changes nothing`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			checkout := f.checkout(t)
			versionsFile := filepath.Join(checkout, "profilesync-versions.yaml")
			versions, err := os.ReadFile(versionsFile)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(os.WriteFile(versionsFile, []byte(tt.edit(string(versions))), 0o644)).To(Succeed())

			status, stdout, stderr := run(t, "propose", "", append([]string{"--repo", checkout, "--at", f.at.Format(time.RFC3339)}, tt.flags...)...)

			g.Expect(status).To(Equal(1), stderr)
			g.Expect(stderr).To(MatchRegexp(tt.want))
			g.Expect(stdout).To(HavePrefix("profilesync propose: 1 change of versions\n\n- gardenlinux 1592.5"), "the other source is proposed")
			after, err := os.ReadFile(filepath.Join(checkout, "base", "cloudprofiles.yaml"))
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(string(after)).To(ContainSubstring("    # 1.34: the newest minor.\n    - version: 1.34.2\n      lifecycle:\n      - classification: supported\n  machineImages:"),
				"the Kubernetes versions the failed source feeds are as they were")
		})
	}
}

func regexpReplace(s, pattern, replacement string) string {
	return regexp.MustCompile(pattern).ReplaceAllLiteralString(s, replacement)
}

// TestProposeReadsAGitSourceOverSSHWithTheVariablesItsCredentialsName: the
// fixture's Kubernetes repository served over ssh, the versions file naming
// the variables of the key and of known_hosts, as a CI job sets them from
// its secrets.
func TestProposeReadsAGitSourceOverSSHWithTheVariablesItsCredentialsName(t *testing.T) {
	f := newProposeFixture(t)
	t.Setenv("REGISTRY_USER", "ci")
	t.Setenv("REGISTRY_PASSWORD", "s3cret")
	identity, clientKey, err := gitserver.NewSSHIdentity()
	if err != nil {
		t.Fatal(err)
	}
	server, err := gitserver.NewSSH(f.tags.Root(), clientKey)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = server.Close() })
	_, otherHostKey, err := gitserver.NewSSHIdentity()
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name       string
		knownHosts []byte
		wantStatus int
		wantStdout string
		wantStderr string
	}{
		{name: "the server's host key listed", knownHosts: server.KnownHosts(server.HostKey()),
			wantStdout: "profilesync propose: 2 changes of versions\n\n- kubernetes 1.34.3"},
		{name: "another host key listed", knownHosts: server.KnownHosts(otherHostKey), wantStatus: 1,
			wantStdout: "profilesync propose: 1 change of versions\n\n- gardenlinux 1592.5",
			wantStderr: "error: source kubernetes: listing the tags of ssh://***@" + server.Addr() + "/kubernetes.git: "},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			t.Setenv("GIT_SSH_KEY", string(identity))
			t.Setenv("GIT_KNOWN_HOSTS", string(tt.knownHosts))
			checkout := f.checkout(t)
			versionsFile := filepath.Join(checkout, "profilesync-versions.yaml")
			versions, err := os.ReadFile(versionsFile)
			g.Expect(err).NotTo(HaveOccurred())
			edited := regexpReplace(string(versions), `url: http://\S+`, `url: "`+server.RepoURL("kubernetes")+`"
    credentials: {identityEnv: GIT_SSH_KEY, knownHostsEnv: GIT_KNOWN_HOSTS}`)
			g.Expect(edited).NotTo(Equal(string(versions)))
			g.Expect(os.WriteFile(versionsFile, []byte(edited), 0o644)).To(Succeed())

			status, stdout, stderr := run(t, "propose", "", "--repo", checkout, "--at", f.at.Format(time.RFC3339))

			g.Expect(status).To(Equal(tt.wantStatus), stderr)
			g.Expect(stdout).To(HavePrefix(tt.wantStdout))
			if tt.wantStderr != "" {
				g.Expect(stderr).To(ContainSubstring(tt.wantStderr))
				g.Expect(stderr).To(ContainSubstring("knownhosts: key mismatch"))
			}
			g.Expect(stderr).NotTo(ContainSubstring("PRIVATE KEY"))
		})
	}
}

// TestAProposalThatALandscapeWouldRefuseIsNotProposed: the base is fine
// with 1.34.3, but the prod overlay pins 1.34.2's lifecycle with a patch:
// with 1.34.3 supported from the takeover, prod would offer two supported
// patches of 1.34 at once, which the validation refuses. The engine reads the base's
// file; the landscapes, built with the proposals, refuse it, so it is
// skipped, naming the overlay, and the image is still proposed.
func TestAProposalThatALandscapeWouldRefuseIsNotProposed(t *testing.T) {
	g := NewWithT(t)
	f := newProposeFixture(t)
	t.Setenv("REGISTRY_USER", "ci")
	t.Setenv("REGISTRY_PASSWORD", "s3cret")
	checkout := f.checkout(t)
	prod := filepath.Join(checkout, "overlays", "prod")
	g.Expect(os.MkdirAll(prod, 0o755)).To(Succeed())
	g.Expect(os.WriteFile(filepath.Join(prod, "kustomization.yaml"), []byte(`apiVersion: kustomize.config.k8s.io/v1beta1
kind: Kustomization
resources:
- ../../base
patches:
# prod keeps 1.34.2 supported, whatever the base plans for it.
- target: {kind: CloudProfile, name: aws}
  patch: |-
    - op: replace
      path: /spec/kubernetes/versions/1/lifecycle
      value: [{classification: supported}]
`), 0o644)).To(Succeed())

	status, stdout, stderr := run(t, "propose", "", "--repo", checkout, "--at", f.at.Format(time.RFC3339))

	g.Expect(status).To(Equal(0), stderr)
	g.Expect(stdout).To(HavePrefix("profilesync propose: 1 change of versions\n\n- gardenlinux 1592.5"))
	g.Expect(stderr).To(MatchRegexp(`skipped: source kubernetes: .*1\.34\.3: not proposed, it would be refused: overlays/prod: base/cloudprofiles\.yaml: CloudProfile/aws: .*"supported" lifecycle stages must not overlap per minor version`))
	after, err := os.ReadFile(filepath.Join(checkout, "base", "cloudprofiles.yaml"))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(string(after)).NotTo(ContainSubstring("1.34.3"))
	g.Expect(stdout).To(ContainSubstring("Policy of prod (profilesync-policy.yaml): satisfied."), "the report agrees")
}

// TestProposeRebuildsItsBranchOnAMovedBase: main moves after a proposal was
// pushed; the next scheduled run replaces the branch with one commit on the
// new main, carrying the same edits and the new main's change, not a second
// commit on the old proposal.
func TestProposeRebuildsItsBranchOnAMovedBase(t *testing.T) {
	g := NewWithT(t)
	f := newProposeFixture(t)
	t.Setenv("REGISTRY_USER", "ci")
	t.Setenv("REGISTRY_PASSWORD", "s3cret")
	at := f.at.Format(time.RFC3339)
	status, _, stderr := run(t, "propose", "", "--repo", f.checkout(t), "--at", at, "--push-branch", proposeBranch)
	g.Expect(status).To(Equal(0), stderr)
	firstHash, _, _, file := f.branch(t, proposeBranch)

	moved, err := f.profiles.Commit("profiles", map[string]string{"README.md": "a change merged meanwhile\n"}, "docs: a change merged meanwhile")
	g.Expect(err).NotTo(HaveOccurred())
	status, _, stderr = run(t, "propose", "", "--repo", f.checkout(t), "--at", at, "--push-branch", proposeBranch)

	g.Expect(status).To(Equal(0), stderr)
	secondHash, message, parent, secondFile := f.branch(t, proposeBranch)
	g.Expect(secondHash).NotTo(Equal(firstHash))
	g.Expect(parent.String()).To(Equal(moved), "one commit on the new main")
	g.Expect(secondFile).To(Equal(file), "the same edits")
	g.Expect(message).To(HavePrefix("profilesync propose: 2 changes of versions\n"))
}

// TestProposePrintsTheReportDiffPrintsOfTheTreeBeforeAndAfter: after the
// commit message, propose prints what `profilesync diff` prints for the
// checkout before and after the edits, in each format, word for word but
// the trees' labels.
func TestProposePrintsTheReportDiffPrintsOfTheTreeBeforeAndAfter(t *testing.T) {
	f := newProposeFixture(t)
	t.Setenv("REGISTRY_USER", "ci")
	t.Setenv("REGISTRY_PASSWORD", "s3cret")
	at := f.at.Format(time.RFC3339)
	for _, format := range []string{"table", "markdown"} {
		t.Run(format, func(t *testing.T) {
			g := NewWithT(t)
			before, checkout := f.checkout(t), f.checkout(t)
			status, stdout, stderr := run(t, "propose", "", "--repo", checkout, "--at", at, "--output", format)
			g.Expect(status).To(Equal(0), stderr)
			_, report, ok := strings.Cut(stdout, "Proposed from the sources of profilesync-versions.yaml; see docs/versions.md.\n")
			g.Expect(ok).To(BeTrue(), stdout)

			status, diffReport, stderr := run(t, "diff", "", "--base-dir", before, "--head-dir", checkout, "--at", at, "--output", format)
			g.Expect(status).To(Equal(0), stderr)
			// The trees as diff names them: their directories.
			report = strings.ReplaceAll(report, checkout+" before the proposal", before)
			report = strings.ReplaceAll(report, checkout+" with the proposal", checkout)
			g.Expect(report).To(Equal(diffReport))
			g.Expect(report).To(ContainSubstring("1.34.3"))
		})
	}
}
