# stevedore's single entry point. Every target works on a fresh Debian machine
# with Go: tools are pinned in go.mod (controller-gen) or built from source by the
# hack/ scripts (the Kubernetes control plane, cached outside the work tree).

GO ?= go
# Every build here, the tests' included, is made as the control plane
# (hack/kube-binaries.sh) and the image's amd64 binary are: without cgo and
# with -trimpath. The three then share the compiled Kubernetes libraries in
# the build cache instead of each compiling them, which matters most on a
# new machine. Tests do not depend on either.
export CGO_ENABLED ?= 0
export GOFLAGS := $(strip $(GOFLAGS) -trimpath)
# Real-API-server tests start etcd and kube-apiserver per package; two at a time
# is what a two-core machine runs comfortably.
TEST_FLAGS ?= -p 2 -timeout 20m
# The end-to-end tests to run (a go test -run pattern): all of them unless
# named, for example make e2e E2E_RUN=TestScaleOut.
E2E_RUN ?= .

.PHONY: all build test unit unit-tests moto fuzz-and-image e2e bench generate lint kube-binaries clean browser image image-oci karpenter-suite karpenter-suite-ci

# The container image (make image, make image-oci): IMAGE is the repository,
# TAG the tag, VERSION what `stevedore version` prints, PLATFORMS the
# architectures. SOURCE_DATE_EPOCH (the last commit's time) is the time
# written into the image, so a rebuild of a commit gives the same image.
IMAGE ?= ghcr.io/stevedore-autoscaler/stevedore
VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo devel)
TAG ?= $(VERSION)
COMMIT ?= $(shell git rev-parse HEAD 2>/dev/null)
PLATFORMS ?= linux/amd64,linux/arm64
SOURCE_DATE_EPOCH ?= $(shell git log -1 --format=%ct 2>/dev/null || echo 0)
# docker when its buildx plugin is installed (a docker client alone cannot
# build for two platforms), else podman; empty when neither is.
CONTAINER_ENGINE ?= $(shell docker buildx version >/dev/null 2>&1 && echo docker || { command -v podman >/dev/null 2>&1 && echo podman; })
# Extra flags for the engine's build, for example IMAGE_FLAGS=--push.
IMAGE_FLAGS ?=

all: build

build:
	$(GO) build -o bin/stevedore ./cmd/stevedore

kube-binaries:
	hack/kube-binaries.sh >/dev/null

## moto: checks that python3 can import the AWS emulator moto, which the
## tests of test/moto, cloud/aws/fake and cloud/aws run; installs it with
## pip when it is missing, and fails naming it when that is not possible.
moto:
	hack/moto.sh >/dev/null

## test: unit tests and the tests against the real kube-apiserver; then,
## side by side, the end-to-end suite on a local cluster (see e2e), a part
## of Karpenter's own regression suite against stevedore (see
## karpenter-suite-ci), and the fuzzing runs and the image's tests (see
## unit). The first two spend their time waiting for their clusters, the
## last computing, so together they take little longer than the longest of
## them. Each one's output is printed whole when it ends.
test:
	$(MAKE) --no-print-directory unit-tests
	$(MAKE) --no-print-directory --output-sync=target -j3 e2e karpenter-suite-ci fuzz-and-image

## unit: unit tests plus the tests against the real kube-apiserver
## (unit-tests), then fuzz-and-image.
unit: unit-tests fuzz-and-image

unit-tests: kube-binaries moto
	$(GO) vet ./...
	$(GO) test $(TEST_FLAGS) ./...
	cd hack/schedulerdiff && $(GO) vet ./...
	cd hack/schedulerdiff && $(GO) test ./...
	$(GO) mod download github.com/aws/karpenter-provider-aws@v1.14.1
	cd hack/charttest && $(GO) test ./...

## fuzz-and-image: a short fuzzing run of the manifest decoder and
## validator (FuzzValidate; its seeds also run as a unit test) and of the
## scenario loader (FuzzLoad), and hack/image's tests, which build the
## container image without an engine (two cross-compiles of the binary)
## and run the binary from it. The fuzzing runs are bounded by a count of
## inputs, not by time: Go 1.26's fuzz coordinator can report "context
## deadline exceeded" as a failure when a time budget ends while a worker
## is busy, which a loaded machine makes likely. Minimizing each input that
## finds new coverage is bounded by a count too (by default it may take a
## minute per input, which on a loaded machine stretched one run to twelve
## minutes). Loading a scenario runs the whole manifest validation, so
## FuzzLoad gets fewer inputs.
fuzz-and-image:
	cd hack/image && $(GO) vet ./...
	cd hack/image && $(GO) test -timeout 30m ./...
	$(GO) test -run '^$$' -fuzz '^FuzzLoad$$' -fuzztime 10000x -fuzzminimizetime 200x ./sim/scenario
	$(GO) test -run '^$$' -fuzz '^FuzzValidate$$' -fuzztime 30000x -fuzzminimizetime 200x ./api/validation

## e2e: the end-to-end suite on a local cluster (test/e2e, build tag e2e): etcd,
## kube-apiserver, kube-scheduler, kube-controller-manager and kwok on loopback,
## as hack/local-cluster.sh runs them. Never cached. hack/e2e.sh runs the
## tests in four processes at once, each with a cluster of its own (one
## process when E2E_RUN names tests); E2E_FLAGS=-v shows each test's log.
e2e: kube-binaries
	GO=$(GO) E2E_RUN='$(E2E_RUN)' E2E_FLAGS='$(E2E_FLAGS)' hack/e2e.sh

## karpenter-suite: Karpenter's own regression suite (sigs.k8s.io/karpenter
## v1.14.1, built unchanged in test/karpenter-suite) against stevedore on the
## local cluster, one spec per process; writes docs/compatibility.md. Every
## spec unless KSUITE_FOCUS (a regular expression over the spec's text) says;
## KSUITE_PARALLEL specs at once, each with a local cluster of its own.
KSUITE_FOCUS ?=
KSUITE_PARALLEL ?= 3
karpenter-suite: kube-binaries
	GO=$(GO) hack/karpenter-suite.sh -parallel $(KSUITE_PARALLEL) $(if $(KSUITE_FOCUS),-focus '$(KSUITE_FOCUS)')

## karpenter-suite-ci: the part of Karpenter's regression suite that fits in
## make test: every NodePool validation spec, the DaemonSet and CRD hash specs,
## and one spec each of NodeClaim, termination, drift and expiration. Fails
## when one fails; leaves docs/compatibility.md and the results alone. Two
## specs at once, each with a local cluster of its own.
KSUITE_CI_FOCUS = ^Integration (Validation NodePool|DaemonSet|CRD Hash)|^NodeClaim StandaloneNodeClaim should create a standard NodeClaim$$|^Termination should terminate the node and the instance on deletion$$|^Drift NodePool Drift Labels$$|^Expiration should expire the node after the expiration is reached$$
karpenter-suite-ci: kube-binaries
	GO=$(GO) KSUITE_OUT=$${KSUITE_OUT:-$$(mktemp -d)} hack/karpenter-suite.sh -record=false -fail -parallel 2 -spec-timeout 8m -focus '$(KSUITE_CI_FOCUS)'

## browser: the HTML report (simulate --report) in headless Chromium:
## sim/report's tests with build tag browser. Installs Debian's chromium
## with apt-get when no Chromium is on PATH. Not part of test.
browser:
	hack/report-screenshot.sh --install-chromium
	$(GO) test -tags browser -count=1 -run Browser ./sim/report

## bench: the benchmarks, with allocation figures.
bench:
	$(GO) test -run '^$$' -bench . -benchmem ./...

## generate: deep-copy functions and CRDs from the API types.
generate:
	hack/generate.sh

## lint: formatting and vet.
lint:
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...

## image: the multi-arch image (PLATFORMS) from the Dockerfile with docker
## buildx or podman, tagged $(IMAGE):$(TAG). A multi-platform docker build
## needs a builder that can hold it: pass IMAGE_FLAGS=--push, or use Docker's
## containerd image store. podman builds a manifest list; push it with
## podman manifest push --all $(IMAGE):$(TAG).
image:
	@case "$(CONTAINER_ENGINE)" in \
	docker) set -x; docker buildx build --platform $(PLATFORMS) --build-arg VERSION=$(VERSION) --build-arg COMMIT=$(COMMIT) \
		--build-arg SOURCE_DATE_EPOCH=$(SOURCE_DATE_EPOCH) -t $(IMAGE):$(TAG) $(IMAGE_FLAGS) . ;; \
	podman) set -x; podman build --platform $(PLATFORMS) --build-arg VERSION=$(VERSION) --build-arg COMMIT=$(COMMIT) \
		--build-arg SOURCE_DATE_EPOCH=$(SOURCE_DATE_EPOCH) --manifest $(IMAGE):$(TAG) $(IMAGE_FLAGS) . ;; \
	*) echo "make image: no container engine: neither docker with the buildx plugin nor podman is installed;" \
		"make image-oci builds the same image without one, as an OCI archive in bin/image/" >&2; exit 1 ;; \
	esac

## image-oci: the same image without a container engine (hack/image): the
## OCI layout bin/image/oci and its tar bin/image/stevedore-oci.tar, for
## crane push or skopeo copy. Reproducible: same commit, same digest.
image-oci:
	cd hack/image && SOURCE_DATE_EPOCH=$(SOURCE_DATE_EPOCH) $(GO) run . -root ../.. \
		-version $(VERSION) -commit $(COMMIT) -image $(IMAGE) -tag $(TAG) -out ../../bin/image

clean:
	rm -rf bin/stevedore bin/image
