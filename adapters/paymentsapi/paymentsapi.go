// Package paymentsapi is the payments service's HTTP API on chi: create (or
// authorize), read, capture, cancel and refund a payment, and read the key
// presenting the request (GET /api_key, which the webhooks service verifies
// its callers' keys by). Every route needs an API key (Authorization: Bearer);
// the middleware reads it and asks the Authenticator who it is, and the
// handlers pass that principal to the use cases, which scope what it may
// touch. Requests are rate-limited per key. It decodes and validates
// requests, honours the Idempotency-Key header, and turns errors into RFC
// 9457 problem+json in one place (writeError). The router and the middleware
// come from httpserver, which the ledger's API shares; the operational
// endpoints are on the service's other listener (httpserver.NewOpsRouter).
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
	"go.opentelemetry.io/otel/trace"

	"github.com/payments-outbox/payments-outbox/adapters/httpserver"
	apidoc "github.com/payments-outbox/payments-outbox/api"
	"github.com/payments-outbox/payments-outbox/application/access"
	"github.com/payments-outbox/payments-outbox/application/payments"
	"github.com/payments-outbox/payments-outbox/domain/payment"
)

// Service is what the API needs of the application.
type Service interface {
	Create(ctx context.Context, c payments.CreatePayment) (payments.Committed, error)
	Get(ctx context.Context, who access.Principal, id payment.ID) (*payment.Payment, error)
	Refund(ctx context.Context, c payments.RefundPayment) (payments.Committed, error)
	List(ctx context.Context, l payments.ListPayments) (payments.Page, error)
	Capture(ctx context.Context, c payments.CapturePayment) (payments.Committed, error)
	Cancel(ctx context.Context, c payments.CancelPayment) (payments.Committed, error)
}

// Authenticator turns an API key into whom it acts as (access.Authenticator).
type Authenticator interface {
	// Authenticate errors: access.ErrMalformedKey, access.ErrUnknownKey,
	// dependency.ErrUnavailable.
	Authenticate(ctx context.Context, key string) (access.Principal, error)
}

// Config tunes NewHandler; the zero value is a handler with no rate limit,
// the default request timeout, and neither metrics nor tracing.
type Config struct {
	// RateLimit is the requests per second each API key may make (0: no
	// limit).
	RateLimit int
	// RequestTimeout bounds each request's work (0: httpserver's default),
	// so a database outage answers 503 quickly instead of hanging the client.
	RequestTimeout time.Duration
	// TracerProvider, when set, traces every request (httpserver.Config).
	TracerProvider trace.TracerProvider
}

// MaxBodyBytes is the largest request body accepted (httpserver.DecodeJSON's).
const MaxBodyBytes = httpserver.MaxBodyBytes

// NewHandler returns the API's router: svc's use cases, each request
// authenticated by auth, its unexpected errors logged to log.
// Every request is counted in metrics when it is not nil.
func NewHandler(svc Service, auth Authenticator, log *slog.Logger, metrics *httpserver.Metrics, cfg Config) http.Handler {
	a := &api{svc: svc, auth: auth, log: log}
	r := httpserver.NewRouter(log, metrics, httpserver.Config{OpenAPI: apidoc.Payments(), TracerProvider: cfg.TracerProvider})
	r.Group(func(r chi.Router) {
		r.Use(httpserver.Timeout(cfg.RequestTimeout))
		r.Use(httpserver.RequireKey(a.authenticate, a.writeError))
		r.Use(httpserver.RateLimit(cfg.RateLimit, rateBucket, metrics))
		r.Post("/payments", a.createPayment)
		r.Get("/payments", a.listPayments)
		r.Get("/payments/{id}", a.getPayment)
		r.Post("/payments/{id}/refunds", a.refundPayment)
		r.Post("/payments/{id}/capture", a.capturePayment)
		r.Post("/payments/{id}/cancel", a.cancelPayment)
		r.Get("/api_key", a.getAPIKey)
	})
	return r
}

// rateBucket is the rate limit's bucket of a request: its key's. GET
// /api_key has a bucket of its own per key: another service verifies each
// request it is sent with it (the webhooks service), and that service's
// traffic must not spend the key's budget here. The other service limits
// its own requests before it asks.
func rateBucket(r *http.Request) string {
	if r.Method == http.MethodGet && r.URL.Path == "/api_key" {
		return "api_key:" + principal(r).KeyID()
	}
	return principal(r).KeyID()
}

// authenticate is RequireKey's: who the key presenting the request is.
func (a *api) authenticate(ctx context.Context, key string) (access.Principal, error) {
	return a.auth.Authenticate(ctx, key)
}

// principal is the request's authenticated principal (httpserver.Principal).
func principal(r *http.Request) access.Principal { return httpserver.Principal(r) }
