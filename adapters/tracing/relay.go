package tracing

import (
	"context"
	"time"

	"github.com/google/uuid"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/payments-outbox/payments-outbox/application/outbox"
	"github.com/payments-outbox/payments-outbox/application/relay"
)

// Relay returns store with each claimed batch traced; the relay, its
// publisher and the store stay unaware of tracing. Per batch it records:
//
//   - "outbox claim": a root span from the start of the claim to its commit,
//     linked to the context stored with each claimed row. It is started only
//     once rows were claimed, with the claim's start as its start time, so an
//     idle relay's polls export nothing.
//   - "publish <type>" per row (kind producer): a child of the row's stored
//     context — in the trace of the request that wrote the event — from the
//     hand-over to the publisher until the broker answered, linked to the
//     batch, with an error status when the broker did not acknowledge it. A
//     row written without a trace context gets the batch as its parent.
//
// topic names the destination in the spans' attributes. With a nil tp store
// is returned as it is.
func Relay(store relay.Store, tp trace.TracerProvider, topic string) relay.Store {
	if tp == nil {
		return store
	}
	return tracedStore{Store: store, tracer: Tracer(tp), topic: topic}
}

// tracedStore traces ClaimBatch; the store's other methods pass through.
type tracedStore struct {
	relay.Store
	tracer trace.Tracer
	topic  string
}

func (s tracedStore) ClaimBatch(ctx context.Context, c relay.Claim, fn func([]outbox.Message) (relay.BatchResult, error)) (int, error) {
	start := time.Now()
	var batches []trace.Span // one per call of fn, ended once the claim committed
	n, err := s.Store.ClaimBatch(ctx, c, func(msgs []outbox.Message) (relay.BatchResult, error) {
		links := make([]trace.Link, 0, len(msgs))
		for _, m := range msgs {
			if sc := SpanContext(m.TraceParent, m.TraceState); sc.IsValid() {
				links = append(links, trace.Link{SpanContext: sc})
			}
		}
		bctx, batch := s.tracer.Start(ctx, "outbox claim",
			trace.WithNewRoot(), trace.WithTimestamp(start), trace.WithLinks(links...),
			trace.WithAttributes(attribute.Int("messaging.batch.message_count", len(msgs))))
		sent := time.Now()
		out, err := fn(msgs)
		s.publishSpans(bctx, msgs, out, err, sent, time.Now())
		batch.SetAttributes(
			attribute.Int("outbox.published", len(out.Published)),
			attribute.Int("outbox.retried", len(out.Retry)),
			attribute.Int("outbox.dead", len(out.Dead)))
		batches = append(batches, batch)
		return out, err
	})
	for _, batch := range batches {
		if err != nil {
			batch.RecordError(err)
			batch.SetStatus(codes.Error, "claim rolled back: the rows stay PENDING")
		}
		batch.End()
	}
	return n, err
}

// publishSpans records one span per message of a batch the publisher handled
// between sent and answered.
func (s tracedStore) publishSpans(bctx context.Context, msgs []outbox.Message, out relay.BatchResult, fnErr error, sent, answered time.Time) {
	failed := make(map[uuid.UUID]string, len(out.Retry)+len(out.Dead))
	for _, f := range out.Retry {
		failed[f.ID] = f.Error
	}
	for _, f := range out.Dead {
		failed[f.ID] = f.Error
	}
	batch := trace.LinkFromContext(bctx)
	for _, m := range msgs {
		parent := bctx
		if sc := SpanContext(m.TraceParent, m.TraceState); sc.IsValid() {
			parent = trace.ContextWithRemoteSpanContext(bctx, sc)
		}
		_, span := s.tracer.Start(parent, "publish "+m.Type,
			trace.WithSpanKind(trace.SpanKindProducer), trace.WithTimestamp(sent), trace.WithLinks(batch),
			trace.WithAttributes(
				attribute.String("messaging.system", "aws_sns"),
				attribute.String("messaging.operation.type", "send"),
				attribute.String("messaging.destination.name", s.topic),
				attribute.String("messaging.message.id", m.ID.String()),
				attribute.String("cloudevents.event_id", m.ID.String()),
				attribute.String("cloudevents.event_type", m.Type),
				attribute.Int("outbox.attempts", m.Attempts),
			))
		switch reason, ok := failed[m.ID]; {
		case ok:
			span.SetStatus(codes.Error, reason)
		case fnErr != nil:
			span.SetStatus(codes.Error, fnErr.Error())
		}
		span.End(trace.WithTimestamp(answered))
	}
}
