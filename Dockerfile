# The controller image: a static binary on a distroless, non-root base.
#
#   docker build -t stevedore:dev --build-arg VERSION=v0.1.0 .
#
# This file is not built by the project's CI (its machines have no container
# engine); the binary it packages is the one `make build` builds and tests.

FROM golang:1.26 AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
ARG VERSION=devel
RUN CGO_ENABLED=0 go build -trimpath \
    -ldflags "-s -w -X github.com/stevedore-autoscaler/stevedore/internal/version.Version=${VERSION}" \
    -o /out/stevedore ./cmd/stevedore

FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/stevedore /stevedore
USER 65532:65532
ENTRYPOINT ["/stevedore", "controller"]
