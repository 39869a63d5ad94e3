// Module kustomize-controller builds Flux's kustomize-controller for the
// side-by-side benchmark (make bench-flux). Flux's go.mod carries replace
// directives, which go install refuses; this module requires the controller
// and copies its non-local replaces.
module github.com/profilesync/profilesync/hack/flux/kustomize-controller

go 1.26.0

require github.com/fluxcd/kustomize-controller v1.9.5

replace (
	github.com/opencontainers/go-digest => github.com/opencontainers/go-digest v1.0.1-0.20220411205349-bde1400a84be
	gopkg.in/yaml.v3 => gopkg.in/yaml.v3 v3.0.1
	sigs.k8s.io/kustomize/api => sigs.k8s.io/kustomize/api v0.21.1
	sigs.k8s.io/kustomize/kyaml => sigs.k8s.io/kustomize/kyaml v0.21.1
)
