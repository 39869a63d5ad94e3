package versionupdate

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/fluxcd/pkg/apis/meta"
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
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1alpha1 "github.com/profilesync/profilesync/api/v1alpha1"
	"github.com/profilesync/profilesync/internal/gitsource"
	"github.com/profilesync/profilesync/test/gitserver"
	"github.com/profilesync/profilesync/test/metricstest"
	"github.com/profilesync/profilesync/test/testenv"
)

// The credentials of the fixture's servers: the profiles repository's (the
// ProfileSync's Secret) and the registry's.
const (
	gitUsername      = "landscape"
	gitPassword      = "git-s3cret"
	registryUsername = "ci"
	registryPassword = "registry-s3cret"
	proposalBranch   = "profilesync/versions"
	// reconciled bounds how long a check or a sync may take on a loaded
	// machine.
	reconciled = 60 * time.Second
)

// fixture is a profiles repository (testdata/profiles) on a Git server
// behind basic authentication that takes pushes, a Kubernetes repository
// tagged v1.34.2 and v1.34.3 on another, and a registry behind basic
// authentication with gardenlinux:1592.5 (made an hour ago), as the
// operator would find them; and the namespace's ProfileSync of the profiles
// repository, with its Secret.
type fixture struct {
	profiles  *gitserver.Server
	namespace string
	sync      *v1alpha1.ProfileSync
}

type fixtureOptions struct {
	// namespace is where the ProfileSync, the Secrets and the VersionUpdate
	// live.
	namespace string
	// onlyImages leaves the Kubernetes source out of the versions file.
	onlyImages bool
	// registrySecret is the data of the Secret the image source names, for
	// the registry at host.
	registrySecret func(host string) map[string][]byte
	// suspendSync keeps the ProfileSync from applying: it still follows its
	// branch.
	suspendSync bool
	// editFiles changes the repository's files before it is served.
	editFiles func(files map[string]string)
}

func newFixture(t *testing.T, opts fixtureOptions) *fixture {
	t.Helper()
	g := NewWithT(t)
	ensureNamespace(t, opts.namespace)

	// The tags are behind basic authentication: the source reads them with
	// the Secret its credentials.secretName names.
	tags := gitserver.StartForTest(t, gitserver.Options{Username: gitUsername, Password: gitPassword})
	first, err := tags.CreateRepo("kubernetes", map[string]string{"README.md": "kubernetes\n"})
	g.Expect(err).NotTo(HaveOccurred())
	second, err := tags.Commit("kubernetes", map[string]string{"README.md": "1.34.3\n"}, "release 1.34.3")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(tags.Tag("kubernetes", "v1.34.2", first)).To(Succeed())
	_, err = tags.AnnotatedTag("kubernetes", "v1.34.3", second, "Kubernetes v1.34.3")
	g.Expect(err).NotTo(HaveOccurred())
	// The server lets the source read the tags' times without their trees.
	tagsRepo, err := git.PlainOpen(filepath.Join(tags.Root(), "kubernetes.git"))
	g.Expect(err).NotTo(HaveOccurred())
	cfg, err := tagsRepo.Config()
	g.Expect(err).NotTo(HaveOccurred())
	cfg.Raw.Section("uploadpack").SetOption("allowFilter", "true")
	g.Expect(tagsRepo.SetConfig(cfg)).To(Succeed())

	handler := registry.New(registry.Logger(log.New(io.Discard, "", 0)))
	images := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if u, p, ok := r.BasicAuth(); !ok || u != registryUsername || p != registryPassword {
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
	g.Expect(remote.Write(ref, image, remote.WithAuth(authn.FromConfig(authn.AuthConfig{Username: registryUsername, Password: registryPassword})))).To(Succeed())

	registrySecret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: testenv.UniqueName("registry"), Namespace: opts.namespace}, Data: opts.registrySecret(host)}
	if _, ok := registrySecret.Data[corev1.DockerConfigJsonKey]; ok {
		registrySecret.Type = corev1.SecretTypeDockerConfigJson
	}
	createForTest(t, registrySecret)

	tagsSecret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: testenv.UniqueName("tags"), Namespace: opts.namespace},
		Data: map[string][]byte{gitsource.CredentialUsername: []byte(gitUsername), gitsource.CredentialPassword: []byte(gitPassword)}}
	createForTest(t, tagsSecret)

	files, err := gitserver.ReadTree(filepath.Join("testdata", "profiles"))
	g.Expect(err).NotTo(HaveOccurred())
	kubernetesSource := `- name: kubernetes
  git:
    url: ` + tags.RepoURL("kubernetes") + `
    credentials: {secretName: ` + tagsSecret.Name + `}
  feeds:
  - {file: base/cloudprofiles.yaml, cloudProfile: aws}
`
	if opts.onlyImages {
		kubernetesSource = ""
	}
	files["profilesync-versions.yaml"] = `apiVersion: versions.profilesync.io/v1alpha1
kind: VersionSources
schedule:
  previewDuration: 7d
sources:
` + kubernetesSource + `- name: gardenlinux
  oci:
    repository: "` + host + `/gardenlinux/gardenlinux"
    credentials: {secretName: ` + registrySecret.Name + `}
  feeds:
  - {file: base/cloudprofiles.yaml, cloudProfile: aws, machineImage: gardenlinux}
`
	if opts.editFiles != nil {
		opts.editFiles(files)
	}
	profiles := gitserver.StartForTest(t, gitserver.Options{Username: gitUsername, Password: gitPassword, AllowPush: true})
	_, err = profiles.CreateRepo("profiles", files)
	g.Expect(err).NotTo(HaveOccurred())

	gitSecret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: testenv.UniqueName("git"), Namespace: opts.namespace},
		Data: map[string][]byte{gitsource.CredentialUsername: []byte(gitUsername), gitsource.CredentialPassword: []byte(gitPassword)}}
	createForTest(t, gitSecret)
	sync := &v1alpha1.ProfileSync{
		ObjectMeta: metav1.ObjectMeta{Name: testenv.UniqueName("landscape"), Namespace: opts.namespace},
		Spec: v1alpha1.ProfileSyncSpec{
			URL:       profiles.RepoURL("profiles"),
			Ref:       &v1alpha1.GitReference{Branch: gitserver.DefaultBranch},
			Path:      "overlays/dev",
			Interval:  metav1.Duration{Duration: time.Second},
			SecretRef: &meta.LocalObjectReference{Name: gitSecret.Name},
			Suspend:   opts.suspendSync,
			Prune:     true,
		},
	}
	createForTest(t, sync)
	return &fixture{profiles: profiles, namespace: opts.namespace, sync: sync}
}

// versionUpdate makes a VersionUpdate of the fixture's ProfileSync that
// pushes to branch and checks every interval.
func (f *fixture) versionUpdate(t *testing.T, branch string, interval time.Duration) *v1alpha1.VersionUpdate {
	t.Helper()
	update := &v1alpha1.VersionUpdate{
		ObjectMeta: metav1.ObjectMeta{Name: testenv.UniqueName("versions"), Namespace: f.namespace},
		Spec: v1alpha1.VersionUpdateSpec{
			ProfileSyncRef: meta.LocalObjectReference{Name: f.sync.Name},
			Branch:         branch,
			Interval:       metav1.Duration{Duration: interval},
			Author:         &v1alpha1.CommitAuthor{Name: "Version Bot", Email: "versions@example.com"},
		},
	}
	createForTest(t, update)
	return update
}

// branch is the commit a branch of the profiles repository is at on the
// server; empty when it does not exist.
func (f *fixture) branch(t *testing.T, branch string) string {
	t.Helper()
	repo, err := git.PlainOpen(filepath.Join(f.profiles.Root(), "profiles.git"))
	if err != nil {
		t.Fatal(err)
	}
	ref, err := repo.Reference(plumbing.NewBranchReferenceName(branch), true)
	if err != nil {
		return ""
	}
	return ref.Hash().String()
}

// commit reads a commit of the profiles repository on the server.
func (f *fixture) commit(t *testing.T, hash string) (message string, parents []string, cloudProfiles string) {
	t.Helper()
	g := NewWithT(t)
	repo, err := git.PlainOpen(filepath.Join(f.profiles.Root(), "profiles.git"))
	g.Expect(err).NotTo(HaveOccurred())
	commit, err := repo.CommitObject(plumbing.NewHash(hash))
	g.Expect(err).NotTo(HaveOccurred())
	for _, p := range commit.ParentHashes {
		parents = append(parents, p.String())
	}
	file, err := commit.File("base/cloudprofiles.yaml")
	g.Expect(err).NotTo(HaveOccurred())
	cloudProfiles, err = file.Contents()
	g.Expect(err).NotTo(HaveOccurred())
	return commit.Message, parents, cloudProfiles
}

// merge moves the followed branch to the proposal's commit, a
// fast-forward, as merging its pull request does.
func (f *fixture) merge(t *testing.T, into, commit string) {
	t.Helper()
	repo, err := git.PlainOpen(filepath.Join(f.profiles.Root(), "profiles.git"))
	if err != nil {
		t.Fatal(err)
	}
	if err := repo.Storer.SetReference(plumbing.NewHashReference(plumbing.NewBranchReferenceName(into), plumbing.NewHash(commit))); err != nil {
		t.Fatal(err)
	}
}

func dockerConfig(host, username, password string) map[string][]byte {
	auth := base64.StdEncoding.EncodeToString([]byte(username + ":" + password))
	data, err := json.Marshal(map[string]any{"auths": map[string]any{host: map[string]string{"auth": auth}}})
	if err != nil {
		panic(err)
	}
	return map[string][]byte{corev1.DockerConfigJsonKey: data}
}

func TestAVersionUpdateProposesOnceThenNothingNewAndTheMergedProposalIsApplied(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	f := newFixture(t, fixtureOptions{namespace: testenv.OperatorNamespace,
		registrySecret: func(host string) map[string][]byte { return dockerConfig(host, registryUsername, registryPassword) }})
	t.Cleanup(func() { _ = k8sClient.Delete(ctx, &v1alpha1.CloudProfile{ObjectMeta: metav1.ObjectMeta{Name: "aws"}}) })
	main := f.branch(t, gitserver.DefaultBranch)

	// The landscape runs the profiles as they are.
	g.Eventually(func(g Gomega) {
		cp := testenv.GetCloudProfile(g, k8sClient, "aws")
		g.Expect(versionsOf(cp)).NotTo(ContainElement("1.34.3"))
	}).WithTimeout(reconciled).Should(Succeed())

	update := f.versionUpdate(t, proposalBranch, 2*time.Second)
	var proposal string
	g.Eventually(func(g Gomega) {
		got := getVersionUpdate(g, update)
		ready := apimeta.FindStatusCondition(got.Status.Conditions, v1alpha1.ReadyCondition)
		g.Expect(ready).NotTo(BeNil())
		g.Expect(got.Status.LastProposal).NotTo(BeNil(), "Ready: %s %s", ready.Reason, ready.Message)
		proposal = got.Status.LastProposal.Commit
	}).WithTimeout(reconciled).Should(Succeed())

	got := getVersionUpdate(g, update)
	proposedAt := got.Status.LastCheckTime
	g.Expect(proposedAt).NotTo(BeNil())
	g.Expect(f.branch(t, proposalBranch)).To(Equal(proposal), "the branch is pushed to the server")
	message, parents, file := f.commit(t, proposal)
	g.Expect(parents).To(Equal([]string{main}), "one commit on the followed branch")
	g.Expect(message).To(HavePrefix("profilesync propose: 2 changes of versions\n\n- kubernetes 1.34.3 (tagged "))
	g.Expect(message).To(ContainSubstring("\n- gardenlinux 1592.5 (tagged "))
	g.Expect(file).To(ContainSubstring("    - version: 1.34.3\n      lifecycle:\n      - classification: preview\n"))
	g.Expect(file).To(ContainSubstring("    # 1.34: the newest minor.\n"), "edited in place, its comments kept")
	g.Expect(got.Status.LastProposal.Branch).To(Equal(proposalBranch))
	g.Expect(got.Status.LastProposal.Base).To(Equal(main))
	g.Expect(got.Status.LastProposal.Changes).To(HaveLen(2))
	g.Expect(got.Status.LastProposal.Changes[0].Source).To(Equal("kubernetes"))
	g.Expect(got.Status.LastProposal.Changes[0].Summary).To(HavePrefix("kubernetes 1.34.3 (tagged "))
	g.Expect(got.Status.Sources).To(Equal([]v1alpha1.VersionSourceStatus{
		{Name: "kubernetes", Found: 2, Newest: []string{"1.34.3", "1.34.2"}},
		{Name: "gardenlinux", Found: 1, Newest: []string{"1592.5"}},
	}))
	events, err := testenv.Events(ctx, k8sClient, testenv.EventQuery{Namespace: f.namespace, Kind: v1alpha1.VersionUpdateKind, Name: update.Name, Reason: v1alpha1.ProposedReason})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(testenv.Messages(events)).To(ConsistOf(HavePrefix("pushed 2 changes on main@" + main[:12] + " to branch " + proposalBranch + " (commit " + proposal[:12] + "): kubernetes 1.34.3")))

	// Its next interval proposes nothing new: the branch already carries it.
	g.Eventually(func(g Gomega) {
		events, err := testenv.Events(ctx, k8sClient, testenv.EventQuery{Namespace: f.namespace, Kind: v1alpha1.VersionUpdateKind, Name: update.Name, Reason: v1alpha1.NothingToProposeReason})
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(testenv.Messages(events)).To(ContainElement("nothing new to propose: branch " + proposalBranch + " already carries the proposal on main@" + main[:12] + " (commit " + proposal[:12] + ")"))
		got := getVersionUpdate(g, update)
		ready := apimeta.FindStatusCondition(got.Status.Conditions, v1alpha1.ReadyCondition)
		g.Expect(ready.Reason).To(Equal(v1alpha1.NothingToProposeReason))
		g.Expect(ready.Status).To(Equal(metav1.ConditionTrue))
		// A check that finds nothing new still says when it ran.
		g.Expect(got.Status.LastCheckTime.After(proposedAt.Time)).To(BeTrue())
	}).WithTimeout(reconciled).Should(Succeed())
	g.Expect(f.branch(t, proposalBranch)).To(Equal(proposal), "the branch is not pushed again")
	g.Expect(metricstest.Value(g, testMetrics, "profilesync_version_proposals_total", map[string]string{"namespace": f.namespace, "name": update.Name})).To(BeEquivalentTo(1))

	// Merged, the landscape applies it, and there is nothing to propose.
	f.merge(t, gitserver.DefaultBranch, proposal)
	g.Eventually(func(g Gomega) {
		cp := testenv.GetCloudProfile(g, k8sClient, "aws")
		g.Expect(versionsOf(cp)).To(ContainElement("1.34.3"))
		g.Expect(imageVersionsOf(cp)).To(ContainElement("1592.5"))
	}).WithTimeout(reconciled).Should(Succeed())
	g.Eventually(func(g Gomega) {
		ready := apimeta.FindStatusCondition(getVersionUpdate(g, update).Status.Conditions, v1alpha1.ReadyCondition)
		g.Expect(ready.Reason).To(Equal(v1alpha1.NothingToProposeReason))
		g.Expect(ready.Message).To(HavePrefix("nothing to propose on main@" + proposal[:12] + ": the profiles hold every version"))
	}).WithTimeout(reconciled).Should(Succeed())
	g.Expect(f.branch(t, proposalBranch)).To(Equal(proposal))
}

func TestASourceBehindBadCredentialsFailsByNameAndPushesNothing(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	f := newFixture(t, fixtureOptions{namespace: testenv.UniqueName("bad-credentials"), onlyImages: true, suspendSync: true,
		registrySecret: func(string) map[string][]byte {
			return map[string][]byte{"username": []byte(registryUsername), "password": []byte("wrong")}
		}})
	main := f.branch(t, gitserver.DefaultBranch)
	update := f.versionUpdate(t, proposalBranch, 2*time.Second)

	g.Eventually(func(g Gomega) {
		got := getVersionUpdate(g, update)
		ready := apimeta.FindStatusCondition(got.Status.Conditions, v1alpha1.ReadyCondition)
		g.Expect(ready).NotTo(BeNil())
		g.Expect(ready.Status).To(Equal(metav1.ConditionFalse))
		g.Expect(ready.Reason).To(Equal(v1alpha1.SourceFailedReason))
		g.Expect(ready.Message).To(MatchRegexp(`^source gardenlinux: listing the tags of 127\.0\.0\.1:\d+/gardenlinux/gardenlinux: .*401 Unauthorized.*; it changes nothing\n`))
		g.Expect(ready.Message).NotTo(ContainSubstring("wrong"))
		g.Expect(got.Status.Sources).To(HaveLen(1))
		g.Expect(got.Status.Sources[0].Name).To(Equal("gardenlinux"))
		g.Expect(got.Status.Sources[0].Failure).To(HavePrefix("source gardenlinux: "))
		g.Expect(got.Status.LastProposal).To(BeNil())
	}).WithTimeout(reconciled).Should(Succeed())
	events, err := testenv.Events(ctx, k8sClient, testenv.EventQuery{Namespace: f.namespace, Kind: v1alpha1.VersionUpdateKind, Name: update.Name, Reason: SourceFailedEvent})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(testenv.Messages(events)).To(ContainElement(HavePrefix("source gardenlinux: listing the tags of ")))
	g.Expect(metricstest.Value(g, testMetrics, "profilesync_version_source_failures_total",
		map[string]string{"namespace": f.namespace, "name": update.Name, "source": "gardenlinux"})).To(BeNumerically(">=", 1))
	g.Expect(f.branch(t, proposalBranch)).To(BeEmpty(), "nothing is pushed")
	g.Expect(f.branch(t, gitserver.DefaultBranch)).To(Equal(main))
}

func TestAVersionUpdateNeverPushesToAFollowedBranchUnlessTold(t *testing.T) {
	g := NewWithT(t)
	f := newFixture(t, fixtureOptions{namespace: testenv.UniqueName("followed"), suspendSync: true, onlyImages: true,
		registrySecret: func(string) map[string][]byte {
			return map[string][]byte{"username": []byte(registryUsername), "password": []byte(registryPassword)}
		}})
	main := f.branch(t, gitserver.DefaultBranch)
	update := f.versionUpdate(t, gitserver.DefaultBranch, 2*time.Second)

	g.Eventually(func(g Gomega) {
		got := getVersionUpdate(g, update)
		ready := apimeta.FindStatusCondition(got.Status.Conditions, v1alpha1.ReadyCondition)
		g.Expect(ready).NotTo(BeNil())
		g.Expect(ready.Status).To(Equal(metav1.ConditionFalse))
		g.Expect(ready.Reason).To(Equal(v1alpha1.BranchFollowedReason))
		g.Expect(ready.Message).To(Equal("spec.branch main is the branch ProfileSync " + f.namespace + "/" + f.sync.Name +
			" follows: nothing is pushed to it unless spec.allowPushToFollowedBranch is true"))
		g.Expect(apimeta.IsStatusConditionTrue(got.Status.Conditions, v1alpha1.StalledCondition)).To(BeTrue())
	}).WithTimeout(reconciled).Should(Succeed())
	g.Consistently(func() string { return f.branch(t, gitserver.DefaultBranch) }).WithTimeout(5 * time.Second).Should(Equal(main))

	// Told to, it pushes there: a fast-forward of the branch.
	testenv.UpdateSpec(t, k8sClient, update, func(u *v1alpha1.VersionUpdate) { u.Spec.AllowPushToFollowedBranch = true })
	g.Eventually(func(g Gomega) {
		got := getVersionUpdate(g, update)
		g.Expect(got.Status.LastProposal).NotTo(BeNil())
		g.Expect(got.Status.LastProposal.Branch).To(Equal(gitserver.DefaultBranch))
		g.Expect(apimeta.FindStatusCondition(got.Status.Conditions, v1alpha1.StalledCondition)).To(BeNil())
	}).WithTimeout(reconciled).Should(Succeed())
	pushed := f.branch(t, gitserver.DefaultBranch)
	_, parents, _ := f.commit(t, pushed)
	g.Expect(parents).To(Equal([]string{main}))
}

func TestAClusterNamespacedCloudProfileKeepsAVersionFromRetiring(t *testing.T) {
	g := NewWithT(t)
	expired := `    # 1.32: expired long ago.
    - version: 1.32.8
      lifecycle:
      - classification: supported
      - classification: deprecated
        startTime: "2026-01-01T00:00:00Z"
      - classification: expired
        startTime: "2026-03-01T00:00:00Z"
    - version: 1.32.9
      lifecycle:
      - classification: supported
      - classification: deprecated
        startTime: "2026-01-01T00:00:00Z"
      - classification: expired
        startTime: "2026-03-01T00:00:00Z"
`
	f := newFixture(t, fixtureOptions{namespace: testenv.UniqueName("overrides"), suspendSync: true,
		registrySecret: func(string) map[string][]byte {
			return map[string][]byte{"username": []byte(registryUsername), "password": []byte(registryPassword)}
		},
		editFiles: func(files map[string]string) {
			file := files["base/cloudprofiles.yaml"]
			g.Expect(file).To(ContainSubstring("    # 1.33: the older minor.\n"))
			files["base/cloudprofiles.yaml"] = strings.Replace(file, "    # 1.33: the older minor.\n", expired+"    # 1.33: the older minor.\n", 1)
		}})
	// A project on the cluster still offers 1.32.9; the repository does not
	// know it.
	createForTest(t, &v1alpha1.NamespacedCloudProfile{
		ObjectMeta: metav1.ObjectMeta{Name: "late-upgrade", Namespace: f.namespace},
		Spec: v1alpha1.NamespacedCloudProfileSpec{
			Parent: v1alpha1.CloudProfileReference{Kind: v1alpha1.CloudProfileKind, Name: "aws"},
			Kubernetes: &v1alpha1.KubernetesSettings{Versions: []v1alpha1.ExpirableVersion{{Version: "1.32.9",
				Lifecycle: []v1alpha1.LifecycleStage{{Classification: v1alpha1.ClassificationExpired, StartTime: &metav1.Time{Time: time.Now().Add(365 * 24 * time.Hour)}}}}}},
		},
	})
	update := f.versionUpdate(t, proposalBranch, 2*time.Second)

	g.Eventually(func(g Gomega) {
		got := getVersionUpdate(g, update)
		g.Expect(got.Status.LastProposal).NotTo(BeNil())
		var summaries []string
		for _, c := range got.Status.LastProposal.Changes {
			summaries = append(summaries, c.Summary)
		}
		g.Expect(summaries).To(ContainElement("kubernetes 1.32.8 retired: expired on 2026-03-01, more than 90d ago, and no NamespacedCloudProfile of the repository or the cluster lists it"))
		g.Expect(summaries).NotTo(ContainElement(ContainSubstring("1.32.9")))
	}).WithTimeout(reconciled).Should(Succeed())
	_, _, file := f.commit(t, f.branch(t, proposalBranch))
	g.Expect(file).NotTo(ContainSubstring("- version: 1.32.8\n"))
	g.Expect(file).To(ContainSubstring("- version: 1.32.9\n"))
}

func TestAVersionUpdateChecksAtOnceWhenItsProfileSyncAppears(t *testing.T) {
	g := NewWithT(t)
	f := newFixture(t, fixtureOptions{namespace: testenv.UniqueName("appears"), suspendSync: true, onlyImages: true,
		registrySecret: func(string) map[string][]byte {
			return map[string][]byte{"username": []byte(registryUsername), "password": []byte(registryPassword)}
		}})
	update := &v1alpha1.VersionUpdate{
		ObjectMeta: metav1.ObjectMeta{Name: testenv.UniqueName("versions"), Namespace: f.namespace},
		Spec: v1alpha1.VersionUpdateSpec{
			ProfileSyncRef: meta.LocalObjectReference{Name: "later"},
			Branch:         proposalBranch,
			Interval:       metav1.Duration{Duration: time.Hour},
		},
	}
	createForTest(t, update)
	g.Eventually(func(g Gomega) {
		ready := apimeta.FindStatusCondition(getVersionUpdate(g, update).Status.Conditions, v1alpha1.ReadyCondition)
		g.Expect(ready).NotTo(BeNil())
		g.Expect(ready.Reason).To(Equal(v1alpha1.ProfileSyncNotFoundReason))
		g.Expect(ready.Message).To(Equal("spec.profileSyncRef: ProfileSync " + f.namespace + "/later not found"))
	}).WithTimeout(reconciled).Should(Succeed())

	// Its ProfileSync appears: it checks at once, not in an hour.
	later := &v1alpha1.ProfileSync{ObjectMeta: metav1.ObjectMeta{Name: "later", Namespace: f.namespace}, Spec: f.sync.Spec}
	createForTest(t, later)
	g.Eventually(func(g Gomega) {
		got := getVersionUpdate(g, update)
		g.Expect(got.Status.LastProposal).NotTo(BeNil())
		g.Expect(got.Status.LastProposal.Branch).To(Equal(proposalBranch))
	}).WithTimeout(retryAfterTransient*2/3).Should(Succeed(), "sooner than the retry of a ProfileSync not found")
	g.Expect(f.branch(t, proposalBranch)).To(Equal(getVersionUpdate(g, update).Status.LastProposal.Commit))
}

func getVersionUpdate(g Gomega, obj *v1alpha1.VersionUpdate) *v1alpha1.VersionUpdate {
	var got v1alpha1.VersionUpdate
	g.Expect(k8sClient.Get(context.Background(), client.ObjectKeyFromObject(obj), &got)).To(Succeed())
	return &got
}

func versionsOf(cp *v1alpha1.CloudProfile) []string {
	var versions []string
	for _, v := range cp.Spec.Kubernetes.Versions {
		versions = append(versions, v.Version)
	}
	return versions
}

func imageVersionsOf(cp *v1alpha1.CloudProfile) []string {
	var versions []string
	for _, image := range cp.Spec.MachineImages {
		for _, v := range image.Versions {
			versions = append(versions, v.Version)
		}
	}
	return versions
}

func ensureNamespace(t *testing.T, namespace string) {
	t.Helper()
	err := k8sClient.Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: namespace}})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatalf("create namespace %s: %v", namespace, err)
	}
}

// createForTest creates obj and deletes it when the test ends.
func createForTest(t *testing.T, obj client.Object) {
	t.Helper()
	if err := k8sClient.Create(context.Background(), obj); err != nil {
		t.Fatalf("create %T %s: %v", obj, obj.GetName(), err)
	}
	t.Cleanup(func() { _ = k8sClient.Delete(context.Background(), obj) })
}

// TestASecondVersionUpdateOfTheSameBranchIsRefusedUntilTheFirstLeaves: two
// VersionUpdates that push one branch of one repository would replace each
// other's proposals on every interval; the one created later is Stalled,
// naming the other, and takes the branch at once when the other is deleted.
func TestASecondVersionUpdateOfTheSameBranchIsRefusedUntilTheFirstLeaves(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	f := newFixture(t, fixtureOptions{namespace: testenv.UniqueName("claimed"), suspendSync: true, onlyImages: true,
		registrySecret: func(string) map[string][]byte {
			return map[string][]byte{"username": []byte(registryUsername), "password": []byte(registryPassword)}
		}})
	first := f.versionUpdate(t, proposalBranch, time.Hour)
	var proposal string
	g.Eventually(func(g Gomega) {
		got := getVersionUpdate(g, first)
		g.Expect(got.Status.LastProposal).NotTo(BeNil())
		proposal = got.Status.LastProposal.Commit
	}).WithTimeout(reconciled).Should(Succeed())

	second := f.versionUpdate(t, proposalBranch, time.Hour)
	g.Eventually(func(g Gomega) {
		got := getVersionUpdate(g, second)
		ready := apimeta.FindStatusCondition(got.Status.Conditions, v1alpha1.ReadyCondition)
		g.Expect(ready).NotTo(BeNil())
		g.Expect(ready.Status).To(Equal(metav1.ConditionFalse))
		g.Expect(ready.Reason).To(Equal(v1alpha1.BranchClaimedReason))
		g.Expect(ready.Message).To(Equal("spec.branch " + proposalBranch + " of " + f.sync.Spec.URL + " is pushed by VersionUpdate " +
			f.namespace + "/" + first.Name + ", created first: two VersionUpdates on one branch would replace each other's proposals; give this one a branch of its own"))
		g.Expect(apimeta.IsStatusConditionTrue(got.Status.Conditions, v1alpha1.StalledCondition)).To(BeTrue())
		g.Expect(got.Status.LastProposal).To(BeNil())
	}).WithTimeout(reconciled).Should(Succeed())
	g.Expect(f.branch(t, proposalBranch)).To(Equal(proposal), "the second pushes nothing")
	ready := apimeta.FindStatusCondition(getVersionUpdate(g, first).Status.Conditions, v1alpha1.ReadyCondition)
	g.Expect(ready.Reason).To(Equal(v1alpha1.ProposedReason), "the first keeps its branch")

	// The first leaves: the second takes the branch at once, not in an hour.
	g.Expect(k8sClient.Delete(ctx, first)).To(Succeed())
	g.Eventually(func(g Gomega) {
		got := getVersionUpdate(g, second)
		ready := apimeta.FindStatusCondition(got.Status.Conditions, v1alpha1.ReadyCondition)
		g.Expect(ready).NotTo(BeNil())
		g.Expect(ready.Reason).To(Equal(v1alpha1.NothingToProposeReason), ready.Message)
		g.Expect(apimeta.FindStatusCondition(got.Status.Conditions, v1alpha1.StalledCondition)).To(BeNil())
	}).WithTimeout(retryAfterTransient * 2 / 3).Should(Succeed())
}

// TestAVersionUpdateDoesNotPushWhatALandscapeWouldRefuse: the prod overlay
// pins 1.34.2's lifecycle with a patch, so 1.34.3 would give prod two
// supported patches of 1.34 at once. The tree's landscapes are built with
// the proposals in the manager's build sandbox: 1.34.3 is not pushed, an
// event says why, naming the overlay, and the image is.
func TestAVersionUpdateDoesNotPushWhatALandscapeWouldRefuse(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	f := newFixture(t, fixtureOptions{namespace: testenv.UniqueName("landscapes"), suspendSync: true,
		registrySecret: func(string) map[string][]byte {
			return map[string][]byte{"username": []byte(registryUsername), "password": []byte(registryPassword)}
		},
		editFiles: func(files map[string]string) {
			files["overlays/prod/kustomization.yaml"] = `apiVersion: kustomize.config.k8s.io/v1beta1
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
`
		}})
	update := f.versionUpdate(t, proposalBranch, time.Hour)

	g.Eventually(func(g Gomega) {
		got := getVersionUpdate(g, update)
		g.Expect(got.Status.LastProposal).NotTo(BeNil())
		g.Expect(got.Status.LastProposal.Changes).To(HaveLen(1))
		g.Expect(got.Status.LastProposal.Changes[0].Summary).To(HavePrefix("gardenlinux 1592.5 (tagged "))
	}).WithTimeout(reconciled).Should(Succeed())
	_, _, file := f.commit(t, f.branch(t, proposalBranch))
	g.Expect(file).NotTo(ContainSubstring("1.34.3"))
	events, err := testenv.Events(ctx, k8sClient, testenv.EventQuery{Namespace: f.namespace, Kind: v1alpha1.VersionUpdateKind, Name: update.Name, Reason: NotProposedEvent})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(testenv.Messages(events)).To(ContainElement(MatchRegexp(
		`^not proposed on main@\w{12}: source kubernetes: .*1\.34\.3: not proposed, it would be refused: overlays/prod: .*"supported" lifecycle stages must not overlap per minor version`)))
}

// TestAVersionUpdateRebuildsItsBranchOnAMovedBase: the followed branch
// moves after a proposal was pushed; the next check replaces the proposal
// branch with one commit on the new tip, with the same edits.
func TestAVersionUpdateRebuildsItsBranchOnAMovedBase(t *testing.T) {
	g := NewWithT(t)
	f := newFixture(t, fixtureOptions{namespace: testenv.UniqueName("moved"), suspendSync: true, onlyImages: true,
		registrySecret: func(string) map[string][]byte {
			return map[string][]byte{"username": []byte(registryUsername), "password": []byte(registryPassword)}
		}})
	update := f.versionUpdate(t, proposalBranch, 2*time.Second)
	var first string
	g.Eventually(func(g Gomega) {
		got := getVersionUpdate(g, update)
		g.Expect(got.Status.LastProposal).NotTo(BeNil())
		first = got.Status.LastProposal.Commit
	}).WithTimeout(reconciled).Should(Succeed())
	_, _, file := f.commit(t, first)

	moved, err := f.profiles.Commit("profiles", map[string]string{"README.md": "a change merged meanwhile\n"}, "docs: a change merged meanwhile")
	g.Expect(err).NotTo(HaveOccurred())
	var second string
	g.Eventually(func(g Gomega) {
		got := getVersionUpdate(g, update)
		g.Expect(got.Status.LastProposal).NotTo(BeNil())
		g.Expect(got.Status.LastProposal.Base).To(Equal(moved))
		second = got.Status.LastProposal.Commit
	}).WithTimeout(reconciled).Should(Succeed())
	g.Expect(f.branch(t, proposalBranch)).To(Equal(second))
	message, parents, secondFile := f.commit(t, second)
	g.Expect(parents).To(Equal([]string{moved}), "one commit on the new tip")
	g.Expect(secondFile).To(Equal(file), "the same edits")
	g.Expect(message).To(HavePrefix("profilesync propose: 1 change of versions\n\n- gardenlinux 1592.5 (tagged "))
	g.Expect(metricstest.Value(g, testMetrics, "profilesync_version_proposals_total", map[string]string{"namespace": f.namespace, "name": update.Name})).To(BeEquivalentTo(2))
}

// TestABranchALandscapeOfAnotherNamespaceFollowsIsNotPushed: a ProfileSync
// of another namespace follows the proposal branch of the same repository;
// it is a landscape like any other, and the VersionUpdate pushes nothing
// there, naming it.
func TestABranchALandscapeOfAnotherNamespaceFollowsIsNotPushed(t *testing.T) {
	g := NewWithT(t)
	f := newFixture(t, fixtureOptions{namespace: testenv.UniqueName("followed-elsewhere"), suspendSync: true, onlyImages: true,
		registrySecret: func(string) map[string][]byte {
			return map[string][]byte{"username": []byte(registryUsername), "password": []byte(registryPassword)}
		}})
	elsewhere := testenv.UniqueName("staging")
	ensureNamespace(t, elsewhere)
	staging := &v1alpha1.ProfileSync{ObjectMeta: metav1.ObjectMeta{Name: "staging", Namespace: elsewhere}, Spec: *f.sync.Spec.DeepCopy()}
	staging.Spec.Ref = &v1alpha1.GitReference{Branch: proposalBranch}
	staging.Spec.SecretRef = nil
	staging.Spec.Suspend = true
	createForTest(t, staging)
	update := f.versionUpdate(t, proposalBranch, time.Hour)

	g.Eventually(func(g Gomega) {
		got := getVersionUpdate(g, update)
		ready := apimeta.FindStatusCondition(got.Status.Conditions, v1alpha1.ReadyCondition)
		g.Expect(ready).NotTo(BeNil())
		g.Expect(ready.Reason).To(Equal(v1alpha1.BranchFollowedReason))
		g.Expect(ready.Message).To(Equal("spec.branch " + proposalBranch + " is the branch ProfileSync " + elsewhere +
			"/staging follows: nothing is pushed to it unless spec.allowPushToFollowedBranch is true"))
	}).WithTimeout(reconciled).Should(Succeed())
	g.Expect(f.branch(t, proposalBranch)).To(BeEmpty())

	// It follows another branch: the VersionUpdate checks at once, not in an
	// hour, and pushes.
	testenv.UpdateSpec(t, k8sClient, staging, func(s *v1alpha1.ProfileSync) { s.Spec.Ref.Branch = gitserver.DefaultBranch })
	g.Eventually(func(g Gomega) {
		g.Expect(getVersionUpdate(g, update).Status.LastProposal).NotTo(BeNil())
	}).WithTimeout(retryAfterTransient * 2 / 3).Should(Succeed())
}
