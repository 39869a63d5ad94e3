package prdiff

import (
	"github.com/profilesync/profilesync/test/builders"

	"github.com/profilesync/profilesync/internal/render/profile"

	"fmt"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"

	v1alpha1 "github.com/profilesync/profilesync/api/v1alpha1"
	"github.com/profilesync/profilesync/internal/policy"
	"github.com/profilesync/profilesync/internal/rollout"
)

// landscapesOf makes one landscape per name, each with one CloudProfile aws
// whose Kubernetes versions are the given one and the newest.
func landscapesOf(names []string, versions ...v1alpha1.ExpirableVersion) []Landscape {
	landscapes := make([]Landscape, len(names))
	for i, name := range names {
		landscapes[i] = Landscape{Name: name, Objects: []profile.Object{cloudProfile("aws", withKubernetes(versions[i]))}}
	}
	return landscapes
}

func TestCheckRolloutOrder(t *testing.T) {
	const (
		preview    = v1alpha1.ClassificationPreview
		supported  = v1alpha1.ClassificationSupported
		deprecated = v1alpha1.ClassificationDeprecated
		expired    = v1alpha1.ClassificationExpired
	)
	devProd := []string{"dev", "prod"}
	previewThenSupported := func(supportedFrom string) v1alpha1.ExpirableVersion {
		return builders.Staged("1.30.0", builders.Stage(preview, ""), builders.Stage(supported, supportedFrom))
	}
	tests := []struct {
		name       string
		landscapes []Landscape
		want       []string
	}{
		{
			name:       "the same dates everywhere are in order",
			landscapes: landscapesOf(devProd, previewThenSupported("2026-02-01T00:00:00Z"), previewThenSupported("2026-02-01T00:00:00Z")),
		},
		{
			name:       "a later landscape later is in order",
			landscapes: landscapesOf(devProd, previewThenSupported("2026-02-01T00:00:00Z"), previewThenSupported("2026-03-01T00:00:00Z")),
		},
		{
			name:       "a later landscape that supports a version first is reported with both dates",
			landscapes: landscapesOf(devProd, previewThenSupported("2026-03-01T00:00:00Z"), previewThenSupported("2026-02-01T00:00:00Z")),
			want:       []string{"prod: CloudProfile/aws: kubernetes 1.30.0 is supported from 2026-02-01T00:00:00Z, 28d before dev (2026-03-01T00:00:00Z)"},
		},
		{
			name: "a later landscape that previews a version the earlier one has not even announced",
			landscapes: landscapesOf(devProd,
				builders.Staged("1.30.0", builders.Stage(preview, "2026-03-01T00:00:00Z")),
				builders.Staged("1.30.0", builders.Stage(preview, "2026-02-01T00:00:00Z"))),
			want: []string{"prod: CloudProfile/aws: kubernetes 1.30.0 is preview from 2026-02-01T00:00:00Z, 28d before dev (2026-03-01T00:00:00Z)"},
		},
		{
			name: "a later landscape that expires a version the earlier one never expires",
			landscapes: landscapesOf(devProd,
				builders.Staged("1.30.0", builders.Stage(supported, "")),
				builders.Staged("1.30.0", builders.Stage(supported, ""), builders.Stage(expired, "2026-06-01T00:00:00Z"))),
			want: []string{"prod: CloudProfile/aws: kubernetes 1.30.0 is expired from 2026-06-01T00:00:00Z, but never in dev (supported then)"},
		},
		{
			name: "a later landscape that skips deprecated and expires first is reported for expired only",
			landscapes: landscapesOf(devProd,
				builders.Staged("1.30.0", builders.Stage(supported, ""), builders.Stage(deprecated, "2026-03-01T00:00:00Z"), builders.Stage(expired, "2026-06-01T00:00:00Z")),
				builders.Staged("1.30.0", builders.Stage(supported, ""), builders.Stage(expired, "2026-05-01T00:00:00Z"))),
			want: []string{"prod: CloudProfile/aws: kubernetes 1.30.0 is expired from 2026-05-01T00:00:00Z, 31d before dev (2026-06-01T00:00:00Z)"},
		},
		{
			name: "a later landscape that expires a version while the earlier one has it deprecated",
			landscapes: landscapesOf(devProd,
				builders.DeprecatedAPIVersion("1.30.0", deprecated, "2026-06-01T00:00:00Z"),
				builders.DeprecatedAPIVersion("1.30.0", deprecated, "2026-04-01T00:00:00Z")),
			want: []string{"prod: CloudProfile/aws: kubernetes 1.30.0 is expired from 2026-04-01T00:00:00Z, 61d before dev (2026-06-01T00:00:00Z)"},
		},
		{
			name: "a later landscape that offers a version from the beginning",
			landscapes: landscapesOf(devProd,
				previewThenSupported("2026-03-01T00:00:00Z"),
				builders.Staged("1.30.0", builders.Stage(supported, ""))),
			want: []string{"prod: CloudProfile/aws: kubernetes 1.30.0 is supported from the beginning, before dev (2026-03-01T00:00:00Z)"},
		},
		{
			name:       "an inversion entirely in the past is history",
			landscapes: landscapesOf(devProd, previewThenSupported("2025-12-01T00:00:00Z"), previewThenSupported("2025-11-01T00:00:00Z")),
		},
		{
			name:       "an inversion whose earlier landscape is still ahead is reported, also when the later one is past",
			landscapes: landscapesOf(devProd, previewThenSupported("2026-01-15T00:00:00Z"), previewThenSupported("2025-12-25T00:00:00Z")),
			want:       []string{"prod: CloudProfile/aws: kubernetes 1.30.0 is supported from 2025-12-25T00:00:00Z, 21d before dev (2026-01-15T00:00:00Z)"},
		},
		{
			name: "every earlier landscape is compared, in rollout order",
			landscapes: landscapesOf([]string{"dev", "staging", "prod"},
				previewThenSupported("2026-05-01T00:00:00Z"),
				previewThenSupported("2026-03-01T00:00:00Z"),
				previewThenSupported("2026-02-01T00:00:00Z")),
			want: []string{
				"staging: CloudProfile/aws: kubernetes 1.30.0 is supported from 2026-03-01T00:00:00Z, 61d before dev (2026-05-01T00:00:00Z)",
				"prod: CloudProfile/aws: kubernetes 1.30.0 is supported from 2026-02-01T00:00:00Z, 89d before dev (2026-05-01T00:00:00Z)",
				"prod: CloudProfile/aws: kubernetes 1.30.0 is supported from 2026-02-01T00:00:00Z, 28d before staging (2026-03-01T00:00:00Z)",
			},
		},
		{
			name: "a version only one landscape lists is not compared",
			landscapes: landscapesOf(devProd,
				builders.Staged("1.29.0", builders.Stage(supported, "2026-05-01T00:00:00Z")),
				builders.Staged("1.30.0", builders.Stage(supported, ""), builders.Stage(expired, "2026-02-01T00:00:00Z"))),
		},
		{
			name: "profiles only one landscape has are not compared",
			landscapes: []Landscape{
				{Name: "dev", Objects: []profile.Object{cloudProfile("aws", withKubernetes(previewThenSupported("2026-05-01T00:00:00Z")))}},
				{Name: "prod", Objects: []profile.Object{cloudProfile("gcp", withKubernetes(previewThenSupported("2026-02-01T00:00:00Z")))}},
			},
		},
		{
			name: "machine image versions and namespaced profiles are checked too",
			landscapes: []Landscape{
				{Name: "dev", Objects: []profile.Object{namespacedWithMergedSpec(withImageVersions(
					builders.Staged("1592.2.0", builders.Stage(preview, ""), builders.Stage(supported, "2026-04-01T00:00:00Z"))))}},
				{Name: "prod", Objects: []profile.Object{namespacedWithMergedSpec(withImageVersions(
					builders.Staged("1592.2.0", builders.Stage(preview, ""), builders.Stage(supported, "2026-03-01T00:00:00Z"))))}},
			},
			want: []string{"prod: NamespacedCloudProfile/team/aws-team: gardenlinux 1592.2.0 is supported from 2026-03-01T00:00:00Z, 31d before dev (2026-04-01T00:00:00Z)"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			warnings := CheckRolloutOrder(tc.landscapes, diffNow)
			g.Expect(warnings).NotTo(BeNil())
			lines := []string{}
			for _, w := range warnings {
				lines = append(lines, w.String())
			}
			if tc.want == nil {
				tc.want = []string{}
			}
			g.Expect(lines).To(Equal(tc.want))
		})
	}
}

func TestRolloutWarningFields(t *testing.T) {
	g := NewWithT(t)
	landscapes := landscapesOf([]string{"dev", "prod"},
		builders.Staged("1.30.0", builders.Stage(v1alpha1.ClassificationSupported, "")),
		builders.Staged("1.30.0", builders.Stage(v1alpha1.ClassificationSupported, ""), builders.Stage(v1alpha1.ClassificationExpired, "2026-06-01T00:00:00Z")))

	warnings := CheckRolloutOrder(landscapes, diffNow)

	g.Expect(warnings).To(Equal([]RolloutWarning{{
		Landscape: "prod", EarlierLandscape: "dev",
		Kind: v1alpha1.CloudProfileKind, Name: "aws",
		Version: "1.30.0", Stage: v1alpha1.ClassificationExpired,
		At: instant("2026-06-01T00:00:00Z"), EarlierAt: nil,
		EarlierClassification: v1alpha1.ClassificationSupported,
	}}))
}

func TestCheckRolloutOrderOfNoLandscapes(t *testing.T) {
	g := NewWithT(t)
	g.Expect(CheckRolloutOrder(nil, diffNow)).To(BeEmpty())
	g.Expect(CheckRolloutOrder([]Landscape{{Name: "dev"}}, diffNow)).To(BeEmpty())
}

// namespacedWithMergedSpec is an evaluated NamespacedCloudProfile
// team/aws-team whose merged spec is spec.
func namespacedWithMergedSpec(spec *v1alpha1.CloudProfileSpec) profile.Object {
	ncp := &v1alpha1.NamespacedCloudProfile{Spec: *builders.Namespaced()}
	ncp.Name, ncp.Namespace = "aws-team", "team"
	ncp.Status.CloudProfileSpec = spec
	return profile.Object{NamespacedCloudProfile: ncp}
}

func TestCheckRolloutPairsKeepsTheLagOfEachStage(t *testing.T) {
	const (
		preview   = v1alpha1.ClassificationPreview
		supported = v1alpha1.ClassificationSupported
		expired   = v1alpha1.ClassificationExpired
	)
	week := 7 * 24 * time.Hour
	lags := map[v1alpha1.VersionClassification]rollout.Lag{
		supported: {Duration: week, Severity: policy.SeverityError},
		expired:   {Severity: policy.SeverityWarning},
	}
	staged := func(supportedFrom, expiredFrom string) v1alpha1.ExpirableVersion {
		return builders.Staged("1.30.0", builders.Stage(preview, ""), builders.Stage(supported, supportedFrom), builders.Stage(expired, expiredFrom))
	}
	tests := []struct {
		name       string
		landscapes []Landscape
		pairs      []RolloutPair
		want       []string
		severities []policy.Severity
	}{
		{
			name:       "a stage that keeps the lag is in order",
			landscapes: landscapesOf([]string{"dev", "prod"}, staged("2026-02-01T00:00:00Z", "2026-09-01T00:00:00Z"), staged("2026-02-08T00:00:00Z", "2026-09-01T00:00:00Z")),
			pairs:      []RolloutPair{{Later: 1, Earlier: 0, Lags: lags}},
		},
		{
			name:       "a stage after the upstream's but within the lag is reported with the lag's severity",
			landscapes: landscapesOf([]string{"dev", "prod"}, staged("2026-02-01T00:00:00Z", "2026-09-01T00:00:00Z"), staged("2026-02-05T00:00:00Z", "2026-09-01T00:00:00Z")),
			pairs:      []RolloutPair{{Later: 1, Earlier: 0, Lags: lags}},
			want:       []string{"prod: CloudProfile/aws: kubernetes 1.30.0 is supported from 2026-02-05T00:00:00Z, 3d before dev (2026-02-01T00:00:00Z) plus the lag of 7d"},
			severities: []policy.Severity{policy.SeverityError},
		},
		{
			name:       "a stage without a lag may not come first, with the severity the file gives it",
			landscapes: landscapesOf([]string{"dev", "prod"}, staged("2026-02-01T00:00:00Z", "2026-09-01T00:00:00Z"), staged("2026-02-08T00:00:00Z", "2026-08-01T00:00:00Z")),
			pairs:      []RolloutPair{{Later: 1, Earlier: 0, Lags: lags}},
			want:       []string{"prod: CloudProfile/aws: kubernetes 1.30.0 is expired from 2026-08-01T00:00:00Z, 31d before dev (2026-09-01T00:00:00Z)"},
			severities: []policy.Severity{policy.SeverityWarning},
		},
		{
			name:       "a stage the file sets no lag for is checked as --rollout checks it",
			landscapes: landscapesOf([]string{"dev", "prod"}, builders.Staged("1.30.0", builders.Stage(preview, "2026-03-01T00:00:00Z")), builders.Staged("1.30.0", builders.Stage(preview, "2026-02-01T00:00:00Z"))),
			pairs:      []RolloutPair{{Later: 1, Earlier: 0, Lags: lags}},
			want:       []string{"prod: CloudProfile/aws: kubernetes 1.30.0 is preview from 2026-02-01T00:00:00Z, 28d before dev (2026-03-01T00:00:00Z)"},
			severities: []policy.Severity{""},
		},
		{
			name:       "an inversion over once the upstream's date plus the lag passed is history",
			landscapes: landscapesOf([]string{"dev", "prod"}, staged("2025-12-01T00:00:00Z", "2026-09-01T00:00:00Z"), staged("2025-12-03T00:00:00Z", "2026-09-01T00:00:00Z")),
			pairs:      []RolloutPair{{Later: 1, Earlier: 0, Lags: lags}},
		},
		{
			name: "only the pairs given are checked",
			landscapes: landscapesOf([]string{"dev", "staging", "prod"},
				staged("2026-05-01T00:00:00Z", "2026-09-01T00:00:00Z"),
				staged("2026-03-01T00:00:00Z", "2026-09-01T00:00:00Z"),
				staged("2026-04-01T00:00:00Z", "2026-09-01T00:00:00Z")),
			pairs: []RolloutPair{{Later: 2, Earlier: 1}},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			warnings := CheckRolloutPairs(tc.landscapes, tc.pairs, diffNow)
			lines, severities := []string{}, []policy.Severity{}
			for _, w := range warnings {
				lines, severities = append(lines, w.String()), append(severities, w.Severity)
			}
			if tc.want == nil {
				tc.want, tc.severities = []string{}, []policy.Severity{}
			}
			g.Expect(lines).To(Equal(tc.want))
			g.Expect(severities).To(Equal(tc.severities))
		})
	}
}

func TestRenderersShowTheSeverityOfARolloutFinding(t *testing.T) {
	g := NewWithT(t)
	at, earlierAt := instant("2026-02-05T00:00:00Z"), instant("2026-02-01T00:00:00Z")
	finding := RolloutWarning{
		Landscape: "prod", EarlierLandscape: "dev", Kind: v1alpha1.CloudProfileKind, Name: "aws",
		Version: "1.30.0", Stage: v1alpha1.ClassificationSupported, At: at, EarlierAt: earlierAt,
		EarlierClassification: v1alpha1.ClassificationSupported, Lag: "7d", Severity: policy.SeverityError, Due: instant("2026-02-08T00:00:00Z"),
	}
	report := Report{RolloutWarnings: []RolloutWarning{finding}}
	line := "prod: CloudProfile/aws: kubernetes 1.30.0 is supported from 2026-02-05T00:00:00Z, 3d before dev (2026-02-01T00:00:00Z) plus the lag of 7d"
	g.Expect(written(t, WriteText, report)).To(ContainSubstring("Rollout order:\n  error: " + line + "\n"))
	g.Expect(written(t, WriteMarkdown, report)).To(ContainSubstring("- **Error:** "))
	g.Expect(written(t, WriteJSON, report)).To(And(ContainSubstring(`"lag": "7d"`), ContainSubstring(`"severity": "error"`), ContainSubstring(`"due": "2026-02-08T00:00:00Z"`)))
}

func TestRenderersSummarizeARolloutFindingRepeatedTenThousandTimes(t *testing.T) {
	g := NewWithT(t)
	findings := make([]RolloutWarning, 10000)
	for i := range findings {
		findings[i] = RolloutWarning{
			Landscape: "prod", EarlierLandscape: "dev", Kind: v1alpha1.CloudProfileKind, Name: "aws",
			Version: fmt.Sprintf("1.%d.0", i), Stage: v1alpha1.ClassificationSupported,
			At: instant("2026-02-05T00:00:00Z"), EarlierAt: instant("2026-02-01T00:00:00Z"),
			EarlierClassification: v1alpha1.ClassificationPreview, Severity: policy.SeverityError,
		}
	}
	report := Report{RolloutWarnings: findings}

	text := written(t, WriteText, report)
	g.Expect(strings.Count(text, "\n  error: ")).To(Equal(profile.SummaryKeep + 1))
	g.Expect(text).To(ContainSubstring("  error: prod: CloudProfile/aws: kubernetes 1.9.0 is supported"))
	g.Expect(text).To(ContainSubstring("\n  error: ... and 9,990 more like it\n"))
	markdown := written(t, WriteMarkdown, report)
	g.Expect(strings.Count(markdown, "- **Error:** ")).To(Equal(profile.SummaryKeep + 1))
	g.Expect(markdown).To(ContainSubstring("- **Error:** ... and 9,990 more like it\n"))
	g.Expect(strings.Count(written(t, WriteJSON, report), `"earlierLandscape"`)).To(Equal(10000), "the JSON report keeps every finding, for code")
}

func TestSummarizeRolloutWarningsKeepsDifferentMistakesApart(t *testing.T) {
	g := NewWithT(t)
	var findings []RolloutWarning
	for _, landscape := range []string{"prod1", "prod2"} {
		for i := range 11 {
			findings = append(findings, RolloutWarning{
				Landscape: landscape, EarlierLandscape: "dev", Kind: v1alpha1.CloudProfileKind, Name: "aws",
				Version: fmt.Sprintf("1.%d.0", i), Stage: v1alpha1.ClassificationSupported,
				EarlierClassification: v1alpha1.ClassificationPreview,
			})
		}
	}
	lines := SummarizeRolloutWarnings(findings)
	g.Expect(lines).To(HaveLen(2 * (profile.SummaryKeep + 1)))
	g.Expect(lines[profile.SummaryKeep]).To(Equal(RolloutLine{Severity: policy.SeverityWarning, Text: "... and 1 more like it"}))
}
