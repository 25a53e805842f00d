# stevedore's single entry point. Every target works on a fresh Debian machine
# with Go: tools are pinned in go.mod (controller-gen) or built from source by the
# hack/ scripts (the Kubernetes control plane, cached outside the work tree).

GO ?= go
# Real-API-server tests start etcd and kube-apiserver per package; two at a time
# is what a two-core machine runs comfortably.
TEST_FLAGS ?= -p 2 -timeout 20m
# The end-to-end tests to run (a go test -run pattern): all of them unless
# named, for example make e2e E2E_RUN=TestScaleOut.
E2E_RUN ?= .

.PHONY: all build test unit e2e bench generate lint kube-binaries clean browser

all: build

build:
	$(GO) build -o bin/stevedore ./cmd/stevedore

kube-binaries:
	hack/kube-binaries.sh >/dev/null

## test: unit tests, the tests against the real kube-apiserver, then the
## end-to-end suite on a local cluster (see e2e).
test: unit e2e

## unit: unit tests plus the tests against the real kube-apiserver, and a
## short fuzzing run of the manifest decoder and validator (FuzzValidate; its
## seeds also run as a unit test) and of the scenario loader (FuzzLoad). The
## fuzzing runs are bounded by a count of inputs, not by time: Go 1.26's fuzz
## coordinator can report "context deadline exceeded" as a failure when a
## time budget ends while a worker is busy, which a loaded machine makes likely.
## Minimizing each input that finds new coverage is bounded by a count too
## (by default it may take a minute per input, which on a loaded machine
## stretched one run to twelve minutes). Loading a scenario runs the whole
## manifest validation, so FuzzLoad gets fewer inputs.
unit: kube-binaries
	$(GO) vet ./...
	$(GO) test $(TEST_FLAGS) ./...
	$(GO) test -run '^$$' -fuzz '^FuzzLoad$$' -fuzztime 10000x -fuzzminimizetime 200x ./sim/scenario
	cd hack/schedulerdiff && $(GO) vet ./...
	cd hack/schedulerdiff && $(GO) test ./...
	cd hack/charttest && $(GO) test ./...
	$(GO) test -run '^$$' -fuzz '^FuzzValidate$$' -fuzztime 30000x -fuzzminimizetime 200x ./api/validation

## e2e: the end-to-end suite on a local cluster (test/e2e, build tag e2e): etcd,
## kube-apiserver, kube-scheduler, kube-controller-manager and kwok on loopback,
## as hack/local-cluster.sh runs them. Never cached; E2E_FLAGS=-v shows progress.
e2e: kube-binaries
	$(GO) vet -tags e2e ./test/e2e/...
	$(GO) test -tags e2e -count=1 -timeout 30m -run '$(E2E_RUN)' $(E2E_FLAGS) ./test/e2e/...

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

clean:
	rm -rf bin/stevedore
