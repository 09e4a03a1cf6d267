package httpserver_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/payments-outbox/payments-outbox/adapters/httpserver"
	"github.com/payments-outbox/payments-outbox/application/dependency"
	"github.com/payments-outbox/payments-outbox/application/idempotency"
	"github.com/payments-outbox/payments-outbox/internal/logtest"
)

// TestWriteError pins the part of the error table every API shares: what each
// error answers, which header it sets, how often it is logged, and that no
// answer shows the error chain.
func TestWriteError(t *testing.T) {
	tests := []struct {
		name       string
		err        error
		status     int
		typ, title string
		retryAfter string
		level      string // the one log line's level, "" for none
	}{
		{"the application's unavailable", fmt.Errorf("read payment: %w: dial tcp secret-host: refused", dependency.ErrUnavailable),
			503, "/problems/unavailable", "Service Unavailable", "1", "WARN"},
		{"out of time", fmt.Errorf("read payment secret-host: %w", context.DeadlineExceeded),
			503, "/problems/unavailable", "Service Unavailable", "1", "WARN"},
		{"client gone", fmt.Errorf("read payment secret-host: %w", context.Canceled),
			499, "/problems/client-closed-request", "Client Closed Request", "", ""},
		{"unexpected", errors.New("constraint secret-host violated"),
			500, "/problems/internal", "Internal Server Error", "", "ERROR"},
		{"no credentials", httpserver.ErrNoCredentials,
			401, "/problems/authentication-required", "Unauthorized", "", ""},
		{"malformed credentials", fmt.Errorf("%w: secret-host", httpserver.ErrMalformedCredentials),
			401, "/problems/malformed-credentials", "Unauthorized", "", ""},
		{"invalid credentials", fmt.Errorf("%w: secret-host", httpserver.ErrInvalidCredentials),
			401, "/problems/invalid-credentials", "Unauthorized", "", ""},
		// The key's errors, alike on every API that takes one.
		{"invalid idempotency key", fmt.Errorf("%w: longer than 255 bytes", idempotency.ErrInvalidKey),
			400, "/problems/invalid-idempotency-key", "Bad Request", "", ""},
		{"idempotency key reused", fmt.Errorf("%w: secret-host", idempotency.ErrKeyReused),
			422, "/problems/idempotency-key-reused", "Unprocessable Entity", "", ""},
		{"a twin in flight", fmt.Errorf("%w: secret-host", idempotency.ErrKeyInFlight),
			409, "/problems/idempotency-key-in-flight", "Conflict", "1", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var logs bytes.Buffer
			log := slog.New(slog.NewJSONHandler(&logs, nil))
			rec := httptest.NewRecorder()
			httpserver.WriteError(rec, httptest.NewRequest(http.MethodGet, "/x", nil), log, tt.err)

			if rec.Code != tt.status {
				t.Errorf("status: got %d, want %d", rec.Code, tt.status)
			}
			if got, want := rec.Header().Get("WWW-Authenticate") != "", tt.status == 401; got != want {
				t.Errorf("WWW-Authenticate %q on a %d", rec.Header().Get("WWW-Authenticate"), tt.status)
			}
			if got := rec.Header().Get("Retry-After"); got != tt.retryAfter {
				t.Errorf("Retry-After: got %q, want %q", got, tt.retryAfter)
			}
			if got := rec.Header().Get("Content-Type"); got != "application/problem+json" {
				t.Errorf("content type: got %q, want application/problem+json", got)
			}
			var p httpserver.Problem
			if err := json.Unmarshal(rec.Body.Bytes(), &p); err != nil {
				t.Fatalf("body %s: %v", rec.Body, err)
			}
			if p.Type != tt.typ || p.Title != tt.title || p.Status != tt.status {
				t.Errorf("problem: got %+v, want type %s, title %s, status %d", p, tt.typ, tt.title, tt.status)
			}
			if strings.Contains(rec.Body.String(), "secret-host") {
				t.Errorf("body shows the error chain: %s", rec.Body)
			}

			lines := strings.Split(strings.TrimSpace(logs.String()), "\n")
			if tt.level == "" {
				if logs.Len() != 0 {
					t.Errorf("logged %s, want nothing", logs.String())
				}
				return
			}
			if len(lines) != 1 {
				t.Fatalf("logged %d lines, want 1: %s", len(lines), logs.String())
			}
			var line struct{ Level, Err string }
			if err := json.Unmarshal([]byte(lines[0]), &line); err != nil {
				t.Fatal(err)
			}
			if line.Level != tt.level || !strings.Contains(line.Err, "secret-host") {
				t.Errorf("log line %s: want level %s with the whole chain", lines[0], tt.level)
			}
		})
	}
}

// TestWriteErrorMatchesTheSentinelNotItsText: an error is answered 503 for
// wrapping dependency.ErrUnavailable (or running out of time), never for
// reading like an outage — an error of the same text is a fault, 500.
func TestWriteErrorMatchesTheSentinelNotItsText(t *testing.T) {
	log := logtest.Discard()
	for err, want := range map[error]int{
		context.DeadlineExceeded:                       http.StatusServiceUnavailable,
		fmt.Errorf("x: %w", dependency.ErrUnavailable): http.StatusServiceUnavailable,
		errors.New(dependency.ErrUnavailable.Error()):  http.StatusInternalServerError,
	} {
		rec := httptest.NewRecorder()
		httpserver.WriteError(rec, httptest.NewRequest(http.MethodGet, "/x", nil), log, err)
		if rec.Code != want {
			t.Errorf("%v: got %d, want %d", err, rec.Code, want)
		}
	}
}
