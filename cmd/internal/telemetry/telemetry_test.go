package telemetry

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/otel"

	"github.com/payments-outbox/payments-outbox/adapters/tracing"
)

func TestErrorLogLogsOncePerIntervalAndCountsTheRest(t *testing.T) {
	var buf bytes.Buffer
	now := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	e := &errorLog{log: slog.New(slog.NewJSONHandler(&buf, nil)), interval: 30 * time.Second, now: func() time.Time { return now }}

	e.Handle(errors.New("export 1: connection refused"))
	now = now.Add(10 * time.Second)
	e.Handle(errors.New("export 2: connection refused"))
	e.Handle(errors.New("export 3: connection refused"))
	now = now.Add(20 * time.Second)
	e.Handle(errors.New("export 4: connection refused"))

	lines := logLines(t, &buf)
	if len(lines) != 2 {
		t.Fatalf("%d lines, want 2 (the first error, then one after the interval):\n%s", len(lines), buf.String())
	}
	if lines[0]["err"] != "export 1: connection refused" || lines[0]["errors_not_logged"] != 0.0 {
		t.Errorf("first line = %v", lines[0])
	}
	if lines[1]["err"] != "export 4: connection refused" || lines[1]["errors_not_logged"] != 2.0 {
		t.Errorf("second line = %v, want export 4 with errors_not_logged 2", lines[1])
	}
	for _, l := range lines {
		if l["level"] != "WARN" {
			t.Errorf("level %v, want WARN", l["level"])
		}
	}
}

// With tracing on, the SDK's errors reach the service's JSON log, not stderr.
func TestStartSendsTheSDKsErrorsToTheLog(t *testing.T) {
	// A loopback port nothing listens on: no span is exported by this test.
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:9")
	var buf bytes.Buffer
	tr, err := Start(context.Background(), tracing.ExporterOTLPHTTP, "test", time.Second, slog.New(slog.NewJSONHandler(&buf, nil)))
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Shutdown()
	otel.Handle(errors.New("traces export: collector unreachable"))
	if !strings.Contains(buf.String(), `"err":"traces export: collector unreachable"`) {
		t.Errorf("the SDK's error is not in the log:\n%s", buf.String())
	}
}

func logLines(t *testing.T, buf *bytes.Buffer) []map[string]any {
	t.Helper()
	var out []map[string]any
	for _, l := range strings.Split(strings.TrimSpace(buf.String()), "\n") {
		if l == "" {
			continue
		}
		var m map[string]any
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Fatalf("not JSON: %q: %v", l, err)
		}
		out = append(out, m)
	}
	return out
}
