# syntax=docker/dockerfile:1
# One multi-stage build for both services: a Go toolchain stage that builds
# static binaries, and minimal non-root runtime images (distroless: no shell, no
# package manager) that hold only the binary. The healthcheck is the binary
# itself (`payments healthcheck`), since the runtime image has no curl.

FROM golang:1.26-bookworm AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
ENV CGO_ENABLED=0
RUN go build -trimpath -ldflags='-s -w' -o /out/payments ./cmd/payments \
 && go build -trimpath -ldflags='-s -w' -o /out/ledger ./cmd/ledger

FROM gcr.io/distroless/static-debian12:nonroot AS payments
COPY --from=build /out/payments /usr/local/bin/payments
USER nonroot:nonroot
EXPOSE 8080
ENTRYPOINT ["/usr/local/bin/payments"]

FROM gcr.io/distroless/static-debian12:nonroot AS ledger
COPY --from=build /out/ledger /usr/local/bin/ledger
USER nonroot:nonroot
EXPOSE 8081
ENTRYPOINT ["/usr/local/bin/ledger"]
