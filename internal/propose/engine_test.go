package propose

import (
	"testing"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1alpha1 "github.com/profilesync/profilesync/api/v1alpha1"
	"github.com/profilesync/profilesync/internal/policy"
	"github.com/profilesync/profilesync/internal/render/profile"
	"github.com/profilesync/profilesync/test/builders"
)

const (
	preview    = v1alpha1.ClassificationPreview
	supported  = v1alpha1.ClassificationSupported
	deprecated = v1alpha1.ClassificationDeprecated
	expired    = v1alpha1.ClassificationExpired
)

var (
	at    = builders.Time
	stg   = builders.Stage
	lc    = builders.Staged
	plain = builders.PlainVersion
)

const profilesFile = "base/cloudprofiles.yaml"

var (
	kubernetesFeed = Feed{File: profilesFile, CloudProfile: "aws"}
	imageFeed      = Feed{File: profilesFile, CloudProfile: "aws", MachineImage: "gardenlinux"}
	schedule       = Schedule{PreviewDuration: 14 * day, ExpiryAfterDeprecation: 120 * day, RetirementAge: 90 * day}
)

// cloudProfile is builders.Profile (one image, gardenlinux by minor) with
// the Kubernetes versions given, named aws, in profilesFile.
func cloudProfile(versions ...v1alpha1.ExpirableVersion) profile.Object {
	spec := builders.Profile()
	spec.Kubernetes.Versions = versions
	return profile.Object{File: profilesFile, CloudProfile: &v1alpha1.CloudProfile{
		ObjectMeta: metav1.ObjectMeta{Name: "aws"}, Spec: *spec,
	}}
}

// namespaced overrides the given Kubernetes versions of aws.
func namespaced(versions ...v1alpha1.ExpirableVersion) profile.Object {
	spec := builders.Namespaced()
	spec.Parent.Name = "aws"
	spec.Kubernetes = &v1alpha1.KubernetesSettings{Versions: versions}
	return profile.Object{File: "base/namespaced.yaml", NamespacedCloudProfile: &v1alpha1.NamespacedCloudProfile{
		ObjectMeta: metav1.ObjectMeta{Name: "aws-payments", Namespace: "team-payments"}, Spec: *spec,
	}}
}

func intPtr(n int) *int { return &n }

// strictPolicy refuses what the example policy of docs/policy.md refuses:
// two supported minors, one minor in preview for at most 42 days, older
// patches deprecated and expiring, 30 days' notice.
func strictPolicy() *policy.Policy {
	return &policy.Policy{APIVersion: policy.APIVersion, Kind: policy.Kind, Rules: policy.Rules{
		Supported:   &policy.SupportedRule{Severity: policy.SeverityError, Minors: 2},
		Preview:     &policy.PreviewRule{Severity: policy.SeverityError, MaxMinors: intPtr(1), MaxDays: intPtr(42)},
		Deprecation: &policy.DeprecationRule{Severity: policy.SeverityError, OlderPatches: true, RequireExpiry: true},
		Notice:      &policy.NoticeRule{Severity: policy.SeverityError, Days: 30},
	}}
}

func kubernetesReleases(cooldown time.Duration, releases ...Release) Discovered {
	return Discovered{Source: "kubernetes", Cooldown: cooldown, Target: kubernetesFeed, Releases: releases}
}

func release(version, tagged string) Release { return Release{Version: version, Released: at(tagged)} }

const now = "2026-11-28T00:00:00Z"

func TestProposals(t *testing.T) {
	tests := []struct {
		name       string
		profiles   []profile.Object
		policy     *policy.Policy
		noPolicy   bool
		discovered []Discovered
		now        string
		summaries  []string
		skipped    []string
	}{
		{
			name:       "a new patch enters in preview and takes over after the policy's notice, and the patch it replaces is deprecated then and expires 120 days later",
			profiles:   []profile.Object{cloudProfile(plain("1.33.5"), lc("1.34.2", stg(supported, "")))},
			discovered: []Discovered{kubernetesReleases(0, release("1.34.3", "2026-11-20T10:00:00Z"))},
			summaries:  []string{"kubernetes 1.34.3 (tagged 2026-11-20) supported from 2026-12-28; 1.34.2 deprecated from 2026-12-28 with 30 days' notice, expires 2027-04-27"},
		},
		{
			name:       "a takeover is rounded up to the next whole day, later than the notice asks and never sooner",
			profiles:   []profile.Object{cloudProfile(plain("1.33.5"), lc("1.34.2", stg(supported, "")))},
			discovered: []Discovered{kubernetesReleases(0, release("1.34.3", "2026-11-20T10:00:00Z"))},
			now:        "2026-11-28T05:40:00Z",
			summaries:  []string{"kubernetes 1.34.3 (tagged 2026-11-20) supported from 2026-12-29; 1.34.2 deprecated from 2026-12-29 with 30 days' notice, expires 2027-04-28"},
		},
		{
			name: "a takeover the profile already plans for later keeps its date, and the preview patch it was planned for is deprecated before it is ever supported",
			profiles: []profile.Object{cloudProfile(plain("1.33.5"), lc("1.34.1", stg(supported, ""), stg(deprecated, "2027-01-15T00:00:00Z"), stg(expired, "2027-05-15T00:00:00Z")),
				lc("1.34.2", stg(preview, ""), stg(supported, "2027-01-15T00:00:00Z")))},
			discovered: []Discovered{kubernetesReleases(0, release("1.34.3", "2026-11-20T10:00:00Z"))},
			summaries:  []string{"kubernetes 1.34.3 (tagged 2026-11-20) supported from 2027-01-15; 1.34.2 deprecated from 2027-01-15 with 48 days' notice, expires 2027-05-15"},
		},
		{
			name:       "only the newest release of a minor is proposed, and none older than the minor's newest listed patch",
			profiles:   []profile.Object{cloudProfile(plain("1.33.5"), lc("1.34.2", stg(supported, "")))},
			discovered: []Discovered{kubernetesReleases(0, release("1.33.4", "2026-11-01T00:00:00Z"), release("1.34.3", "2026-11-01T00:00:00Z"), release("1.34.4", "2026-11-02T00:00:00Z"))},
			summaries:  []string{"kubernetes 1.34.4 (tagged 2026-11-02) supported from 2026-12-28; 1.34.2 deprecated from 2026-12-28 with 30 days' notice, expires 2027-04-27"},
		},
		{
			name:     "a release within its cooldown waits, and the newest one out of it is proposed instead",
			profiles: []profile.Object{cloudProfile(plain("1.33.5"), lc("1.34.2", stg(supported, "")))},
			discovered: []Discovered{kubernetesReleases(3*day, release("1.34.3", "2026-11-10T00:00:00Z"), release("1.34.4", "2026-11-27T22:00:00Z"),
				Release{Version: "1.34.5"})},
			summaries: []string{"kubernetes 1.34.3 (tagged 2026-11-10) supported from 2026-12-28; 1.34.2 deprecated from 2026-12-28 with 30 days' notice, expires 2027-04-27"},
			skipped: []string{
				"source kubernetes: base/cloudprofiles.yaml: CloudProfile/aws kubernetes 1.34.4: in its cooldown of 3d, until 2026-11-30T22:00:00Z",
				"source kubernetes: base/cloudprofiles.yaml: CloudProfile/aws kubernetes 1.34.5: in its cooldown of 3d, its release time is unknown",
			},
		},
		{
			name:       "a new minor enters in preview, and the minor that leaves the policy's supported window is deprecated once the notice allows",
			profiles:   []profile.Object{cloudProfile(lc("1.32.9", stg(supported, "")), lc("1.33.5", stg(supported, "")))},
			discovered: []Discovered{kubernetesReleases(0, release("1.34.0", "2026-11-25T00:00:00Z"))},
			summaries:  []string{"kubernetes 1.34.0 (tagged 2026-11-25) in preview, supported from 2026-12-12; minor 1.32 leaves the 2 supported minors: 1.32.9 deprecated from 2026-12-28 with 30 days' notice, expires 2027-04-27"},
		},
		{
			name: "a second minor in preview is not proposed when the policy allows one, and the reason names the rule",
			profiles: []profile.Object{cloudProfile(lc("1.32.9", stg(supported, "")), lc("1.33.5", stg(supported, "")),
				lc("1.34.0", stg(preview, ""), stg(supported, "2026-12-20T00:00:00Z")))},
			discovered: []Discovered{kubernetesReleases(0, release("1.35.0", "2026-11-25T00:00:00Z"))},
			skipped: []string{
				"source kubernetes: base/cloudprofiles.yaml: CloudProfile/aws kubernetes 1.35.0: not proposed, it would be refused: base/cloudprofiles.yaml: CloudProfile/aws: spec.kubernetes.versions: policy preview: 2 minors are in preview (1.35, 1.34); the policy allows at most 1",
			},
		},
		{
			name:       "an old minor is never brought back",
			profiles:   []profile.Object{cloudProfile(lc("1.32.9", stg(supported, "")), lc("1.33.5", stg(supported, "")))},
			discovered: []Discovered{kubernetesReleases(0, release("1.31.14", "2026-11-25T00:00:00Z"), release("1.32.9", "2026-11-25T00:00:00Z"))},
		},
		{
			name: "a version expired longer than the retirement age is retired, unless a NamespacedCloudProfile of the repository lists it",
			profiles: []profile.Object{
				cloudProfile(
					lc("1.31.8", stg(supported, ""), stg(deprecated, "2026-01-01T00:00:00Z"), stg(expired, "2026-06-01T00:00:00Z")),
					lc("1.31.9", stg(supported, ""), stg(deprecated, "2026-01-01T00:00:00Z"), stg(expired, "2026-06-01T00:00:00Z")),
					lc("1.32.7", stg(supported, ""), stg(deprecated, "2026-08-01T00:00:00Z"), stg(expired, "2026-09-15T00:00:00Z")),
					lc("1.32.9", stg(supported, "")), lc("1.33.5", stg(supported, ""))),
				namespaced(lc("1.31.9", stg(expired, "2027-01-01T00:00:00Z"))),
			},
			discovered: []Discovered{kubernetesReleases(0)},
			summaries:  []string{"kubernetes 1.31.8 retired: expired on 2026-06-01, more than 90d ago, and no NamespacedCloudProfile of the repository lists it"},
		},
		{
			name:     "a machine image version takes over its group as a Kubernetes patch does its minor",
			profiles: []profile.Object{cloudProfile(lc("1.32.9", stg(supported, "")), lc("1.33.5", stg(supported, "")))},
			discovered: []Discovered{{Source: "gardenlinux", Target: imageFeed, Releases: []Release{
				release("1592.2", "2026-11-25T00:00:00Z"), release("1443.1", "2026-11-25T00:00:00Z"),
			}}},
			summaries: []string{"gardenlinux 1592.2 (tagged 2026-11-25) supported from 2026-12-28; 1592.1.0 deprecated from 2026-12-28 with 30 days' notice, expires 2027-04-27"},
		},
		{
			name:       "a list the profiles do not have is reported by the source's name and changes nothing",
			profiles:   []profile.Object{cloudProfile(lc("1.32.9", stg(supported, "")), lc("1.33.5", stg(supported, "")))},
			discovered: []Discovered{{Source: "flatcar", Target: Feed{File: profilesFile, CloudProfile: "aws", MachineImage: "flatcar"}, Releases: []Release{release("4000.1.0", "2026-11-25T00:00:00Z")}}},
			skipped:    []string{"source flatcar: base/cloudprofiles.yaml: CloudProfile/aws machine image flatcar: the CloudProfile has no machine image flatcar"},
		},
		{
			name:       "without a policy, a new patch takes over after its preview and nothing checks a window",
			profiles:   []profile.Object{cloudProfile(lc("1.32.9", stg(supported, "")), lc("1.33.5", stg(supported, "")))},
			discovered: []Discovered{kubernetesReleases(0, release("1.33.6", "2026-11-25T00:00:00Z"), release("1.34.0", "2026-11-25T00:00:00Z"))},
			noPolicy:   true,
			summaries: []string{
				"kubernetes 1.33.6 (tagged 2026-11-25) supported from 2026-12-12; 1.33.5 deprecated from 2026-12-12 with 14 days' notice, expires 2027-04-11",
				"kubernetes 1.34.0 (tagged 2026-11-25) in preview, supported from 2026-12-12",
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			pol := tt.policy
			if pol == nil && !tt.noPolicy {
				pol = strictPolicy()
			}
			when := now
			if tt.now != "" {
				when = tt.now
			}
			in := Input{Profiles: tt.profiles, Policy: pol, Schedule: schedule, Now: at(when), Discovered: tt.discovered}
			result, err := Propose(in)
			g.Expect(err).NotTo(HaveOccurred())
			var summaries, skipped []string
			for _, p := range result.Proposals {
				summaries = append(summaries, p.Summary)
			}
			for _, s := range result.Skipped {
				skipped = append(skipped, s.String())
			}
			g.Expect(summaries).To(Equal(tt.summaries))
			g.Expect(skipped).To(Equal(tt.skipped))

			again := in
			again.Profiles = result.Profiles
			second, err := Propose(again)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(second.Proposals).To(BeEmpty(), "running on its own output proposes nothing new")
		})
	}
}

func TestANewPatchIsWrittenAsLifecyclesOfTheVersionsItNames(t *testing.T) {
	g := NewWithT(t)
	result, err := Propose(Input{
		Profiles:   []profile.Object{cloudProfile(plain("1.33.5"), builders.DeprecatedAPIVersion("1.34.2", supported, "2027-06-01T00:00:00Z"))},
		Policy:     strictPolicy(),
		Schedule:   schedule,
		Now:        at(now),
		Discovered: []Discovered{kubernetesReleases(0, release("1.34.3", "2026-11-20T10:00:00Z"))},
	})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(result.Proposals).To(HaveLen(1))
	reason := result.Proposals[0].Summary
	g.Expect(result.Proposals[0].Edits).To(Equal([]Edit{
		{Target: kubernetesFeed, Action: AddVersion, Version: "1.34.3", Reason: reason,
			Lifecycle: []v1alpha1.LifecycleStage{stg(preview, ""), stg(supported, "2026-12-28T00:00:00Z")}},
		// The deprecated API is rewritten as a lifecycle, its expiry kept
		// when it is sooner than the schedule's.
		{Target: kubernetesFeed, Action: SetLifecycle, Version: "1.34.2", Reason: reason,
			Lifecycle: []v1alpha1.LifecycleStage{stg(supported, ""), stg(deprecated, "2026-12-28T00:00:00Z"), stg(expired, "2027-04-27T00:00:00Z")}},
	}))
	g.Expect(reason).To(Equal("kubernetes 1.34.3 (tagged 2026-11-20) supported from 2026-12-28; 1.34.2 deprecated from 2026-12-28 with 30 days' notice, expires 2027-04-27"))
}

func TestAnImageVersionCopiesTheFieldsOfTheVersionBeforeIt(t *testing.T) {
	g := NewWithT(t)
	result, err := Propose(Input{
		Profiles:   []profile.Object{cloudProfile(lc("1.32.9", stg(supported, "")), lc("1.33.5", stg(supported, "")))},
		Policy:     strictPolicy(),
		Schedule:   schedule,
		Now:        at(now),
		Discovered: []Discovered{{Source: "gardenlinux", Target: imageFeed, Releases: []Release{release("1592.2", "2026-11-25T00:00:00Z")}}},
	})
	g.Expect(err).NotTo(HaveOccurred())
	images := result.Profiles[0].CloudProfile.Spec.MachineImages[0].Versions
	g.Expect(images).To(HaveLen(2))
	g.Expect(images[1].Version).To(Equal("1592.2"))
	g.Expect(images[1].Architectures).To(Equal(images[0].Architectures))
	g.Expect(images[1].CRI).To(Equal(images[0].CRI))
	g.Expect(images[1].KubeletVersionConstraint).To(Equal(images[0].KubeletVersionConstraint))
}

func TestOnlyVersionsNewerThanTheirGroupNeedAReleaseTime(t *testing.T) {
	objects := []profile.Object{cloudProfile(plain("1.33.5"), plain("1.34.2"))}
	tests := []struct {
		name    string
		feed    Feed
		version string
		want    bool
	}{
		{"a patch newer than its minor's newest", kubernetesFeed, "1.34.3", true},
		{"a patch of an older minor newer than that minor's newest", kubernetesFeed, "1.33.6", true},
		{"a patch the minor already has a newer one of", kubernetesFeed, "1.34.1", false},
		{"a new minor", kubernetesFeed, "1.35.0", true},
		{"an old minor the profile no longer lists", kubernetesFeed, "1.31.9", false},
		{"an image version of a newer group", imageFeed, "1593.0.0", true},
		{"an image version below its group's newest", imageFeed, "1592.0.1", false},
		{"a version that is no semver", kubernetesFeed, "latest", false},
		{"a list the profiles do not have", Feed{File: profilesFile, CloudProfile: "gcp"}, "1.35.0", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			NewWithT(t).Expect(NewerThanListed(objects, []Feed{tt.feed}, tt.version)).To(Equal(tt.want))
		})
	}
}

func TestAVersionANamespacedCloudProfileOnTheClusterListsIsNotRetired(t *testing.T) {
	profiles := []profile.Object{cloudProfile(
		lc("1.31.8", stg(supported, ""), stg(deprecated, "2026-01-01T00:00:00Z"), stg(expired, "2026-06-01T00:00:00Z")),
		lc("1.31.9", stg(supported, ""), stg(deprecated, "2026-01-01T00:00:00Z"), stg(expired, "2026-06-01T00:00:00Z")),
		lc("1.32.9", stg(supported, "")), lc("1.33.5", stg(supported, "")))}
	tests := []struct {
		name      string
		cluster   []profile.Object
		summaries []string
	}{
		{
			name:      "one the cluster's NamespacedCloudProfile lists stays, and the reason names the cluster",
			cluster:   []profile.Object{namespaced(lc("1.31.9", stg(expired, "2027-01-01T00:00:00Z")))},
			summaries: []string{"kubernetes 1.31.8 retired: expired on 2026-06-01, more than 90d ago, and no NamespacedCloudProfile of the repository or the cluster lists it"},
		},
		{
			name: "without the cluster read (the CLI), both are retired and the reason names the repository alone",
			summaries: []string{
				"kubernetes 1.31.8 retired: expired on 2026-06-01, more than 90d ago, and no NamespacedCloudProfile of the repository lists it",
				"kubernetes 1.31.9 retired: expired on 2026-06-01, more than 90d ago, and no NamespacedCloudProfile of the repository lists it",
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			result, err := Propose(Input{Profiles: profiles, ClusterOverrides: tt.cluster, Policy: strictPolicy(), Schedule: schedule,
				Now: at(now), Discovered: []Discovered{kubernetesReleases(0)}})
			g.Expect(err).NotTo(HaveOccurred())
			var summaries []string
			for _, p := range result.Proposals {
				summaries = append(summaries, p.Summary)
			}
			g.Expect(summaries).To(Equal(tt.summaries))
			g.Expect(result.Profiles).To(HaveLen(1), "the cluster's profiles are read, never edited nor returned")
		})
	}
}
