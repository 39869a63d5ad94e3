// Module source-controller builds Flux's source-controller for the
// side-by-side benchmark (make bench-flux). Flux's go.mod carries replace
// directives, which go install refuses; this module requires the controller
// and copies its non-local replaces. fluxcd/pkg/artifact v0.18.3, which
// v1.9.5 asks for, is withheld by the module proxy; v0.18.1 builds.
module github.com/profilesync/profilesync/hack/flux/source-controller

go 1.26.0

require github.com/fluxcd/source-controller v1.9.5

replace (
	github.com/fluxcd/pkg/artifact => github.com/fluxcd/pkg/artifact v0.18.1
	github.com/opencontainers/go-digest => github.com/opencontainers/go-digest v1.0.1-0.20220411205349-bde1400a84be
)
