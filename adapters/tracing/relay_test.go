package tracing_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/google/uuid"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/payments-outbox/payments-outbox/adapters/tracing"
	"github.com/payments-outbox/payments-outbox/application/outbox"
	"github.com/payments-outbox/payments-outbox/application/relay"
)

// oneBatch is a relay.Store that hands out msgs once, and records the
// outcome the relay wrote back.
type oneBatch struct {
	relay.Store // the methods the relay's Step does not call
	msgs        []outbox.Message
	out         relay.BatchResult
}

func (s *oneBatch) ClaimBatch(_ context.Context, _ relay.Claim, fn func([]outbox.Message) (relay.BatchResult, error)) (int, error) {
	if len(s.msgs) == 0 {
		return 0, nil
	}
	out, err := fn(s.msgs)
	s.out, s.msgs = out, nil
	return len(s.out.Published) + len(s.out.Retry) + len(s.out.Dead), err
}

// Heartbeat gives the relay the one partition there is.
func (s *oneBatch) Heartbeat(context.Context, string, time.Duration) (relay.Assignment, error) {
	return relay.Assignment{Partitions: 1, Owned: []int{0}}, nil
}

// failSecond acknowledges the first message of a batch and refuses the rest.
type failSecond struct{}

func (failSecond) Publish(_ context.Context, msgs []outbox.Message) []error {
	errs := make([]error, len(msgs))
	for i := 1; i < len(msgs); i++ {
		errs[i] = errors.New("throttled")
	}
	return errs
}

// A batch with a traced row and an untraced one: the batch is a root linked
// to the traced row only; the traced row's publish is in its own trace, the
// untraced row's under the batch, and a refused publish is an error span.
func TestRelayBatchAndPublishSpans(t *testing.T) {
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	const traced = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	store := &oneBatch{msgs: []outbox.Message{
		{ID: uuid.New(), Type: "payment.created", TraceParent: traced},
		{ID: uuid.New(), Type: "payment.refunded"},
	}}
	r := relay.New(tracing.Relay(store, tp, "payments-events"), failSecond{},
		slog.New(slog.NewTextHandler(io.Discard, nil)), nil, time.Now, relay.Config{})
	if _, err := r.Step(context.Background()); err != nil {
		t.Fatal(err)
	}
	if len(store.out.Published) != 1 || len(store.out.Retry) != 1 {
		t.Fatalf("outcome %+v, want one published and one retried: the decorator must pass the outcome through", store.out)
	}
	spans := map[string]sdktrace.ReadOnlySpan{}
	for _, s := range rec.Ended() {
		spans[s.Name()] = s
	}
	batch, created, refunded := spans["outbox claim"], spans["publish payment.created"], spans["publish payment.refunded"]
	if batch == nil || created == nil || refunded == nil {
		t.Fatalf("spans %v, want outbox claim and one publish per row", names(rec.Ended()))
	}
	parent := tracing.SpanContext(traced, "")
	if batch.Parent().IsValid() || len(batch.Links()) != 1 || batch.Links()[0].SpanContext.SpanID() != parent.SpanID() {
		t.Errorf("outbox claim: parent %v, links %v; want a root linked to the traced row only", batch.Parent(), batch.Links())
	}
	if created.Parent().SpanID() != parent.SpanID() || created.SpanContext().TraceID() != parent.TraceID() || created.Status().Code == codes.Error {
		t.Errorf("publish payment.created: parent %s in trace %s, status %v; want the child of the row's context, not an error",
			created.Parent().SpanID(), created.SpanContext().TraceID(), created.Status())
	}
	if refunded.Parent().SpanID() != batch.SpanContext().SpanID() || refunded.Status().Code != codes.Error || refunded.Status().Description != "throttled" {
		t.Errorf("publish payment.refunded: parent %s, status %v; want the batch's child with the broker's refusal as its error",
			refunded.Parent().SpanID(), refunded.Status())
	}
}
