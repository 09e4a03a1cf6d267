package httpserver

import (
	"net/http"
	"time"

	"github.com/go-chi/httprate"
)

// RateLimit returns middleware that lets each caller, as key names it (an API
// key's id, never the key), make at most perSecond requests in any second —
// go-chi/httprate's sliding window, in this process's memory, so the limit
// is per replica. A request over the limit is answered 429 with Retry-After
// and problem+json, and counted in http_requests_rate_limited_total.
// perSecond 0 turns the limit off.
func RateLimit(perSecond int, key func(*http.Request) string, m *Metrics) func(http.Handler) http.Handler {
	if perSecond <= 0 {
		return func(next http.Handler) http.Handler { return next }
	}
	return httprate.LimitBy(perSecond, time.Second,
		func(r *http.Request) (string, error) { return key(r), nil },
		// Retry-After only: the X-RateLimit-* headers on every answer would
		// be a contract of their own to document and keep.
		httprate.WithResponseHeaders(httprate.ResponseHeaders{RetryAfter: "Retry-After"}),
		httprate.WithLimitHandler(func(w http.ResponseWriter, r *http.Request) {
			if m != nil {
				m.rateLimited.Inc()
			}
			WriteProblem(w, NewProblem(http.StatusTooManyRequests, "rate-limited", "this API key made more requests than its limit allows; retry after Retry-After seconds"))
		}),
	)
}
