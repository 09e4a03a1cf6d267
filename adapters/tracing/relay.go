package tracing

import (
	"context"
	"time"

	"github.com/google/uuid"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/payments-outbox/payments-outbox/application/outbox"
	"github.com/payments-outbox/payments-outbox/application/outbox/partition"
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
func Relay(store outbox.Store, tp trace.TracerProvider, topic string) outbox.Store {
	if tp == nil {
		return store
	}
	return tracedStore{Store: store, claims: claimTracer{tracer: Tracer(tp), topic: topic}}
}

// OrderedRelay is Relay for ordered mode's store: its claims in write order
// are traced alike; its heartbeats pass through.
func OrderedRelay(store partition.Store, tp trace.TracerProvider, topic string) partition.Store {
	if tp == nil {
		return store
	}
	return tracedOrderedStore{Store: store, claims: claimTracer{tracer: Tracer(tp), topic: topic}}
}

type tracedStore struct {
	outbox.Store
	claims claimTracer
}

func (s tracedStore) Claim(ctx context.Context, limit int, publish func(context.Context, []outbox.Message) outbox.Result) (int, error) {
	return s.claims.trace(publish, func(publish func(context.Context, []outbox.Message) outbox.Result) (int, error) {
		return s.Store.Claim(ctx, limit, publish)
	})
}

type tracedOrderedStore struct {
	partition.Store
	claims claimTracer
}

func (s tracedOrderedStore) ClaimInOrder(ctx context.Context, c partition.Claim, publish func(context.Context, []outbox.Message) outbox.Result) (int, error) {
	return s.claims.trace(publish, func(publish func(context.Context, []outbox.Message) outbox.Result) (int, error) {
		return s.Store.ClaimInOrder(ctx, c, publish)
	})
}

// claimTracer traces one claim: claim runs it with the publish it is
// handed, which is publish with the spans around it.
type claimTracer struct {
	tracer trace.Tracer
	topic  string
}

func (t claimTracer) trace(publish func(context.Context, []outbox.Message) outbox.Result,
	claim func(func(context.Context, []outbox.Message) outbox.Result) (int, error)) (int, error) {
	start := time.Now()
	var batch trace.Span // started once rows were claimed, ended once the claim committed
	n, err := claim(func(ctx context.Context, msgs []outbox.Message) outbox.Result {
		links := make([]trace.Link, 0, len(msgs))
		for _, m := range msgs {
			if sc := SpanContext(m.TraceParent, m.TraceState); sc.IsValid() {
				links = append(links, trace.Link{SpanContext: sc})
			}
		}
		var bctx context.Context
		bctx, batch = t.tracer.Start(ctx, "outbox claim",
			trace.WithNewRoot(), trace.WithTimestamp(start), trace.WithLinks(links...),
			trace.WithAttributes(attribute.Int("messaging.batch.message_count", len(msgs))))
		sent := time.Now()
		out := publish(ctx, msgs)
		t.publishSpans(bctx, msgs, out, sent, time.Now())
		batch.SetAttributes(
			attribute.Int("outbox.published", len(out.Published)),
			attribute.Int("outbox.retried", len(out.Retry)),
			attribute.Int("outbox.dead", len(out.Dead)))
		return out
	})
	if batch != nil {
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
func (t claimTracer) publishSpans(bctx context.Context, msgs []outbox.Message, out outbox.Result, sent, answered time.Time) {
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
		_, span := t.tracer.Start(parent, "publish "+m.Type,
			trace.WithSpanKind(trace.SpanKindProducer), trace.WithTimestamp(sent), trace.WithLinks(batch),
			trace.WithAttributes(
				attribute.String("messaging.system", "aws_sns"),
				attribute.String("messaging.operation.type", "send"),
				attribute.String("messaging.destination.name", t.topic),
				attribute.String("messaging.message.id", m.ID.String()),
				attribute.String("cloudevents.event_id", m.ID.String()),
				attribute.String("cloudevents.event_type", m.Type),
				attribute.Int("outbox.attempts", m.Attempts),
			))
		if reason, ok := failed[m.ID]; ok {
			span.SetStatus(codes.Error, reason)
		}
		span.End(trace.WithTimestamp(answered))
	}
}
