package tracing

import (
	"context"

	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"
)

// The W3C Trace Context header names, which are also the names of the
// CloudEvents extension attributes and of the SNS/SQS message attributes.
const (
	TraceParent = "traceparent"
	TraceState  = "tracestate"
)

// propagator is W3C Trace Context alone: it is what the outbox columns, the
// event and the message attributes hold. Baggage is not carried.
var propagator = propagation.TraceContext{}

// Inject returns the traceparent and tracestate of the span in ctx, or two
// empty strings when ctx carries no valid span context (tracing off).
func Inject(ctx context.Context) (traceparent, tracestate string) {
	if !trace.SpanContextFromContext(ctx).IsValid() {
		return "", ""
	}
	c := propagation.MapCarrier{}
	propagator.Inject(ctx, c)
	return c[TraceParent], c[TraceState]
}

// Extract returns ctx carrying the remote span context that traceparent and
// tracestate describe, so that spans started from it are its children. A
// missing or malformed traceparent leaves ctx as it is: a bad header costs
// the trace its parent, never the message its processing.
func Extract(ctx context.Context, traceparent, tracestate string) context.Context {
	if traceparent == "" {
		return ctx
	}
	return propagator.Extract(ctx, propagation.MapCarrier{TraceParent: traceparent, TraceState: tracestate})
}

// SpanContext returns the span context traceparent and tracestate describe;
// it is invalid when traceparent is empty or malformed.
func SpanContext(traceparent, tracestate string) trace.SpanContext {
	return trace.SpanContextFromContext(Extract(context.Background(), traceparent, tracestate))
}

// Tracer returns the tracer of this module from tp, or a no-op one when tp is
// nil (tracing off).
func Tracer(tp trace.TracerProvider) trace.Tracer {
	if tp == nil {
		tp = noop.NewTracerProvider()
	}
	return tp.Tracer(instrumentation)
}

// instrumentation names the spans this module starts itself.
const instrumentation = "github.com/payments-outbox/payments-outbox"
