package webhookstracing_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/google/uuid"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/payments-outbox/payments-outbox/adapters/tracing"
	"github.com/payments-outbox/payments-outbox/adapters/webhookstracing"
	"github.com/payments-outbox/payments-outbox/application/access"
	"github.com/payments-outbox/payments-outbox/application/inbox"
	"github.com/payments-outbox/payments-outbox/application/webhooks"
	"github.com/payments-outbox/payments-outbox/application/webhooks/webhookstest"
	"github.com/payments-outbox/payments-outbox/internal/logtest"
)

// eventParent is the trace context a stored event carries in the tests
// below: the write that recorded its payment.
const eventParent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"

func ended(rec *tracetest.SpanRecorder, name string) []sdktrace.ReadOnlySpan {
	var out []sdktrace.ReadOnlySpan
	for _, s := range rec.Ended() {
		if s.Name() == name {
			out = append(out, s)
		}
	}
	return out
}

type anySchema struct{}

func (anySchema) Validate(string, string, []byte) error { return nil }

// answering is a receiver that answers every attempt with status.
type answering int

func (a answering) Send(context.Context, webhooks.Request) webhooks.Response {
	return webhooks.Response{StatusCode: int(a)}
}

// webhooksPipeline is the webhooks service's path with every port traced as
// cmd/webhooks wires it, on the in-memory store: the consumer's record, the
// processor's fan-out, the worker's claim and attempt.
type webhooksPipeline struct {
	rec    *tracetest.SpanRecorder
	tp     *sdktrace.TracerProvider
	recv   *inbox.Service[webhooks.Fanout, webhooks.Event]
	proc   *inbox.Processor[webhooks.Fanout, webhooks.Event]
	worker *webhooks.Worker
}

func newWebhooksPipeline(t *testing.T, receiver webhooks.Sender) webhooksPipeline {
	t.Helper()
	p := webhooksPipeline{rec: tracetest.NewSpanRecorder()}
	p.tp = sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(p.rec))
	store := webhookstest.NewFakeStore()
	sealer, err := webhooks.NewSealer([]byte("0123456789abcdef0123456789abcdef"))
	if err != nil {
		t.Fatal(err)
	}
	log := logtest.Discard()
	svc := webhooks.NewService(webhookstracing.Endpoints(store, p.tp), sealer, time.Now, webhooks.Config{})
	ctx, request := p.tp.Tracer("test").Start(context.Background(), "POST /webhook_endpoints")
	if _, err := svc.Create(ctx, webhooks.CreateEndpoint{Principal: access.MerchantPrincipal("key_w", "mer_w"), URL: "https://example.com/hook", EnabledEvents: []string{"*"}}); err != nil {
		t.Fatal(err)
	}
	request.End()
	in := webhookstracing.Inbox(store, p.tp)
	p.proc = inbox.NewProcessor(in, webhooks.Handler{}, anySchema{}, log, nil, time.Now, inbox.ProcessorConfig{})
	p.recv = inbox.NewService(in, p.proc, time.Now, inbox.Config{Mode: inbox.Async})
	p.worker = webhooks.NewWorker(webhookstracing.Deliveries(store, p.tp), webhookstracing.Sender(receiver, p.tp), sealer,
		webhooks.NewSchedule(time.Minute), log, nil, time.Now, webhooks.WorkerConfig{})
	return p
}

// deliver receives an event of mer_w carrying traceparent ("" for none) in
// the consumer's processing span, fans it out and makes its attempt.
func (p webhooksPipeline) deliver(t *testing.T, traceparent string) {
	t.Helper()
	trace := ""
	if traceparent != "" {
		trace = fmt.Sprintf(`"traceparent":%q,`, traceparent)
	}
	body := fmt.Sprintf(`{"specversion":"1.0","id":%q,"type":"payment.created",%s"time":%q,"dataschema":"https://payments-outbox.example/schemas/events/payment.created/v1.json","data":{"merchant_id":"mer_w"}}`,
		uuid.NewString(), trace, time.Now().UTC().Format(time.RFC3339))
	ctx, process := p.tp.Tracer("test").Start(tracing.Extract(context.Background(), traceparent, ""), "process payment.created")
	if res, err := p.recv.Receive(ctx, []byte(body)); err != nil || res.Disposition != inbox.Recorded {
		t.Fatalf("Receive: %v, %v; want recorded", res.Disposition, err)
	}
	process.End()
	if _, err := p.proc.Drain(context.Background()); err != nil {
		t.Fatal(err)
	}
	if n, err := p.worker.Step(context.Background()); err != nil || n != 1 {
		t.Fatalf("worker Step: %d, %v; want one delivery attempted", n, err)
	}
}

// TestWebhooksTraceShowsTheDelivery: what a trace of the webhooks service
// shows. The consumer's transaction is under its processing span; the
// fan-out, made later by the processor, and the attempt, made later still
// by a worker, both continue the trace the event carries — the write that
// recorded the payment; the worker's claim is a trace of its own linked to
// it; an attempt that got no 2xx answer says so; the merchant API's write is
// under its request.
func TestWebhooksTraceShowsTheDelivery(t *testing.T) {
	p := newWebhooksPipeline(t, answering(503))
	p.deliver(t, eventParent)
	want := tracing.SpanContext(eventParent, "")

	one := func(name string) sdktrace.ReadOnlySpan {
		t.Helper()
		spans := ended(p.rec, name)
		if len(spans) != 1 {
			t.Fatalf("%d %q spans, want 1", len(spans), name)
		}
		return spans[0]
	}
	request, create := one("POST /webhook_endpoints"), one("create webhook endpoint")
	if create.Parent().SpanID() != request.SpanContext().SpanID() {
		t.Errorf("create webhook endpoint: parent %s, want the request %s", create.Parent().SpanID(), request.SpanContext().SpanID())
	}
	process, tx := one("process payment.created"), one("webhooks transaction")
	if tx.Parent().SpanID() != process.SpanContext().SpanID() || tx.SpanContext().TraceID() != want.TraceID() {
		t.Errorf("webhooks transaction: parent %s in trace %s, want the processing span %s in the event's trace %s",
			tx.Parent().SpanID(), tx.SpanContext().TraceID(), process.SpanContext().SpanID(), want.TraceID())
	}
	for _, name := range []string{"enqueue webhook deliveries", "send webhook"} {
		s := one(name)
		if s.SpanContext().TraceID() != want.TraceID() || s.Parent().SpanID() != want.SpanID() || !s.Parent().IsRemote() {
			t.Errorf("%s: parent %s in trace %s, want the child of the event's context %s", name, s.Parent().SpanID(), s.SpanContext().TraceID(), want.SpanID())
		}
	}
	if send := one("send webhook"); send.SpanKind() != trace.SpanKindClient || send.Status().Code != codes.Error {
		t.Errorf("send webhook: kind %s, status %v; want a client span with an error status for a 503", send.SpanKind(), send.Status())
	}
	claim := one("claim webhook deliveries")
	if claim.Parent().IsValid() || len(claim.Links()) != 1 || claim.Links()[0].SpanContext.SpanID() != want.SpanID() {
		t.Errorf("claim webhook deliveries: parent %v, links %v; want a root linked to the event's context", claim.Parent(), claim.Links())
	}
}

// An event that carries no trace context makes no fan-out or attempt span
// (each would start a trace of its own), and an idle worker's poll makes no
// claim span.
func TestWebhooksTraceNothingOfAnUntracedEvent(t *testing.T) {
	p := newWebhooksPipeline(t, answering(200))
	p.deliver(t, "")
	if n, err := p.worker.Step(context.Background()); err != nil || n != 0 {
		t.Fatalf("idle Step: %d, %v; want nothing claimed", n, err)
	}
	for _, name := range []string{"enqueue webhook deliveries", "send webhook"} {
		if n := len(ended(p.rec, name)); n != 0 {
			t.Errorf("%d %q spans of an untraced event, want none", n, name)
		}
	}
	if n := len(ended(p.rec, "claim webhook deliveries")); n != 1 {
		t.Errorf("%d claim spans, want 1: the claim that leased the delivery, none for the idle poll", n)
	}
}
