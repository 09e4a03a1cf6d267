package ledgerstore_test

import (
	"context"
	"testing"

	"github.com/payments-outbox/payments-outbox/adapters/tracing"
)

// The inbox keeps the trace id of the message it recorded, read from the
// handler's context — the store starts no span of its own (adapters/tracing
// decorates it) — and NULL for a message that carried no trace context.
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
