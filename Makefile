# LCM build and test entry points. The README's two commands are
# `make run` (all-in-one) and `make test` (the whole suite).

SHELL := bash
GO ?= go
VERSION := $(shell cat VERSION)
BUILD_NUMBER ?= $(shell git rev-list --count HEAD 2>/dev/null || echo 0)
COMMIT := $(shell git rev-parse --short=7 HEAD 2>/dev/null || echo unknown)$(shell test -n "$$(git status --porcelain 2>/dev/null)" && echo -dirty)
BUILD_TIME := $(shell date -u +%Y-%m-%dT%H:%M:%SZ)
PKG := github.com/lcmproject/lcm/internal/version
LDFLAGS := -s -w -X $(PKG).semver=$(VERSION) -X $(PKG).build=$(BUILD_NUMBER) -X $(PKG).commit=$(COMMIT) -X $(PKG).buildTime=$(BUILD_TIME)
BINARIES := api worker scanner agentgw agent fleetsim helper
AGENT_ARCHES := amd64 arm64
RUN_ARGS ?=

.PHONY: all build web packages run test test-go test-web bench bench-agents fuzz faults testhosts-up testhosts-down lint clean images print-ldflags compose-test

all: build

web/node_modules: web/package.json web/package-lock.json
	cd web && npm ci --no-audit --no-fund
	touch web/node_modules

web: web/node_modules
	cd web && npm run build

build: $(if $(wildcard web/package.json),web)
	@mkdir -p bin
	for b in $(BINARIES); do \
	  if [ -d cmd/$$b ]; then CGO_ENABLED=0 $(GO) build -trimpath -ldflags '$(LDFLAGS)' -o bin/lcm-$$b ./cmd/$$b || exit 1; fi; \
	done
	# The agent binaries lcm-api serves at /api/v1/agent/download/{arch},
	# and the helper a worker installs on servers of either architecture.
	for arch in $(AGENT_ARCHES); do \
	  CGO_ENABLED=0 GOOS=linux GOARCH=$$arch $(GO) build -trimpath -ldflags '$(LDFLAGS)' -o bin/lcm-agent-linux-$$arch ./cmd/agent || exit 1; \
	  CGO_ENABLED=0 GOOS=linux GOARCH=$$arch $(GO) build -trimpath -ldflags '$(LDFLAGS)' -o bin/lcm-helper-linux-$$arch ./cmd/helper || exit 1; \
	done

# Debian packages lcm, lcm-worker, lcm-agent of VERSION into dist/
# (docs/packages-deb.md), for the architecture the binaries were built for.
packages: build
	$(GO) run ./cmd/release packages -version $(VERSION) -arch $$($(GO) env GOARCH) -out dist

# Container images lcm-api, lcm-worker, lcm-scanner, lcm-agentgw, lcm-nats
# and the compose stack's lcm-postgres and lcm-proxy (Containerfile,
# deploy/compose/images; docs/install.md "Scale out").
images: web
	bash scripts/images.sh

# The release metadata the images are linked with (scripts/images.sh).
print-ldflags:
	@echo '$(LDFLAGS)'

# deploy/compose brought up with podman-compose: a sign-in through the
# proxy, a server joined (test host 19), jobs in both segments, a NATS node
# stopped, an API replica restarted (docs/testing.md). Builds the images.
compose-test:
	bash scripts/compose-test.sh

# All-in-one: embedded NATS, embedded SQLite, config.json and data/ in bin/.
run: build
	./bin/lcm-api $(RUN_ARGS)

# The whole suite: Go tests (SQLite and PostgreSQL, real NATS, real test
# hosts) and the browser tests. scripts/test.sh prepares what they need.
test:
	bash scripts/test.sh

# Every fuzz target for FUZZTIME each (the suite runs 3000 executions of each).
fuzz:
	bash scripts/fuzz.sh $(or $(FUZZTIME),1m)

bench:
	$(GO) test -run '^$$' -bench . -benchtime 3x ./...

# The fault suite at full size (internal/faults): the scaled topology as
# plain processes broken on purpose, and the reliability budgets
# (docs/benchmarks.md "Reliability"). CI runs the short version.
faults: build
	bash scripts/faults.sh full

# The agent gateway budgets: 10,000 simulated agents on one lcm-agentgw
# (RSS, round trip) and upgrade-security on 1,000 agents (docs/benchmarks.md).
bench-agents:
	bash scripts/bench-agents.sh $(or $(AGENTS),10000)

testhosts-up:
	bash deploy/testhosts/testhosts.sh up 3

testhosts-down:
	bash deploy/testhosts/testhosts.sh down

lint:
	test -z "$$(gofmt -l $$(git ls-files '*.go'))"
	$(GO) vet ./...

clean:
	rm -rf bin dist web/dist/assets web/dist/index.html
