package main

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/google/uuid"

	"github.com/payments-outbox/payments-outbox/adapters/postgres/pgtest"
	paymentsmigrations "github.com/payments-outbox/payments-outbox/migrations/payments"
)

// TestOutboxCommands runs `payments outbox stats` and `requeue` against a real
// database holding one PENDING and one DEAD row.
func TestOutboxCommands(t *testing.T) {
	t.Parallel()
	pool := pgtest.New(t, paymentsmigrations.FS)
	env := envOf(map[string]string{"DATABASE_URL": pool.Config().ConnString()})
	ctx := context.Background()
	dead := uuid.New()
	_, err := pool.Exec(ctx, `
INSERT INTO outbox (id, type, aggregate_id, payload, status, attempts, last_error) VALUES
    (gen_random_uuid(), 'payment.created', gen_random_uuid(), '{}', 'PENDING', 0, NULL),
    ($1, 'payment.refunded', gen_random_uuid(), '{}', 'DEAD', 10, 'too big')`, dead)
	if err != nil {
		t.Fatal(err)
	}
	outbox := func(args ...string) (string, error) {
		var out bytes.Buffer
		err := runOutbox(ctx, env, args, &out)
		return out.String(), err
	}

	out, err := outbox("stats")
	if err != nil {
		t.Fatalf("stats: %v", err)
	}
	for _, want := range []string{"pending             1", "dead                1", "payment.created", "payment.refunded"} {
		if !strings.Contains(strings.Join(strings.Fields(out), " "), strings.Join(strings.Fields(want), " ")) {
			t.Errorf("stats output lacks %q:\n%s", want, out)
		}
	}

	for _, args := range [][]string{
		{},
		{"bogus"},
		{"stats", "extra"},
		{"requeue"},
		{"requeue", "--id", dead.String(), "--all"},
		{"requeue", "--id", "not-a-uuid"},
		{"partitions", "--set", "0"},
		{"partitions", "--set", "5000"},
		{"partitions", "extra"},
	} {
		if _, err := outbox(args...); err == nil {
			t.Errorf("outbox %q: got no error, want a usage error", args)
		}
	}

	if out, err := outbox("requeue", "--id", dead.String()); err != nil || !strings.Contains(out, dead.String()) {
		t.Errorf("requeue --id: got %q, %v; want the id echoed", out, err)
	}
	var status string
	if err := pool.QueryRow(ctx, `SELECT status FROM outbox WHERE id = $1`, dead).Scan(&status); err != nil || status != "PENDING" {
		t.Errorf("requeued row: got status %q (%v), want PENDING", status, err)
	}
	if out, err := outbox("requeue", "--all"); err != nil || !strings.Contains(out, "requeued 0") {
		t.Errorf("requeue --all with nothing dead: got %q, %v; want 0 requeued", out, err)
	}
	if !strings.Contains(out, "PARTITION") {
		t.Errorf("stats output lacks the per-partition table:\n%s", out)
	}

	if _, err := pool.Exec(ctx, `UPDATE outbox_leases SET owner = 'relay-a', expires_at = now() + interval '1 hour' WHERE partition < 3`); err != nil {
		t.Fatal(err)
	}
	out, err = outbox("partitions")
	if err != nil {
		t.Fatalf("partitions: %v", err)
	}
	for _, want := range []string{"partitions 64", "partitions nobody holds 61", "relay-a 3: 0-2"} {
		if !strings.Contains(strings.Join(strings.Fields(out), " "), want) {
			t.Errorf("partitions output lacks %q:\n%s", want, out)
		}
	}
	if out, err := outbox("partitions", "--set", "8"); err != nil || !strings.Contains(out, "done: 8 partitions") {
		t.Errorf("partitions --set 8: got %q, %v", out, err)
	}
	if out, err := outbox("partitions"); err != nil || !strings.Contains(strings.Join(strings.Fields(out), " "), "partitions nobody holds 8") {
		t.Errorf("after --set 8: got %q, %v; want 8 free partitions", out, err)
	}
}
