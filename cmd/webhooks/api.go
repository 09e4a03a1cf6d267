package main

import (
	"fmt"
	"log/slog"
	"net/http"

	"go.opentelemetry.io/otel/trace"

	"github.com/payments-outbox/payments-outbox/adapters/apikeyclient"
	"github.com/payments-outbox/payments-outbox/adapters/httpserver"
	"github.com/payments-outbox/payments-outbox/adapters/webhooksapi"
	"github.com/payments-outbox/payments-outbox/application/webhooks"
)

// newAPI is the merchant API served on HTTP_ADDR, and the one place it is
// wired: svc's use cases, each request's API key verified by the payments
// service at cfg.PaymentsURL (introspection, no cache of its own: a key
// revoked there stops working here within the same bound, docs/SECURITY.md).
func newAPI(svc *webhooks.Service, cfg config, log *slog.Logger, m *httpserver.Metrics, tp trace.TracerProvider) (http.Handler, error) {
	auth, err := apikeyclient.New(cfg.PaymentsURL, apikeyclient.Config{})
	if err != nil {
		return nil, fmt.Errorf("WEBHOOKS_PAYMENTS_URL: %w", err)
	}
	return webhooksapi.NewHandler(svc, auth, log, m, webhooksapi.Config{RateLimit: cfg.APIRateLimit, TracerProvider: tp}), nil
}
