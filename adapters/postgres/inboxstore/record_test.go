package inboxstore_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/payments-outbox/payments-outbox/adapters/postgres/inboxstore"
	"github.com/payments-outbox/payments-outbox/adapters/postgres/pgtest"
	"github.com/payments-outbox/payments-outbox/application/inbox"
	ledgermigrations "github.com/payments-outbox/payments-outbox/migrations/ledger"
)

// TestRecordReturnsCommitFailures checks the error of a COMMIT that a
// deferred constraint refuses reaches the caller, and nothing is kept: the
// consumer must never acknowledge a message whose commit failed.
func TestRecordReturnsCommitFailures(t *testing.T) {
	t.Parallel()
	pool := pgtest.New(t, ledgermigrations.FS)
	ctx := context.Background()
	_, err := pool.Exec(ctx, `
		CREATE FUNCTION refuse_at_commit() RETURNS trigger LANGUAGE plpgsql AS $$
		BEGIN RAISE EXCEPTION 'refused at commit'; END; $$;
		CREATE CONSTRAINT TRIGGER refuse_at_commit AFTER INSERT ON inbox_messages
			DEFERRABLE INITIALLY DEFERRED FOR EACH ROW
			WHEN (NEW.type = 'refuse-at-commit') EXECUTE FUNCTION refuse_at_commit();`)
	if err != nil {
		t.Fatal(err)
	}
	// The consumer's repository is the transaction itself: apply can send a
	// statement and swallow its error.
	store := inboxstore.New(pool, func(tx inboxstore.Tx) inboxstore.Tx { return tx })
	ran := false
	inserted, err := store.Record(ctx, inbox.Message{ID: uuid.NewString(), Type: "refuse-at-commit", Payload: []byte(`{}`), ReceivedAt: time.Now()},
		func(context.Context, inboxstore.Tx) (string, error) {
			ran = true
			return "", nil
		})
	if err == nil || inserted || !ran {
		t.Fatalf("Record: got inserted %v, %v (apply ran: %v); want the commit's error after apply ran", inserted, err, ran)
	}
	var n int
	if err := pool.QueryRow(ctx, `SELECT count(*) FROM inbox_messages`).Scan(&n); err != nil || n != 0 {
		t.Errorf("inbox rows after a failed commit: got %d (%v), want 0", n, err)
	}

	// A statement error inside the transaction aborts it; the commit must
	// not pretend otherwise even if apply swallowed the error.
	_, err = store.Record(ctx, inbox.Message{ID: uuid.NewString(), Type: "x", Payload: []byte(`{}`), ReceivedAt: time.Now()},
		func(ctx context.Context, tx inboxstore.Tx) (string, error) {
			_, _ = tx.Exec(ctx, `SELECT 1/0`)
			return "", nil
		})
	if !errors.Is(err, pgx.ErrTxCommitRollback) {
		t.Errorf("commit after a failed statement: got %v, want ErrTxCommitRollback", err)
	}
	if err := pool.QueryRow(ctx, `SELECT count(*) FROM inbox_messages`).Scan(&n); err != nil || n != 0 {
		t.Errorf("inbox rows after a rolled-back commit: got %d (%v), want 0", n, err)
	}
	// And the pool's connections are still usable.
	for range 10 {
		if err := pool.Ping(ctx); err != nil {
			t.Fatal(err)
		}
	}
}
