package ledgerstore_test

import (
	"bytes"
	"context"
	"testing"
)

// The inbox keeps the trace id of the trace context the event carries —
// data the inbox hands the store, which reads no trace from its context —
// and NULL for an event that carries none.
func TestInboxKeepsTheEventsTraceID(t *testing.T) {
	t.Parallel()
	svc, _, pool := newService(t)
	traced, untraced := newPayment(100, "cus_t", "mer_t"), newPayment(100, "cus_t", "mer_t")
	body := bytes.Replace(traced.body(), []byte(`{`), []byte(`{"traceparent":"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",`), 1)
	if _, err := svc.Apply(context.Background(), body); err != nil {
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
		t.Errorf("trace_id of the traced message = %v, want the event's trace id", got)
	}
	if n := count(t, pool, `SELECT count(*) FROM inbox_messages WHERE id = $1 AND trace_id IS NULL`, untraced.id); n != 1 {
		t.Errorf("the untraced message has a trace_id; want NULL")
	}
}
