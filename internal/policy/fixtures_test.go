package policy

import (
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1alpha1 "github.com/profilesync/profilesync/api/v1alpha1"
)

const (
	preview    = v1alpha1.ClassificationPreview
	supported  = v1alpha1.ClassificationSupported
	deprecated = v1alpha1.ClassificationDeprecated
	expired    = v1alpha1.ClassificationExpired
)

// at parses an RFC 3339 time; tests only use literal, valid times.
func at(s string) time.Time {
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		panic(err)
	}
	return t
}

// stage is a lifecycle stage; an empty start means no startTime.
func stage(c v1alpha1.VersionClassification, start string) v1alpha1.LifecycleStage {
	s := v1alpha1.LifecycleStage{Classification: c}
	if start != "" {
		s.StartTime = &metav1.Time{Time: at(start)}
	}
	return s
}

func lc(version string, stages ...v1alpha1.LifecycleStage) v1alpha1.ExpirableVersion {
	return v1alpha1.ExpirableVersion{Version: version, Lifecycle: stages}
}

// old is a version in the deprecated API; empty arguments leave fields unset.
func old(version string, c v1alpha1.VersionClassification, expiration string) v1alpha1.ExpirableVersion {
	v := v1alpha1.ExpirableVersion{Version: version}
	if c != "" {
		v.Classification = &c
	}
	if expiration != "" {
		v.ExpirationDate = &metav1.Time{Time: at(expiration)}
	}
	return v
}

func plain(version string) v1alpha1.ExpirableVersion {
	return v1alpha1.ExpirableVersion{Version: version}
}

// supportedUntil is supported since always, deprecated at deprecation and
// expired at expiry (each skipped when empty).
func supportedUntil(version, deprecation, expiry string) v1alpha1.ExpirableVersion {
	stages := []v1alpha1.LifecycleStage{stage(supported, "")}
	if deprecation != "" {
		stages = append(stages, stage(deprecated, deprecation))
	}
	if expiry != "" {
		stages = append(stages, stage(expired, expiry))
	}
	return lc(version, stages...)
}

func kubernetes(versions ...v1alpha1.ExpirableVersion) *v1alpha1.CloudProfileSpec {
	return &v1alpha1.CloudProfileSpec{Type: "aws", Kubernetes: v1alpha1.KubernetesSettings{Versions: versions}}
}

// withImage adds a machine image "os" with the given update strategy.
func withImage(spec *v1alpha1.CloudProfileSpec, strategy v1alpha1.MachineImageUpdateStrategy, versions ...v1alpha1.ExpirableVersion) *v1alpha1.CloudProfileSpec {
	image := v1alpha1.MachineImage{Name: "os", UpdateStrategy: &strategy}
	for _, v := range versions {
		image.Versions = append(image.Versions, v1alpha1.MachineImageVersion{ExpirableVersion: v})
	}
	spec.MachineImages = append(spec.MachineImages, image)
	return spec
}

func intPtr(n int) *int { return &n }

// lines formats findings as "severity field: message" for comparison.
func lines(findings []finding) []string {
	out := make([]string, 0, len(findings))
	for _, f := range findings {
		out = append(out, string(f.severity)+" "+f.field.String()+": "+f.message)
	}
	return out
}
