# payments-outbox — `make help` lists the targets.
GO       ?= go
# Two Go modules: the services' (the root) and the tools' (tools/: the
# benchmark, the fault suite, the walkthrough, the compose and dashboard
# tests, the test runner), whose heavy dependencies stay out of the
# services' go.mod. Every target runs each against its own go.mod, as CI and
# the Dockerfile do, whatever go.work a developer keeps for an editor.
export GOWORK := off
TOOLS    := $(GO) -C tools
# make test's packages, named from the repository root (tools/testrun):
# ./adapters/sqs/..., ./tools/faultsuite; ./... is both modules whole.
PKGS     ?= ./...
# The host ports docker compose publishes (on 127.0.0.1); set them in the
# environment to move them, for compose and these targets alike.
POSTGRES_HOST_PORT   ?= 5432
LOCALSTACK_HOST_PORT ?= 4566
PAYMENTS_HOST_PORT   ?= 8080
LEDGER_HOST_PORT     ?= 8081
WEBHOOKS_HOST_PORT   ?= 8082
PAYMENTS_OPS_HOST_PORT ?= 9090
LEDGER_OPS_HOST_PORT ?= 9091
WEBHOOKS_OPS_HOST_PORT ?= 9092
RECEIVER_HOST_PORT   ?= 8083
GRAFANA_HOST_PORT    ?= 3000
# make demo's webhooks part: the demo receiver's URL as the webhooks service
# reaches it, and the command that prints the receiver's log; compose's by
# default. While `make dev` runs, it sets them (and the ports above) for
# make demo in $(DEV_DIR)/demo.mk.
DEMO_RECEIVER_URL  ?= http://webhook-receiver:8083/webhooks
DEMO_RECEIVER_LOGS ?= docker compose logs --no-log-prefix webhook-receiver
# make dev's directory: the binaries it builds, logs/ (every process's), and
# demo.mk while it runs. Its throw-away Postgres lives in a temporary
# directory it names and removes.
DEV_DIR ?= $(CURDIR)/.dev
-include $(DEV_DIR)/demo.mk
# Linters, pinned and built by go run: nothing to install, and they stay out
# of both go.mod files, whose module graphs they would otherwise join.
STATICCHECK ?= honnef.co/go/tools/cmd/staticcheck@v0.8.2
ACTIONLINT  ?= github.com/rhysd/actionlint/cmd/actionlint@v1.7.12

.DEFAULT_GOAL := help

.PHONY: help
help: ## list the targets
	@awk 'BEGIN {FS = ":.*## "} /^[a-zA-Z_-]+:.*## / {printf "  %-14s %s\n", $$1, $$2}' $(MAKEFILE_LIST)

.PHONY: up
up: ## docker compose up: Postgres, LocalStack, payments (:8080, ops :9090), ledger (:8081, ops :9091), webhooks (:8082, ops :9092), the demo webhook receiver (:8083), on 127.0.0.1
	docker compose up --build -d --wait

.PHONY: up-observability
up-observability: ## `make up` plus Prometheus (:9095), Grafana (:3000, the dashboard) and Jaeger (:16686), the services sending it their traces
	OTLP_ENDPOINT=http://jaeger:4318 docker compose --profile observability up --build -d --wait
	@echo "Grafana: http://localhost:$(GRAFANA_HOST_PORT)"

.PHONY: down
down: ## stop everything, the observability profile too, and remove its volumes
	docker compose --profile observability down -v

.PHONY: logs
logs: ## follow the services' logs
	docker compose logs -f payments ledger webhooks webhook-receiver

# The devstack binary runs as make's own child (no shell between them), so
# that Ctrl-C reaches it and make waits while it stops everything.
.PHONY: dev
dev: ## the stack without Docker, on 127.0.0.1 at compose's ports: a throw-away Postgres, moto (or AWS_ENDPOINT_URL), the three services, the demo receiver; logs in .dev/logs; Ctrl-C stops it all
	$(TOOLS) build -o $(DEV_DIR)/bin/devstack ./devstack
	$(DEV_DIR)/bin/devstack -repo $(CURDIR) -state $(DEV_DIR)

.PHONY: demo
demo: ## run the README walkthrough against the running services (docker compose up, or make dev)
	$(TOOLS) run ./walkthrough -payments http://localhost:$(PAYMENTS_HOST_PORT) -ledger http://localhost:$(LEDGER_HOST_PORT) -payments-ops http://localhost:$(PAYMENTS_OPS_HOST_PORT) \
		-webhooks http://localhost:$(WEBHOOKS_HOST_PORT) -webhooks-ops http://localhost:$(WEBHOOKS_OPS_HOST_PORT) -receiver-secret-file $(CURDIR)/.webhook-receiver/secret \
		-receiver-url '$(DEMO_RECEIVER_URL)' -receiver-logs '$(DEMO_RECEIVER_LOGS)'

.PHONY: run-payments
run-payments: ## run the payments service from source (needs DATABASE_URL, PAYMENTS_TOPIC_ARN)
	$(GO) run ./cmd/payments

.PHONY: run-ledger
run-ledger: ## run the ledger service from source (needs DATABASE_URL, LEDGER_QUEUE_URL, LEDGER_DLQ_URL)
	$(GO) run ./cmd/ledger

.PHONY: run-webhooks
run-webhooks: ## run the webhooks service from source (needs DATABASE_URL, WEBHOOKS_QUEUE_URL, WEBHOOKS_DLQ_URL, WEBHOOKS_PAYMENTS_URL, WEBHOOKS_SECRETS_KEY)
	$(GO) run ./cmd/webhooks

.PHONY: test
test: ## the whole suite, both modules (DATABASE_URL / AWS_ENDPOINT_URL, else one container of each); reports every skip
	$(GO) vet ./...
	$(TOOLS) vet ./...
	$(TOOLS) run ./testrun -count=1 -timeout 20m $(PKGS)

.PHONY: test-compose
test-compose: ## the whole suite against the Postgres and LocalStack of a running `docker compose up`
	DATABASE_URL='postgres://postgres:postgres@127.0.0.1:$(POSTGRES_HOST_PORT)/postgres?sslmode=disable' \
	AWS_ENDPOINT_URL='http://127.0.0.1:$(LOCALSTACK_HOST_PORT)' \
	AWS_ACCESS_KEY_ID=test AWS_SECRET_ACCESS_KEY=test AWS_REGION=us-east-1 \
	$(TOOLS) run ./testrun -count=1 -timeout 20m $(PKGS)

.PHONY: compose-check
compose-check: ## docker compose up --build --wait from this repository, every container healthy, make demo against it, a restart and SIGKILLs under traffic, down -v; starts a Docker engine if none answers (scripts/compose-stage.sh)
	bash scripts/compose-stage.sh

.PHONY: testcontainers-check
testcontainers-check: ## the adapters' suite through make test's Docker path (testcontainers), nothing skipped; starts a Docker engine if none answers (scripts/testcontainers-stage.sh)
	bash scripts/testcontainers-stage.sh

.PHONY: test-short
test-short: ## unit tests only (no database, no broker), both modules
	$(GO) test -short -count=1 ./...
	$(TOOLS) test -short -count=1 ./...

.PHONY: fork-check
fork-check: ## rename a copy of the repository with docs/FORKING.md's recipe, then run on it make lint, the unit tests and, under CI, the rolling-update test (not make test)
	bash scripts/fork-check.sh

.PHONY: fmt
fmt: ## gofmt every Go file
	gofmt -w $$(git ls-files '*.go')

# A dependency bump in the services' go.mod changes the tools module's graph
# too: both must stay tidy (go mod tidy, then go -C tools mod tidy).
.PHONY: lint
lint: ## gofmt, go mod tidy, go vet, staticcheck (staticcheck.conf) on both modules, actionlint; api/ through Redocly, Spectral and the AsyncAPI parser (needs node, npm)
	@test -z "$$(gofmt -l $$(git ls-files '*.go'))" || { gofmt -l $$(git ls-files '*.go'); echo 'gofmt needed'; exit 1; }
	$(GO) mod tidy -diff
	$(TOOLS) mod tidy -diff
	$(GO) vet ./...
	$(TOOLS) vet ./...
	$(GO) run $(STATICCHECK) ./...
	$(TOOLS) run $(STATICCHECK) ./...
	$(GO) run $(ACTIONLINT)
	bash scripts/api-lint.sh
	bash scripts/asyncapi-check.sh

# loadgen runs in tools/ (go -C tools): its paths are relative to it.
BENCH_ARGS ?= -runs 3
.PHONY: bench
bench: ## whole-path benchmark, one table: tools/loadgen (DATABASE_URL; AWS_ENDPOINT_URL adds end to end; BENCH_ARGS='-runs 3 -report ../docs/BENCHMARKS.md' records it)
	$(TOOLS) run ./loadgen $(BENCH_ARGS)

.PHONY: client-check
client-check: ## the Go clients of the three APIs (tools/apiclients): regenerated with docs/CONTRACTS.md's command and compared, then every operation called on the running services (DATABASE_URL, AWS_ENDPOINT_URL, else containers); make test runs the same; needs the Go module proxy
	bash scripts/client-check.sh

.PHONY: api-docs
api-docs: ## the API reference for a browser: each OpenAPI document in api/ rendered to docs/api/<name>.html, index.html beside them, offline from file://; needs node and npm
	bash scripts/api-docs.sh docs/api

.PHONY: asyncapi-check
asyncapi-check: ## validate api/events.asyncapi.yaml with the AsyncAPI parser, its payloads compiled in their schemaFormat (also in lint); needs node and npm
	bash scripts/asyncapi-check.sh
