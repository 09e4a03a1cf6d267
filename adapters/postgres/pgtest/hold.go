package pgtest

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// Hold is a transaction holding an EXCLUSIVE lock on one table: reads of
// the table go through, and every write to it waits until Release. A test
// stops a request in the middle of its transaction with it — after what the
// request reads and locks, before it writes the table — to send another
// beside it, an overlap no sleep could make certain.
type Hold struct {
	pool  *pgxpool.Pool
	tx    pgx.Tx
	table string
}

// HoldWrites begins a transaction on pool that locks table against writes
// until Release, or until the test ends.
func HoldWrites(t testing.TB, pool *pgxpool.Pool, table string) *Hold {
	t.Helper()
	ctx := context.Background()
	tx, err := pool.Begin(ctx)
	if err != nil {
		t.Fatalf("pgtest: hold %s: %v", table, err)
	}
	t.Cleanup(func() { _ = tx.Rollback(ctx) })
	if _, err := tx.Exec(ctx, "LOCK TABLE "+pgx.Identifier{table}.Sanitize()+" IN EXCLUSIVE MODE"); err != nil {
		t.Fatalf("pgtest: hold %s: %v", table, err)
	}
	return &Hold{pool: pool, tx: tx, table: table}
}

// AwaitWriter returns once another transaction waits to write the table:
// the request under test has reached its write and holds whatever it took
// before it. It fails t after a minute.
func (h *Hold) AwaitWriter(t testing.TB) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		var waiting bool
		err := h.pool.QueryRow(context.Background(),
			`SELECT EXISTS (SELECT 1 FROM pg_locks WHERE relation = $1::regclass AND NOT granted)`, h.table).Scan(&waiting)
		switch {
		case err != nil:
			t.Fatalf("pgtest: await a writer of %s: %v", h.table, err)
		case waiting:
			return
		case time.Now().After(deadline):
			t.Fatalf("pgtest: no transaction came to write %s within a minute", h.table)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// Release commits the hold's transaction: the writers waiting go on.
func (h *Hold) Release(t testing.TB) {
	t.Helper()
	if err := h.tx.Commit(context.Background()); err != nil {
		t.Fatalf("pgtest: release %s: %v", h.table, err)
	}
}
