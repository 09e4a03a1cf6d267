// Package telemetry starts and stops a service's tracing, the part of the
// wiring both binaries share.
package telemetry

import (
	"context"
	"log/slog"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"

	"github.com/payments-outbox/payments-outbox/adapters/tracing"
)

// FlushTimeout bounds the export of the spans still buffered at shutdown,
// after the service stopped: a trace backend that does not answer must not
// hold the process past its orchestrator's grace period.
const FlushTimeout = 5 * time.Second

// Tracing is a service's tracer provider for its lifetime.
type Tracing struct {
	// Provider is what the adapters trace with; nil when tracing is off,
	// which every adapter takes to mean no spans and no middleware.
	Provider trace.TracerProvider

	sdk     *sdktrace.TracerProvider
	timeout time.Duration
	log     *slog.Logger
}

// Start builds the tracer provider of service when enabled (the OTEL_*
// variables configure an exporter: tracing.Configured), and nothing
// otherwise. A bad OTEL_* value stops start-up with an error naming it.
// Shutdown, given at most flush to export what is buffered, must follow.
func Start(ctx context.Context, enabled bool, service string, flush time.Duration, log *slog.Logger) (*Tracing, error) {
	t := &Tracing{timeout: flush, log: log}
	if !enabled {
		return t, nil
	}
	sdk, err := tracing.NewProvider(ctx, service)
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
