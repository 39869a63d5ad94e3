package lifecycle

import (
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1alpha1 "github.com/profilesync/profilesync/api/v1alpha1"
)

// Short names for the classifications keep the tables readable.
const (
	unavailable = v1alpha1.ClassificationUnavailable
	preview     = v1alpha1.ClassificationPreview
	supported   = v1alpha1.ClassificationSupported
	deprecated  = v1alpha1.ClassificationDeprecated
	expired     = v1alpha1.ClassificationExpired
)

// at parses an RFC 3339 time; tests only use literal, valid times.
func at(s string) time.Time {
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		panic(err)
	}
	return t
}

func metaAt(s string) *metav1.Time { return &metav1.Time{Time: at(s)} }

// stage is a lifecycle stage; an empty start means no startTime.
func stage(c v1alpha1.VersionClassification, start string) v1alpha1.LifecycleStage {
	s := v1alpha1.LifecycleStage{Classification: c}
	if start != "" {
		s.StartTime = metaAt(start)
	}
	return s
}

func withLifecycle(version string, stages ...v1alpha1.LifecycleStage) v1alpha1.ExpirableVersion {
	return v1alpha1.ExpirableVersion{Version: version, Lifecycle: stages}
}

// withDeprecatedAPI is a version using classification and expirationDate; an
// empty classification or expiration leaves the field unset.
func withDeprecatedAPI(version string, c v1alpha1.VersionClassification, expiration string) v1alpha1.ExpirableVersion {
	v := v1alpha1.ExpirableVersion{Version: version}
	if c != "" {
		v.Classification = &c
	}
	if expiration != "" {
		v.ExpirationDate = metaAt(expiration)
	}
	return v
}

func plain(version string) v1alpha1.ExpirableVersion {
	return v1alpha1.ExpirableVersion{Version: version}
}

func imageVersions(versions ...v1alpha1.ExpirableVersion) []v1alpha1.MachineImageVersion {
	out := make([]v1alpha1.MachineImageVersion, len(versions))
	for i, v := range versions {
		out[i] = v1alpha1.MachineImageVersion{ExpirableVersion: v}
	}
	return out
}

func strategy(s v1alpha1.MachineImageUpdateStrategy) *v1alpha1.MachineImageUpdateStrategy { return &s }

// gep32Now and gep32Profile are the example of GEP-32 ("assume that the
// current date is 2024-12-03").
var gep32Now = at("2024-12-03T00:00:00Z")

func gep32KubernetesVersions() []v1alpha1.ExpirableVersion {
	return []v1alpha1.ExpirableVersion{
		withLifecycle("1.30.6",
			stage(preview, ""),
			stage(supported, "2024-12-01T00:00:00Z"),
			stage(deprecated, "2025-03-01T00:00:00Z"),
			stage(expired, "2025-04-01T00:00:00Z")),
		plain("1.27.0"),
		withLifecycle("1.28.0",
			stage(preview, ""),
			stage(supported, "2024-12-01T00:00:00Z")),
		withLifecycle("1.18.0",
			stage(supported, ""),
			stage(deprecated, "2022-01-01T00:00:00Z"),
			stage(expired, "2022-06-01T00:00:00Z")),
		withLifecycle("2.0.0",
			stage(preview, "2036-02-07T06:28:16Z")),
	}
}
