package ledgerstore_test

import (
	"bytes"
	"context"
	"testing"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/payments-outbox/payments-outbox/adapters/postgres/ledgerstore"
	"github.com/payments-outbox/payments-outbox/adapters/postgres/pgtest"
	"github.com/payments-outbox/payments-outbox/adapters/tracing"
	"github.com/payments-outbox/payments-outbox/application/inbox"
	ledgermigrations "github.com/payments-outbox/payments-outbox/migrations/ledger"
)

// The inbox keeps the trace id of the message it recorded, from the
// handler's context, with the ledger's own tracing off (this store has no
// tracer provider), and NULL for a message that carried no trace context.
func TestInboxKeepsTheMessagesTraceID(t *testing.T) {
	t.Parallel()
	svc, _, pool := newService(t)
	traced, untraced := newPayment(100, "cus_t", "mer_t"), newPayment(100, "cus_t", "mer_t")
	ctx := tracing.Extract(context.Background(), "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", "")
	if _, err := svc.Apply(ctx, traced.body()); err != nil {
		t.Fatal(err)
	}
	if _, err := svc.Apply(context.Background(), untraced.body()); err != nil {
		t.Fatal(err)
	}
	var got *string
	if err := pool.QueryRow(context.Background(), `SELECT trace_id FROM inbox_messages WHERE id = $1`, traced.id).Scan(&got); err != nil {
		t.Fatal(err)
	}
	if got == nil || *got != "4bf92f3577b34da6a3ce929d0e0e4736" {
		t.Errorf("trace_id of the traced message = %v, want the message's trace id", got)
	}
	if n := count(t, pool, `SELECT count(*) FROM inbox_messages WHERE id = $1 AND trace_id IS NULL`, untraced.id); n != 1 {
		t.Errorf("the untraced message has a trace_id; want NULL")
	}
}

// In async mode the processor's posting, made later in another transaction,
// continues the trace of the write that recorded the payment: the child of
// the context the stored event carries. A row whose event carries none makes
// no span (it would start a trace of its own per row).
func TestProcessorContinuesTheEventsTrace(t *testing.T) {
	t.Parallel()
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	pool := pgtest.New(t, ledgermigrations.FS)
	store := ledgerstore.New(pool, ledgerstore.WithTracerProvider(tp))
	svc := newBooks(t, store)

	const parent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	traced, untraced := newPayment(100, "cus_p", "mer_p"), newPayment(200, "cus_p", "mer_p")
	body := bytes.Replace(traced.body(), []byte(`{`), []byte(`{"traceparent":"`+parent+`",`), 1)
	record(t, svc, body, untraced.body())
	drain(t, newProcessor(t, store, nil, inbox.ProcessorConfig{}))
	if got := balance(t, svc, "merchant:mer_p"); got != 300 {
		t.Fatalf("mer_p balance %d after the processor, want 300: both rows applied", got)
	}

	var posts []sdktrace.ReadOnlySpan
	for _, s := range rec.Ended() {
		if s.Name() == "post ledger transaction" && !s.Parent().Equal(trace.SpanContext{}) && s.Parent().IsRemote() {
			posts = append(posts, s)
		}
	}
	want := tracing.SpanContext(parent, "")
	if len(posts) != 1 || posts[0].SpanContext().TraceID() != want.TraceID() || posts[0].Parent().SpanID() != want.SpanID() {
		t.Fatalf("processor postings traced: %d %v; want one, the child of the stored event's context %s", len(posts), posts, want.SpanID())
	}
}
