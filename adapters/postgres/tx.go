package postgres

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
)

// Two ways to send a write run in this repository (docs/ARCHITECTURE.md,
// "One transaction shape"), and nothing else begins a transaction
// (conventions_test.go):
//
//   - All statements known before the first is sent (nothing to read first, no
//     decision between statements): one statement, or one pgx batch, on the
//     pool. Postgres runs everything up to the protocol's Sync as one implicit
//     transaction, all or nothing, in ONE round trip.
//     paymentstore.Repository.Create without an Idempotency-Key does this.
//   - Anything else: Transact below, whatever the cost of the path. BEGIN
//     travels with the first statement and COMMIT with the last ones, so a
//     transaction costs a round trip per statement it sends and one for the
//     COMMIT, never one for BEGIN. A savepoint (Tx.Savepoint) is a part of it,
//     not a third way: the inbox's processor runs each row of a batch in one.

// rollbackTimeout bounds the ROLLBACK that Transact sends after a failure. It
// runs even when the caller's context has ended, so a transaction is never
// left open on a connection because of a cancelled request or a shutdown.
const rollbackTimeout = 5 * time.Second

// Transact runs fn in one transaction on a connection of pool, and commits when
// fn returns nil. It returns fn's error after rolling back, or the error of the
// statements queued with QueueAtCommit, or of the COMMIT itself (a deferred
// constraint fails there; pgx.ErrTxCommitRollback when an earlier statement
// had already failed the transaction).
//
// The transaction costs as many round trips as fn sends statements, plus one
// for the COMMIT: BEGIN is sent in one pipeline with fn's first statement,
// and the COMMIT in one with the statements fn queued with QueueAtCommit. A
// transaction in which fn sends and queues nothing costs nothing.
//
// After a failure the transaction is rolled back on a context detached from
// ctx and bounded by its own timeout. If the rollback fails too, the pool
// destroys the connection: pgxpool never reuses one released inside a
// transaction.
func Transact(ctx context.Context, pool *pgxpool.Pool, fn func(*Tx) error) error {
	conn, err := pool.Acquire(ctx)
	if err != nil {
		return fmt.Errorf("acquire connection: %w", err)
	}
	defer conn.Release()
	tx := &Tx{conn: conn.Conn()}
	if err := fn(tx); err != nil {
		tx.rollback(ctx)
		return err
	}
	if err := tx.commit(ctx); err != nil {
		tx.rollback(ctx)
		return err
	}
	return nil
}

// Tx is the transaction Transact runs fn in. It is valid only inside fn and,
// like the connection under it, not safe for concurrent use.
type Tx struct {
	conn       *pgx.Conn
	begun      bool
	savepoints int
	atCommit   pgx.Batch
}

// SendBatch sends b in the transaction, BEGIN in front of it when b carries
// the transaction's first statements. Read the results in order and Close
// them before the next statement, as with pgx.Conn.SendBatch.
func (t *Tx) SendBatch(ctx context.Context, b *pgx.Batch) pgx.BatchResults {
	if t.begun {
		return t.conn.SendBatch(ctx, b)
	}
	t.begun = true
	withBegin := &pgx.Batch{QueuedQueries: make([]*pgx.QueuedQuery, 0, len(b.QueuedQueries)+1)}
	withBegin.Queue("BEGIN")
	withBegin.QueuedQueries = append(withBegin.QueuedQueries, b.QueuedQueries...)
	br := t.conn.SendBatch(ctx, withBegin)
	if _, err := br.Exec(); err != nil {
		_ = br.Close()
		return pgx.FailedBatchResults(b, fmt.Errorf("begin: %w", err))
	}
	return br
}

// Exec runs one statement in the transaction.
func (t *Tx) Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error) {
	if t.begun {
		return t.conn.Exec(ctx, sql, args...)
	}
	b := &pgx.Batch{}
	b.Queue(sql, args...)
	br := t.SendBatch(ctx, b)
	tag, err := br.Exec()
	if cerr := br.Close(); err == nil {
		err = cerr
	}
	return tag, err
}

// QueryRow runs a query expected to return one row, in the transaction;
// as its first statement it travels with BEGIN. Scan reads the row, as with
// pgx.Conn.QueryRow.
func (t *Tx) QueryRow(ctx context.Context, sql string, args ...any) pgx.Row {
	if t.begun {
		return t.conn.QueryRow(ctx, sql, args...)
	}
	b := &pgx.Batch{}
	b.Queue(sql, args...)
	return &batchRow{br: t.SendBatch(ctx, b)}
}

// Query runs a query in the transaction; as its first statement it travels
// with BEGIN. Read the rows to the end or Close them before the next
// statement, as with pgx.Conn.Query.
func (t *Tx) Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error) {
	if t.begun {
		return t.conn.Query(ctx, sql, args...)
	}
	b := &pgx.Batch{}
	b.Queue(sql, args...)
	br := t.SendBatch(ctx, b)
	rows, err := br.Query()
	if err != nil {
		_ = br.Close()
		return nil, err
	}
	return &batchRows{Rows: rows, br: br}, nil
}

// Savepoint runs fn in a savepoint of the transaction: if fn fails, what it
// wrote is rolled back and the transaction goes on without it; if it
// succeeds, the savepoint is released and its writes commit with the rest.
// fn is handed the same Tx. The inbox's processor applies each row of a
// claimed batch in one, so that one row's refusal spares the others.
func (t *Tx) Savepoint(ctx context.Context, fn func(*Tx) error) error {
	t.savepoints++
	name := fmt.Sprintf("sp_%d", t.savepoints)
	if _, err := t.Exec(ctx, "SAVEPOINT "+name); err != nil {
		return err
	}
	if err := fn(t); err != nil {
		if _, rerr := t.conn.Exec(ctx, "ROLLBACK TO SAVEPOINT "+name); rerr != nil {
			return fmt.Errorf("%w (and roll back to the savepoint: %v)", err, rerr)
		}
		return err
	}
	_, err := t.conn.Exec(ctx, "RELEASE SAVEPOINT "+name)
	return err
}

// batchRow is the row of a QueryRow sent with BEGIN: Scan reads it and
// ends the batch.
type batchRow struct{ br pgx.BatchResults }

func (r *batchRow) Scan(dest ...any) error {
	err := r.br.QueryRow().Scan(dest...)
	if cerr := r.br.Close(); cerr != nil && (err == nil || errors.Is(err, pgx.ErrNoRows)) {
		err = cerr
	}
	return err
}

// batchRows are the rows of a Query sent with BEGIN: the batch ends with
// them, when they are read to the end or closed.
type batchRows struct {
	pgx.Rows
	br     pgx.BatchResults
	closed bool
	err    error
}

func (r *batchRows) Next() bool {
	if r.Rows.Next() {
		return true
	}
	r.Close()
	return false
}

func (r *batchRows) Close() {
	if r.closed {
		return
	}
	r.closed = true
	r.Rows.Close()
	r.err = r.br.Close()
}

func (r *batchRows) Err() error {
	if err := r.Rows.Err(); err != nil {
		return err
	}
	return r.err
}

// QueueAtCommit queues a statement to be sent with the COMMIT, in one round
// trip, after fn returns nil. Postgres skips the rest of a pipeline after an
// error, so if a queued statement fails nothing commits. Use it for the last
// writes of a transaction, whose results nobody reads but their errors.
func (t *Tx) QueueAtCommit(sql string, args ...any) {
	t.atCommit.Queue(sql, args...)
}

func (t *Tx) commit(ctx context.Context) error {
	if !t.begun && t.atCommit.Len() == 0 {
		return nil // nothing was sent: there is no transaction to end
	}
	b := &t.atCommit
	b.Queue("COMMIT")
	br := t.SendBatch(ctx, b)
	var (
		tag pgconn.CommandTag
		err error
	)
	for range b.Len() {
		if tag, err = br.Exec(); err != nil {
			break
		}
	}
	if cerr := br.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("commit: %w", err)
	}
	// COMMIT of a transaction that already failed answers ROLLBACK, not an error.
	if tag.String() == "ROLLBACK" {
		return fmt.Errorf("commit: %w", pgx.ErrTxCommitRollback)
	}
	return nil
}

// rollback ends a transaction that must not commit, if one is open.
func (t *Tx) rollback(ctx context.Context) {
	if t.conn.PgConn().TxStatus() == 'I' {
		return // nothing open: the failure came before BEGIN or ended the transaction
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), rollbackTimeout)
	defer cancel()
	_, _ = t.conn.Exec(ctx, "ROLLBACK")
}
