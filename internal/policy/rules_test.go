package policy

import (
	"testing"
	"time"

	. "github.com/onsi/gomega"

	v1alpha1 "github.com/profilesync/profilesync/api/v1alpha1"
)

type ruleCase struct {
	name string
	spec *v1alpha1.CloudProfileSpec
	at   string
	want []string
}

func runRuleCases(t *testing.T, p *Policy, tests []ruleCase) {
	t.Helper()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			g.Expect(lines(p.checkSpec(tt.spec, at(tt.at)))).To(Equal(orEmpty(tt.want)))
		})
	}
}

func orEmpty(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

const now = "2026-11-22T00:00:00Z"

func TestSupportedRule(t *testing.T) {
	p := &Policy{Rules: Rules{Supported: &SupportedRule{Severity: SeverityError, Minors: 2}}}
	runRuleCases(t, p, []ruleCase{
		{
			name: "each of the newest two minors has one supported patch",
			spec: kubernetes(supportedUntil("1.32.4", "", ""), supportedUntil("1.33.1", "2026-11-01T00:00:00Z", "2027-06-01T00:00:00Z"), supportedUntil("1.33.2", "", "")),
			at:   now,
		},
		{
			name: "a minor whose supported patch was deprecated has none",
			spec: kubernetes(supportedUntil("1.32.4", "", ""), supportedUntil("1.33.1", "2026-11-01T00:00:00Z", "2027-06-01T00:00:00Z")),
			at:   now,
			want: []string{"error kubernetes.versions[1]: minor 1.33 has no supported patch; each of the newest 2 minors needs exactly one"},
		},
		{
			name: "two supported patches of a minor are one too many, reported on the lower",
			spec: kubernetes(supportedUntil("1.32.4", "", ""), supportedUntil("1.33.1", "", ""), supportedUntil("1.33.2", "", "")),
			at:   now,
			want: []string{"error kubernetes.versions[1]: 1.33.1 is supported as well as 1.33.2; minor 1.33 needs exactly one supported patch"},
		},
		{
			name: "a minor older than the newest two is not checked",
			spec: kubernetes(supportedUntil("1.31.0", "2026-01-01T00:00:00Z", ""), supportedUntil("1.32.4", "", ""), supportedUntil("1.33.2", "", "")),
			at:   now,
		},
		{
			name: "a minor still in preview does not count among the newest",
			spec: kubernetes(supportedUntil("1.32.4", "", ""), supportedUntil("1.33.2", "", ""), lc("1.34.0", stage(preview, ""))),
			at:   now,
		},
		{
			name: "an expired minor still listed counts among the newest",
			spec: kubernetes(supportedUntil("1.32.4", "2026-01-01T00:00:00Z", "2026-06-01T00:00:00Z"), supportedUntil("1.33.2", "", "")),
			at:   now,
			want: []string{"error kubernetes.versions[0]: minor 1.32 has no supported patch; each of the newest 2 minors needs exactly one"},
		},
		{
			name: "a takeover at the very instant checked leaves exactly one supported patch",
			spec: kubernetes(supportedUntil("1.32.4", "", ""), supportedUntil("1.33.1", now, ""), lc("1.33.2", stage(preview, ""), stage(supported, now))),
			at:   now,
		},
		{
			name: "one second before the takeover the old patch is the supported one",
			spec: kubernetes(supportedUntil("1.32.4", "", ""), supportedUntil("1.33.1", now, ""), lc("1.33.2", stage(preview, ""), stage(supported, now))),
			at:   "2026-11-21T23:59:59Z",
		},
		{
			name: "machine images are not checked without machineImageGroups",
			spec: withImage(kubernetes(supportedUntil("1.32.4", "", ""), supportedUntil("1.33.2", "", "")), v1alpha1.UpdateStrategyMinor,
				supportedUntil("1.0.0", "", ""), supportedUntil("1.1.0", "", "")),
			at: now,
		},
	})

	images := &Policy{Rules: Rules{Supported: &SupportedRule{Severity: SeverityWarning, Minors: 1, MachineImageGroups: 2}}}
	runRuleCases(t, images, []ruleCase{
		{
			name: "with one minor only the newest is checked",
			spec: kubernetes(supportedUntil("1.33.2", "2026-11-01T00:00:00Z", "2027-06-01T00:00:00Z"), plain("1.34.0")),
			at:   now,
		},
		{
			name: "with one minor the newest has none",
			spec: kubernetes(supportedUntil("1.33.2", "", ""), supportedUntil("1.34.0", "2026-11-01T00:00:00Z", "")),
			at:   now,
			want: []string{"warning kubernetes.versions[1]: minor 1.34 has no supported patch; the newest minor needs exactly one"},
		},
		{
			name: "an image with strategy minor is grouped by major",
			spec: withImage(kubernetes(supportedUntil("1.33.2", "", "")), v1alpha1.UpdateStrategyMinor,
				supportedUntil("1.0.0", "", ""), supportedUntil("2.0.0", "", ""), supportedUntil("2.1.0", "", "")),
			at:   now,
			want: []string{"warning machineImages[0].versions[1]: os 2.0.0 is supported as well as 2.1.0; os 2 needs exactly one supported version"},
		},
		{
			name: "an image with strategy patch is grouped by minor",
			spec: withImage(kubernetes(supportedUntil("1.33.2", "", "")), v1alpha1.UpdateStrategyPatch,
				supportedUntil("1.0.0", "", ""), supportedUntil("1.1.0", "2026-01-01T00:00:00Z", "")),
			at:   now,
			want: []string{"warning machineImages[0].versions[1]: os 1.1 has no supported version; each of the newest 2 groups of os needs exactly one"},
		},
		{
			name: "an image with strategy major is one group",
			spec: withImage(kubernetes(supportedUntil("1.33.2", "", "")), v1alpha1.UpdateStrategyMajor,
				supportedUntil("1.0.0", "", ""), supportedUntil("2.0.0", "", "")),
			at:   now,
			want: []string{"warning machineImages[0].versions[0]: os 1.0.0 is supported as well as 2.0.0; machine image os needs exactly one supported version"},
		},
	})
}

func TestPreviewRule(t *testing.T) {
	p := &Policy{Rules: Rules{Preview: &PreviewRule{Severity: SeverityWarning, MaxMinors: intPtr(1), MaxDays: intPtr(30)}}}
	base := func(versions ...v1alpha1.ExpirableVersion) *v1alpha1.CloudProfileSpec {
		return kubernetes(append([]v1alpha1.ExpirableVersion{supportedUntil("1.33.2", "", "")}, versions...)...)
	}
	runRuleCases(t, p, []ruleCase{
		{
			name: "a minor in preview for less than the limit",
			spec: base(lc("1.34.0", stage(preview, "2026-11-01T00:00:00Z"), stage(supported, "2026-11-20T00:00:00Z"))),
			at:   "2026-11-10T00:00:00Z",
		},
		{
			name: "a minor scheduled to stay in preview too long",
			spec: base(lc("1.34.0", stage(preview, "2026-11-01T00:00:00Z"), stage(supported, "2026-12-15T00:00:00Z"))),
			at:   "2026-11-10T00:00:00Z",
			want: []string{"warning kubernetes.versions[1].lifecycle[0].startTime: minor 1.34 is in preview for 44d, from 2026-11-01T00:00:00Z until a version of it becomes supported on 2026-12-15T00:00:00Z; the policy allows at most 30d"},
		},
		{
			name: "a minor scheduled to stay in preview exactly the limit",
			spec: base(lc("1.34.0", stage(preview, "2026-11-01T00:00:00Z"), stage(supported, "2026-12-01T00:00:00Z"))),
			at:   "2026-11-10T00:00:00Z",
		},
		{
			name: "a minor in preview with no supported stage, within the limit",
			spec: base(lc("1.34.0", stage(preview, "2026-11-01T00:00:00Z"))),
			at:   "2026-11-30T23:59:59Z",
		},
		{
			name: "a minor in preview with no supported stage, from the end of the limit",
			spec: base(lc("1.34.0", stage(preview, "2026-11-01T00:00:00Z"))),
			at:   "2026-12-01T00:00:00Z",
			want: []string{"warning kubernetes.versions[1].lifecycle[0].startTime: minor 1.34 has been in preview since 2026-11-01T00:00:00Z, 30d or longer, and no version of it is scheduled to become supported; the policy allows at most 30d"},
		},
		{
			name: "a preview without start time is not measured when a supported stage is scheduled",
			spec: base(lc("1.34.0", stage(preview, ""), stage(supported, "2027-06-01T00:00:00Z"))),
			at:   now,
		},
		{
			name: "a preview without start time and nothing scheduled",
			spec: base(old("1.34.0", preview, "")),
			at:   now,
			want: []string{"warning kubernetes.versions[1].classification: minor 1.34 is in preview with no start time and no supported stage scheduled; the policy allows at most 30d in preview"},
		},
		{
			name: "a minor that already became supported is not checked",
			spec: base(lc("1.34.0", stage(preview, "2026-01-01T00:00:00Z"), stage(supported, "2026-11-01T00:00:00Z"))),
			at:   now,
		},
		{
			name: "two minors in preview are one more than allowed",
			spec: base(lc("1.34.0", stage(preview, "2026-11-01T00:00:00Z"), stage(supported, "2026-11-25T00:00:00Z")),
				lc("1.35.0", stage(preview, "2026-11-20T00:00:00Z"), stage(supported, "2026-12-15T00:00:00Z"))),
			at:   now,
			want: []string{"warning kubernetes.versions: 2 minors are in preview (1.35, 1.34); the policy allows at most 1"},
		},
		{
			name: "a minor whose preview has not started is not in preview",
			spec: base(lc("1.34.0", stage(preview, "2026-11-01T00:00:00Z"), stage(supported, "2026-11-25T00:00:00Z")),
				lc("1.35.0", stage(preview, "2026-11-23T00:00:00Z"), stage(supported, "2026-12-15T00:00:00Z"))),
			at: now,
		},
	})
}

func TestDeprecationRule(t *testing.T) {
	p := &Policy{Rules: Rules{Deprecation: &DeprecationRule{Severity: SeverityError, OlderPatches: true, RequireExpiry: true}}}
	runRuleCases(t, p, []ruleCase{
		{
			name: "older patches deprecated or scheduled to be, each with an expiry",
			spec: kubernetes(supportedUntil("1.33.0", "2026-01-01T00:00:00Z", "2026-06-01T00:00:00Z"), supportedUntil("1.33.1", "2026-12-01T00:00:00Z", "2027-03-01T00:00:00Z"), supportedUntil("1.33.2", "", "")),
			at:   now,
		},
		{
			name: "an older patch that is never deprecated",
			spec: kubernetes(supportedUntil("1.33.1", "", ""), supportedUntil("1.33.2", "", "")),
			at:   now,
			want: []string{"error kubernetes.versions[0]: 1.33.1 is older than 1.33.2, the latest released patch of minor 1.33, and is never deprecated; schedule its deprecation"},
		},
		{
			name: "a newer patch still in preview does not make the older one old",
			spec: kubernetes(supportedUntil("1.33.1", "", ""), lc("1.33.2", stage(preview, ""), stage(supported, "2026-12-01T00:00:00Z"))),
			at:   now,
		},
		{
			name: "the older patch is old from the instant the newer one becomes supported",
			spec: kubernetes(supportedUntil("1.33.1", "", ""), lc("1.33.2", stage(preview, ""), stage(supported, "2026-12-01T00:00:00Z"))),
			at:   "2026-12-01T00:00:00Z",
			want: []string{"error kubernetes.versions[0]: 1.33.1 is older than 1.33.2, the latest released patch of minor 1.33, and is never deprecated; schedule its deprecation"},
		},
		{
			name: "a deprecated version without an expiry",
			spec: kubernetes(supportedUntil("1.33.1", "2026-12-01T00:00:00Z", ""), supportedUntil("1.33.2", "", "")),
			at:   now,
			want: []string{"error kubernetes.versions[0].lifecycle[1].startTime: 1.33.1 is deprecated from 2026-12-01T00:00:00Z but never expires; give it an expiry"},
		},
		{
			name: "a deprecated version in the deprecated API without an expiry",
			spec: kubernetes(old("1.33.1", deprecated, ""), supportedUntil("1.33.2", "", "")),
			at:   now,
			want: []string{"error kubernetes.versions[0].classification: 1.33.1 is deprecated since always but never expires; give it an expiry"},
		},
		{
			name: "a version that goes straight to expired needs nothing more",
			spec: kubernetes(old("1.33.1", "", "2027-01-01T00:00:00Z"), supportedUntil("1.33.2", "", "")),
			at:   now,
		},
		{
			name: "machine images are not checked without machineImages",
			spec: withImage(kubernetes(supportedUntil("1.33.2", "", "")), v1alpha1.UpdateStrategyPatch, supportedUntil("1.0.0", "", ""), supportedUntil("1.0.1", "2026-12-01T00:00:00Z", "")),
			at:   now,
		},
	})

	images := &Policy{Rules: Rules{Deprecation: &DeprecationRule{Severity: SeverityWarning, OlderPatches: true, MachineImages: true}}}
	runRuleCases(t, images, []ruleCase{
		{
			name: "machine image versions are grouped by the update strategy",
			spec: withImage(kubernetes(supportedUntil("1.33.2", "", "")), v1alpha1.UpdateStrategyPatch, supportedUntil("1.0.0", "", ""), supportedUntil("1.0.1", "", ""), supportedUntil("1.1.0", "", "")),
			at:   now,
			want: []string{"warning machineImages[0].versions[0]: os 1.0.0 is older than 1.0.1, the latest released version of os 1.0, and is never deprecated; schedule its deprecation"},
		},
	})
}

func TestNoticeRule(t *testing.T) {
	rule := &NoticeRule{Severity: SeverityError, Days: 7}
	commit := at("2026-11-20T00:00:00Z") // notice until 2026-11-27
	tests := []struct {
		name       string
		base, head *v1alpha1.CloudProfileSpec
		want       []string
	}{
		{
			name: "a deprecation scheduled with more notice than required",
			base: kubernetes(supportedUntil("1.33.1", "", ""), plain("1.34.0")),
			head: kubernetes(supportedUntil("1.33.1", "2026-12-01T00:00:00Z", ""), plain("1.34.0")),
		},
		{
			name: "a deprecation scheduled with exactly the notice required",
			base: kubernetes(supportedUntil("1.33.1", "", ""), plain("1.34.0")),
			head: kubernetes(supportedUntil("1.33.1", "2026-11-27T00:00:00Z", ""), plain("1.34.0")),
		},
		{
			name: "a deprecation scheduled with too little notice",
			base: kubernetes(supportedUntil("1.33.1", "", ""), plain("1.34.0")),
			head: kubernetes(supportedUntil("1.33.1", "2026-11-26T23:00:00Z", ""), plain("1.34.0")),
			want: []string{"error kubernetes.versions[0].lifecycle[1].startTime: 1.33.1 becomes deprecated on 2026-11-26T23:00:00Z, 6d23h after the commit (2026-11-20T00:00:00Z) (was not scheduled); the policy requires 7d notice, so not before 2026-11-27T00:00:00Z"},
		},
		{
			name: "an expiry brought forward with too little notice",
			base: kubernetes(supportedUntil("1.33.1", "2026-10-01T00:00:00Z", "2027-01-01T00:00:00Z"), plain("1.34.0")),
			head: kubernetes(supportedUntil("1.33.1", "2026-10-01T00:00:00Z", "2026-11-25T00:00:00Z"), plain("1.34.0")),
			want: []string{"error kubernetes.versions[0].lifecycle[2].startTime: 1.33.1 becomes expired on 2026-11-25T00:00:00Z, 5d after the commit (2026-11-20T00:00:00Z) (was 2027-01-01T00:00:00Z); the policy requires 7d notice, so not before 2026-11-27T00:00:00Z"},
		},
		{
			name: "an expiry brought forward with enough notice",
			base: kubernetes(supportedUntil("1.33.1", "2026-10-01T00:00:00Z", "2027-01-01T00:00:00Z"), plain("1.34.0")),
			head: kubernetes(supportedUntil("1.33.1", "2026-10-01T00:00:00Z", "2026-12-15T00:00:00Z"), plain("1.34.0")),
		},
		{
			name: "a stage put off is no notice problem",
			base: kubernetes(supportedUntil("1.33.1", "2026-11-21T00:00:00Z", ""), plain("1.34.0")),
			head: kubernetes(supportedUntil("1.33.1", "2026-11-24T00:00:00Z", ""), plain("1.34.0")),
		},
		{
			name: "a stage that was already in effect may be moved further back",
			base: kubernetes(supportedUntil("1.33.1", "2026-11-01T00:00:00Z", ""), plain("1.34.0")),
			head: kubernetes(supportedUntil("1.33.1", "2026-10-01T00:00:00Z", ""), plain("1.34.0")),
		},
		{
			name: "a version only head has needs no notice",
			base: kubernetes(plain("1.34.0")),
			head: kubernetes(supportedUntil("1.33.1", "2026-11-21T00:00:00Z", ""), plain("1.34.0")),
		},
		{
			name: "an expiry without a deprecation stage is reported once",
			base: kubernetes(plain("1.33.1"), plain("1.34.0")),
			head: kubernetes(old("1.33.1", "", "2026-11-22T00:00:00Z"), plain("1.34.0")),
			want: []string{"error kubernetes.versions[0].expirationDate: 1.33.1 becomes expired on 2026-11-22T00:00:00Z, 2d after the commit (2026-11-20T00:00:00Z) (was not scheduled); the policy requires 7d notice, so not before 2026-11-27T00:00:00Z"},
		},
		{
			name: "a deprecation with immediate effect",
			base: kubernetes(plain("1.33.1"), plain("1.34.0")),
			head: kubernetes(old("1.33.1", deprecated, ""), plain("1.34.0")),
			want: []string{"error kubernetes.versions[0].classification: 1.33.1 becomes deprecated at once (no start time) (was not scheduled); the policy requires 7d notice, so not before 2026-11-27T00:00:00Z"},
		},
		{
			name: "machine image versions are matched by image and version",
			base: withImage(kubernetes(plain("1.34.0")), v1alpha1.UpdateStrategyPatch, plain("1.0.0")),
			head: withImage(kubernetes(plain("1.34.0")), v1alpha1.UpdateStrategyPatch, supportedUntil("1.0.0", "2026-11-21T00:00:00Z", "2026-12-31T00:00:00Z")),
			want: []string{"error machineImages[0].versions[0].lifecycle[1].startTime: os 1.0.0 becomes deprecated on 2026-11-21T00:00:00Z, 1d after the commit (2026-11-20T00:00:00Z) (was not scheduled); the policy requires 7d notice, so not before 2026-11-27T00:00:00Z"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			g.Expect(lines(rule.check(tt.base, tt.head, commit))).To(Equal(orEmpty(tt.want)))
		})
	}
}

func TestForcedUpdatesRule(t *testing.T) {
	p := &Policy{Rules: Rules{ForcedUpdates: &ForcedUpdatesRule{Severity: SeverityWarning}}}
	runRuleCases(t, p, []ruleCase{
		{
			name: "an expiry with a live patch above it forces nobody across a minor",
			spec: kubernetes(supportedUntil("1.32.4", "2026-11-01T00:00:00Z", "2027-01-31T00:00:00Z"), supportedUntil("1.32.5", "", ""), plain("1.33.0")),
			at:   now,
		},
		{
			name: "a minor expiring whole forces clusters across one minor",
			spec: kubernetes(supportedUntil("1.32.4", "2026-11-01T00:00:00Z", "2027-01-31T00:00:00Z"), supportedUntil("1.32.5", "2026-12-01T00:00:00Z", "2027-01-31T00:00:00Z"),
				supportedUntil("1.33.1", "", ""), plain("1.34.0")),
			at:   now,
			want: []string{"warning kubernetes.versions[1].lifecycle[2].startTime: on 2027-01-31T00:00:00Z 1.32.5 expires (so do 1.32.4) and forces clusters that take no automatic updates across 1 minor: 1.32.5 → 1.33.1"},
		},
		{
			name: "two minors expiring together force clusters across two minors, always an error",
			spec: kubernetes(supportedUntil("1.32.5", "2026-12-01T00:00:00Z", "2027-01-31T00:00:00Z"), supportedUntil("1.33.1", "2026-12-01T00:00:00Z", "2027-01-31T00:00:00Z"),
				supportedUntil("1.34.2", "", "")),
			at: now,
			want: []string{
				"error kubernetes.versions[0].lifecycle[2].startTime: on 2027-01-31T00:00:00Z 1.32.5 expires and forces clusters that take no automatic updates across 2 minors: 1.32.5 → 1.33.1 → 1.34.2",
				"warning kubernetes.versions[1].lifecycle[2].startTime: on 2027-01-31T00:00:00Z 1.33.1 expires and forces clusters that take no automatic updates across 1 minor: 1.33.1 → 1.34.2",
			},
		},
		{
			name: "a later minor that expired earlier is crossed too",
			spec: kubernetes(old("1.32.5", deprecated, "2027-01-31T00:00:00Z"), old("1.33.1", deprecated, "2027-01-15T00:00:00Z"), plain("1.34.2")),
			at:   now,
			want: []string{
				"error kubernetes.versions[0].expirationDate: on 2027-01-31T00:00:00Z 1.32.5 expires and forces clusters that take no automatic updates across 2 minors: 1.32.5 → 1.33.1 → 1.34.2",
				"warning kubernetes.versions[1].expirationDate: on 2027-01-15T00:00:00Z 1.33.1 expires and forces clusters that take no automatic updates across 1 minor: 1.33.1 → 1.34.2",
			},
		},
		{
			name: "an expiry already past is not reported",
			spec: kubernetes(supportedUntil("1.32.5", "2026-01-01T00:00:00Z", now), supportedUntil("1.33.1", "", "")),
			at:   now,
		},
		{
			name: "an expiry that leaves clusters nowhere to go is an error",
			spec: kubernetes(supportedUntil("1.32.5", "2026-12-01T00:00:00Z", "2027-01-31T00:00:00Z"), lc("1.33.0", stage(preview, ""))),
			at:   now,
			want: []string{"error kubernetes.versions[0].lifecycle[2].startTime: on 2027-01-31T00:00:00Z 1.32.5 expires and clusters on it have nowhere to go: " +
				"Kubernetes version 1.32.5 is expired and the profile offers no suitable version to move to (no supported, deprecated or expired version of the next minor 1.33; Kubernetes minors may not be skipped)"},
		},
		{
			name: "an image with strategy minor is forced across a major",
			spec: withImage(kubernetes(plain("1.33.1")), v1alpha1.UpdateStrategyMinor, supportedUntil("1.4.0", "2026-12-01T00:00:00Z", "2027-01-31T00:00:00Z"), supportedUntil("2.1.0", "", "")),
			at:   now,
			want: []string{"warning machineImages[0].versions[0].lifecycle[2].startTime: on 2027-01-31T00:00:00Z os 1.4.0 expires and forces clusters that take no automatic updates across 1 major: 1.4.0 → 2.1.0"},
		},
		{
			name: "an image with strategy major has no forced path to report",
			spec: withImage(kubernetes(plain("1.33.1")), v1alpha1.UpdateStrategyMajor, supportedUntil("1.4.0", "2026-12-01T00:00:00Z", "2027-01-31T00:00:00Z"), supportedUntil("2.1.0", "", "")),
			at:   now,
		},
		{
			name: "an image whose latest version expires reaches its end of life",
			spec: withImage(kubernetes(plain("1.33.1")), v1alpha1.UpdateStrategyPatch, supportedUntil("1.4.0", "2026-12-01T00:00:00Z", "2027-01-31T00:00:00Z")),
			at:   now,
		},
	})
}

func TestFormatDuration(t *testing.T) {
	g := NewWithT(t)
	for d, want := range map[time.Duration]string{
		30 * day: "30d", 4*day + 15*time.Hour: "4d15h", 5 * time.Hour: "5h", -2 * day: "-2d", day - time.Minute: "1d",
	} {
		g.Expect(formatDuration(d)).To(Equal(want), "%v", d)
	}
}
