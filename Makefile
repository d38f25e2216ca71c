# meshbench Makefile. Area-specific targets (local cluster, Istio, benches) live in hack/mk/*.mk so they can evolve
# independently; everything here works without a cluster.
SHELL := /bin/bash
GO ?= go
PKG := github.com/meshbench/meshbench
VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
COMMIT ?= $(shell git rev-parse --short HEAD 2>/dev/null || echo unknown)
BUILD_DATE ?= $(shell date -u +%Y-%m-%dT%H:%M:%SZ)
LDFLAGS := -X $(PKG)/internal/version.Version=$(VERSION) -X $(PKG)/internal/version.Commit=$(COMMIT) -X $(PKG)/internal/version.BuildDate=$(BUILD_DATE)
BIN := bin
STATICCHECK_VERSION ?= v0.8.2
ERRORLINT_VERSION ?= v1.8.0
FUZZTIME ?= 60s

.PHONY: build test lint fuzz bench clean help deps ci demo

help: ## list targets
	@grep -hE '^[a-zA-Z0-9_.-]+:.*## ' $(MAKEFILE_LIST) | sort | awk -F':.*## ' '{printf "  %-22s %s\n", $$1, $$2}'

build: ## build meshbench and meshbench-agent into bin/
	$(GO) build -ldflags "$(LDFLAGS)" -o $(BIN)/meshbench ./cmd/meshbench
	CGO_ENABLED=0 $(GO) build -ldflags "$(LDFLAGS)" -o $(BIN)/meshbench-agent ./cmd/meshbench-agent

test: ## unit + integration tests that need no cluster (real Prometheus, iperf3 and fortio where installed)
	# -parallel 4: collectors/prom's live-scrape tests against real Prometheus servers mostly wait for scrapes (about
	# 85 s each); two at a time (GOMAXPROCS) made that package the suite's long pole at 210 s.
	$(GO) test -count=1 -parallel 4 ./...

lint: ## gofmt check, go vet, staticcheck, errorlint
	@out=$$(gofmt -l $$(git ls-files -co --exclude-standard '*.go' | grep -v '^hack/.*/k8s/' | while read -r f; do [ -f "$$f" ] && echo "$$f"; done)); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...
	$(GO) vet -tags e2e,faults ./test/...
	$(GO) run honnef.co/go/tools/cmd/staticcheck@$(STATICCHECK_VERSION) ./...
	$(GO) run github.com/polyfloyd/go-errorlint@$(ERRORLINT_VERSION) ./...

fuzz: ## run every fuzz target for FUZZTIME each
	@set -e; for p in $$($(GO) list ./...); do \
	  for f in $$($(GO) test -list '^Fuzz' $$p 2>/dev/null | grep '^Fuzz' || true); do \
	    echo "== $$p $$f"; $(GO) test -run '^$$' -fuzz "^$$f$$" -fuzztime $(FUZZTIME) $$p; done; done

bench: ## go benchmarks (medians via -count); area benches add to bench-extra
	$(GO) test -run '^$$' -bench . -benchmem -count 5 ./...

deps: ## install the Debian packages tests and the local cluster need (root, Debian 12)
	hack/install-deps.sh

ci: ## fresh machine -> everything: deps, lint, unit + integration tests, local cluster + e2e (always torn down)
	hack/install-deps.sh
	$(MAKE) lint
	$(MAKE) test
	hack/ci-e2e.sh

DEMO_SCENARIO ?= examples/demo.yaml

# demo builds bin/meshbench itself (not as a prerequisite): a cold build takes minutes, and demo.sh prints a progress
# line every minute while it runs.
demo: ## the main job: local cluster + local Istio, a small app through none/sidecar/ambient/waypoint, the comparison and report.html
	DEMO_SCENARIO=$(DEMO_SCENARIO) MESHBENCH_BIN=$(CURDIR)/$(BIN) bash hack/localcluster/demo.sh

clean: ## remove build output
	rm -rf $(BIN)

-include hack/mk/*.mk
