package main

import (
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/payments-outbox/payments-outbox/adapters/httpserver"
)

// TestLogLinesCarryTheRequestID: the service's logger adds a request's id to
// every line logged with the request's context — the application's own lines
// too, which no router or error writer could add it to.
func TestLogLinesCarryTheRequestID(t *testing.T) {
	var out strings.Builder
	log := newLogger(&out, slog.LevelInfo)
	r := httpserver.NewRouter(log, nil, httpserver.Config{})
	r.Get("/x", func(w http.ResponseWriter, r *http.Request) {
		log.InfoContext(r.Context(), "application line")
		w.WriteHeader(http.StatusNoContent)
	})
	req := httptest.NewRequest(http.MethodGet, "/x", nil)
	req.Header.Set(httpserver.RequestIDHeader, "req-1")
	r.ServeHTTP(httptest.NewRecorder(), req)

	for _, raw := range strings.Split(strings.TrimSpace(out.String()), "\n") {
		var line struct {
			RequestID string `json:"request_id"`
		}
		if err := json.Unmarshal([]byte(raw), &line); err != nil {
			t.Fatalf("log line %s: %v", raw, err)
		}
		if line.RequestID != "req-1" || strings.Count(raw, `"request_id"`) != 1 {
			t.Errorf("want request_id req-1, once: %s", raw)
		}
	}
	if !strings.Contains(out.String(), `"msg":"application line"`) {
		t.Errorf("the application's line was not logged:\n%s", out.String())
	}
}
