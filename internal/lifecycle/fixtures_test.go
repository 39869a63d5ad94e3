package lifecycle

import (
	v1alpha1 "github.com/profilesync/profilesync/api/v1alpha1"
	"github.com/profilesync/profilesync/test/builders"
)

// Short names for the classifications keep the tables readable.
const (
	unavailable = v1alpha1.ClassificationUnavailable
	preview     = v1alpha1.ClassificationPreview
	supported   = v1alpha1.ClassificationSupported
	deprecated  = v1alpha1.ClassificationDeprecated
	expired     = v1alpha1.ClassificationExpired
)

// The shared builders of times, versions and lifecycles, by the names this
// package's tests use.
var (
	at                = builders.Time
	metaAt            = builders.Date
	stage             = builders.Stage
	withLifecycle     = builders.Staged
	withDeprecatedAPI = builders.DeprecatedAPIVersion
	plain             = builders.PlainVersion
	imageVersions     = builders.ImageVersions
	strategy          = builders.Strategy
)

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
