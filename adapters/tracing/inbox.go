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

// Inbox returns store with each transaction of the consumer (Record) traced
// as one span named transaction, a child of the span in the caller's
// context — the consumer's processing span, which continues the producer's
// trace — with an error status when it rolled back; the statements sent in
// it are its children. The consumer's handler gets its repositories as
// traced returns them: traced(repos, tracer, parent), where parent is, in
// the processor's claims, the trace context of the claimed row's event (so
// work done later, in another transaction or process, continues the trace
// that wrote it), and invalid in a record (the repositories' spans are then
// children of the transaction's). A claimed row whose event carries no trace
// context gets its repositories untraced: a span per row would start a trace
// of its own. The inbox, the handler and the store stay unaware of tracing.
// With a nil tp store is returned as it is.
//
// Each consumer's decorator is an instance beside the consumer
// (ledgertracing, webhookstracing): only it knows its repositories.
func Inbox[R any](store InboxStore[R], tp trace.TracerProvider, transaction string,
	traced func(repos R, tracer trace.Tracer, parent trace.SpanContext) R) InboxStore[R] {
	if tp == nil {
		return store
	}
	return tracedInbox[R]{store: store, tracer: Tracer(tp), transaction: transaction, traced: traced}
}

type tracedInbox[R any] struct {
	store       InboxStore[R]
	tracer      trace.Tracer
	transaction string
	traced      func(repos R, tracer trace.Tracer, parent trace.SpanContext) R
}

func (s tracedInbox[R]) Record(ctx context.Context, msg inbox.Message, apply func(context.Context, R) (string, error)) (inserted bool, err error) {
	ctx, span := s.tracer.Start(ctx, s.transaction)
	defer func() { End(span, err, "rolled back") }()
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

// StartChild starts name as a child of parent when it is valid (a claimed
// row's event), else of the span in ctx.
func StartChild(ctx context.Context, tracer trace.Tracer, parent trace.SpanContext, name string, opts ...trace.SpanStartOption) (context.Context, trace.Span) {
	if parent.IsValid() {
		ctx = trace.ContextWithRemoteSpanContext(ctx, parent)
	}
	return tracer.Start(ctx, name, opts...)
}

// End ends span, with err recorded and an error status saying what failed
// when err is not nil.
func End(span trace.Span, err error, failed string) {
	if err != nil {
		span.RecordError(err)
		span.SetStatus(codes.Error, failed)
	}
	span.End()
}
