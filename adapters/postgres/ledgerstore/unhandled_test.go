package ledgerstore_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/payments-outbox/payments-outbox/application/inbox"
	"github.com/payments-outbox/payments-outbox/application/ledgers"
	"github.com/payments-outbox/payments-outbox/application/retention"
)

type deletedCounter struct{ calls, rows int }

func (c *deletedCounter) UnhandledDeleted(n int) { c.calls++; c.rows += n }

// unhandledBody is a message of a type this version does not apply, exactly
// size bytes long.
func unhandledBody(t *testing.T, id string, size int) []byte {
	t.Helper()
	head := fmt.Sprintf(`{"specversion":"1.0","id":%q,"type":"payment.not_yet_known","source":"/payments","data":{"pad":"`, id)
	return []byte(head + strings.Repeat("x", size-len(head)-len(`"}}`)) + `"}}`)
}

// TestUnhandledRowsExpireAtTheEndOfTheirWindow: the inbox records an
// unhandled message up to inbox.MaxUnhandledSize and nothing past it; the
// retention loop deletes the unhandled rows older than the window in bounded
// batches, logged and counted per batch, and passes over a row a processor
// holds. Rows of a type this version applies, pending or parked, parked rows
// of any type and processed rows stay, however old.
func TestUnhandledRowsExpireAtTheEndOfTheirWindow(t *testing.T) {
	t.Parallel()
	svc, store, pool := newService(t)
	ctx := context.Background()

	recent := uuid.NewString()
	if res, err := svc.Record(ctx, unhandledBody(t, recent, inbox.MaxUnhandledSize)); err != nil || res.Disposition != inbox.Ignored {
		t.Fatalf("unhandled, at the cap: got %v, %v; want ignored", res.Disposition, err)
	}
	tooBig := uuid.NewString()
	if _, err := svc.Record(ctx, unhandledBody(t, tooBig, inbox.MaxUnhandledSize+1)); !errors.Is(err, inbox.ErrMalformed) {
		t.Errorf("unhandled, a byte over the cap: got %v, want ErrMalformed (the DLQ)", err)
	}
	if n := count(t, pool, `SELECT count(*) FROM inbox_messages WHERE id = $1`, tooBig); n != 0 {
		t.Errorf("unhandled, a byte over the cap: %d rows, want none", n)
	}

	old := time.Now().Add(-20 * 24 * time.Hour)
	type inboxState struct {
		typ               string
		processed, parked bool
	}
	rows := map[string]inboxState{}
	add := func(s inboxState) string {
		id := uuid.NewString()
		rows[id] = s
		var processed, parked *time.Time
		if s.processed {
			processed = &old
		}
		if s.parked {
			parked = &old
		}
		if _, err := pool.Exec(ctx, `INSERT INTO inbox_messages (id, type, payload, received_at, processed_at, parked_at) VALUES ($1, $2, '{}', $3, $4, $5)`,
			id, s.typ, old, processed, parked); err != nil {
			t.Fatal(err)
		}
		return id
	}
	var expired []string
	for range 3 {
		expired = append(expired, add(inboxState{typ: "payment.not_yet_known"}))
	}
	held := add(inboxState{typ: "payment.not_yet_known"})
	kept := []string{
		recent, held,
		add(inboxState{typ: "payment.not_yet_known", parked: true}),
		add(inboxState{typ: "payment.not_yet_known", processed: true}), // an ignored type's row: INBOX_RETENTION's
		add(inboxState{typ: ledgers.TypePaymentCreated}),
		add(inboxState{typ: ledgers.TypePaymentCreated, parked: true}),
		add(inboxState{typ: ledgers.TypePaymentRefunded, processed: true}),
	}

	// A processor of a version that applies payment.not_yet_known holds one row.
	claim, err := pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer claim.Rollback(ctx) // a no-op once committed
	if _, err := claim.Exec(ctx, `SELECT 1 FROM inbox_messages WHERE id = $1 FOR UPDATE`, held); err != nil {
		t.Fatal(err)
	}

	var logs bytes.Buffer
	counter := &deletedCounter{}
	proc := inbox.NewProcessor(store, ledgers.Handler{}, schemas(t), slog.New(slog.NewJSONHandler(&logs, nil)), nil, time.Now, inbox.ProcessorConfig{})
	del := proc.ExpireUnhandled(store, counter)
	// Waiting on the held row would block until the claim ends: the bound
	// turns that failure into an error instead of a hung test.
	sctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	n, err := retention.Sweep(sctx, del, time.Now().Add(-15*24*time.Hour), 2)
	if err != nil || n != 3 {
		t.Fatalf("Sweep: got %d, %v; want the 3 old unhandled rows nobody holds", n, err)
	}
	if counter.calls != 2 || counter.rows != 3 {
		t.Errorf("counted %d rows in %d calls, want 3 in 2 (batches of 2)", counter.rows, counter.calls)
	}
	if lines := strings.Count(logs.String(), "unhandled inbox rows deleted unapplied"); lines != 2 || !strings.Contains(logs.String(), `"deleted":2`) || !strings.Contains(logs.String(), `"deleted":1`) {
		t.Errorf("logs: got %d lines, want 2, one per batch with its count:\n%s", lines, logs.String())
	}
	for _, id := range expired {
		if n := count(t, pool, `SELECT count(*) FROM inbox_messages WHERE id = $1`, id); n != 0 {
			t.Errorf("old unhandled row %s is still there", id)
		}
	}
	for _, id := range kept {
		if n := count(t, pool, `SELECT count(*) FROM inbox_messages WHERE id = $1`, id); n != 1 {
			t.Errorf("row %s (%+v) was deleted; want it kept", id, rows[id])
		}
	}

	// The processor applies the row it held: it is no longer unhandled, and
	// the next sweep leaves it.
	if _, err := claim.Exec(ctx, `UPDATE inbox_messages SET processed_at = now() WHERE id = $1`, held); err != nil {
		t.Fatal(err)
	}
	if err := claim.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if n, err := retention.Sweep(sctx, del, time.Now().Add(-15*24*time.Hour), 2); err != nil || n != 0 {
		t.Errorf("Sweep after the processor applied the held row: got %d, %v; want 0", n, err)
	}
	if n := count(t, pool, `SELECT count(*) FROM inbox_messages WHERE id = $1 AND processed_at IS NOT NULL`, held); n != 1 {
		t.Error("the row the processor applied is gone")
	}
}
