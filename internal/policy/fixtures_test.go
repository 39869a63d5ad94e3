package policy

import (
	v1alpha1 "github.com/profilesync/profilesync/api/v1alpha1"
	"github.com/profilesync/profilesync/test/builders"
)

const (
	preview    = v1alpha1.ClassificationPreview
	supported  = v1alpha1.ClassificationSupported
	deprecated = v1alpha1.ClassificationDeprecated
	expired    = v1alpha1.ClassificationExpired
)

// The shared builders of times, versions and lifecycles, by the names this
// package's tests use.
var (
	at    = builders.Time
	stage = builders.Stage
	lc    = builders.Staged
	// old is a version in the deprecated API.
	old   = builders.DeprecatedAPIVersion
	plain = builders.PlainVersion
)

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
	spec.MachineImages = append(spec.MachineImages, v1alpha1.MachineImage{
		Name: "os", UpdateStrategy: &strategy, Versions: builders.ImageVersions(versions...),
	})
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
