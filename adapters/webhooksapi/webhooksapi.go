// Package webhooksapi is the webhooks service's merchant API on chi: a
// merchant's webhook endpoints (create, list, read, delete, rotate the
// signing secret) and the attempts to deliver events to one of them (list,
// redeliver one, recover every failed one since a time). Its shape is the payments API's (adapters/paymentsapi): the
// router and middleware of httpserver, every route behind the payments API
// keys (Authorization: Bearer), each key rate-limited, strict JSON bodies,
// the Idempotency-Key on create, lists paged as GET /payments is, and every
// error turned into RFC 9457 problem+json in one place (writeError).
//
// The keys are the payments service's, and so is the decision: the
// Authenticator is adapters/apikeyclient, which asks the payments API whom
// each key acts as and caches nothing, so a revoked key stops working here
// within payments' own bound (docs/SECURITY.md). The use cases scope every
// endpoint to its merchant: another merchant's endpoint answers 404.
//
// The contract is api/webhooks.openapi.yaml, served on GET /openapi.yaml;
// every test here checks its exchanges against it (api/apitest).
package webhooksapi

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"log/slog"
	"net/http"
	"time"

	"github.com/go-chi/chi/v5"
	"go.opentelemetry.io/otel/trace"

	"github.com/payments-outbox/payments-outbox/adapters/httpserver"
	apidoc "github.com/payments-outbox/payments-outbox/api"
	"github.com/payments-outbox/payments-outbox/application/access"
	"github.com/payments-outbox/payments-outbox/application/webhooks"
)

// Service is what the API needs of the application (webhooks.Service).
// Every method scopes what it touches to the principal's merchants: another
// merchant's endpoint is webhooks.ErrEndpointNotFound.
type Service interface {
	// Create errors: webhooks.ErrInvalidEndpoint, ErrTooManyEndpoints,
	// idempotency.ErrInvalidKey, ErrKeyReused, ErrKeyInFlight,
	// dependency.ErrUnavailable.
	Create(ctx context.Context, c webhooks.CreateEndpoint) (webhooks.Created, error)
	// List errors: webhooks.ErrInvalidListQuery, ErrUnknownCursor,
	// dependency.ErrUnavailable.
	List(ctx context.Context, l webhooks.ListEndpoints) (webhooks.EndpointPage, error)
	// Get errors: webhooks.ErrEndpointNotFound, dependency.ErrUnavailable.
	Get(ctx context.Context, who access.Principal, id string) (webhooks.Endpoint, error)
	// Delete errors: webhooks.ErrEndpointNotFound, dependency.ErrUnavailable.
	Delete(ctx context.Context, who access.Principal, id string) (webhooks.Endpoint, error)
	// RotateSecret errors: webhooks.ErrEndpointNotFound, ErrEndpointDeleted,
	// dependency.ErrUnavailable.
	RotateSecret(ctx context.Context, r webhooks.RotateSecret) (webhooks.Created, error)
	// Attempts errors: webhooks.ErrEndpointNotFound, ErrInvalidListQuery,
	// ErrUnknownCursor, dependency.ErrUnavailable.
	Attempts(ctx context.Context, l webhooks.ListAttempts) (webhooks.AttemptPage, error)
	// Redeliver errors: webhooks.ErrEndpointNotFound, ErrEventNotFound,
	// ErrEndpointDeleted, dependency.ErrUnavailable.
	Redeliver(ctx context.Context, r webhooks.Redeliver) error
	// Recover errors: webhooks.ErrEndpointNotFound, ErrEndpointDeleted,
	// ErrEndpointDisabled, ErrInvalidRecover, ErrUnknownCursor,
	// idempotency.ErrInvalidKey, ErrKeyReused, ErrKeyInFlight,
	// dependency.ErrUnavailable.
	Recover(ctx context.Context, r webhooks.Recover) (webhooks.Recovery, error)
}

// Authenticator turns a payments API key into whom it acts as
// (adapters/apikeyclient, which asks the payments service).
type Authenticator interface {
	// Authenticate errors: access.ErrMalformedKey, access.ErrUnknownKey,
	// access.ErrRateLimited, dependency.ErrUnavailable.
	Authenticate(ctx context.Context, key string) (access.Principal, error)
}

// Config tunes NewHandler; the zero value is a handler with no rate limit,
// the default request timeout, and neither metrics nor tracing.
type Config struct {
	// RateLimit is the requests per second each API key may make (0: no
	// limit). It is counted before the key is verified, so a request over
	// it costs the payments service nothing.
	RateLimit int
	// RequestTimeout bounds each request's work (0: httpserver's default),
	// the call to the payments service that verifies its key included.
	RequestTimeout time.Duration
	// TracerProvider, when set, traces every request (httpserver.Config).
	TracerProvider trace.TracerProvider
}

type api struct {
	svc  Service
	auth Authenticator
	log  *slog.Logger
}

// NewHandler returns the API's router: svc's use cases, each request
// authenticated by auth, its unexpected errors logged to log.
// Every request is counted in metrics when it is not nil.
func NewHandler(svc Service, auth Authenticator, log *slog.Logger, metrics *httpserver.Metrics, cfg Config) http.Handler {
	a := &api{svc: svc, auth: auth, log: log}
	r := httpserver.NewRouter(log, metrics, httpserver.Config{OpenAPI: apidoc.Webhooks(), TracerProvider: cfg.TracerProvider})
	r.Group(func(r chi.Router) {
		r.Use(httpserver.Timeout(cfg.RequestTimeout))
		// Before the key is verified, unlike the payments API: verifying it
		// is a call to the payments service, which a request over the
		// limit must not make. Counted by the credential presented, whose
		// holder alone can fill its bucket (a key's id is no secret).
		r.Use(httpserver.RateLimit(cfg.RateLimit, credential, metrics))
		r.Use(httpserver.RequireKey(a.authenticate, a.writeError))
		r.Post("/webhook_endpoints", a.createEndpoint)
		r.Get("/webhook_endpoints", a.listEndpoints)
		r.Get("/webhook_endpoints/{id}", a.getEndpoint)
		r.Delete("/webhook_endpoints/{id}", a.deleteEndpoint)
		r.Post("/webhook_endpoints/{id}/rotate_secret", a.rotateSecret)
		r.Get("/webhook_endpoints/{id}/deliveries", a.listAttempts)
		r.Post("/webhook_endpoints/{id}/deliveries/{event_id}/redeliver", a.redeliver)
		r.Post("/webhook_endpoints/{id}/recover", a.recoverEndpoint)
	})
	return r
}

// credential is the rate limit's bucket of a request: a hash of its
// Authorization headers, never the credential itself (the limiter's keys
// live in memory, and its metrics could name them).
func credential(r *http.Request) string {
	h := sha256.New()
	for _, v := range r.Header.Values("Authorization") {
		h.Write([]byte(v))
		h.Write([]byte{0})
	}
	return hex.EncodeToString(h.Sum(nil))
}

// authenticate is RequireKey's: who the key presenting the request is.
func (a *api) authenticate(ctx context.Context, key string) (access.Principal, error) {
	return a.auth.Authenticate(ctx, key)
}
