// Package webhookstracing traces the webhooks service's ports: its inbox
// store, the delivery workers' store and sender, and the merchant API's
// store, each a decorator beside the service it decorates (the shared
// mechanics are adapters/tracing's), so that no store or sender starts a
// span of its own.
package webhookstracing

import (
	"context"
	"net/url"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/payments-outbox/payments-outbox/adapters/tracing"
	"github.com/payments-outbox/payments-outbox/application/idempotency"
	"github.com/payments-outbox/payments-outbox/application/inbox"
	"github.com/payments-outbox/payments-outbox/application/webhooks"
)

// InboxStore is what the webhooks service's inbox writes through
// (webhookstore.Store is one).
type InboxStore = tracing.InboxStore[webhooks.Fanout]

// Inbox returns store with the webhooks service's inbox traced, as
// ledgertracing traces the ledger's; the inbox, the handler and the store stay
// unaware of tracing. It records:
//
//   - "webhooks transaction": each transaction of the consumer (Record: in
//     the async mode the inbox insert alone), a child of the consumer's
//     processing span, with an error status when it rolled back.
//   - "enqueue webhook deliveries": each fan-out (webhooks.Fanout.Enqueue),
//     with how many deliveries it wrote; in the processor's claims a child
//     of the trace context the claimed row's event carries, so the fan-out,
//     made later in another transaction, continues the trace of the write
//     that recorded the payment. A row whose event carries none makes no
//     span.
//
// With a nil tp store is returned as it is.
func Inbox(store InboxStore, tp trace.TracerProvider) InboxStore {
	return tracing.Inbox(store, tp, "webhooks transaction", func(f webhooks.Fanout, tracer trace.Tracer, parent trace.SpanContext) webhooks.Fanout {
		return tracedFanout{Fanout: f, tracer: tracer, parent: parent}
	})
}

// tracedFanout traces Enqueue, a child of parent when it is valid (a
// claimed row's event), else of the span in ctx.
type tracedFanout struct {
	webhooks.Fanout
	tracer trace.Tracer
	parent trace.SpanContext
}

func (f tracedFanout) Enqueue(ctx context.Context, d webhooks.NewDelivery) (n int, err error) {
	ctx, span := tracing.StartChild(ctx, f.tracer, f.parent, "enqueue webhook deliveries", trace.WithAttributes(
		attribute.String("cloudevents.event_id", d.EventID),
		attribute.String("cloudevents.event_type", d.EventType)))
	defer func() {
		span.SetAttributes(attribute.Int("webhooks.deliveries", n))
		tracing.End(span, err, "not enqueued")
	}()
	return f.Fanout.Enqueue(ctx, d)
}

// Deliveries returns store with the delivery workers' claims traced: per
// claim that leased deliveries, "claim webhook deliveries", a root span from
// the start of the claim to its commit, linked to the trace context each
// claimed delivery's event carries — the claim serves events of many
// payments, so it is the child of none — as the relay's "outbox claim" is.
// An idle worker's polls export nothing. An attempt's outcome is the
// Sender's span; recording it, releasing a lease and counting the backlog
// pass through untraced. With a nil tp store is returned as it is.
func Deliveries(store webhooks.Deliveries, tp trace.TracerProvider) webhooks.Deliveries {
	if tp == nil {
		return store
	}
	return tracedDeliveries{Deliveries: store, tracer: tracing.Tracer(tp)}
}

type tracedDeliveries struct {
	webhooks.Deliveries
	tracer trace.Tracer
}

func (s tracedDeliveries) ClaimDeliveries(ctx context.Context, c webhooks.DeliveryClaim) ([]webhooks.Claimed, error) {
	start := time.Now()
	claimed, err := s.Deliveries.ClaimDeliveries(ctx, c)
	if len(claimed) == 0 {
		return claimed, err
	}
	links := make([]trace.Link, 0, len(claimed))
	for _, d := range claimed {
		if sc := eventContext(d.Payload); sc.IsValid() {
			links = append(links, trace.Link{SpanContext: sc})
		}
	}
	_, span := s.tracer.Start(ctx, "claim webhook deliveries",
		trace.WithNewRoot(), trace.WithTimestamp(start), trace.WithLinks(links...),
		trace.WithAttributes(attribute.Int("webhooks.claimed", len(claimed))))
	tracing.End(span, err, "claim failed")
	return claimed, err
}

// Sender returns sender with each attempt traced as "send webhook" (kind
// client): a child of the trace context the event it sends carries — in the
// trace of the request that wrote the payment — from the request until the
// answer, with the event's id and type, the receiver's host (never its
// whole URL, which may hold a merchant's token) and the answer's status
// code, and an error status when no 2xx answer came. The attempt of an
// event that carries no trace context, outside any span, makes no span: it
// would start a trace of its own per attempt. With a nil tp sender is
// returned as it is.
func Sender(sender webhooks.Sender, tp trace.TracerProvider) webhooks.Sender {
	if tp == nil {
		return sender
	}
	return tracedSender{sender: sender, tracer: tracing.Tracer(tp)}
}

type tracedSender struct {
	sender webhooks.Sender
	tracer trace.Tracer
}

func (s tracedSender) Send(ctx context.Context, r webhooks.Request) webhooks.Response {
	ev, _ := inbox.Decode(r.Body)
	parent := tracing.SpanContext(ev.TraceParent, ev.TraceState)
	if !parent.IsValid() && !trace.SpanContextFromContext(ctx).IsValid() {
		return s.sender.Send(ctx, r)
	}
	attrs := []attribute.KeyValue{
		attribute.String("http.request.method", "POST"),
		attribute.String("cloudevents.event_id", ev.ID),
		attribute.String("cloudevents.event_type", ev.Type),
	}
	if u, err := url.Parse(r.URL); err == nil {
		attrs = append(attrs, attribute.String("server.address", u.Hostname()))
	}
	ctx, span := tracing.StartChild(ctx, s.tracer, parent, "send webhook", trace.WithSpanKind(trace.SpanKindClient), trace.WithAttributes(attrs...))
	defer span.End()
	res := s.sender.Send(ctx, r)
	switch {
	case res.StatusCode != 0:
		span.SetAttributes(attribute.Int("http.response.status_code", res.StatusCode))
		if res.StatusCode < 200 || res.StatusCode > 299 {
			span.SetStatus(codes.Error, "not delivered")
		}
	default:
		span.SetAttributes(attribute.String("error.type", string(res.Failure)))
		span.SetStatus(codes.Error, "no answer: "+string(res.Failure))
	}
	return res
}

// eventContext is the trace context the event in payload carries; invalid
// when it carries none or payload is no event.
func eventContext(payload []byte) trace.SpanContext {
	ev, err := inbox.Decode(payload)
	if err != nil {
		return trace.SpanContext{}
	}
	return tracing.SpanContext(ev.TraceParent, ev.TraceState)
}

// Endpoints returns store with the merchant API's writes traced as one
// span each, a child of the request's: "create webhook endpoint", "delete
// webhook endpoint", "rotate webhook secret", "redeliver webhook" and
// "recover webhook deliveries", carrying the endpoint's id, with an error
// status when the write failed. Reads pass through untraced, as
// paymentstracing's. With a nil tp store is returned as it is.
func Endpoints(store webhooks.Endpoints, tp trace.TracerProvider) webhooks.Endpoints {
	if tp == nil {
		return store
	}
	return tracedEndpoints{Endpoints: store, tracer: tracing.Tracer(tp)}
}

type tracedEndpoints struct {
	webhooks.Endpoints
	tracer trace.Tracer
}

func (s tracedEndpoints) start(ctx context.Context, name, endpoint string) (context.Context, trace.Span) {
	return s.tracer.Start(ctx, name, trace.WithAttributes(attribute.String("webhooks.endpoint_id", endpoint)))
}

func (s tracedEndpoints) Create(ctx context.Context, e webhooks.StoredEndpoint, key *idempotency.Key, max int) (webhooks.CreateResult, error) {
	ctx, span := s.start(ctx, "create webhook endpoint", e.ID)
	res, err := s.Endpoints.Create(ctx, e, key, max)
	tracing.End(span, err, "failed")
	return res, err
}

func (s tracedEndpoints) DeleteEndpoint(ctx context.Context, id string, at time.Time) (webhooks.StoredEndpoint, error) {
	ctx, span := s.start(ctx, "delete webhook endpoint", id)
	e, err := s.Endpoints.DeleteEndpoint(ctx, id, at)
	tracing.End(span, err, "failed")
	return e, err
}

func (s tracedEndpoints) RotateSecret(ctx context.Context, id string, current []byte, previousExpires time.Time) (webhooks.StoredEndpoint, error) {
	ctx, span := s.start(ctx, "rotate webhook secret", id)
	e, err := s.Endpoints.RotateSecret(ctx, id, current, previousExpires)
	tracing.End(span, err, "failed")
	return e, err
}

func (s tracedEndpoints) Redeliver(ctx context.Context, endpointID, eventID string, at time.Time) error {
	ctx, span := s.start(ctx, "redeliver webhook", endpointID)
	span.SetAttributes(attribute.String("cloudevents.event_id", eventID))
	err := s.Endpoints.Redeliver(ctx, endpointID, eventID, at)
	tracing.End(span, err, "failed")
	return err
}

func (s tracedEndpoints) Recover(ctx context.Context, q webhooks.RecoverQuery, key *idempotency.Key) (webhooks.Recovery, error) {
	ctx, span := s.start(ctx, "recover webhook deliveries", q.EndpointID)
	r, err := s.Endpoints.Recover(ctx, q, key)
	span.SetAttributes(attribute.Int("webhooks.queued", r.Queued))
	tracing.End(span, err, "failed")
	return r, err
}
