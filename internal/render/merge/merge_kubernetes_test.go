package merge

import (
	"testing"

	. "github.com/onsi/gomega"

	v1alpha1 "github.com/profilesync/profilesync/api/v1alpha1"
)

const (
	preview     = v1alpha1.ClassificationPreview
	supported   = v1alpha1.ClassificationSupported
	deprecated  = v1alpha1.ClassificationDeprecated
	expired     = v1alpha1.ClassificationExpired
	unavailable = v1alpha1.ClassificationUnavailable
)

func TestMergeNamespacedKubernetesVersions(t *testing.T) {
	tests := []struct {
		name      string
		parent    []v1alpha1.ExpirableVersion
		overrides []v1alpha1.ExpirableVersion
		want      []v1alpha1.ExpirableVersion
		wantErrs  []string
	}{
		{
			name:      "a version no override names keeps the parent's deprecated form",
			parent:    withNewest(deprecatedAPIVersion("1.28.0", deprecated, "2030-01-01T00:00:00Z"), plainVersion("1.29.0")),
			overrides: []v1alpha1.ExpirableVersion{deprecatedAPIVersion("1.29.0", "", "2031-01-01T00:00:00Z")},
			want:      withNewest(deprecatedAPIVersion("1.28.0", deprecated, "2030-01-01T00:00:00Z"), deprecatedAPIVersion("1.29.0", "", "2031-01-01T00:00:00Z")),
		},
		{
			name:      "an override naming a version the parent lacks is an error",
			parent:    withNewest(plainVersion("1.29.0")),
			overrides: []v1alpha1.ExpirableVersion{deprecatedAPIVersion("1.27.0", "", "2031-01-01T00:00:00Z")},
			wantErrs:  []string{"spec.kubernetes.versions[0] (1.27.0).version: Not found"},
		},
		{
			name:      "an override without expirationDate or lifecycle is an error: it would change nothing",
			parent:    withNewest(deprecatedAPIVersion("1.29.0", deprecated, "2030-01-01T00:00:00Z")),
			overrides: []v1alpha1.ExpirableVersion{plainVersion("1.29.0")},
			wantErrs:  []string{"spec.kubernetes.versions[0] (1.29.0).expirationDate: Required value"},
		},
		{
			name: "an override that makes a deprecated-API supported version overlap a supported lifecycle version is an error",
			parent: withNewest(
				deprecatedAPIVersion("1.29.1", supported, "2025-01-01T00:00:00Z"),
				staged("1.29.0", stage(preview, ""), stage(supported, "2025-01-01T00:00:00Z"))),
			overrides: []v1alpha1.ExpirableVersion{deprecatedAPIVersion("1.29.1", "", "2027-01-01T00:00:00Z")},
			wantErrs:  []string{"status.cloudProfileSpec.kubernetes.versions[0] (1.29.1).classification: Forbidden"},
		},
		{
			name:      "an expirationDate override of a deprecated-API version keeps the deprecated form and its classification",
			parent:    withNewest(deprecatedAPIVersion("1.29.0", deprecated, "2025-01-01T00:00:00Z")),
			overrides: []v1alpha1.ExpirableVersion{deprecatedAPIVersion("1.29.0", "", "2026-01-01T00:00:00Z")},
			want:      withNewest(deprecatedAPIVersion("1.29.0", deprecated, "2026-01-01T00:00:00Z")),
		},
		{
			name:      "an override may not set classification",
			parent:    withNewest(deprecatedAPIVersion("1.29.0", deprecated, "")),
			overrides: []v1alpha1.ExpirableVersion{deprecatedAPIVersion("1.29.0", supported, "2026-01-01T00:00:00Z")},
			wantErrs:  []string{"spec.kubernetes.versions[0] (1.29.0).classification: Forbidden"},
		},
		{
			name:   "an expirationDate override of a lifecycle version moves its expired stage",
			parent: withNewest(staged("1.29.0", stage(supported, ""), stage(deprecated, "2025-01-01T00:00:00Z"), stage(expired, "2026-01-01T00:00:00Z"))),
			overrides: []v1alpha1.ExpirableVersion{
				deprecatedAPIVersion("1.29.0", "", "2027-01-01T00:00:00Z"),
			},
			want: withNewest(staged("1.29.0", stage(supported, ""), stage(deprecated, "2025-01-01T00:00:00Z"), stage(expired, "2027-01-01T00:00:00Z"))),
		},
		{
			name:      "an expirationDate override adds the expired stage a lifecycle lacks",
			parent:    withNewest(staged("1.29.0", stage(preview, ""), stage(supported, "2025-01-01T00:00:00Z"))),
			overrides: []v1alpha1.ExpirableVersion{deprecatedAPIVersion("1.29.0", "", "2027-01-01T00:00:00Z")},
			want:      withNewest(staged("1.29.0", stage(preview, ""), stage(supported, "2025-01-01T00:00:00Z"), stage(expired, "2027-01-01T00:00:00Z"))),
		},
		{
			name:      "an earlier expirationDate pulls later-starting lower stages back to it",
			parent:    withNewest(staged("1.29.0", stage(supported, ""), stage(deprecated, "2026-01-01T00:00:00Z"))),
			overrides: []v1alpha1.ExpirableVersion{deprecatedAPIVersion("1.29.0", "", "2025-01-01T00:00:00Z")},
			want:      withNewest(staged("1.29.0", stage(supported, ""), stage(deprecated, "2025-01-01T00:00:00Z"), stage(expired, "2025-01-01T00:00:00Z"))),
		},
		{
			name:   "an override may not set expirationDate together with lifecycle",
			parent: withNewest(staged("1.29.0", stage(supported, ""), stage(expired, "2026-01-01T00:00:00Z"))),
			overrides: []v1alpha1.ExpirableVersion{{
				Version:        "1.29.0",
				ExpirationDate: date("2027-01-01T00:00:00Z"),
				Lifecycle:      []v1alpha1.LifecycleStage{stage(expired, "2027-01-01T00:00:00Z")},
			}},
			wantErrs: []string{"spec.kubernetes.versions[0] (1.29.0).expirationDate: Forbidden"},
		},
		{
			name:      "a lifecycle override of a deprecated-API version is written in lifecycle form",
			parent:    withNewest(deprecatedAPIVersion("1.29.0", deprecated, "2025-01-01T00:00:00Z")),
			overrides: []v1alpha1.ExpirableVersion{staged("1.29.0", stage(expired, "2027-01-01T00:00:00Z"))},
			want:      withNewest(staged("1.29.0", stage(deprecated, ""), stage(expired, "2027-01-01T00:00:00Z"))),
		},
		{
			name:      "a lifecycle override of a version without lifecycle may move its implicit supported stage",
			parent:    withNewest(plainVersion("1.29.0")),
			overrides: []v1alpha1.ExpirableVersion{staged("1.29.0", stage(supported, "2024-01-01T00:00:00Z"))},
			want:      withNewest(staged("1.29.0", stage(supported, "2024-01-01T00:00:00Z"))),
		},
		{
			name:      "an override stage the parent lacks is an error",
			parent:    withNewest(plainVersion("1.29.0")),
			overrides: []v1alpha1.ExpirableVersion{staged("1.29.0", stage(deprecated, "2026-01-01T00:00:00Z"))},
			wantErrs:  []string{"spec.kubernetes.versions[0] (1.29.0).lifecycle[0].classification: Not found"},
		},
		{
			name:      "a later start of a higher stage carries the stages above it along",
			parent:    withNewest(staged("1.29.0", stage(supported, ""), stage(deprecated, "2025-01-01T00:00:00Z"), stage(expired, "2025-06-01T00:00:00Z"))),
			overrides: []v1alpha1.ExpirableVersion{staged("1.29.0", stage(deprecated, "2026-01-01T00:00:00Z"))},
			want:      withNewest(staged("1.29.0", stage(supported, ""), stage(deprecated, "2026-01-01T00:00:00Z"), stage(expired, "2026-01-01T00:00:00Z"))),
		},
		{
			name:      "an earlier start of a higher stage pulls later-starting lower stages back",
			parent:    withNewest(staged("1.29.0", stage(preview, ""), stage(supported, "2025-01-01T00:00:00Z"), stage(deprecated, "2026-01-01T00:00:00Z"))),
			overrides: []v1alpha1.ExpirableVersion{staged("1.29.0", stage(deprecated, "2024-01-01T00:00:00Z"))},
			want:      withNewest(staged("1.29.0", stage(preview, ""), stage(supported, "2024-01-01T00:00:00Z"), stage(deprecated, "2024-01-01T00:00:00Z"))),
		},
		{
			name:      "an override stage without startTime is an error where the parent's stage has one",
			parent:    withNewest(staged("1.29.0", stage(preview, ""), stage(supported, "2025-01-01T00:00:00Z"))),
			overrides: []v1alpha1.ExpirableVersion{staged("1.29.0", stage(supported, ""))},
			wantErrs:  []string{"spec.kubernetes.versions[0] (1.29.0).lifecycle[0].startTime: Required value"},
		},
		{
			name:      "an override stage without startTime where the parent's stage has none either changes nothing",
			parent:    withNewest(staged("1.29.0", stage(supported, ""), stage(deprecated, "2025-01-01T00:00:00Z"))),
			overrides: []v1alpha1.ExpirableVersion{staged("1.29.0", stage(supported, ""))},
			want:      withNewest(staged("1.29.0", stage(supported, ""), stage(deprecated, "2025-01-01T00:00:00Z"))),
		},
		{
			name:      "an override stage without startTime matching a deprecated-API parent changes nothing, not even its form",
			parent:    withNewest(deprecatedAPIVersion("1.29.0", supported, "2030-01-01T00:00:00Z")),
			overrides: []v1alpha1.ExpirableVersion{staged("1.29.0", stage(supported, ""))},
			want:      withNewest(deprecatedAPIVersion("1.29.0", supported, "2030-01-01T00:00:00Z")),
		},
		{
			name:   "an override stage without startTime next to one with a start moves only the latter",
			parent: withNewest(staged("1.29.0", stage(supported, ""), stage(deprecated, "2025-01-01T00:00:00Z"))),
			overrides: []v1alpha1.ExpirableVersion{staged("1.29.0",
				stage(supported, ""), stage(deprecated, "2026-01-01T00:00:00Z"))},
			want: withNewest(staged("1.29.0", stage(supported, ""), stage(deprecated, "2026-01-01T00:00:00Z"))),
		},
		{
			name:   "override stages out of rank order are an error",
			parent: withNewest(staged("1.29.0", stage(supported, ""), stage(deprecated, "2025-01-01T00:00:00Z"))),
			overrides: []v1alpha1.ExpirableVersion{staged("1.29.0",
				stage(deprecated, "2025-01-01T00:00:00Z"), stage(supported, "2025-01-01T00:00:00Z"))},
			wantErrs: []string{"spec.kubernetes.versions[0] (1.29.0).lifecycle[1].classification: Invalid value"},
		},
		{
			name:   "override start times that decrease are an error",
			parent: withNewest(staged("1.29.0", stage(supported, ""), stage(deprecated, "2025-01-01T00:00:00Z"))),
			overrides: []v1alpha1.ExpirableVersion{staged("1.29.0",
				stage(supported, "2025-01-01T00:00:00Z"), stage(deprecated, "2024-01-01T00:00:00Z"))},
			wantErrs: []string{"spec.kubernetes.versions[0] (1.29.0).lifecycle[1].startTime: Invalid value"},
		},
		{
			name:   "an override stage listed twice is an error",
			parent: withNewest(staged("1.29.0", stage(supported, ""), stage(deprecated, "2025-01-01T00:00:00Z"))),
			overrides: []v1alpha1.ExpirableVersion{staged("1.29.0",
				stage(deprecated, "2025-01-01T00:00:00Z"), stage(deprecated, "2026-01-01T00:00:00Z"))},
			wantErrs: []string{"spec.kubernetes.versions[0] (1.29.0).lifecycle[1].classification: Duplicate value"},
		},
		{
			name:      "an unavailable override stage is an error, as unavailable is never declared",
			parent:    withNewest(staged("1.29.0", stage(supported, ""))),
			overrides: []v1alpha1.ExpirableVersion{staged("1.29.0", stage(unavailable, "2025-01-01T00:00:00Z"))},
			wantErrs:  []string{"spec.kubernetes.versions[0] (1.29.0).lifecycle[0].classification: Unsupported value"},
		},
		{
			name:   "a version overridden twice is an error",
			parent: withNewest(plainVersion("1.29.0")),
			overrides: []v1alpha1.ExpirableVersion{
				deprecatedAPIVersion("1.29.0", "", "2026-01-01T00:00:00Z"),
				deprecatedAPIVersion("1.29.0", "", "2027-01-01T00:00:00Z"),
			},
			wantErrs: []string{"spec.kubernetes.versions[1] (1.29.0).version: Duplicate value"},
		},
		{
			name: "every problem of every override is reported, not only the first",
			parent: withNewest(plainVersion("1.29.0"),
				staged("1.28.0", stage(supported, ""), stage(deprecated, "2025-01-01T00:00:00Z"))),
			overrides: []v1alpha1.ExpirableVersion{
				deprecatedAPIVersion("1.27.0", "", "2026-01-01T00:00:00Z"),
				deprecatedAPIVersion("1.29.0", deprecated, ""),
				staged("1.28.0", stage(preview, "2024-01-01T00:00:00Z"), stage(deprecated, "")),
			},
			wantErrs: []string{
				"spec.kubernetes.versions[0] (1.27.0).version: Not found",
				"spec.kubernetes.versions[1] (1.29.0).classification: Forbidden",
				"spec.kubernetes.versions[2] (1.28.0).lifecycle[0].classification: Not found",
				"spec.kubernetes.versions[2] (1.28.0).lifecycle[1].startTime: Required value",
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			parent := profile()
			parent.Kubernetes.Versions = tt.parent
			ncp := namespaced()
			ncp.Kubernetes = &v1alpha1.KubernetesSettings{Versions: tt.overrides}

			merged, errs := Namespaced(parent, ncp)

			g.Expect(errorFields(errs)).To(Equal(tt.wantErrs))
			if tt.wantErrs != nil {
				g.Expect(merged).To(BeNil(), "a failed merge returns no spec, so callers keep the previous one")
				return
			}
			g.Expect(merged.Kubernetes.Versions).To(Equal(tt.want))
		})
	}
}

// TestMergeNamespacedGEP32Compatibility checks the example of GEP-32
// "Compatibility with Namespaced Cloud Profiles" against the result the GEP
// writes down.
func TestMergeNamespacedGEP32Compatibility(t *testing.T) {
	g := NewWithT(t)
	parent := profile()
	parent.Kubernetes.Versions = []v1alpha1.ExpirableVersion{
		plainVersion("1.27.0"),
		staged("1.28.0", stage(preview, ""), stage(supported, "2024-12-01T00:00:00Z")),
		staged("1.18.0", stage(supported, ""), stage(deprecated, "2022-01-01T00:00:00Z"), stage(expired, "2022-06-01T00:00:00Z")),
		staged("2.0.0", stage(preview, "2036-02-07T06:28:16Z")),
	}
	ncp := namespaced()
	ncp.Kubernetes = &v1alpha1.KubernetesSettings{Versions: []v1alpha1.ExpirableVersion{
		staged("1.28.0", stage(supported, "2025-12-01T00:00:00Z")),
		staged("1.18.0", stage(supported, "2022-01-01T00:00:00Z"), stage(deprecated, "2024-06-01T00:00:00Z")),
	}}

	merged, errs := Namespaced(parent, ncp)

	g.Expect(errs).To(BeEmpty())
	g.Expect(merged.Kubernetes.Versions).To(Equal([]v1alpha1.ExpirableVersion{
		plainVersion("1.27.0"),
		staged("1.28.0", stage(preview, ""), stage(supported, "2025-12-01T00:00:00Z")),
		staged("1.18.0", stage(supported, "2022-01-01T00:00:00Z"), stage(deprecated, "2024-06-01T00:00:00Z"), stage(expired, "2024-06-01T00:00:00Z")),
		staged("2.0.0", stage(preview, "2036-02-07T06:28:16Z")),
	}))
}

// TestMoveStage covers the neighbour rule on lifecycles a valid parent
// cannot have but the merge must still order: a higher stage without a start.
func TestMoveStage(t *testing.T) {
	tests := []struct {
		name  string
		in    []v1alpha1.LifecycleStage
		moved v1alpha1.VersionClassification
		start string
		want  []v1alpha1.LifecycleStage
	}{
		{
			name:  "a higher stage without a start moves forward to the new start",
			in:    []v1alpha1.LifecycleStage{stage(supported, ""), stage(deprecated, "")},
			moved: supported, start: "2025-01-01T00:00:00Z",
			want: []v1alpha1.LifecycleStage{stage(supported, "2025-01-01T00:00:00Z"), stage(deprecated, "2025-01-01T00:00:00Z")},
		},
		{
			name:  "a lower stage without a start stays, as it has always been in effect",
			in:    []v1alpha1.LifecycleStage{stage(preview, ""), stage(supported, "2030-01-01T00:00:00Z")},
			moved: supported, start: "2025-01-01T00:00:00Z",
			want: []v1alpha1.LifecycleStage{stage(preview, ""), stage(supported, "2025-01-01T00:00:00Z")},
		},
		{
			name:  "a missing stage is inserted at its rank, not at the end",
			in:    []v1alpha1.LifecycleStage{stage(preview, ""), stage(expired, "2030-01-01T00:00:00Z")},
			moved: supported, start: "2025-01-01T00:00:00Z",
			want: []v1alpha1.LifecycleStage{stage(preview, ""), stage(supported, "2025-01-01T00:00:00Z"), stage(expired, "2030-01-01T00:00:00Z")},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			g.Expect(moveStage(tt.in, tt.moved, *date(tt.start))).To(Equal(tt.want))
		})
	}
}
