# payments-outbox — `make help` lists the targets.
GO       ?= go
PKGS     ?= ./...

.DEFAULT_GOAL := help

.PHONY: help
help: ## list the targets
	@awk 'BEGIN {FS = ":.*## "} /^[a-zA-Z_-]+:.*## / {printf "  %-14s %s\n", $$1, $$2}' $(MAKEFILE_LIST)

.PHONY: test
test: ## the whole test suite (integration tests use DATABASE_URL / AWS_ENDPOINT_URL, else testcontainers)
	$(GO) vet $(PKGS)
	$(GO) test -count=1 -timeout 20m $(PKGS)

.PHONY: test-short
test-short: ## unit tests only (no database, no broker)
	$(GO) test -short -count=1 $(PKGS)

.PHONY: fmt
fmt: ## gofmt every Go file
	gofmt -w $$(git ls-files '*.go')

.PHONY: lint
lint: ## gofmt check and go vet
	@test -z "$$(gofmt -l $$(git ls-files '*.go'))" || { gofmt -l $$(git ls-files '*.go'); echo 'gofmt needed'; exit 1; }
	$(GO) vet $(PKGS)

BENCH_ARGS ?= -runs 3
.PHONY: bench
bench: ## whole-path benchmark, one table: cmd/loadgen (DATABASE_URL; AWS_ENDPOINT_URL adds end to end; BENCH_ARGS='-report docs/BENCHMARKS.md' records it)
	$(GO) run ./cmd/loadgen $(BENCH_ARGS)
