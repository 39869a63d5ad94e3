# The profilesync manager as a static binary on a distroless, non-root base.
# Build with `make docker-build IMG=REGISTRY/IMAGE:TAG`.

FROM golang:1.26 AS builder
ARG TARGETOS
ARG TARGETARCH
# What `profilesync version` reports (make docker-build passes both; there is
# no .git/ here for Go to read the commit from).
ARG VERSION=unknown
ARG COMMIT=
WORKDIR /workspace
# Dependencies first, so a source change reuses the module download layer.
COPY go.mod go.sum ./
RUN go mod download
COPY *.go ./
COPY api/ api/
COPY controllers/ controllers/
COPY internal/ internal/
COPY webhooks/ webhooks/
# The CRDs are compiled in: the build refuses what their schemas refuse.
COPY config/crd/ config/crd/
RUN CGO_ENABLED=0 GOOS=${TARGETOS:-linux} GOARCH=${TARGETARCH} \
    go build -trimpath -ldflags "-s -w -X github.com/profilesync/profilesync/internal/cli.version=${VERSION} -X github.com/profilesync/profilesync/internal/cli.commit=${COMMIT}" -o /out/profilesync .

FROM gcr.io/distroless/static:nonroot
COPY --from=builder /out/profilesync /profilesync
# The distroless "nonroot" user; config/manager runs the pod as the same ids.
USER 65532:65532
ENTRYPOINT ["/profilesync"]
