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

// gep32Now and gep32KubernetesVersions are the example of GEP-32.
var (
	gep32Now                = at(builders.GEP32Now)
	gep32KubernetesVersions = builders.GEP32KubernetesVersions
)
