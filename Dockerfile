# syntax=docker/dockerfile:1.27@sha256:bde3983e9c939224420ddaf6b784cc30e09b035a4dea01f581230c50809f372e
# One multi-stage build for the three services and the demo's webhook receiver: a Go toolchain stage that builds
# static binaries, and minimal non-root runtime images (distroless: no shell, no
# package manager) that hold only the binary. The healthcheck is the binary
# itself (`payments healthcheck`), since the runtime image has no curl.
#
# Every image is pinned by digest, its tag kept beside it for the reader (and
# for Dependabot, which bumps both together). The module and build caches are
# BuildKit cache mounts: a rebuild after a code change recompiles only what
# changed and downloads nothing, and neither cache ends up in an image.

FROM golang:1.26.8-bookworm@sha256:9fdc884aacc3bec89b20ffc69f4bb369c78210e3e4f600387b5128b12c199f81 AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN --mount=type=cache,target=/go/pkg/mod \
    go mod download
COPY . .
ENV CGO_ENABLED=0
RUN --mount=type=cache,target=/go/pkg/mod \
    --mount=type=cache,target=/root/.cache/go-build \
    go build -trimpath -ldflags='-s -w' -o /out/payments ./cmd/payments \
 && go build -trimpath -ldflags='-s -w' -o /out/ledger ./cmd/ledger \
 && go build -trimpath -ldflags='-s -w' -o /out/webhooks ./cmd/webhooks

# The demo's webhook receiver lives in the tools module (tools/go.mod), whose
# other dependencies the services never need: a stage of its own copies only
# that module's files and the receiver, and builds nothing else.
FROM golang:1.26.8-bookworm@sha256:9fdc884aacc3bec89b20ffc69f4bb369c78210e3e4f600387b5128b12c199f81 AS build-receiver
WORKDIR /src
# tools/go.mod replaces the services' module with ../, so its go.mod comes too.
COPY go.mod go.sum ./
COPY tools/go.mod tools/go.sum tools/
COPY tools/webhookreceiver tools/webhookreceiver
ENV CGO_ENABLED=0 GOFLAGS=-mod=readonly
RUN --mount=type=cache,target=/go/pkg/mod \
    --mount=type=cache,target=/root/.cache/go-build \
    go -C tools build -trimpath -ldflags='-s -w' -o /out/webhook-receiver ./webhookreceiver

FROM gcr.io/distroless/static-debian12:nonroot@sha256:afa5c872c891853ca7fcf1f12c3edb23f7eeef36189728842dd51042ff57f7ab AS payments
COPY --from=build /out/payments /usr/local/bin/payments
USER nonroot:nonroot
# 8080 the API, 9090 the operational endpoints (OPS_ADDR)
EXPOSE 8080 9090
ENTRYPOINT ["/usr/local/bin/payments"]

FROM gcr.io/distroless/static-debian12:nonroot@sha256:afa5c872c891853ca7fcf1f12c3edb23f7eeef36189728842dd51042ff57f7ab AS ledger
COPY --from=build /out/ledger /usr/local/bin/ledger
USER nonroot:nonroot
# 8081 the read API, 9091 the operational endpoints (OPS_ADDR)
EXPOSE 8081 9091
ENTRYPOINT ["/usr/local/bin/ledger"]

FROM gcr.io/distroless/static-debian12:nonroot@sha256:afa5c872c891853ca7fcf1f12c3edb23f7eeef36189728842dd51042ff57f7ab AS webhooks
COPY --from=build /out/webhooks /usr/local/bin/webhooks
USER nonroot:nonroot
# 8082 the merchant API, 9092 the operational endpoints (OPS_ADDR)
EXPOSE 8082 9092
ENTRYPOINT ["/usr/local/bin/webhooks"]

# DEMO ONLY: a merchant's endpoint for docker compose (tools/webhookreceiver).
FROM gcr.io/distroless/static-debian12:nonroot@sha256:afa5c872c891853ca7fcf1f12c3edb23f7eeef36189728842dd51042ff57f7ab AS webhook-receiver
COPY --from=build-receiver /out/webhook-receiver /usr/local/bin/webhook-receiver
USER nonroot:nonroot
EXPOSE 8083
ENTRYPOINT ["/usr/local/bin/webhook-receiver"]
