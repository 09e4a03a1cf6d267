package httpserver

import (
	"context"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/go-chi/chi/v5/middleware"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"go.opentelemetry.io/otel/trace"
)

// Config tunes a service's public router (NewRouter). The zero value
// serves no document and traces nothing.
type Config struct {
	// OpenAPI, when set, is the service's OpenAPI document, served on
	// GET /openapi.yaml so a client can generate code from the running
	// service.
	OpenAPI []byte
	// TracerProvider, when set, traces every request (traceRequests). Nil:
	// tracing off, and no tracing middleware at all.
	TracerProvider trace.TracerProvider
}

// OpenAPIContentType is the media type of GET /openapi.yaml:
// application/yaml, YAML's registered type (RFC 9512). The more specific
// application/openapi+yaml is still an Internet-Draft, not registered.
const OpenAPIContentType = "application/yaml"

// NewRouter returns a service's public router: the shared middleware,
// problem+json answers for unknown routes and methods, and /openapi.yaml.
// The service adds its own routes. The operational endpoints are not here:
// they are on their own listener (NewOpsRouter), which never faces clients.
// Every request is logged to log and, when metrics is not nil, counted.
func NewRouter(log *slog.Logger, metrics *Metrics, cfg Config) chi.Router {
	r := newRouter(log, metrics, cfg.TracerProvider)
	if cfg.OpenAPI != nil {
		r.Get("/openapi.yaml", func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", OpenAPIContentType)
			_, _ = w.Write(cfg.OpenAPI)
		})
	}
	return r
}

func newRouter(log *slog.Logger, m *Metrics, tp trace.TracerProvider) chi.Router {
	r := chi.NewRouter()
	if tp != nil {
		r.Use(traceRequests(tp)...) // first, so the span covers the whole request
	}
	r.Use(Middleware(log, m)...)
	// HEAD is served by every GET route, as RFC 9110 (9.1) requires: chi
	// routes it to the GET handler, and net/http drops the body.
	r.Use(middleware.GetHead)
	r.NotFound(notFound)
	r.MethodNotAllowed(func(w http.ResponseWriter, req *http.Request) {
		ms := allowed(r, req.URL.Path)
		if len(ms) == 0 {
			// chi answers a method it does not know 405 on any path: a path no
			// route has is 404 whatever the method, as the documents say.
			notFound(w, req)
			return
		}
		w.Header().Set("Allow", strings.Join(ms, ", "))
		// The detail does not name the method: a client's bytes are not echoed.
		WriteProblem(w, NewProblem(http.StatusMethodNotAllowed, "method-not-allowed", "this path does not take this method; Allow lists the ones it takes"))
	})
	return r
}

func notFound(w http.ResponseWriter, _ *http.Request) {
	WriteProblem(w, NewProblem(http.StatusNotFound, "not-found", "no route has this path"))
}

// allowed lists the methods routes takes for path, as a 405's Allow header
// must (RFC 9110): chi knows them, but gives them only to its own handler.
// A GET route takes HEAD too (GetHead).
func allowed(routes chi.Routes, path string) []string {
	var ms []string
	for _, m := range []string{http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete, http.MethodOptions} {
		if routes.Match(chi.NewRouteContext(), m, path) || (m == http.MethodHead && slices.Contains(ms, http.MethodGet)) {
			ms = append(ms, m)
		}
	}
	return ms
}

// OpsConfig tunes the operational router (NewOpsRouter). The zero value
// adds nothing to /readyz and serves no /metrics.
type OpsConfig struct {
	// Status, when set, adds what it returns to /readyz's answer under
	// "checks": dependencies the service reports without being unready for
	// them. Payments keeps taking payments while its broker is away, since the
	// outbox holds the events, so its SNS topic is reported here, not in Ready.
	Status func() map[string]string
	// Gatherer, when set, is served on /metrics.
	Gatherer prometheus.Gatherer
}

// NewOpsRouter returns the router of a service's operational listener
// (OPS_ADDR): /healthz (the process is up), /readyz (it can do its work) and
// /metrics, for the orchestrator and the monitoring, never for clients. Its
// contract is api/ops.openapi.yaml. It asks for no credentials: the listener
// is meant for a network only operators reach (docs/SECURITY.md). ready
// reports whether the service can do its work (its database answers):
// /readyz answers 503 while it returns an error (nil: always ready). Every
// request is logged to log and, when metrics is not nil, counted.
func NewOpsRouter(ready func(ctx context.Context) error, log *slog.Logger, metrics *Metrics, cfg OpsConfig) chi.Router {
	// Not traced: probes and scrapes would bury the requests worth a trace.
	r := newRouter(log, metrics, nil)
	rlog := requestLogger(log)
	r.Get("/healthz", func(w http.ResponseWriter, r *http.Request) {
		WriteJSON(w, http.StatusOK, map[string]string{"status": "ok"})
	})
	r.Get("/readyz", func(w http.ResponseWriter, r *http.Request) {
		ctx, cancel := context.WithTimeout(r.Context(), 2*time.Second)
		defer cancel()
		if ready != nil {
			if err := ready(ctx); err != nil {
				rlog.WarnContext(ctx, "not ready", "err", err)
				w.Header().Set("Retry-After", "1")
				WriteProblem(w, NewProblem(http.StatusServiceUnavailable, "not-ready", "the database is not reachable"))
				return
			}
		}
		body := map[string]any{"status": "ready"}
		if cfg.Status != nil {
			body["checks"] = cfg.Status()
		}
		WriteJSON(w, http.StatusOK, body)
	})
	if cfg.Gatherer != nil {
		r.Method(http.MethodGet, "/metrics", promhttp.HandlerFor(cfg.Gatherer, promhttp.HandlerOpts{}))
	}
	return r
}

// DefaultRequestTimeout is the bound of Timeout(0): long enough for a
// request's few statements on a loaded database, short enough that a client
// meeting an outage gets its 503 before it gives up.
const DefaultRequestTimeout = 5 * time.Second

// Timeout bounds each request's work to d (DefaultRequestTimeout when d is
// 0), so that a database outage answers 503 within d instead of hanging the
// client. Every API takes its timeout's zero value from here.
func Timeout(d time.Duration) func(http.Handler) http.Handler {
	if d <= 0 {
		d = DefaultRequestTimeout
	}
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			ctx, cancel := context.WithTimeout(r.Context(), d)
			defer cancel()
			next.ServeHTTP(w, r.WithContext(ctx))
		})
	}
}
