package main

import (
	"context"
	"fmt"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/payments-outbox/payments-outbox/adapters/postgres/pgtest"
)

// TestInboxCommands drives `ledger inbox stats`, `process --once` and
// `retry` against a database holding a pending row, a parked one and one of
// a type this version does not apply.
func TestInboxCommands(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	env := getenvFrom(map[string]string{"DATABASE_URL": pgtest.NewDatabase(t)})
	if err := run(ctx, []string{"migrate"}, env, io.Discard, nil); err != nil {
		t.Fatal(err)
	}
	pool, err := pgxpool.New(ctx, env("DATABASE_URL"))
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	event := func(id, typ string) string {
		p := uuid.NewString()
		return fmt.Sprintf(`{"specversion":"1.0","id":%q,"type":%q,"dataschema":"https://payments-outbox.example/schemas/events/%[2]s/v1.json","source":"/payments","time":"2026-11-29T12:00:00Z","data":{"payment_id":%q,"amount":100,"currency":"BRL","payer_id":"cus_1","merchant_id":"mer_1"}}`, id, typ, p)
	}
	pending, parked, unknown := uuid.NewString(), uuid.NewString(), uuid.NewString()
	for _, r := range []struct {
		id, typ string
		parked  bool
	}{{pending, "payment.created", false}, {parked, "payment.created", true}, {unknown, "payment.not_yet_known", false}} {
		var parkedAt *time.Time
		attempts := 0
		if r.parked {
			now := time.Now()
			parkedAt, attempts = &now, 10
		}
		if _, err := pool.Exec(ctx, `INSERT INTO inbox_messages (id, type, payload, parked_at, attempts) VALUES ($1, $2, $3, $4, $5)`,
			r.id, r.typ, event(r.id, r.typ), parkedAt, attempts); err != nil {
			t.Fatal(err)
		}
	}
	cmd := func(args ...string) (string, error) {
		var out strings.Builder
		err := run(ctx, args, env, &out, nil)
		return out.String(), err
	}
	wantLines := func(out string, lines ...string) {
		t.Helper()
		fields := strings.Join(strings.Fields(out), " ")
		for _, l := range lines {
			if !strings.Contains(fields, l) {
				t.Errorf("output %q lacks %q", out, l)
			}
		}
	}

	out, err := cmd("inbox", "stats")
	if err != nil {
		t.Fatal(err)
	}
	wantLines(out, "pending 1", "parked 1", "unhandled 1")
	if out, err = cmd("inbox", "process", "--once"); err != nil || !strings.Contains(out, "1 row(s) claimed") {
		t.Fatalf("process --once: got %q, %v; want 1 row claimed", out, err)
	}
	if _, err := cmd("inbox", "retry", "--id", uuid.NewString()); err == nil {
		t.Error("retry of an unknown id: got nil, want an error")
	}
	for _, bad := range [][]string{{"inbox", "retry"}, {"inbox", "retry", "--id", parked, "--all-parked"}, {"inbox", "retry", "--id", "nope"}, {"inbox", "frob"}} {
		if _, err := cmd(bad...); err == nil {
			t.Errorf("%v: got nil, want an error", bad)
		}
	}
	if out, err = cmd("inbox", "retry", "--id", parked); err != nil || !strings.Contains(out, "1 parked row(s)") {
		t.Fatalf("retry --id: got %q, %v", out, err)
	}
	if out, err = cmd("inbox", "process", "--once"); err != nil || !strings.Contains(out, "1 row(s) claimed") {
		t.Fatalf("process --once after retry: got %q, %v", out, err)
	}
	out, err = cmd("inbox", "stats")
	if err != nil {
		t.Fatal(err)
	}
	wantLines(out, "pending 0", "parked 0", "unhandled 1")
	if out, err = cmd("inbox", "retry", "--all-parked"); err != nil || !strings.Contains(out, "0 parked row(s)") {
		t.Errorf("retry --all-parked with none: got %q, %v", out, err)
	}
}
