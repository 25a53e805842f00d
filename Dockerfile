# The controller image: the static stevedore binary on an empty (scratch)
# base, for linux/amd64 and linux/arm64.
#
#   make image                 # docker buildx (or podman): both platforms
#   make image-oci             # the same image without a container engine
#
# hack/image builds the same image without an engine; its tests check that
# this file and that builder agree (binary path, user, entrypoint, go build
# flags) and that every base below is pinned by digest.
#
# The build stage runs on the build machine's own platform and cross-compiles
# for the target: with cgo off Go needs no emulation of another architecture.
#
# golang:1.26.8 is pinned by the digest of its multi-arch index. To move to a
# newer Go, look up the tag's digest (`crane digest golang:1.26.N` or `docker
# buildx imagetools inspect golang:1.26.N`) and replace tag and digest
# together; the minor release must stay go.mod's (a test checks it).
FROM --platform=$BUILDPLATFORM golang:1.26.8@sha256:3c3e25a4da13fd0478eed2df1eb35a0e667094a7124d3993a6a1d30f71c17e79 AS build
ARG TARGETOS
ARG TARGETARCH
ARG VERSION=devel
ARG COMMIT=""
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
# The baseline instruction sets (GOAMD64=v1, GOARM64=v8.0) run on every EC2
# instance type of the two architectures.
RUN CGO_ENABLED=0 GOOS=$TARGETOS GOARCH=$TARGETARCH GOAMD64=v1 GOARM64=v8.0 \
    go build -trimpath -buildvcs=false \
    -ldflags "-s -w -X github.com/stevedore-autoscaler/stevedore/internal/version.Version=${VERSION} -X github.com/stevedore-autoscaler/stevedore/internal/version.Commit=${COMMIT}" \
    -o /out/stevedore ./cmd/stevedore

# No base image: nothing to pull, patch or scan besides the binary. It needs
# no libc (cgo is off) and carries its own CA roots
# (golang.org/x/crypto/x509roots/fallback), since scratch has no
# /etc/ssl/certs. The numeric non-root user lets Kubernetes verify
# runAsNonRoot without an /etc/passwd.
FROM scratch
COPY --from=build /out/stevedore /stevedore
USER 65532:65532
ENTRYPOINT ["/stevedore", "controller"]
