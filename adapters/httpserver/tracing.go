package httpserver

import (
	"net/http"

	"github.com/go-chi/chi/v5"
	"go.opentelemetry.io/contrib/instrumentation/net/http/otelhttp"
	"go.opentelemetry.io/otel/attribute"
	noopmetric "go.opentelemetry.io/otel/metric/noop"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"

	"github.com/payments-outbox/payments-outbox/adapters/tracing"
)

// TraceParentHeader is the response header that carries the W3C traceparent
// of the request's span when tracing is on, so that a client, or an operator
// holding a response, can open the request's trace (docs/OPERATIONS.md,
// "Follow one payment through its trace").
const TraceParentHeader = "traceparent"

// traceRequests returns the middleware that traces every request as a server
// span named by its method and chi route pattern ("POST /payments"), never
// by its raw path, whose ids would make every name unique, nor by a method a
// client invented (methodLabel).
//
// The APIs face clients, so a request's own traceparent does not become the
// parent of its span (otelhttp's public endpoint): a client cannot choose the
// service's trace ids or force its sampling. Its context is kept as a link.
func traceRequests(tp trace.TracerProvider) []func(http.Handler) http.Handler {
	return []func(http.Handler) http.Handler{
		otelhttp.NewMiddleware("http request",
			otelhttp.WithTracerProvider(tp),
			otelhttp.WithPropagators(propagation.TraceContext{}),
			otelhttp.WithPublicEndpointFn(func(*http.Request) bool { return true }),
			otelhttp.WithMeterProvider(noopmetric.NewMeterProvider()), // the HTTP metrics are Prometheus's (Metrics)
			otelhttp.WithSpanNameFormatter(func(_ string, r *http.Request) string { return methodLabel(r.Method) }),
		),
		nameByRoute,
	}
}

// nameByRoute names the request's span once chi has routed it, and answers
// the span's traceparent in TraceParentHeader.
func nameByRoute(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if tp, _ := tracing.Inject(r.Context()); tp != "" {
			w.Header().Set(TraceParentHeader, tp)
		}
		next.ServeHTTP(w, r)
		route := "unmatched"
		if rc := chi.RouteContext(r.Context()); rc != nil && rc.RoutePattern() != "" {
			route = rc.RoutePattern()
		}
		span := trace.SpanFromContext(r.Context())
		span.SetName(methodLabel(r.Method) + " " + route)
		span.SetAttributes(attribute.String("http.route", route))
	})
}
