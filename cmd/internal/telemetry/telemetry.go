// Package telemetry starts and stops a service's tracing, the part of the
// wiring every binary shares.
package telemetry

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"go.opentelemetry.io/otel"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"

	"github.com/payments-outbox/payments-outbox/adapters/tracing"
)

// FlushTimeout bounds the export of the spans still buffered at shutdown,
// after the service stopped: a trace backend that does not answer must not
// hold the process past its orchestrator's grace period.
const FlushTimeout = 5 * time.Second

// ErrorLogInterval is the least time between two log lines for the
// OpenTelemetry SDK's own errors: a collector that is down fails every
// export, a few a second under load.
const ErrorLogInterval = 30 * time.Second

// Tracing is a service's tracer provider for its lifetime.
type Tracing struct {
	// Provider is what the adapters trace with; nil when tracing is off,
	// which every adapter takes to mean no spans and no middleware.
	Provider trace.TracerProvider

	sdk     *sdktrace.TracerProvider
	timeout time.Duration
	log     *slog.Logger
}

// Start builds the tracer provider of service when exp is an exporter (the
// OTEL_* variables configure one: tracing.ExporterFrom), and nothing
// otherwise. A bad OTEL_* value stops start-up with an error naming it.
// Shutdown, given at most flush to export what is buffered, must follow.
//
// Enabled, it also sends the SDK's own errors (an export the collector
// refused or never answered) to log, at most one line per ErrorLogInterval,
// where the SDK would print them to stderr, outside the JSON log.
func Start(ctx context.Context, exp tracing.Exporter, service string, flush time.Duration, log *slog.Logger) (*Tracing, error) {
	t := &Tracing{timeout: flush, log: log}
	if exp == tracing.ExporterOff {
		return t, nil
	}
	otel.SetErrorHandler(&errorLog{log: log, interval: ErrorLogInterval, now: time.Now})
	sdk, err := tracing.NewProvider(ctx, service, exp)
	if err != nil {
		return nil, err
	}
	t.sdk, t.Provider = sdk, sdk
	log.InfoContext(ctx, "tracing on: spans are exported as the OTEL_* variables say")
	return t, nil
}

// Shutdown exports the spans still buffered and stops the provider. It runs
// after the service stopped, on a context of its own: the service's has
// ended by then.
func (t *Tracing) Shutdown() {
	if t.sdk == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), t.timeout)
	defer cancel()
	if err := t.sdk.Shutdown(ctx); err != nil {
		t.log.Warn("tracing: spans not exported at shutdown", "err", err)
	}
}

// errorLog is an otel.ErrorHandler that logs an error at most once per
// interval, with how many it left out since the last line.
type errorLog struct {
	log      *slog.Logger
	interval time.Duration
	now      func() time.Time

	mu      sync.Mutex
	last    time.Time // of the last line logged
	skipped int       // errors since then, not logged
}

func (e *errorLog) Handle(err error) {
	e.mu.Lock()
	now := e.now()
	if !e.last.IsZero() && now.Sub(e.last) < e.interval {
		e.skipped++
		e.mu.Unlock()
		return
	}
	skipped := e.skipped
	e.last, e.skipped = now, 0
	e.mu.Unlock()
	e.log.Warn("tracing: OpenTelemetry failed; spans may be lost", "err", err, "errors_not_logged", skipped)
}
