package postgres

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
)

// Three shapes of write transaction run in this repository, each where it fits:
//
//   - All statements known before the first is sent (nothing to read first, no
//     decision between statements): send them as one pgx batch outside an
//     explicit transaction. Postgres runs everything up to the protocol's Sync
//     as one implicit transaction, all or nothing, in ONE round trip.
//     paymentstore.Repository.Create without an Idempotency-Key does this.
//   - A statement depends on what an earlier one returned, or locks must be
//     held while application code runs, and round trips are the cost of the hot
//     path: Transact below. BEGIN travels with the first statement and COMMIT
//     with the last ones, two round trips fewer than pgx.BeginFunc. The relay's
//     claim (outboxstore: claim, publish, mark) and a consumer's inbox
//     transaction (inboxstore: inbox insert, then the handler's writes, the
//     ledger's posting) use it.
//   - Everything else (paymentstore's refunds and keyed writes, the operator's
//     requeue): pgx.BeginFunc, the plain shape, where a round trip more or less
//     is not what the request costs.

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
	conn     *pgx.Conn
	begun    bool
	atCommit pgx.Batch
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
