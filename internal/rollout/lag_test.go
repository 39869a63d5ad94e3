package rollout

import (
	"testing"
	"time"

	. "github.com/onsi/gomega"

	v1alpha1 "github.com/profilesync/profilesync/api/v1alpha1"
	"github.com/profilesync/profilesync/internal/repofile"
	"github.com/profilesync/profilesync/test/builders"
)

func TestCheckLag(t *testing.T) {
	const (
		preview    = v1alpha1.ClassificationPreview
		supported  = v1alpha1.ClassificationSupported
		deprecated = v1alpha1.ClassificationDeprecated
		expired    = v1alpha1.ClassificationExpired
	)
	week := 7 * 24 * time.Hour
	lags := map[v1alpha1.VersionClassification]Lag{
		supported: {Duration: week, Severity: repofile.SeverityError},
		expired:   {Severity: repofile.SeverityWarning},
	}
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	at := func(s string) *time.Time {
		parsed, err := time.Parse(time.RFC3339, s)
		if err != nil {
			t.Fatal(err)
		}
		return &parsed
	}
	stages := builders.Stage
	for _, tc := range []struct {
		name           string
		later, earlier []v1alpha1.LifecycleStage
		want           []LagBreak
	}{
		{
			name:    "a stage that starts the lag after the upstream's keeps the rule",
			later:   []v1alpha1.LifecycleStage{stages(preview, ""), stages(supported, "2026-02-08T00:00:00Z")},
			earlier: []v1alpha1.LifecycleStage{stages(preview, ""), stages(supported, "2026-02-01T00:00:00Z")},
		},
		{
			name:    "a stage within the lag of the upstream's breaks it, due at the upstream's start plus the lag",
			later:   []v1alpha1.LifecycleStage{stages(preview, ""), stages(supported, "2026-02-05T00:00:00Z")},
			earlier: []v1alpha1.LifecycleStage{stages(preview, ""), stages(supported, "2026-02-01T00:00:00Z")},
			want: []LagBreak{{Stage: supported, At: at("2026-02-05T00:00:00Z"), EarlierAt: at("2026-02-01T00:00:00Z"),
				Lag: &Lag{Duration: week, Severity: repofile.SeverityError}, Due: at("2026-02-08T00:00:00Z")}},
		},
		{
			name:    "a stage without a lag may not start before the upstream's, and has no due time",
			later:   []v1alpha1.LifecycleStage{stages(preview, "2025-12-01T00:00:00Z")},
			earlier: []v1alpha1.LifecycleStage{stages(preview, "2026-03-01T00:00:00Z")},
			want:    []LagBreak{{Stage: preview, At: at("2025-12-01T00:00:00Z"), EarlierAt: at("2026-03-01T00:00:00Z")}},
		},
		{
			name:    "a stage reached by skipping it is compared as reached: expired in the landscape while the upstream only deprecates",
			later:   []v1alpha1.LifecycleStage{stages(supported, ""), stages(expired, "2026-06-01T00:00:00Z")},
			earlier: []v1alpha1.LifecycleStage{stages(supported, ""), stages(deprecated, "2026-06-01T00:00:00Z")},
			want: []LagBreak{{Stage: expired, At: at("2026-06-01T00:00:00Z"),
				Lag: &Lag{Severity: repofile.SeverityWarning}}},
		},
		{
			name:    "an inversion over at now, the upstream's start plus the lag passed, is history",
			later:   []v1alpha1.LifecycleStage{stages(preview, ""), stages(supported, "2025-12-03T00:00:00Z")},
			earlier: []v1alpha1.LifecycleStage{stages(preview, ""), stages(supported, "2025-12-01T00:00:00Z")},
		},
		{
			name:    "a stage in effect from the beginning comes before every start",
			later:   []v1alpha1.LifecycleStage{stages(supported, "")},
			earlier: []v1alpha1.LifecycleStage{stages(preview, ""), stages(supported, "2026-02-01T00:00:00Z")},
			want: []LagBreak{{Stage: supported, EarlierAt: at("2026-02-01T00:00:00Z"),
				Lag: &Lag{Duration: week, Severity: repofile.SeverityError}, Due: at("2026-02-08T00:00:00Z")}},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			NewWithT(t).Expect(CheckLag(tc.later, tc.earlier, lags, now)).To(Equal(tc.want))
		})
	}
}

func TestFormatDurationWritesWholeDaysAsTheFileDoes(t *testing.T) {
	g := NewWithT(t)
	for _, d := range []time.Duration{7 * 24 * time.Hour, 36 * time.Hour, 0} {
		parsed, err := ParseDuration(FormatDuration(d))
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(parsed).To(Equal(d))
	}
	g.Expect(FormatDuration(7 * 24 * time.Hour)).To(Equal("7d"))
	g.Expect(FormatDuration(36 * time.Hour)).To(Equal("36h0m0s"))
}
