package httpserver_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"

	"go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/payments-outbox/payments-outbox/adapters/httpserver"
	"github.com/payments-outbox/payments-outbox/adapters/tracing"
	"github.com/payments-outbox/payments-outbox/internal/logtest"
)

// A traced request's span is named by its route pattern, its traceparent is
// answered, and a client's own traceparent is linked, never made the parent.
func TestRequestsAreTracedByRoute(t *testing.T) {
	rec := tracetest.NewSpanRecorder()
	tp := trace.NewTracerProvider(trace.WithSpanProcessor(rec))
	r := httpserver.NewRouter(logtest.Discard(), nil, httpserver.Config{TracerProvider: tp})
	r.Get("/payments/{id}", func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusNoContent) })

	const clients = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	req := httptest.NewRequest(http.MethodGet, "/payments/0192", nil)
	req.Header.Set("traceparent", clients)
	w := httptest.NewRecorder()
	r.ServeHTTP(w, req)

	spans := rec.Ended()
	if len(spans) != 1 {
		t.Fatalf("%d spans, want 1", len(spans))
	}
	s := spans[0]
	if s.Name() != "GET /payments/{id}" {
		t.Errorf("span name %q, want the route pattern's", s.Name())
	}
	answered := tracing.SpanContext(w.Header().Get("traceparent"), "")
	if answered.TraceID() != s.SpanContext().TraceID() || answered.SpanID() != s.SpanContext().SpanID() {
		t.Errorf("traceparent answered %q, want the span's %s", w.Header().Get("traceparent"), s.SpanContext().SpanID())
	}
	client := tracing.SpanContext(clients, "")
	if s.Parent().IsValid() || s.SpanContext().TraceID() == client.TraceID() {
		t.Errorf("the client's traceparent became the parent (%s in trace %s)", s.Parent().SpanID(), s.SpanContext().TraceID())
	}
	if len(s.Links()) != 1 || s.Links()[0].SpanContext.SpanID() != client.SpanID() {
		t.Errorf("links %v, want one to the client's span", s.Links())
	}

	// Without a provider nothing is traced and no header is answered.
	plain := httpserver.NewRouter(logtest.Discard(), nil, httpserver.Config{})
	plain.Get("/x", func(http.ResponseWriter, *http.Request) {})
	w = httptest.NewRecorder()
	plain.ServeHTTP(w, httptest.NewRequest(http.MethodGet, "/x", nil))
	if h := w.Header().Get("traceparent"); h != "" {
		t.Errorf("untraced router answered traceparent %q", h)
	}
}

// BenchmarkRequest is what tracing adds to a request in the HTTP layer: the
// server span (otelhttp), its naming and the traceparent answered, through
// the SDK's batch processor to an exporter that drops the spans, against the
// same router untraced. The handler does nothing, so all of it is overhead.
func BenchmarkRequest(b *testing.B) {
	for _, traced := range []bool{false, true} {
		name := "untraced"
		var cfg httpserver.Config
		if traced {
			name = "traced"
			tp := trace.NewTracerProvider(trace.WithBatcher(discardExporter{}))
			b.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
			cfg.TracerProvider = tp
		}
		r := httpserver.NewRouter(logtest.Discard(), nil, cfg)
		r.Post("/payments", func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusCreated) })
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				w := httptest.NewRecorder()
				r.ServeHTTP(w, httptest.NewRequest(http.MethodPost, "/payments", nil))
			}
		})
	}
}

// discardExporter drops every span, so a benchmark measures making spans,
// not sending them.
type discardExporter struct{}

func (discardExporter) ExportSpans(context.Context, []trace.ReadOnlySpan) error { return nil }
func (discardExporter) Shutdown(context.Context) error                          { return nil }
