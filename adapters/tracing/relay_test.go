package tracing_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/google/uuid"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/payments-outbox/payments-outbox/adapters/tracing"
	"github.com/payments-outbox/payments-outbox/application/outbox"
	"github.com/payments-outbox/payments-outbox/application/outbox/partition"
	"github.com/payments-outbox/payments-outbox/internal/logtest"
)

// oneBatch is an outbox.Store that hands out msgs once, and records the
// outcome the relay wrote back.
type oneBatch struct {
	msgs []outbox.Message
	out  outbox.Result
}

func (s *oneBatch) Claim(ctx context.Context, _ int, publish func(context.Context, []outbox.Message) outbox.Result) (int, error) {
	if len(s.msgs) == 0 {
		return 0, nil
	}
	s.out, s.msgs = publish(ctx, s.msgs), nil
	return len(s.out.Published) + len(s.out.Retry) + len(s.out.Dead), nil
}

// inOrder is the same batch as a partition.Store.
type inOrder struct {
	partition.Store // the methods the traced claim does not call
	batch           *oneBatch
}

func (s inOrder) ClaimInOrder(ctx context.Context, c partition.Claim, publish func(context.Context, []outbox.Message) outbox.Result) (int, error) {
	return s.batch.Claim(ctx, c.Limit, publish)
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
// Ordered mode's claims are traced alike.
func TestRelayBatchAndPublishSpans(t *testing.T) {
	for _, mode := range []string{"unordered", "ordered"} {
		t.Run(mode, func(t *testing.T) { testRelaySpans(t, mode == "ordered") })
	}
}

func testRelaySpans(t *testing.T, ordered bool) {
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	const traced = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	store := &oneBatch{msgs: []outbox.Message{
		{ID: uuid.New(), Type: "payment.created", TraceParent: traced},
		{ID: uuid.New(), Type: "payment.refunded"},
	}}
	claim := func(ctx context.Context, publish func(context.Context, []outbox.Message) outbox.Result) {
		t.Helper()
		var err error
		if ordered {
			_, err = tracing.OrderedRelay(inOrder{batch: store}, tp, "payments-events").ClaimInOrder(ctx, partition.Claim{Limit: 10}, publish)
		} else {
			_, err = tracing.Relay(store, tp, "payments-events").Claim(ctx, 10, publish)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	r := outbox.NewRelay(claimFunc(claim), failSecond{},
		logtest.Discard(), nil, time.Now, outbox.Config{})
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

// claimFunc is an outbox.Store made of a function that claims through one
// of the traced stores.
type claimFunc func(ctx context.Context, publish func(context.Context, []outbox.Message) outbox.Result)

func (f claimFunc) Claim(ctx context.Context, _ int, publish func(context.Context, []outbox.Message) outbox.Result) (int, error) {
	f(ctx, publish)
	return 0, nil
}
