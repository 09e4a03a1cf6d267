package postgres_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/payments-outbox/payments-outbox/adapters/postgres"
	"github.com/payments-outbox/payments-outbox/adapters/postgres/pgtest"
)

// wire counts what a pool's connections write to the server and can drop it,
// standing in for a server that stopped answering.
type wire struct {
	writes atomic.Int64
	drop   atomic.Bool
}

type wireConn struct {
	net.Conn
	w *wire
}

func (c *wireConn) Write(p []byte) (int, error) {
	if c.w.drop.Load() {
		return len(p), nil // lost on the way: the server never answers
	}
	c.w.writes.Add(1)
	return c.Conn.Write(p)
}

// txPool returns a pool of ONE connection on a fresh database with a table t
// (id int primary key), and the wire under it. One connection lets a test tell
// whether the pool kept it (its backend pid is unchanged): pgxpool destroys a
// connection released inside a transaction, so a kept one was rolled back.
func txPool(t *testing.T) (*pgxpool.Pool, *wire) {
	t.Helper()
	cfg, err := pgxpool.ParseConfig(pgtest.NewDatabase(t))
	if err != nil {
		t.Fatal(err)
	}
	cfg.MaxConns = 1
	w := &wire{}
	cfg.ConnConfig.DialFunc = func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := (&net.Dialer{}).DialContext(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		return &wireConn{Conn: c, w: w}, nil
	}
	pool, err := pgxpool.NewWithConfig(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	if _, err := pool.Exec(context.Background(), `CREATE TABLE t (id int PRIMARY KEY CHECK (id > 0))`); err != nil {
		t.Fatal(err)
	}
	return pool, w
}

func backendPID(t *testing.T, pool *pgxpool.Pool) uint32 {
	t.Helper()
	var pid uint32
	if err := pool.QueryRow(context.Background(), `SELECT pg_backend_pid()`).Scan(&pid); err != nil {
		t.Fatal(err)
	}
	return pid
}

func rows(t *testing.T, pool *pgxpool.Pool) int {
	t.Helper()
	var n int
	if err := pool.QueryRow(context.Background(), `SELECT count(*) FROM t`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// openTransactions counts the database's sessions left inside a transaction.
func openTransactions(t *testing.T, pool *pgxpool.Pool) int {
	t.Helper()
	var n int
	if err := pool.QueryRow(context.Background(), `SELECT count(*) FROM pg_stat_activity
		WHERE datname = current_database() AND state LIKE 'idle in transaction%'`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

func TestTransactCommits(t *testing.T) {
	t.Parallel()
	pool, _ := txPool(t)
	ctx := context.Background()
	err := postgres.Transact(ctx, pool, func(tx *postgres.Tx) error {
		if _, err := tx.Exec(ctx, `INSERT INTO t VALUES (1)`); err != nil {
			return err
		}
		var b pgx.Batch
		b.Queue(`INSERT INTO t VALUES (2) RETURNING id`)
		br := tx.SendBatch(ctx, &b)
		var id int
		if err := br.QueryRow().Scan(&id); err != nil || id != 2 {
			t.Errorf("RETURNING in the transaction: got %d, %v; want 2", id, err)
		}
		if err := br.Close(); err != nil {
			return err
		}
		tx.QueueAtCommit(`INSERT INTO t VALUES ($1)`, 3)
		return nil
	})
	if err != nil {
		t.Fatalf("Transact: %v", err)
	}
	if n := rows(t, pool); n != 3 {
		t.Errorf("rows after commit: got %d, want 3", n)
	}
}

func TestTransactRollsBackWhenFnFails(t *testing.T) {
	t.Parallel()
	pool, _ := txPool(t)
	ctx := context.Background()
	pid := backendPID(t, pool)
	boom := errors.New("boom")
	err := postgres.Transact(ctx, pool, func(tx *postgres.Tx) error {
		if _, err := tx.Exec(ctx, `INSERT INTO t VALUES (1)`); err != nil {
			return err
		}
		tx.QueueAtCommit(`INSERT INTO t VALUES (2)`) // never sent
		return boom
	})
	if !errors.Is(err, boom) {
		t.Fatalf("Transact: got %v, want fn's error", err)
	}
	if n := rows(t, pool); n != 0 {
		t.Errorf("rows after a failed fn: got %d, want 0", n)
	}
	if got := backendPID(t, pool); got != pid {
		t.Errorf("the connection was replaced (pid %d, was %d): it was released inside the transaction", got, pid)
	}
}

// TestTransactCommitFailures fails the statements that travel with COMMIT, and
// the COMMIT itself: nothing of the transaction may stay, the error must reach
// the caller, and no connection may be left inside a transaction.
func TestTransactCommitFailures(t *testing.T) {
	t.Parallel()
	pool, _ := txPool(t)
	ctx := context.Background()
	if _, err := pool.Exec(ctx, `
		CREATE FUNCTION refuse() RETURNS trigger LANGUAGE plpgsql AS $$
		BEGIN RAISE EXCEPTION 'refused at commit'; END $$;
		CREATE CONSTRAINT TRIGGER refuse AFTER INSERT ON t DEFERRABLE INITIALLY DEFERRED
			FOR EACH ROW WHEN (NEW.id = 99) EXECUTE FUNCTION refuse()`); err != nil {
		t.Fatal(err)
	}
	pid := backendPID(t, pool)
	tests := []struct {
		name string
		fn   func(*postgres.Tx) error
		want error // nil: any error
	}{
		{"a statement sent with COMMIT fails", func(tx *postgres.Tx) error {
			if _, err := tx.Exec(ctx, `INSERT INTO t VALUES (1)`); err != nil {
				return err
			}
			tx.QueueAtCommit(`INSERT INTO t VALUES ($1)`, 2)
			tx.QueueAtCommit(`INSERT INTO t VALUES ($1)`, -1) // the CHECK refuses it
			tx.QueueAtCommit(`INSERT INTO t VALUES ($1)`, 3)
			return nil
		}, nil},
		{"the only statements, sent with BEGIN and COMMIT, fail", func(tx *postgres.Tx) error {
			tx.QueueAtCommit(`INSERT INTO t VALUES ($1)`, 1)
			tx.QueueAtCommit(`INSERT INTO t VALUES ($1)`, 1) // duplicate key
			return nil
		}, nil},
		{"a deferred constraint fails the COMMIT", func(tx *postgres.Tx) error {
			_, err := tx.Exec(ctx, `INSERT INTO t VALUES (99)`)
			return err
		}, nil},
		{"fn swallowed a failed statement", func(tx *postgres.Tx) error {
			if _, err := tx.Exec(ctx, `INSERT INTO t VALUES (1)`); err != nil {
				return err
			}
			_, _ = tx.Exec(ctx, `INSERT INTO t VALUES (-1)`)
			return nil
		}, pgx.ErrTxCommitRollback},
	}
	for _, tt := range tests {
		err := postgres.Transact(ctx, pool, tt.fn)
		if err == nil || (tt.want != nil && !errors.Is(err, tt.want)) {
			t.Errorf("%s: got %v, want an error (%v)", tt.name, err, tt.want)
		}
		if n := rows(t, pool); n != 0 {
			t.Errorf("%s: %d rows committed, want 0", tt.name, n)
		}
		if n := openTransactions(t, pool); n != 0 {
			t.Errorf("%s: %d sessions left idle in a transaction", tt.name, n)
		}
		if got := backendPID(t, pool); got != pid {
			t.Errorf("%s: the connection was replaced (pid %d, was %d): it was released inside the transaction", tt.name, got, pid)
			pid = got
		}
	}
}

// TestTransactRollsBackAfterCancel ends the caller's context inside fn, as a
// shutdown does: the rollback must still run, so the row lock is released at
// once and the connection goes back to the pool outside any transaction.
func TestTransactRollsBackAfterCancel(t *testing.T) {
	t.Parallel()
	pool, _ := txPool(t)
	if _, err := pool.Exec(context.Background(), `INSERT INTO t VALUES (1)`); err != nil {
		t.Fatal(err)
	}
	pid := backendPID(t, pool)
	ctx, cancel := context.WithCancel(context.Background())
	err := postgres.Transact(ctx, pool, func(tx *postgres.Tx) error {
		if _, err := tx.Exec(ctx, `SELECT id FROM t WHERE id = 1 FOR UPDATE`); err != nil {
			return err
		}
		cancel()
		return ctx.Err()
	})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("Transact: got %v, want context.Canceled", err)
	}
	if got := backendPID(t, pool); got != pid {
		t.Errorf("the connection was replaced (pid %d, was %d): the rollback did not run", got, pid)
	}
	if _, err := pool.Exec(context.Background(), `SELECT id FROM t WHERE id = 1 FOR UPDATE NOWAIT`); err != nil {
		t.Errorf("the row lock is still held after Transact returned: %v", err)
	}
}

// TestTransactRollbackIsBounded makes the server stop answering before the
// rollback, after the caller's context ended: Transact must still try the
// rollback, and give up after its own bound instead of hanging.
func TestTransactRollbackIsBounded(t *testing.T) {
	t.Parallel()
	pool, w := txPool(t)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan time.Duration, 1)
	go func() {
		start := time.Now()
		_ = postgres.Transact(ctx, pool, func(tx *postgres.Tx) error {
			if _, err := tx.Exec(ctx, `INSERT INTO t VALUES (1)`); err != nil {
				return err
			}
			cancel()
			w.drop.Store(true)
			return ctx.Err()
		})
		done <- time.Since(start)
	}()
	select {
	case took := <-done:
		if took < postgres.RollbackTimeout/2 {
			t.Errorf("Transact returned after %v: the rollback was not tried on a context of its own", took)
		}
	case <-time.After(postgres.RollbackTimeout + 20*time.Second):
		t.Fatal("Transact still waiting for its rollback: it is not bounded")
	}
	w.drop.Store(false)
	if n := rows(t, pool); n != 0 {
		t.Errorf("rows after the failed transaction: got %d, want 0", n)
	}
}

// TestTransactRoundTrips pins what the helper exists for: BEGIN costs no
// round trip of its own, nor do the statements queued with the COMMIT. The
// relay's claim is two round trips, the ledger's message three.
func TestTransactRoundTrips(t *testing.T) {
	t.Parallel()
	pool, w := txPool(t)
	ctx := context.Background()
	tests := []struct {
		name string
		fn   func(*postgres.Tx) error
		want int64
	}{
		{"nothing sent", func(*postgres.Tx) error { return nil }, 0},
		{"claim shape: a query with BEGIN, the marks with COMMIT", func(tx *postgres.Tx) error {
			var b pgx.Batch
			b.Queue(`SELECT id FROM t WHERE id > $1 FOR UPDATE SKIP LOCKED`, 0)
			if err := tx.SendBatch(ctx, &b).Close(); err != nil {
				return err
			}
			tx.QueueAtCommit(`UPDATE t SET id = id WHERE id = ANY($1)`, []int32{1})
			tx.QueueAtCommit(`DELETE FROM t WHERE id = $1`, -1)
			return nil
		}, 2},
		{"a read first: QueryRow with BEGIN, then COMMIT", func(tx *postgres.Tx) error {
			var n int
			return tx.QueryRow(ctx, `SELECT count(*) FROM t WHERE id > $1`, 0).Scan(&n)
		}, 2},
		{"rows first: Query with BEGIN, then COMMIT", func(tx *postgres.Tx) error {
			rows, err := tx.Query(ctx, `SELECT id FROM t WHERE id > $1 FOR UPDATE`, 0)
			if err != nil {
				return err
			}
			_, err = pgx.CollectRows(rows, pgx.RowTo[int32])
			return err
		}, 2},
		{"consumer shape: two statements, then COMMIT", func(tx *postgres.Tx) error {
			if _, err := tx.Exec(ctx, `INSERT INTO t VALUES ($1) ON CONFLICT DO NOTHING`, 1); err != nil {
				return err
			}
			_, err := tx.Exec(ctx, `UPDATE t SET id = id WHERE id = $1`, 1)
			return err
		}, 3},
	}
	for _, tt := range tests {
		var got int64
		for range 2 { // the first run prepares the statements on the connection
			err := postgres.Transact(ctx, pool, func(tx *postgres.Tx) error {
				w.writes.Store(0)
				return tt.fn(tx)
			})
			if err != nil {
				t.Fatalf("%s: %v", tt.name, err)
			}
			got = w.writes.Load()
		}
		if got != tt.want {
			t.Errorf("%s: %d round trips, want %d", tt.name, got, tt.want)
		}
	}
}

// TestTransactReadsFirst runs each way of reading as the transaction's
// first statement, which travels with BEGIN, and a statement after it: the
// read ends its batch, so the connection is free for the next statement,
// and what the transaction wrote commits.
func TestTransactReadsFirst(t *testing.T) {
	t.Parallel()
	pool, _ := txPool(t)
	ctx := context.Background()
	if _, err := pool.Exec(ctx, `INSERT INTO t VALUES (1), (2)`); err != nil {
		t.Fatal(err)
	}
	reads := map[string]func(tx *postgres.Tx) (int, error){
		"QueryRow": func(tx *postgres.Tx) (int, error) {
			var n int
			err := tx.QueryRow(ctx, `SELECT count(*) FROM t`).Scan(&n)
			return n, err
		},
		"QueryRow of no row": func(tx *postgres.Tx) (int, error) {
			var n int
			if err := tx.QueryRow(ctx, `SELECT id FROM t WHERE id < 0`).Scan(&n); !errors.Is(err, pgx.ErrNoRows) {
				return 0, fmt.Errorf("got %v, want pgx.ErrNoRows", err)
			}
			return 2, nil
		},
		"Query read with Next": func(tx *postgres.Tx) (int, error) {
			rows, err := tx.Query(ctx, `SELECT id FROM t`)
			if err != nil {
				return 0, err
			}
			n := 0
			for rows.Next() {
				n++
			}
			return n, rows.Err()
		},
		"Query closed early": func(tx *postgres.Tx) (int, error) {
			rows, err := tx.Query(ctx, `SELECT id FROM t`)
			if err != nil {
				return 0, err
			}
			rows.Close()
			return 2, rows.Err()
		},
	}
	for name, read := range reads {
		err := postgres.Transact(ctx, pool, func(tx *postgres.Tx) error {
			n, err := read(tx)
			if err != nil {
				return err
			}
			if n != 2 {
				t.Errorf("%s: read %d rows, want 2", name, n)
			}
			_, err = tx.Exec(ctx, `UPDATE t SET id = id + 10`)
			return err
		})
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if _, err := pool.Exec(ctx, `UPDATE t SET id = id - 10`); err != nil {
			t.Fatalf("%s: the transaction's update did not commit, or left the connection busy: %v", name, err)
		}
	}
	if n := openTransactions(t, pool); n != 0 {
		t.Errorf("%d sessions left idle in a transaction", n)
	}
}

// TestTransactSavepoint: a failed savepoint takes back its own writes only,
// even when a statement in it failed, and the transaction commits the rest.
func TestTransactSavepoint(t *testing.T) {
	t.Parallel()
	pool, _ := txPool(t)
	ctx := context.Background()
	boom := errors.New("boom")
	err := postgres.Transact(ctx, pool, func(tx *postgres.Tx) error {
		if _, err := tx.Exec(ctx, `INSERT INTO t VALUES (1)`); err != nil {
			return err
		}
		if err := tx.Savepoint(ctx, func(sp *postgres.Tx) error {
			_, err := sp.Exec(ctx, `INSERT INTO t VALUES (2)`)
			return err
		}); err != nil {
			return err
		}
		if err := tx.Savepoint(ctx, func(sp *postgres.Tx) error {
			if _, err := sp.Exec(ctx, `INSERT INTO t VALUES (3)`); err != nil {
				return err
			}
			return boom
		}); !errors.Is(err, boom) {
			t.Errorf("a savepoint's fn failed: got %v, want its error", err)
		}
		if err := tx.Savepoint(ctx, func(sp *postgres.Tx) error {
			_, err := sp.Exec(ctx, `INSERT INTO t VALUES (-1)`) // the CHECK refuses it
			return err
		}); err == nil {
			t.Error("a refused statement in a savepoint: got nil, want its error")
		}
		_, err := tx.Exec(ctx, `INSERT INTO t VALUES (4)`)
		return err
	})
	if err != nil {
		t.Fatalf("Transact: %v", err)
	}
	var ids []int32
	rows, err := pool.Query(ctx, `SELECT id FROM t ORDER BY id`)
	if err == nil {
		ids, err = pgx.CollectRows(rows, pgx.RowTo[int32])
	}
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(ids) != "[1 2 4]" {
		t.Errorf("rows committed: got %v, want [1 2 4] (the failed savepoints' rows rolled back, the rest kept)", ids)
	}
}
