package lifecycle

import (
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"k8s.io/utils/ptr"

	v1alpha1 "github.com/profilesync/profilesync/api/v1alpha1"
)

func TestRank(t *testing.T) {
	tests := []struct {
		name           string
		classification v1alpha1.VersionClassification
		want           int
	}{
		{"unavailable ranks lowest", unavailable, 0},
		{"preview ranks above unavailable", preview, 1},
		{"supported ranks above preview", supported, 2},
		{"deprecated ranks above supported", deprecated, 3},
		{"expired ranks highest", expired, 4},
		{"an unknown classification ranks -1", "retired", -1},
		{"an empty classification ranks -1", "", -1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			NewWithT(t).Expect(Rank(tt.classification)).To(Equal(tt.want))
		})
	}
}

func TestStages(t *testing.T) {
	tests := []struct {
		name    string
		version v1alpha1.ExpirableVersion
		want    []v1alpha1.LifecycleStage
	}{
		{
			name:    "a version with neither lifecycle nor deprecated fields is supported forever",
			version: plain("1.30.0"),
			want:    []v1alpha1.LifecycleStage{stage(supported, "")},
		},
		{
			name:    "a deprecated classification becomes the first stage",
			version: withDeprecatedAPI("1.30.0", deprecated, ""),
			want:    []v1alpha1.LifecycleStage{stage(deprecated, "")},
		},
		{
			name:    "an expirationDate alone adds an expired stage after supported",
			version: withDeprecatedAPI("1.30.0", "", "2025-01-01T00:00:00Z"),
			want:    []v1alpha1.LifecycleStage{stage(supported, ""), stage(expired, "2025-01-01T00:00:00Z")},
		},
		{
			name:    "classification and expirationDate become two stages",
			version: withDeprecatedAPI("1.30.0", preview, "2025-01-01T00:00:00Z"),
			want:    []v1alpha1.LifecycleStage{stage(preview, ""), stage(expired, "2025-01-01T00:00:00Z")},
		},
		{
			name:    "a lifecycle is returned as written",
			version: withLifecycle("1.30.0", stage(preview, ""), stage(supported, "2024-01-01T00:00:00Z")),
			want:    []v1alpha1.LifecycleStage{stage(preview, ""), stage(supported, "2024-01-01T00:00:00Z")},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			NewWithT(t).Expect(Stages(tt.version)).To(Equal(tt.want))
		})
	}
}

func TestStagesDoesNotAliasTheExpirationDate(t *testing.T) {
	g := NewWithT(t)
	v := withDeprecatedAPI("1.30.0", supported, "2025-01-01T00:00:00Z")
	stages := Stages(v)
	stages[1].StartTime.Time = at("2030-01-01T00:00:00Z")
	g.Expect(v.ExpirationDate.Time).To(Equal(at("2025-01-01T00:00:00Z")))
}

func TestClassificationAt(t *testing.T) {
	fourStages := withLifecycle("1.30.0",
		stage(preview, "2024-01-01T00:00:00Z"),
		stage(supported, "2024-02-01T00:00:00Z"),
		stage(deprecated, "2024-03-01T00:00:00Z"),
		stage(expired, "2024-04-01T00:00:00Z"))
	tests := []struct {
		name    string
		version v1alpha1.ExpirableVersion
		t       string
		want    v1alpha1.VersionClassification
	}{
		{"a version without lifecycle or deprecated fields is supported", plain("1.30.0"), "2024-01-01T00:00:00Z", supported},
		{"a deprecated classification holds before the expirationDate", withDeprecatedAPI("1.30.0", deprecated, "2025-01-01T00:00:00Z"), "2024-12-31T23:59:59Z", deprecated},
		{"a passed expirationDate means expired whatever classification says", withDeprecatedAPI("1.30.0", supported, "2025-01-01T00:00:00Z"), "2025-06-01T00:00:00Z", expired},
		{"a passed expirationDate means expired even for a preview classification", withDeprecatedAPI("1.30.0", preview, "2025-01-01T00:00:00Z"), "2025-06-01T00:00:00Z", expired},
		{"an expirationDate exactly at t means expired (at or before)", withDeprecatedAPI("1.30.0", supported, "2025-01-01T00:00:00Z"), "2025-01-01T00:00:00Z", expired},
		{"all stages in the future mean unavailable", fourStages, "2023-12-31T00:00:00Z", unavailable},
		{"a stage starting exactly at t is current", fourStages, "2024-02-01T00:00:00Z", supported},
		{"a stage starting one second after t is not yet current", fourStages, "2024-01-31T23:59:59Z", preview},
		{"between two starts the earlier stage is current", fourStages, "2024-03-15T00:00:00Z", deprecated},
		{"after the last start the last stage is current", fourStages, "2030-01-01T00:00:00Z", expired},
		{"a first stage without startTime has always been current", withLifecycle("1.30.0", stage(preview, ""), stage(supported, "2030-01-01T00:00:00Z")), "1970-01-01T00:00:00Z", preview},
		{"equal start times let the later stage win", withLifecycle("1.30.0", stage(supported, "2024-01-01T00:00:00Z"), stage(deprecated, "2024-06-01T00:00:00Z"), stage(expired, "2024-06-01T00:00:00Z")), "2024-06-01T00:00:00Z", expired},
		{"stages may be left out", withLifecycle("1.30.0", stage(supported, ""), stage(expired, "2024-06-01T00:00:00Z")), "2024-07-01T00:00:00Z", expired},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			NewWithT(t).Expect(ClassificationAt(tt.version, at(tt.t))).To(Equal(tt.want))
		})
	}
}

func TestClassificationAtGEP32Example(t *testing.T) {
	g := NewWithT(t)
	got := map[string]v1alpha1.VersionClassification{}
	for _, v := range gep32KubernetesVersions() {
		got[v.Version] = ClassificationAt(v, gep32Now)
	}
	g.Expect(got).To(Equal(map[string]v1alpha1.VersionClassification{
		"1.30.6": supported,
		"1.27.0": supported,
		"1.28.0": supported,
		"1.18.0": expired,
		"2.0.0":  unavailable,
	}))
}

func TestNextTransition(t *testing.T) {
	tests := []struct {
		name     string
		version  v1alpha1.ExpirableVersion
		t        string
		wantOK   bool
		wantAt   string
		wantNext v1alpha1.VersionClassification
	}{
		{
			name:    "a version without lifecycle never transitions",
			version: plain("1.30.0"),
			t:       "2024-01-01T00:00:00Z",
		},
		{
			name:     "a future expirationDate is the next transition, to expired",
			version:  withDeprecatedAPI("1.30.0", supported, "2025-01-01T00:00:00Z"),
			t:        "2024-01-01T00:00:00Z",
			wantOK:   true,
			wantAt:   "2025-01-01T00:00:00Z",
			wantNext: expired,
		},
		{
			name:    "an expirationDate exactly at t is not a future transition",
			version: withDeprecatedAPI("1.30.0", supported, "2025-01-01T00:00:00Z"),
			t:       "2025-01-01T00:00:00Z",
		},
		{
			name:     "the earliest start strictly after t is next",
			version:  withLifecycle("1.30.0", stage(preview, ""), stage(supported, "2024-02-01T00:00:00Z"), stage(deprecated, "2024-03-01T00:00:00Z")),
			t:        "2024-02-01T00:00:00Z",
			wantOK:   true,
			wantAt:   "2024-03-01T00:00:00Z",
			wantNext: deprecated,
		},
		{
			name:     "stages starting together report the later stage as next",
			version:  withLifecycle("1.30.0", stage(supported, ""), stage(deprecated, "2024-06-01T00:00:00Z"), stage(expired, "2024-06-01T00:00:00Z")),
			t:        "2024-01-01T00:00:00Z",
			wantOK:   true,
			wantAt:   "2024-06-01T00:00:00Z",
			wantNext: expired,
		},
		{
			name:     "an unavailable version's next transition is its first stage",
			version:  withLifecycle("2.0.0", stage(preview, "2036-02-07T06:28:16Z")),
			t:        "2024-12-03T00:00:00Z",
			wantOK:   true,
			wantAt:   "2036-02-07T06:28:16Z",
			wantNext: preview,
		},
		{
			name:    "a lifecycle whose stages have all started has no next transition",
			version: withLifecycle("1.18.0", stage(supported, ""), stage(deprecated, "2022-01-01T00:00:00Z"), stage(expired, "2022-06-01T00:00:00Z")),
			t:       "2024-12-03T00:00:00Z",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			gotAt, gotNext, ok := NextTransition(tt.version, at(tt.t))
			g.Expect(ok).To(Equal(tt.wantOK))
			if !tt.wantOK {
				g.Expect(gotAt).To(BeZero())
				g.Expect(gotNext).To(BeEmpty())
				return
			}
			g.Expect(gotAt).To(BeTemporally("==", at(tt.wantAt)))
			g.Expect(gotNext).To(Equal(tt.wantNext))
		})
	}
}

func TestTransitions(t *testing.T) {
	fourStages := withLifecycle("1.30.0",
		stage(preview, "2024-01-01T00:00:00Z"),
		stage(supported, "2024-02-01T00:00:00Z"),
		stage(deprecated, "2024-03-01T00:00:00Z"),
		stage(expired, "2024-04-01T00:00:00Z"))
	tests := []struct {
		name        string
		version     v1alpha1.ExpirableVersion
		from, until string
		want        []Transition
	}{
		{
			name:    "a version without lifecycle has no transitions",
			version: plain("1.30.0"),
			from:    "2024-01-01T00:00:00Z",
		},
		{
			name:    "a future expirationDate is one transition, to expired",
			version: withDeprecatedAPI("1.30.0", deprecated, "2025-01-01T00:00:00Z"),
			from:    "2024-01-01T00:00:00Z",
			want:    []Transition{{At: at("2025-01-01T00:00:00Z"), From: deprecated, To: expired}},
		},
		{
			name:    "without until every later stage start is listed, each from the classification before it",
			version: fourStages,
			from:    "2023-12-01T00:00:00Z",
			want: []Transition{
				{At: at("2024-01-01T00:00:00Z"), From: unavailable, To: preview},
				{At: at("2024-02-01T00:00:00Z"), From: preview, To: supported},
				{At: at("2024-03-01T00:00:00Z"), From: supported, To: deprecated},
				{At: at("2024-04-01T00:00:00Z"), From: deprecated, To: expired},
			},
		},
		{
			name:    "a stage starting exactly at from is not listed, one starting exactly at until is",
			version: fourStages,
			from:    "2024-01-01T00:00:00Z",
			until:   "2024-03-01T00:00:00Z",
			want: []Transition{
				{At: at("2024-02-01T00:00:00Z"), From: preview, To: supported},
				{At: at("2024-03-01T00:00:00Z"), From: supported, To: deprecated},
			},
		},
		{
			name:    "a window between two stage starts has no transitions",
			version: fourStages,
			from:    "2024-02-02T00:00:00Z",
			until:   "2024-02-28T00:00:00Z",
		},
		{
			name:    "stages starting together are one transition, to the later stage",
			version: withLifecycle("1.30.0", stage(supported, ""), stage(deprecated, "2024-06-01T00:00:00Z"), stage(expired, "2024-06-01T00:00:00Z")),
			from:    "2024-01-01T00:00:00Z",
			want:    []Transition{{At: at("2024-06-01T00:00:00Z"), From: supported, To: expired}},
		},
		{
			name:    "a stage that repeats the current classification is still a transition",
			version: withLifecycle("1.30.0", stage(supported, ""), stage(supported, "2024-06-01T00:00:00Z")),
			from:    "2024-01-01T00:00:00Z",
			want:    []Transition{{At: at("2024-06-01T00:00:00Z"), From: supported, To: supported}},
		},
		{
			name:    "start times out of order are walked in time order",
			version: withLifecycle("1.30.0", stage(preview, ""), stage(deprecated, "2024-06-01T00:00:00Z"), stage(supported, "2024-03-01T00:00:00Z")),
			from:    "2024-01-01T00:00:00Z",
			want: []Transition{
				{At: at("2024-03-01T00:00:00Z"), From: preview, To: supported},
				{At: at("2024-06-01T00:00:00Z"), From: supported, To: supported},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var until time.Time
			if tt.until != "" {
				until = at(tt.until)
			}
			NewWithT(t).Expect(Transitions(tt.version, at(tt.from), until)).To(Equal(tt.want))
		})
	}
}

func TestClassificationAtDoesNotAllocate(t *testing.T) {
	g := NewWithT(t)
	v := withDeprecatedAPI("1.30.0", supported, "2025-01-01T00:00:00Z")
	now := at("2024-01-01T00:00:00Z")
	allocs := testing.AllocsPerRun(100, func() {
		_ = ClassificationAt(v, now)
		_, _, _ = NextTransition(v, now.Add(time.Hour))
	})
	g.Expect(allocs).To(BeZero())
}

func TestDeprecatedAPIClassification(t *testing.T) {
	tests := []struct {
		name           string
		classification *v1alpha1.VersionClassification
		want           v1alpha1.VersionClassification
	}{
		{"an unset classification means supported", nil, supported},
		{"a preview classification is kept", ptr.To(preview), preview},
		{"a deprecated classification is kept", ptr.To(deprecated), deprecated},
		{"an invalid classification is kept for validation to report", ptr.To(expired), expired},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			NewWithT(t).Expect(deprecatedAPIClassification(tt.classification)).To(Equal(tt.want))
		})
	}
}
