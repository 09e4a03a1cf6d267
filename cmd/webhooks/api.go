package main

import (
	"log/slog"
	"net/http"

	"github.com/payments-outbox/payments-outbox/adapters/httpserver"
	"github.com/payments-outbox/payments-outbox/application/webhooks"
)

// newAPI is the merchant API served on HTTP_ADDR, and the one place it is
// wired. Until the merchant API adapter (adapters/webhooksapi) is wired
// here — built from svc, the payments service's key introspection at
// cfg.PaymentsURL and log — it answers every request 503.
func newAPI(svc *webhooks.Service, cfg config, log *slog.Logger) http.Handler {
	_, _, _ = svc, cfg, log
	return http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Retry-After", "60")
		httpserver.WriteProblem(w, httpserver.NewProblem(http.StatusServiceUnavailable, "unavailable", "the merchant API is not wired yet"))
	})
}
