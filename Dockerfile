# syntax=docker/dockerfile:1
#
# One image with all five oxypipe binaries in /usr/local/bin:
#   submitter, poller, writer, statusworker (the pipeline workers) and oxy (the CLI,
#   which also runs the WSA emulator: `oxy sandbox`).
# There is no ENTRYPOINT: each Deployment / compose service names its binary as its command.
#
#   docker build -t oxypipe:local .
#   docker run --rm oxypipe:local oxy --help
#
# Multi-platform: docker buildx build --platform linux/amd64,linux/arm64 -t REGISTRY/oxypipe:TAG --push .
# The build stage runs on the builder's own platform and cross-compiles (pure Go, CGO off), so no
# emulation is needed for the other architectures.

ARG GO_VERSION=1.26

FROM --platform=$BUILDPLATFORM golang:${GO_VERSION} AS build
WORKDIR /src
ARG TARGETOS
ARG TARGETARCH
# Static binaries: the final image has no libc.
ENV CGO_ENABLED=0
# The source is bind-mounted (nothing is copied into a layer); the module and build caches are
# cache mounts, so a rebuild after a code change recompiles only what changed and downloads nothing.
RUN --mount=type=bind,target=. \
    --mount=type=cache,target=/go/pkg/mod \
    --mount=type=cache,target=/root/.cache/go-build \
    GOOS=$TARGETOS GOARCH=$TARGETARCH \
    go build -trimpath -ldflags="-s -w" -o /out/ \
        ./cmd/submitter ./cmd/poller ./cmd/writer ./cmd/statusworker ./cmd/oxy

# distroless static: CA certificates and tzdata (HTTPS to the API and object stores), no shell,
# no package manager. The :nonroot tag runs as uid/gid 65532; it is repeated below as numbers so
# Kubernetes' runAsNonRoot can verify it without a runAsUser.
FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/ /usr/local/bin/
USER 65532:65532
# /live, /ready and /metrics of every worker (OXY_HTTP_ADDR, default :8080).
EXPOSE 8080
# A bare `docker run IMAGE` prints the CLI's usage; workers are always started with a command.
CMD ["oxy", "--help"]
