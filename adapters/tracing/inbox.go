package tracing

import (
	"context"

	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/payments-outbox/payments-outbox/application/inbox"
)

// InboxStore is what a consumer's inbox writes through: the consumer's
// records and the processor's claims, each handing the consumer's handler
// its repositories R bound to them.
type InboxStore[R any] interface {
	inbox.Recorder[R]
	inbox.Backlog[R]
}

// tracedInbox traces an inbox store's transactions as one span each, named
// transaction, and hands the handler its repositories as traced returns
// them: traced(repos, tracer, parent), where parent is the trace context of
// the claimed row's event in the processor's claims, and invalid in a
// record (the repositories' spans are then children of the transaction's).
// Ledger and Webhooks are the two consumers' instances.
type tracedInbox[R any] struct {
	store       InboxStore[R]
	tracer      trace.Tracer
	transaction string
	traced      func(repos R, tracer trace.Tracer, parent trace.SpanContext) R
}

func (s tracedInbox[R]) Record(ctx context.Context, msg inbox.Message, apply func(context.Context, R) (string, error)) (inserted bool, err error) {
	ctx, span := s.tracer.Start(ctx, s.transaction)
	defer func() {
		if err != nil {
			span.RecordError(err)
			span.SetStatus(codes.Error, "rolled back")
		}
		span.End()
	}()
	if apply == nil {
		return s.store.Record(ctx, msg, nil)
	}
	return s.store.Record(ctx, msg, func(ctx context.Context, repos R) (string, error) {
		return apply(ctx, s.traced(repos, s.tracer, trace.SpanContext{}))
	})
}

func (s tracedInbox[R]) ClaimPending(ctx context.Context, c inbox.Claim,
	fn func(context.Context, []inbox.PendingMessage, inbox.ApplyFunc[R]) (inbox.BatchResult, error)) (int, error) {
	return s.store.ClaimPending(ctx, c, func(ctx context.Context, rows []inbox.PendingMessage, apply inbox.ApplyFunc[R]) (inbox.BatchResult, error) {
		return fn(ctx, rows, func(ctx context.Context, ev inbox.Event, apply1 func(context.Context, R) error) error {
			parent := SpanContext(ev.TraceParent, ev.TraceState)
			if !parent.IsValid() {
				return apply(ctx, ev, apply1)
			}
			return apply(ctx, ev, func(ctx context.Context, repos R) error {
				return apply1(ctx, s.traced(repos, s.tracer, parent))
			})
		})
	})
}

// startChild starts name as a child of parent when it is valid (a claimed
// row's event), else of the span in ctx.
func startChild(ctx context.Context, tracer trace.Tracer, parent trace.SpanContext, name string, opts ...trace.SpanStartOption) (context.Context, trace.Span) {
	if parent.IsValid() {
		ctx = trace.ContextWithRemoteSpanContext(ctx, parent)
	}
	return tracer.Start(ctx, name, opts...)
}
