package inboxstore_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/payments-outbox/payments-outbox/adapters/postgres/pgtest"
	"github.com/payments-outbox/payments-outbox/application/inbox"
	ledgermigrations "github.com/payments-outbox/payments-outbox/migrations/ledger"
)

// TestTransactReturnsCommitFailures checks the error of a COMMIT that a
// deferred constraint refuses reaches the caller, and nothing is kept: the
// consumer must never acknowledge a message whose commit failed.
func TestTransactReturnsCommitFailures(t *testing.T) {
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
	store := newStore(pool)
	id := uuid.NewString()
	err = store.Transact(ctx, func(ctx context.Context, in inbox.Inbox, _ struct{}) error {
		ok, err := in.Insert(ctx, inbox.Message{ID: id, Type: "refuse-at-commit", Payload: []byte(`{}`), ReceivedAt: time.Now()})
		if err == nil && !ok {
			t.Error("insert: got false, want true")
		}
		return err
	})
	if err == nil {
		t.Fatal("Transact: got nil, want the commit's error")
	}
	var n int
	if err := pool.QueryRow(ctx, `SELECT count(*) FROM inbox_messages`).Scan(&n); err != nil || n != 0 {
		t.Errorf("inbox rows after a failed commit: got %d (%v), want 0", n, err)
	}

	// A statement error inside the transaction aborts it; the commit must
	// not pretend otherwise even if fn swallowed the error.
	err = store.Transact(ctx, func(ctx context.Context, in inbox.Inbox, _ struct{}) error {
		_, _ = in.Insert(ctx, inbox.Message{ID: "not-a-uuid", Type: "x", Payload: []byte(`{}`), ReceivedAt: time.Now()})
		return nil
	})
	if !errors.Is(err, pgx.ErrTxCommitRollback) {
		t.Errorf("commit after a failed statement: got %v, want ErrTxCommitRollback", err)
	}
	// And the pool's connections are still usable.
	for range 10 {
		if err := pool.Ping(ctx); err != nil {
			t.Fatal(err)
		}
	}
}
