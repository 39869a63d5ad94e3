# ProfileSync. Every tool a target needs is built from the Go module proxy into
# ./bin on first use and reused afterwards; nothing else is downloaded.

SHELL := /usr/bin/env bash -o pipefail
.SHELLFLAGS := -ec

LOCALBIN ?= $(CURDIR)/bin

# The manager's container image: what docker-build builds, docker-push pushes
# and deploy runs. No public image is published: build and push your own,
# `make docker-build docker-push deploy IMG=<registry>/profilesync:<tag>`.
IMG ?= profilesync:dev

# The release `profilesync version` reports: the Git tag, else the commit
# (with -dirty for uncommitted changes). The commit itself comes from Go's
# VCS stamp in `make build`; the image, built without .git/, gets it as an
# argument.
VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo unknown)
COMMIT ?= $(shell git rev-parse HEAD 2>/dev/null)
VERSION_LDFLAGS := -X github.com/profilesync/profilesync/internal/cli.version=$(VERSION)

## Tool versions.
CONTROLLER_TOOLS_VERSION ?= v0.23.0
CONTROLLER_GEN ?= $(LOCALBIN)/controller-gen-$(CONTROLLER_TOOLS_VERSION)
GOLANGCI_LINT_VERSION ?= v2.15.0
GOLANGCI_LINT ?= $(LOCALBIN)/golangci-lint-$(GOLANGCI_LINT_VERSION)
KO_VERSION ?= v0.19.1
KO ?= $(LOCALBIN)/ko-$(KO_VERSION)

# The envtest control plane (kube-apiserver and etcd) is built from the module
# in hack/envtest, whose go.mod pins both versions; the binaries are cached in a
# directory named after those versions, so a version bump builds anew.
ENVTEST_MODULE := hack/envtest
KUBERNETES_VERSION := $(shell awk '$$1 == "k8s.io/kubernetes" && $$2 ~ /^v/ {print $$2; exit}' $(ENVTEST_MODULE)/go.mod)
ETCD_VERSION := $(shell awk '$$1 == "go.etcd.io/etcd/server/v3" && $$2 ~ /^v/ {print $$2; exit}' $(ENVTEST_MODULE)/go.mod)
ENVTEST_ASSETS ?= $(LOCALBIN)/envtest/k8s-$(KUBERNETES_VERSION)-etcd-$(ETCD_VERSION)
KUBE_VERSION_LDFLAGS := -X k8s.io/component-base/version.gitVersion=$(KUBERNETES_VERSION) \
	-X k8s.io/component-base/version.gitMajor=$(word 1,$(subst ., ,$(KUBERNETES_VERSION:v%=%))) \
	-X k8s.io/component-base/version.gitMinor=$(word 2,$(subst ., ,$(KUBERNETES_VERSION:v%=%))) \
	-X k8s.io/client-go/pkg/version.gitVersion=$(KUBERNETES_VERSION)

# Flux's source-controller and kustomize-controller, for bench-flux, are built
# from the wrapper modules in hack/flux (one per controller, whose go.mod pins
# the version) into a directory named after the version, with their CRDs.
FLUX_MODULES := hack/flux
FLUX_VERSION := $(shell awk '$$1 == "require" && $$2 == "github.com/fluxcd/kustomize-controller" {print $$3}' $(FLUX_MODULES)/kustomize-controller/go.mod)
FLUX_DIR ?= $(LOCALBIN)/flux-$(FLUX_VERSION)

# Tests never read the developer's git configuration.
TEST_ENV := KUBEBUILDER_ASSETS=$(ENVTEST_ASSETS) GIT_CONFIG_GLOBAL=/dev/null GIT_CONFIG_NOSYSTEM=true
# How long each fuzz target runs in `make test`; `make fuzz FUZZTIME=5m` for longer.
FUZZTIME ?= 5s
# How long the fuzzer minimizes each new input. Its default (60s) outlasts a
# short run, which then fails with "context deadline exceeded"; a short run
# does not minimize (a failing input is saved as it is). For long runs:
# make fuzz FUZZTIME=10m FUZZMINIMIZETIME=60s.
FUZZMINIMIZETIME ?= 0
# A timed run that Go's coordinator ends with "context deadline exceeded"
# and no failing input written is that race, not a finding
# (golang/go#75804, fixed in Go 1.27): the target runs once more, and a
# second such end fails.
# A build fuzz iteration runs kustomize (about 10 ms, far more on a loaded
# machine), and when a timed run ends with iterations in flight, Go's fuzz
# coordinator can fail it with "context deadline exceeded" (seen here under
# load). A count of iterations ends without a deadline.
FUZZBUILDTIME ?= 300x

.PHONY: all
all: build

##@ General

.PHONY: help
help: ## Show this help.
	@awk 'BEGIN {FS = ":.*##"; printf "Usage: make \033[36m<target>\033[0m\n"} /^[a-zA-Z_0-9-]+:.*?##/ { printf "  \033[36m%-16s\033[0m %s\n", $$1, $$2 } /^##@/ { printf "\n\033[1m%s\033[0m\n", substr($$0, 5) } ' $(MAKEFILE_LIST)

##@ Development

# The Helm chart reads the generated CRDs, the operator's ClusterRole rules,
# the webhooks, the sample roles for people and the sample alerts from copies in its
# files/generated/ (Helm reads no file outside the chart); test/deploy's
# TestChartRendersWhatConfigDefaultBuilds fails when they differ from config/.
CHART_GENERATED := charts/profilesync/files/generated

.PHONY: manifests
manifests: $(CONTROLLER_GEN) ## Generate CRDs, RBAC roles and the webhook configuration into config/ and the Helm chart.
	$(CONTROLLER_GEN) rbac:roleName=manager-role crd webhook paths="./api/...;./controllers/...;./internal/receiver/...;./internal/servingcert/...;./webhooks/..." output:crd:artifacts:config=config/crd/bases output:webhook:artifacts:config=config/webhook
	rm -rf $(CHART_GENERATED) && mkdir -p $(CHART_GENERATED)/crds
	cp config/crd/bases/*.yaml $(CHART_GENERATED)/crds/
	cp config/rbac/role.yaml $(CHART_GENERATED)/role.yaml
	cp config/webhook/manifests.yaml $(CHART_GENERATED)/webhooks.yaml
	mkdir -p $(CHART_GENERATED)/user-roles
	cp config/rbac/role_project_admin.yaml config/rbac/role_landscape_operator.yaml config/rbac/role_on_call.yaml $(CHART_GENERATED)/user-roles/
	cp config/prometheus/prometheusrule.yaml $(CHART_GENERATED)/prometheusrule.yaml
	cp config/prometheus/grafana-dashboard.json $(CHART_GENERATED)/grafana-dashboard.json

.PHONY: generate
generate: $(CONTROLLER_GEN) ## Generate deepcopy methods of the API types.
	$(CONTROLLER_GEN) object paths="./api/..."

.PHONY: fmt
fmt: ## Run go fmt.
	go fmt ./...

.PHONY: vet
vet: ## Run go vet.
	go vet ./...

.PHONY: lint
lint: $(GOLANGCI_LINT) ## Run golangci-lint (.golangci.yml): kubebuilder's linters and the package boundaries of DEVELOPMENT.md.
	$(GOLANGCI_LINT) run ./...

.PHONY: test
test: manifests generate fmt vet envtest ## Run every test: unit, envtest and a short run of each fuzz target.
	$(TEST_ENV) go test ./... -timeout 20m -coverprofile cover.out
	$(MAKE) fuzz

.PHONY: fuzz
fuzz: ## Run each fuzz target for FUZZTIME (default 5s); the kustomize build's for FUZZBUILDTIME.
	@for pkg in $$(go list ./...); do \
		listed=$$(go test -list '^Fuzz' $$pkg) || { echo "$$listed"; echo "fuzz: listing the fuzz targets of $$pkg failed"; exit 1; }; \
		for target in $$(echo "$$listed" | grep '^Fuzz'); do \
			fuzztime=$(FUZZTIME); \
			case $$target in FuzzBuild*) fuzztime=$(FUZZBUILDTIME);; esac; \
			echo "fuzz $$pkg $$target ($$fuzztime)"; \
			for attempt in 1 2; do \
				out=$$($(TEST_ENV) go test $$pkg -run '^$$' -fuzz "^$$target$$" -fuzztime $$fuzztime -fuzzminimizetime $(FUZZMINIMIZETIME) 2>&1); status=$$?; \
				printf '%s\n' "$$out"; \
				[ $$status -eq 0 ] && break; \
				if [ $$attempt -eq 1 ] && echo "$$out" | grep -q 'context deadline exceeded' && ! echo "$$out" | grep -q 'Failing input written'; then \
					echo "fuzz: $$target stopped at its deadline without a failing input (golang/go#75804, fixed in Go 1.27): once more"; \
					continue; \
				fi; \
				exit $$status; \
			done; \
		done; \
	done

.PHONY: bench
bench: envtest ## Run the benchmarks and print their figures (the side-by-side with Flux runs under bench-flux).
	$(TEST_ENV) go test ./... -run '^$$' -bench . -benchmem -timeout 60m

.PHONY: bench-flux
bench-flux: envtest flux ## Run the floor, Flux and ProfileSync side by side on one landscape (docs/performance.md; about 25 minutes).
	$(TEST_ENV) PROFILESYNC_FLUX=$(FLUX_DIR) go test ./test/bench/ -run '^$$' -bench '^BenchmarkSideBySide$$' -timeout 180m

.PHONY: verify
verify: manifests generate fmt vet lint ## Regenerate everything, vet and lint, and fail if the tree changed.
	go mod tidy
	@if [ -n "$$(git status --porcelain)" ]; then \
		echo "generated files are out of date; run 'make manifests generate fmt' and commit:"; \
		git status --porcelain; git --no-pager diff; exit 1; \
	fi

##@ Build

.PHONY: build
build: manifests generate fmt vet ## Build the profilesync binary into bin/.
	go build -ldflags "$(VERSION_LDFLAGS)" -o $(LOCALBIN)/profilesync .

.PHONY: docker-build
docker-build: ## Build the manager's container image $(IMG) (needs a Docker engine).
	docker build --build-arg VERSION=$(VERSION) --build-arg COMMIT=$(COMMIT) -t $(IMG) .

.PHONY: docker-push
docker-push: ## Push the manager's container image $(IMG) (needs a Docker engine).
	docker push $(IMG)

# make ko-build: the same image as docker-build, built by ko (.ko.yaml) without
# a Docker engine, into a tarball (KO_TARBALL=FILE, for `docker load`,
# `podman load` or `crane push`) or pushed to a registry
# (KO_DOCKER_REPO=REGISTRY/NAME, your registry credentials as docker login
# writes them), tagged KO_TAGS.
KO_TAGS ?= $(VERSION)
# One platform for a tarball; several, comma-separated, when pushing
# (linux/amd64,linux/arm64 makes a multi-platform index).
KO_PLATFORMS ?= linux/amd64

.PHONY: ko-build
ko-build: $(KO) ## Build the manager's image without a Docker engine: KO_TARBALL=FILE writes a tarball, KO_DOCKER_REPO=REGISTRY/NAME pushes it.
	@if [ -z "$(KO_TARBALL)" ] && [ -z "$(KO_DOCKER_REPO)" ]; then \
		echo "ko-build: name where the image goes: KO_TARBALL=FILE (a tarball) or KO_DOCKER_REPO=REGISTRY/NAME (pushed)"; exit 1; \
	fi
	VERSION=$(VERSION) COMMIT=$(COMMIT) KO_DOCKER_REPO=$(or $(KO_DOCKER_REPO),profilesync) \
		$(KO) build --bare --tags=$(KO_TAGS) --platform=$(KO_PLATFORMS) --image-user=65532:65532 \
		$(if $(KO_TARBALL),--push=false --tarball=$(KO_TARBALL)) .

##@ Deployment

# deploy and undeploy render config/default with the image set to $(IMG) by
# hack/deploy (kustomize's krusty in-process: no kustomize binary, the
# checkout is not edited) and hand it to the user's kubectl.
.PHONY: deploy
deploy: ## Install the CRDs and the operator running image $(IMG) into the cluster of the current kubeconfig (kubectl; no cert-manager needed: the operator makes the webhook's certificate).
	go run ./hack/deploy --image $(IMG) | kubectl apply --server-side -f -

.PHONY: undeploy
undeploy: ## Remove what deploy installed, CRDs and so every profile included, from the cluster of the current kubeconfig.
	go run ./hack/deploy --image $(IMG) | kubectl delete --ignore-not-found -f -

##@ Local

.PHONY: run-local
run-local: envtest ## Run ProfileSync on local control planes with the example repository (Ctrl-C stops it).
	$(TEST_ENV) go run ./test/runlocal $(ARGS)

.PHONY: run
run: manifests generate fmt vet ## Run the manager against the cluster of the current kubeconfig.
	go run . $(ARGS)

##@ Tools

$(LOCALBIN):
	mkdir -p $(LOCALBIN)

$(GOLANGCI_LINT): | $(LOCALBIN)
	GOBIN=$(LOCALBIN) go install github.com/golangci/golangci-lint/v2/cmd/golangci-lint@$(GOLANGCI_LINT_VERSION)
	mv $(LOCALBIN)/golangci-lint $@

$(KO): | $(LOCALBIN)
	GOBIN=$(LOCALBIN) go install github.com/google/ko@$(KO_VERSION)
	mv $(LOCALBIN)/ko $@

$(CONTROLLER_GEN): | $(LOCALBIN)
	GOBIN=$(LOCALBIN) go install sigs.k8s.io/controller-tools/cmd/controller-gen@$(CONTROLLER_TOOLS_VERSION)
	mv $(LOCALBIN)/controller-gen $@

.PHONY: envtest
envtest: $(ENVTEST_ASSETS)/kube-apiserver $(ENVTEST_ASSETS)/etcd ## Build kube-apiserver and etcd for envtest (about 10 minutes the first time).

.PHONY: flux
flux: $(FLUX_DIR)/source-controller $(FLUX_DIR)/kustomize-controller ## Build Flux's controllers and copy their CRDs into bin/ for bench-flux (a few minutes each the first time).

# -mod=mod: go mod tidy and the default -mod=readonly trip over test-only
# dependencies of Flux that the module proxy withholds; the main packages
# need none of them.
$(FLUX_DIR)/%-controller:
	mkdir -p $(FLUX_DIR)/crds
	cd $(FLUX_MODULES)/$*-controller && go build -mod=mod -o $@.tmp github.com/fluxcd/$*-controller
	cp "$$(cd $(FLUX_MODULES)/$*-controller && go list -mod=mod -m -f '{{.Dir}}' github.com/fluxcd/$*-controller)"/config/crd/bases/*.yaml $(FLUX_DIR)/crds/
	chmod u+w $(FLUX_DIR)/crds/*.yaml
	mv $@.tmp $@

# Each binary is built to a temporary name and moved into place, so an
# interrupted build never leaves a broken binary that looks cached.
$(ENVTEST_ASSETS)/kube-apiserver:
	mkdir -p $(ENVTEST_ASSETS)
	cd $(ENVTEST_MODULE) && go build -trimpath -ldflags "-s -w $(KUBE_VERSION_LDFLAGS)" -o $@.tmp k8s.io/kubernetes/cmd/kube-apiserver
	mv $@.tmp $@

$(ENVTEST_ASSETS)/etcd:
	mkdir -p $(ENVTEST_ASSETS)
	cd $(ENVTEST_MODULE) && go build -trimpath -ldflags "-s -w" -o $@.tmp go.etcd.io/etcd/server/v3
	mv $@.tmp $@
