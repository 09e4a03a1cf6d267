// Package paymentsapi is the payments service's HTTP API on chi: create, read
// and refund a payment. It decodes and validates requests, honours the
// Idempotency-Key header, and turns errors into RFC 9457 problem+json in one
// place (writeError). The router, the operational endpoints and the
// middleware come from httpserver, which the ledger's API shares.
//
// The contract is api/payments.openapi.yaml, served on GET /openapi.yaml;
// every test here checks its exchanges against it (api/apitest).
package paymentsapi

import (
	"context"
	"log/slog"
	"net/http"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/payments-outbox/payments-outbox/adapters/httpserver"
	apidoc "github.com/payments-outbox/payments-outbox/api"
	"github.com/payments-outbox/payments-outbox/application/payments"
	"github.com/payments-outbox/payments-outbox/domain/payment"
)

// Service is what the API needs of the application.
type Service interface {
	Create(ctx context.Context, c payments.CreatePayment) (payments.Outcome, error)
	Get(ctx context.Context, id payment.ID) (*payment.Payment, error)
	Refund(ctx context.Context, c payments.RefundPayment) (payments.Outcome, error)
}

// Config is what NewHandler wires together.
type Config struct {
	Service Service
	// Ready reports whether the service can do its work (the database
	// answers); /readyz answers 503 while it returns an error.
	Ready func(ctx context.Context) error
	// Status, when set, reports dependencies on /readyz without failing it
	// (httpserver.Ops.Status): the SNS topic.
	Status func() map[string]string
	Log    *slog.Logger
	// Metrics, when set, instruments every request; Gatherer, when set, is
	// served on /metrics.
	Metrics  *httpserver.Metrics
	Gatherer prometheus.Gatherer
	// RequestTimeout bounds each request's work (default 5s), so a database
	// outage answers 503 quickly instead of hanging the client.
	RequestTimeout time.Duration
}

// MaxBodyBytes is the largest request body accepted.
const MaxBodyBytes = 64 << 10

// NewHandler returns the API's router.
func NewHandler(cfg Config) http.Handler {
	if cfg.RequestTimeout == 0 {
		cfg.RequestTimeout = 5 * time.Second
	}
	a := &api{svc: cfg.Service, log: cfg.Log}
	r := httpserver.NewRouter(httpserver.Ops{
		Log: cfg.Log, Ready: cfg.Ready, Status: cfg.Status, Metrics: cfg.Metrics, Gatherer: cfg.Gatherer,
		OpenAPI: apidoc.Payments(),
	})
	r.Group(func(r chi.Router) {
		r.Use(httpserver.Timeout(cfg.RequestTimeout))
		r.Post("/payments", a.createPayment)
		r.Get("/payments/{id}", a.getPayment)
		r.Post("/payments/{id}/refunds", a.refundPayment)
	})
	return r
}
