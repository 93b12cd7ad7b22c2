# throttled: `make run` starts a server on 127.0.0.1:6379, `make test` runs every test.
GO       ?= go
BIN      := bin/throttled
FUZZTIME ?= 30s
# VERSION is stamped into the binary (--version, INFO server, /metrics, the first log line):
# the tag, the commits since it and whether the tree was dirty; the commit alone before the
# first tag.
VERSION  ?= $(shell git describe --tags --always --dirty 2>/dev/null)
LDFLAGS  := -X github.com/throttledhq/throttled/internal/version.stamped=$(VERSION)
# Every build is -trimpath and without cgo, as the release's are (GoReleaser, make image): the
# binary is static and names no directory of this machine, and vet, the tests, the binaries
# tests build and the image share one compile of each package (both are part of a compile's
# cache key, CGO_ENABLED through net and all that imports it: a fresh machine compiled
# everything twice). -race needs cgo: the race pass and its build set CGO_ENABLED=1.
export GOFLAGS := $(strip $(filter-out -trimpath,$(GOFLAGS)) -trimpath)
export CGO_ENABLED := 0

.PHONY: build run test deps vet bench fuzz clean dist

build:
	$(GO) build -ldflags "$(LDFLAGS)" -o $(BIN) ./cmd/throttled

run: build
	./$(BIN) --port 6379

# deps installs what the tests drive: redis-cli and redis-benchmark (redis-tools), redis-server,
# prometheus (the scrape test), prometheus-redis-exporter (it must scrape throttled as it scrapes
# redis-server), chromium (the status page, headless), python3-redis (redis-py
# reads INFO latencystats), nginx and caddy (the proxies of examples/ in front of http-port),
# Node.js and npm; then the
# rate limiters compat/ runs against throttled: the npm packages pinned in
# compat/node/package-lock.json (npm ci, again whenever the lock file changes) and
# go-redis/redis_rate v10.0.1 with what its tests import (compat/redisrate/go.sum). redis-server
# also puts Debian's stock /etc/redis/redis.conf in place, which cmd/throttled's tests load;
# dpkg-deb and systemd-analyze (dpkg, systemd) check the .deb that packaging/'s test builds with
# nfpm, which is built here once from the module proxy (NFPM: the nfpm of GoReleaser v2.15.0).
NFPM ?= github.com/goreleaser/nfpm/v2/cmd/nfpm@v2.45.2

deps: os-deps go-deps
os-deps: apt-deps compat/node/node_modules/.package-lock.json
go-deps: deploy-deps
	$(GO) mod download
	cd compat/redisrate && $(GO) mod download
	$(GO) run $(NFPM) --version >/dev/null

compat/node/node_modules/.package-lock.json: compat/node/package-lock.json | apt-deps
	cd compat/node && npm ci --no-audit --no-fund --loglevel=error

.PHONY: apt-deps
apt-deps:
	@if ! command -v redis-cli >/dev/null || ! command -v redis-server >/dev/null || \
		! command -v prometheus >/dev/null || ! command -v chromium >/dev/null || \
		! command -v nginx >/dev/null || ! command -v caddy >/dev/null || \
		! command -v node >/dev/null || ! command -v npm >/dev/null || \
		! command -v prometheus-redis-exporter >/dev/null || \
		! command -v systemd-analyze >/dev/null || ! command -v dpkg-deb >/dev/null || \
		! /usr/bin/python3 -c 'import redis' 2>/dev/null; then \
		SUDO=$$( [ "$$(id -u)" = 0 ] || echo sudo ); \
		$$SUDO apt-get update -qq && \
		DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq redis-server redis-tools systemd dpkg prometheus prometheus-redis-exporter chromium python3-redis nginx caddy \
			$$(command -v node >/dev/null || echo nodejs) $$(command -v npm >/dev/null || echo npm) >/dev/null; \
	fi

vet:
	@test -z "$$(gofmt -l .)" || (echo "gofmt would change:"; gofmt -l .; exit 1)
	$(GO) vet ./...

# cross-build compiles for the other 64-bit architecture of the release (arm64 on amd64, amd64
# on arm64) the packages whose files differ between the two (a _arm64.s, a build constraint):
# keyspace's prefetch in assembly. make test builds the image for this machine's platform
# only, and nothing else compiles that code: 28 s of CPU cold, where the whole server for arm64
# took 251 s (vetting it too, 56 s more, compiled testify's net/http for arm64).
OTHER_ARCH = $(if $(filter arm64,$(shell $(GO) env GOARCH)),amd64,arm64)
ARCH_LIST  = -f '{{.ImportPath}} {{.GoFiles}} {{.SFiles}} {{.TestGoFiles}} {{.XTestGoFiles}}' ./...
.PHONY: cross-build
cross-build:
	@amd64=$$(GOARCH=amd64 $(GO) list $(ARCH_LIST)) && arm64=$$(GOARCH=arm64 $(GO) list $(ARCH_LIST)) && \
	pkgs=$$(printf '%s\n%s\n' "$$amd64" "$$arm64" | sort | uniq -u | cut -d' ' -f1 | sort -u | sed 's|^$(MODULE)|.|') && \
	if [ -n "$$pkgs" ]; then \
		echo "GOARCH=$(OTHER_ARCH) $(GO) build" $$pkgs; \
		GOARCH=$(OTHER_ARCH) $(GO) build $$pkgs; \
	fi

# The differential tests (the same random commands to throttled and to redis-server, thousands
# of Lua scripts among them) run without -race, which takes them a third of the CPU: they test
# what the server answers, and the race detector has every other test of the same paths.
# So do the floods, hundreds of thousands of commands from one goroutine: TestMaxMemoryFlood*
# and compat's TestFloodUnderMaxMemory overflow maxmemory to see what is evicted and what is
# kept (with -race server's three took 840 s of the race pass on a loaded machine, without it
# 73 s), keyspace's TestEvictionFlood* the same on the keyspace alone (76 s and 12 s, 14 s
# without), and TestScriptTokenBucketFlood churns 100,000 keys through a Lua limiter (281 s,
# 16 s without). Eviction racing with commands stays in the race pass with
# TestNativeScriptsUnderMaxMemory.
NORACE      = Differential|Flood
NORACE_PKGS = $(shell git grep -lE '^func Test[A-Za-z]*($(NORACE))' -- '*_test.go' | xargs -n1 dirname | sort -u | sed 's|^|./|')

# SLOW_FIRST are the packages whose tests take longest, named first: go test builds and runs
# the packages in the order they are named, -p (GOMAXPROCS) at a time, and server's, the
# longest, started 30th of 40 in ./...'s order, to run on at the end of the pass while the
# others were done.
SLOW_FIRST = ./server ./compat ./cmd/throttled

# RACE_FREE are packages that start no goroutine, take no lock and touch no unsafe memory:
# -race has nothing to find in them, nor its checkptr to check, and their tests run without
# it. collection's model tests (the big encodings against a plain model, hundreds of
# thousands of operations, on one goroutine) took 6.8 times the CPU with -race: 813 s of a
# loaded race pass. make test fails when one of them imports sync, sync/atomic or unsafe or
# has a go statement, which would put it back under -race.
MODULE    = github.com/throttledhq/throttled
RACE_FREE = collection

# test runs every test. A fresh machine first spends minutes installing packages (apt-get,
# npm: the network and the disk) and as long compiling (vet, the image of this platform,
# nfpm, deploy/'s tests, the race build: the CPUs): test-setup does both at once, each in order.
test: test-setup
	@! $(GO) list -f '{{join .Imports "\n"}}' $(RACE_FREE:%=./%) | grep -xE 'sync|sync/atomic|unsafe' && \
		! git grep -nE '^\s*go ' -- $(RACE_FREE:%='%/*.go') ':!*_test.go' || \
		(echo "a RACE_FREE package has concurrency or unsafe memory: take it out of RACE_FREE"; exit 1)
	CGO_ENABLED=1 $(GO) test -race -count=1 -timeout 20m -skip '$(NORACE)' $(SLOW_FIRST) \
		$(filter-out $(RACE_FREE:%=./%),$(shell $(GO) list ./... | sed 's|^$(MODULE)|.|'))
	@$(MAKE) --no-print-directory -j2 test-norace fuzz FUZZTIME=$(FUZZTIME_SHORT)

# test-norace runs what make test runs without -race (NORACE's tests, the RACE_FREE packages),
# beside the fuzz step, which runs each target for a time, not for a number of inputs: one
# after the other, the CPUs stood 30% idle through the first (its tests wait on redis-server)
# and 15% through the fuzz step (linking, starting and stopping each target's workers).
.PHONY: test-norace
test-norace:
	$(GO) test -count=1 -timeout 20m -run '$(NORACE)' $(NORACE_PKGS)
	$(GO) test -count=1 -timeout 20m $(RACE_FREE:%=./%)

test-setup:
	@$(MAKE) --no-print-directory -j2 os-deps test-setup-go

test-setup-go:
	@$(MAKE) --no-print-directory go-deps
	@$(MAKE) --no-print-directory vet
	@$(MAKE) --no-print-directory cross-build
	@$(MAKE) --no-print-directory test-deploy
	CGO_ENABLED=1 $(GO) build -race ./...

.PHONY: test-setup test-setup-go os-deps go-deps

# FUZZTIME_SHORT is how long `make test` runs each fuzz target: with 43 targets, each taking
# about a second more than FUZZTIME to stop its workers, three minutes in all. An input that fails is kept in the package's testdata/fuzz and
# runs in every `go test` after: commit it with the fix, as a regression test.
FUZZTIME_SHORT ?= 3s

# image writes dist/throttled-image.tar, an OCI image archive (an index for linux/amd64 and
# linux/arm64) built without a container daemon by deploy/image (go-containerregistry): the
# static binary of each platform, CA certificates, a non-root user and the configuration
# deploy/image/throttled.conf on an empty base. `docker load`, `podman load` or
# `skopeo copy oci-archive:dist/throttled-image.tar docker://...` take it from there.
IMAGE_PLATFORMS ?= linux/amd64 linux/arm64
# make test builds the image of this machine's platform only, which deploy/'s tests open and
# start: the other's binary was a second compile of the server and all it imports, 118 s of
# a cold make test on two cores (251 s of CPU), to be copied into the archive unrun.
# deploy/image's TestImageIndexPlatforms builds a linux/amd64 and linux/arm64 index from
# stand-in binaries, and cross-build compiles for the other architecture what differs between
# the two (keyspace's prefetch in assembly).
test-deploy: IMAGE_PLATFORMS = linux/$(shell $(GO) env GOARCH)
IMAGE_REF       ?= ghcr.io/throttledhq/throttled:dev
IMAGE_VERSION   ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
IMAGE_REVISION  ?= $(shell git rev-parse HEAD 2>/dev/null)

.PHONY: image manifests test-deploy deploy-deps

image:
	@for p in $(IMAGE_PLATFORMS); do \
		echo "== $$p"; \
		GOOS=$${p%/*} GOARCH=$${p#*/} $(GO) build -ldflags="-s -w $(LDFLAGS)" \
			-o bin/$${p%/*}-$${p#*/}/throttled ./cmd/throttled || exit 1; \
	done
	cd deploy && $(GO) run ./image -o ../dist/throttled-image.tar -ref $(IMAGE_REF) \
		-version $(IMAGE_VERSION) -revision '$(IMAGE_REVISION)' \
		$(foreach p,$(IMAGE_PLATFORMS),-binary $(p)=../bin/$(subst /,-,$(p))/throttled)

# manifests renders deploy/kubernetes/throttled.yaml from the Helm chart with the helm command
# (helm v3, pinned as a tool of deploy/go.mod, built from source on first use: minutes); make
# test fails while the two differ, rendering the chart with helm's packages of the same version.
HELM := cd deploy && $(GO) tool helm
manifests:
	$(HELM) template throttled helm/throttled --namespace throttled \
		--values kubernetes/values.yaml > kubernetes/throttled.yaml

# test-deploy runs the tests of deploy/, a module of its own (go-containerregistry, helm and
# the Kubernetes API types stay out of the server's go.mod): the image archive (started from
# its layers), the Dockerfile, the Helm chart (linted and rendered by helm's packages, as helm
# lint --strict and helm template do, every object decoded strictly into k8s.io/api), the
# plain manifests and the compose file. The tests ran the helm command, built from source
# first: 935 packages beyond the tests' 425, 197 s of a cold make test on two cores; helm's
# packages add 207 to the tests (a cold vet, helm and test compile of deploy/ took 633 s of
# CPU; the vet and test compile now 404 s).
test-deploy: image
	@cd deploy && test -z "$$(gofmt -l .)" || (echo "gofmt would change:"; gofmt -l .; exit 1)
	cd deploy && $(GO) vet ./...
	cd deploy && $(GO) test -count=1 -timeout 10m ./...

# go-deps also downloads deploy/'s modules (deploy/go.sum): go-containerregistry, helm, the
# Kubernetes API types, BuildKit's Dockerfile parser, compose-go.
deploy-deps:
	cd deploy && $(GO) mod download

# bench measures throttled beside redis-server (Lua scripts and INCR) in one run, with the Go
# benchmarks of each verb, and writes benchmarks/RESULTS.md (about 10 minutes); then the edge's
# doors (gRPC ShouldRateLimit, HTTP /v1/auth, RESP CHECK) in one run of their own, written to
# the section "At the edge" of the same file; then how the hottest verbs' Go benchmarks scale
# from -cpu 1 to -cpu 2 (benchmarks/cmd/scaling, a few minutes), to the section "Scaling with
# cores"; then GLOBAL limits against exact upstream mode, four instances on one redis-server
# (benchmarks/cmd/globalbench, a minute), to the section "Global limits".
bench: build deps
	$(GO) run ./benchmarks/cmd/loadgen
	$(GO) run ./benchmarks/cmd/edgeload -out benchmarks/RESULTS.md
	$(GO) run ./benchmarks/cmd/scaling -out benchmarks/RESULTS.md
	$(GO) run ./benchmarks/cmd/globalbench -out benchmarks/RESULTS.md

# bench-go runs every Go benchmark of every package.
.PHONY: bench-go
bench-go:
	$(GO) test -run '^$$' -bench . -benchmem ./...

# fuzz runs every fuzz target for FUZZTIME each. Go 1.26's fuzz coordinator can fail a target
# with a bare "context deadline exceeded" as FUZZTIME ends (golang/go#75804, fixed in Go 1.27):
# such a run, with no failing input written, is run again, up to three times in all.
# The targets are found in the sources (git grep), not with go test -list, which would build
# every package's tests once more for nothing but their names. Each package's test binary is
# built once, instrumented for fuzzing (FUZZ_GCFLAGS), into bin/fuzz/ (relinked only when
# out of date), and run for each of its targets from the package's directory, as go test
# -fuzz runs it: a failing input lands in the package's testdata/fuzz and the fuzz cache is
# go test's own. go test -fuzz for each target linked the package's tests again every time:
# for server's, 7 s of CPU, more than FUZZTIME_SHORT of fuzzing.
# FUZZ_GCFLAGS instruments this module's packages only (the coverage that guides the fuzzer
# is the compiler's -d=libfuzzer counters), where go test -c -fuzz instruments every package
# the tests import, the standard library's, gRPC's and Pebble's too: cold, the 16 binaries
# took 477 s of CPU to compile again what make test had already compiled without the
# counters, and server's fuzz binary ran 830 inputs a second against 7,000 with our counters
# alone. Platforms without the instrumentation fuzz unguided, as go test -fuzz does there.
FUZZ_GCFLAGS = $(if $(filter amd64 arm64,$(shell $(GO) env GOARCH)),-gcflags='$(MODULE)/...=-d=libfuzzer')
fuzz:
	@mkdir -p bin/fuzz && module=$$($(GO) list -m) && gocache=$$($(GO) env GOCACHE) && \
	for pkg in $$(git grep -l '^func Fuzz' -- '*_test.go' ':!deploy' ':!compat/redisrate' | xargs -n1 dirname | sort -u); do \
		bin=$(CURDIR)/bin/fuzz/$$(echo $$pkg | tr / _).test; \
		echo "== ./$$pkg: go test -c $(FUZZ_GCFLAGS)"; \
		$(GO) test -c $(FUZZ_GCFLAGS) -o $$bin ./$$pkg || exit 1; \
		for f in $$(sed -n 's/^func \(Fuzz[A-Za-z0-9_]*\).*/\1/p' $$pkg/*_test.go); do \
			echo "== ./$$pkg $$f"; \
			for try in 1 2 3; do \
				out=$$(cd $$pkg && $$bin -test.paniconexit0 -test.run '^$$' -test.fuzz "^$$f$$" -test.fuzztime $(FUZZTIME) \
					-test.fuzzcachedir "$$gocache/fuzz/$$module/$$pkg" 2>&1); rc=$$?; \
				echo "$$out"; \
				[ $$rc = 0 ] && break; \
				if [ $$try = 3 ] || echo "$$out" | grep -q 'Failing input written' || \
					! echo "$$out" | grep -qx '    context deadline exceeded'; then exit 1; fi; \
				echo "== $$pkg $$f again: the coordinator's own deadline (golang/go#75804), no failing input"; \
			done; \
		done; \
	done

# dist builds what a release ships, into dist/, with GoReleaser (.goreleaser.yaml) as a
# snapshot that publishes nothing: tar.gz archives for linux/amd64, linux/arm64 and
# darwin/arm64, a .deb and an .rpm for each Linux architecture (the binary, the sample config
# as /etc/throttled/throttled.conf, the systemd unit of packaging/), and checksums.txt.
# GoReleaser is pinned and built from the module proxy on first use (a few minutes, then
# cached), outside the main module so that go.mod keeps none of its dependencies. v2.15.0 is
# the newest that Go 1.26 builds from the proxy: v2.18 needs Go 1.27, and v2.16 and v2.17 pull
# go.digitalxero.dev/go-msix, which the proxy refuses (403).
GORELEASER ?= $(GO) run github.com/goreleaser/goreleaser/v2@v2.15.0

dist:
	VERSION=$(VERSION) $(GORELEASER) release --snapshot --clean

clean:
	rm -rf bin dist
