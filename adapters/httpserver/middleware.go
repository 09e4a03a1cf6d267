package httpserver

import (
	"log/slog"
	"net/http"
	"strconv"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/go-chi/chi/v5/middleware"
	"github.com/prometheus/client_golang/prometheus"
	"go.opentelemetry.io/otel/trace"
)

// Metrics are the HTTP request metrics. Create them once per process with
// NewMetrics. No label takes a raw client value, which would let any client
// grow /metrics without bound: Middleware labels them by chi's route pattern,
// never the raw path, by a method of RFC 9110 or "other" (methodLabel), and
// by the status code the handler chose.
type Metrics struct {
	requests    *prometheus.CounterVec
	duration    *prometheus.HistogramVec
	rateLimited prometheus.Counter
}

// NewMetrics registers http_requests_total, http_request_duration_seconds
// and http_requests_rate_limited_total on reg.
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "http_requests_total",
			Help: "HTTP requests answered, by method, route pattern and status code.",
		}, []string{"method", "route", "code"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "http_request_duration_seconds",
			Help:    "Time to answer an HTTP request, by method and route pattern.",
			Buckets: []float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5},
		}, []string{"method", "route"}),
		// No label names the key: its id is no secret, but one series per
		// key would grow without bound.
		rateLimited: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "http_requests_rate_limited_total",
			Help: "Requests refused with 429 because their API key was over its rate limit.",
		}),
	}
	reg.MustRegister(m.requests, m.duration, m.rateLimited)
	return m
}

// Middleware returns the shared middleware chain for a chi router: the
// headers every answer carries (safeAnswers), request id (a client's
// X-Request-Id if it is safe to keep, else a new one, answered in
// X-Request-Id: requestID), metrics and the access log, a panic guard that
// answers 500 problem+json instead of dropping the connection, and the
// refusal of a body framed by Transfer-Encoding (lengthFramed). Every line
// they log carries the request's id (LogRequestIDs).
func Middleware(log *slog.Logger, m *Metrics) []func(http.Handler) http.Handler {
	log = requestLogger(log)
	return []func(http.Handler) http.Handler{safeAnswers, requestID, observe(log, m), recoverer(log), lengthFramed}
}

// lengthFramed refuses a request whose body is framed by Transfer-Encoding,
// 400, and closes its connection. A request with both Transfer-Encoding and
// Content-Length is the shape of request smuggling (RFC 9112, 6.3 and 11.2):
// a proxy before the service that reads Content-Length and this server,
// which reads the chunks, disagree on where the request ends, and the rest
// becomes a request of its own on the connection. net/http drops the
// Content-Length of such a request before any handler runs, so the handler
// cannot tell it from a plainly chunked one: both are refused. The APIs take
// small JSON bodies whose length every client knows, and no answer here is
// followed by another request on the same connection.
func lengthFramed(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if len(r.TransferEncoding) > 0 {
			w.Header().Set("Connection", "close")
			WriteProblem(w, NewProblem(http.StatusBadRequest, "transfer-encoding-refused",
				"send the body with Content-Length alone: a request with Transfer-Encoding is refused, and its connection closed"))
			return
		}
		next.ServeHTTP(w, r)
	})
}

// safeAnswers tells every answer's reader what not to do with it: a browser
// must not guess its type from its bytes (nosniff), and no cache, the
// client's or a proxy's, may keep it (no-store): the answers carry payment
// data, each for one credential.
func safeAnswers(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("Cache-Control", "no-store")
		next.ServeHTTP(w, r)
	})
}

func observe(log *slog.Logger, m *Metrics) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			start := time.Now()
			ww := middleware.NewWrapResponseWriter(w, r.ProtoMajor)
			next.ServeHTTP(ww, r)

			status := ww.Status()
			if status == 0 {
				status = http.StatusOK
			}
			route := "unmatched"
			if rc := chi.RouteContext(r.Context()); rc != nil && rc.RoutePattern() != "" {
				route = rc.RoutePattern()
			}
			elapsed := time.Since(start)
			if m != nil {
				method := methodLabel(r.Method)
				m.requests.WithLabelValues(method, route, strconv.Itoa(status)).Inc()
				m.duration.WithLabelValues(method, route).Observe(elapsed.Seconds())
			}
			level := slog.LevelInfo
			if status >= 500 {
				level = slog.LevelError
			}
			attrs := []slog.Attr{
				slog.String("method", methodLabel(r.Method)),
				slog.String("path", logPath(r.URL.Path)),
				slog.String("route", route),
				slog.Int("status", status),
				slog.Int("bytes", ww.BytesWritten()),
				slog.Duration("duration", elapsed),
				slog.String("remote", r.RemoteAddr),
			}
			if sc := trace.SpanContextFromContext(r.Context()); sc.IsValid() {
				attrs = append(attrs, slog.String("trace_id", sc.TraceID().String()))
			}
			log.LogAttrs(r.Context(), level, "http request", attrs...)
		})
	}
}

func recoverer(log *slog.Logger) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			defer func() {
				if v := recover(); v != nil {
					if v == http.ErrAbortHandler {
						panic(v)
					}
					log.ErrorContext(r.Context(), "handler panic", "panic", v)
					WriteProblem(w, NewProblem(http.StatusInternalServerError, "internal", ""))
				}
			}()
			next.ServeHTTP(w, r)
		})
	}
}

// methodLabel is the method as a metric label or span name: one of the
// methods of RFC 9110 and RFC 5789 (PATCH), or "other". A client may send any
// token as its method, and each one a label took would be a new series.
func methodLabel(m string) string {
	switch m {
	case http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut, http.MethodPatch,
		http.MethodDelete, http.MethodOptions, http.MethodConnect, http.MethodTrace:
		return m
	}
	return "other"
}

// maxLoggedPath bounds the path the access log writes: no route of these
// APIs is near it, and a client may send a path of up to a megabyte.
const maxLoggedPath = 512

func logPath(p string) string {
	if len(p) > maxLoggedPath {
		return p[:maxLoggedPath] + "…"
	}
	return p
}
