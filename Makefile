# rlctl: make help lists the targets.
SHELL := /usr/bin/env bash
.SHELLFLAGS := -euo pipefail -c
.DEFAULT_GOAL := help

GO          ?= go
BIN         := bin
DEVDB       := scripts/devdb.sh
REDISDEV    := scripts/redisdev.sh
VERSION     ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
LDFLAGS     := -s -w -X github.com/rlctl/rlctl/internal/version.Version=$(VERSION)
# Pinned linter, installed through the Go module proxy into bin/.
STATICCHECK_VERSION := v0.8.2
STATICCHECK := $(BIN)/staticcheck-$(STATICCHECK_VERSION)
# Benchmarks: override to narrow, e.g. make bench BENCH=PutDefinition
BENCH       ?= .
BENCHTIME   ?= 1s

.PHONY: help
help: ## list the targets
	@awk 'BEGIN {FS = ":.*## "} /^[a-zA-Z_-]+:.*## / {printf "  %-12s %s\n", $$1, $$2}' $(MAKEFILE_LIST)

.PHONY: build
build: ## build rlapi and rlctl into bin/
	@mkdir -p $(BIN)
	$(GO) build -trimpath -ldflags '$(LDFLAGS)' -o $(BIN)/ ./cmd/...

.PHONY: run
run: build ## start PostgreSQL (or use DATABASE_URL), migrate, and serve rlapi on 127.0.0.1:8080
	@scripts/run.sh

.PHONY: test
test: ## run every test with the race detector against private PostgreSQL and Redis servers (or DATABASE_URL, REDIS_URL, REDIS_CLUSTER_URL) and nginx; none may skip for a missing server
	@GO='$(GO)' scripts/test.sh

.PHONY: bench
bench: ## run the Go benchmarks against the private PostgreSQL (or DATABASE_URL) and, when redis-server exists, the private Redis servers
	@url=$$($(DEVDB) url); \
	if [ -n "$${REDIS_URL:-}$${REDIS_CLUSTER_URL:-}" ] || command -v redis-server >/dev/null 2>&1; then \
		export REDIS_URL=$$($(REDISDEV) url) REDIS_CLUSTER_URL=$$($(REDISDEV) cluster-url); fi; \
	DATABASE_URL="$$url" $(GO) test -run '^$$' -bench '$(BENCH)' -benchtime $(BENCHTIME) -benchmem ./...

.PHONY: lint
lint: $(STATICCHECK) ## gofmt, go vet and staticcheck
	@out=$$(gofmt -l $$(git ls-files '*.go') $$(git ls-files --others --exclude-standard '*.go')); \
	if [ -n "$$out" ]; then echo "gofmt needed on:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...
	$(STATICCHECK) ./...

$(STATICCHECK):
	@mkdir -p $(BIN)
	GOBIN=$(CURDIR)/$(BIN)/.staticcheck $(GO) install honnef.co/go/tools/cmd/staticcheck@$(STATICCHECK_VERSION)
	mv $(BIN)/.staticcheck/staticcheck $@ && rmdir $(BIN)/.staticcheck

.PHONY: db-start
db-start: ## start (or reuse) the private PostgreSQL and print its URL
	@$(DEVDB) start

.PHONY: db-stop
db-stop: ## stop the private PostgreSQL (never one this project did not create)
	@$(DEVDB) stop

.PHONY: db-status
db-status: ## say whether the private PostgreSQL runs
	@$(DEVDB) status || [ $$? = 3 ]

.PHONY: redis-start
redis-start: ## start (or reuse) the private Redis standalone and cluster and print their URLs
	@$(REDISDEV) url && $(REDISDEV) cluster-url

.PHONY: redis-stop
redis-stop: ## stop the private Redis servers (never one this project did not start)
	@$(REDISDEV) stop

.PHONY: clean
clean: ## stop the private PostgreSQL and Redis servers, delete the rlctl context make run wrote, remove bin/ and .rl/ (their data too)
	-@GO='$(GO)' scripts/run.sh forget-context
	-@$(DEVDB) stop
	-@$(REDISDEV) stop
	@if [ -f .rl/pgdata ] && [ "$$(cat .rl/pgdata)" != "$(CURDIR)/.rl/pg" ]; then \
		d=$$(cat .rl/pgdata); [ -f "$$d/rlctl-devdb" ] && rm -rf "$$(dirname "$$d")"; fi
	rm -rf $(BIN) .rl

.PHONY: image
image: ## build rlapi's container image with buildah, podman or docker (scripts/image.sh; docs/deploy.md)
	VERSION=$(VERSION) scripts/image.sh

.PHONY: completions
completions: ## regenerate the shell completion scripts in completions/
	$(GO) run ./cmd/rlctl-gen -completions completions

.PHONY: docs
docs: ## regenerate the CLI reference in docs/cli/ from the command tree
	$(GO) run ./cmd/rlctl-gen -docs docs/cli

# The chart of docs/algorithms.md, made by rlctl simulate itself (a test
# in internal/cli/simulate fails when the committed SVG is stale).
SIMULATE_DOCS := simulate -f docs/algorithms/limits.yaml --algorithms all --bucket 1s --svg docs/algorithms/admitted.svg docs/algorithms/bursty.csv

.PHONY: docs-algorithms
docs-algorithms: ## regenerate docs/algorithms/admitted.svg with rlctl simulate
	$(GO) run ./cmd/rlctl $(SIMULATE_DOCS) >/dev/null
