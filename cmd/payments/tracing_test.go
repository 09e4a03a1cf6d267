package main

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/payments-outbox/payments-outbox/adapters/postgres/pgtest"
	apidoc "github.com/payments-outbox/payments-outbox/api"
	"github.com/payments-outbox/payments-outbox/api/apitest"
)

// TestTracingFromTheEnvironment: with OTEL_EXPORTER_OTLP_ENDPOINT set the
// service answers each request with its traceparent and exports its spans
// there by OTLP, at the latest when it shuts down; the OpenTelemetry SDK reads
// the process environment itself, so the test sets it there too.
func TestTracingFromTheEnvironment(t *testing.T) {
	var exports atomic.Int64
	collector := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/v1/traces" {
			_, _ = io.Copy(io.Discard, r.Body)
			exports.Add(1)
		}
		w.Header().Set("Content-Type", "application/x-protobuf")
	}))
	defer collector.Close()
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", collector.URL)
	t.Setenv("OTEL_BSP_SCHEDULE_DELAY", "100")

	dbURL := pgtest.NewDatabase(t)
	env := map[string]string{
		"DATABASE_URL":                dbURL,
		"HTTP_ADDR":                   "127.0.0.1:0",
		"OPS_ADDR":                    "127.0.0.1:0",
		"PAYMENTS_TOPIC_ARN":          "arn:aws:sns:us-east-1:000000000000:unused",
		"AWS_ENDPOINT_URL":            "http://127.0.0.1:1",
		"OUTBOX_POLL_INTERVAL":        "1h",
		"OTEL_EXPORTER_OTLP_ENDPOINT": collector.URL,
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	listening := make(chan addrs, 1)
	done := make(chan error, 1)
	go func() { done <- run(ctx, nil, envOf(env), io.Discard, listening) }()
	var addr addrs
	select {
	case addr = <-listening:
	case err := <-done:
		t.Fatalf("run exited before serving: %v", err)
	case <-time.After(30 * time.Second):
		t.Fatal("not serving after 30s")
	}
	key := createKey(t, dbURL, "--merchant", "mer_1", "--name", "test")
	req, err := http.NewRequest(http.MethodPost, "http://"+addr.API+"/payments",
		strings.NewReader(`{"amount": 1050, "currency": "BRL", "payer_id": "cus_1"}`))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+key)
	res, err := apitest.New(t, apidoc.Payments()).Client(t).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusCreated || !strings.HasPrefix(res.Header.Get("traceparent"), "00-") {
		t.Errorf("POST /payments: %d with traceparent %q; want 201 with the request's trace context", res.StatusCode, res.Header.Get("traceparent"))
	}
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("run after shutdown: %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("run did not return within 30s of shutdown")
	}
	if exports.Load() == 0 {
		t.Error("no span reached the collector at OTEL_EXPORTER_OTLP_ENDPOINT")
	}
}
