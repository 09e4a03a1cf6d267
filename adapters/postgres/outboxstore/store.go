// Package outboxstore is the relay's view of the payments outbox table in
// Postgres: claiming due rows for publication, recording what the broker
// acknowledged, the operator's stats and requeue, cleanup of old PUBLISHED rows,
// and the LISTEN loop that wakes the relay when the write side commits a row.
//
// The write side (paymentstore) inserts the rows; this package never does.
package outboxstore

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/payments-outbox/payments-outbox/adapters/postgres"
	"github.com/payments-outbox/payments-outbox/application/relay"
	"github.com/payments-outbox/payments-outbox/application/retention"
)

// Channel is the LISTEN/NOTIFY channel the write side notifies after it commits
// outbox rows (paymentstore.Notifier): SELECT pg_notify('outbox_pending', ”) with
// an empty payload, since the relay only needs to know that something is waiting.
const Channel = "outbox_pending"

var (
	// ErrNotFound is returned by Requeue for an id with no outbox row.
	ErrNotFound = errors.New("outbox row not found")
	// ErrNotDead is returned by Requeue for a row that is PENDING or PUBLISHED:
	// only DEAD rows are requeued, so a requeue never publishes an event twice.
	ErrNotDead = errors.New("outbox row is not dead")
)

// Store is the outbox table. It is safe for concurrent use; any number of relays,
// in one process or many, may claim from the same table.
type Store struct {
	pool *pgxpool.Pool
}

var (
	_ relay.Store       = (*Store)(nil)
	_ relay.StatsSource = (*Store)(nil)

	_ retention.DeleteFunc = (*Store)(nil).DeletePublished
)

// New returns a Store on pool. Each concurrent ClaimBatch holds one connection
// while its batch is published, so size the pool for the relay's workers on top of
// the rest of the process.
func New(pool *pgxpool.Pool) *Store {
	return &Store{pool: pool}
}

// The claim scans the partial index outbox_pending_idx (next_attempt_at,
// created_at) WHERE status = 'PENDING': due rows only, oldest due first, so a
// retrying row waits behind its backoff and never in front of new rows. SKIP LOCKED
// makes concurrent claimers take disjoint batches instead of queueing on each other.
const claimSQL = `
SELECT id, type, payload, attempts, created_at, traceparent, tracestate
FROM outbox
WHERE status = 'PENDING' AND next_attempt_at <= now()
ORDER BY next_attempt_at, created_at
LIMIT $1
FOR UPDATE SKIP LOCKED`

// One statement marks the whole acknowledged part of a batch.
const markPublishedSQL = `
UPDATE outbox SET status = 'PUBLISHED', published_at = $2
WHERE id = ANY($1) AND status = 'PENDING'`

// One statement records every failure of a batch, retries and deaths alike.
const markFailedSQL = `
UPDATE outbox AS o
SET attempts = o.attempts + 1, last_error = f.err, status = f.status,
    next_attempt_at = COALESCE(f.next_attempt_at, o.next_attempt_at)
FROM unnest($1::uuid[], $2::text[], $3::text[], $4::timestamptz[]) AS f(id, err, status, next_attempt_at)
WHERE o.id = f.id AND o.status = 'PENDING'`

// ClaimBatch implements relay.Store. The row locks are held while fn publishes,
// so no other relay can claim the same rows; the marks are written in the same
// transaction. If the process dies after the broker acknowledged and before the
// commit, the rows stay PENDING and are published again: the at-least-once window.
//
// The transaction costs two round trips (postgres.Transact): BEGIN travels with
// the claim, and the marks with COMMIT. A failed mark never commits, and the
// transaction is rolled back even when ctx has ended (a shutdown mid-batch).
func (s *Store) ClaimBatch(ctx context.Context, limit int, fn func([]relay.Message) (relay.Outcome, error)) (int, error) {
	var n int
	err := postgres.Transact(ctx, s.pool, func(tx *postgres.Tx) error {
		msgs, err := claim(ctx, tx, limit)
		if err != nil {
			return fmt.Errorf("claim: %w", err)
		}
		n = len(msgs)
		if n == 0 {
			return nil
		}
		out, err := fn(msgs)
		if err != nil {
			return err
		}
		queueOutcome(tx, out)
		return nil
	})
	if err != nil {
		return 0, err
	}
	return n, nil
}

// claim locks up to limit due rows; as the transaction's first statement it
// travels with BEGIN, in one round trip.
func claim(ctx context.Context, tx *postgres.Tx, limit int) ([]relay.Message, error) {
	var b pgx.Batch
	b.Queue(claimSQL, limit)
	br := tx.SendBatch(ctx, &b)
	defer br.Close()
	rows, err := br.Query()
	if err != nil {
		return nil, err
	}
	msgs := make([]relay.Message, 0, limit)
	var m relay.Message
	_, err = pgx.ForEachRow(rows, []any{&m.ID, &m.Type, &m.Payload, &m.Attempts, &m.CreatedAt, &m.TraceParent, &m.TraceState}, func() error {
		msgs = append(msgs, m)
		m.Payload = nil // the next Scan must not write into this message's bytes
		return nil
	})
	if err != nil {
		return nil, err
	}
	return msgs, br.Close()
}

// queueOutcome queues, to be sent with the COMMIT, the statements that record
// a batch's outcome: one for every acknowledged row, one for every failure,
// retries and deaths alike.
func queueOutcome(tx *postgres.Tx, out relay.Outcome) {
	if len(out.Published) > 0 {
		tx.QueueAtCommit(markPublishedSQL, pgUUIDs(out.Published), out.PublishedAt)
	}
	if n := len(out.Retry) + len(out.Dead); n > 0 {
		ids := make([]pgtype.UUID, 0, n)
		errs := make([]string, 0, n)
		statuses := make([]string, 0, n)
		next := make([]*time.Time, 0, n)
		for _, f := range out.Retry {
			ids, errs, statuses = append(ids, pgUUID(f.ID)), append(errs, f.Error), append(statuses, "PENDING")
			next = append(next, &f.NextAttemptAt)
		}
		for _, f := range out.Dead {
			ids, errs, statuses = append(ids, pgUUID(f.ID)), append(errs, f.Error), append(statuses, "DEAD")
			next = append(next, nil)
		}
		tx.QueueAtCommit(markFailedSQL, ids, errs, statuses, next)
	}
}

// Stats implements relay.StatsSource with one query over the PENDING and DEAD
// partial indexes; PUBLISHED rows, however many, are not read.
func (s *Store) Stats(ctx context.Context) (relay.Stats, error) {
	rows, err := s.pool.Query(ctx, `
SELECT type, status, count(*), COALESCE(EXTRACT(EPOCH FROM now() - min(created_at)), 0)::float8
FROM outbox
WHERE status IN ('PENDING', 'DEAD')
GROUP BY type, status
ORDER BY type, status`)
	if err != nil {
		return relay.Stats{}, fmt.Errorf("outbox stats: %w", err)
	}
	var (
		st     relay.Stats
		typ    string
		status string
		n      int64
		age    float64
	)
	_, err = pgx.ForEachRow(rows, []any{&typ, &status, &n, &age}, func() error {
		if len(st.ByType) == 0 || st.ByType[len(st.ByType)-1].Type != typ {
			st.ByType = append(st.ByType, relay.TypeStats{Type: typ})
		}
		ts := &st.ByType[len(st.ByType)-1]
		switch status {
		case "PENDING":
			ts.Pending = n
			ts.OldestPending = time.Duration(max(age, 0) * float64(time.Second))
			st.Pending += n
			st.OldestPending = max(st.OldestPending, ts.OldestPending)
		case "DEAD":
			ts.Dead = n
			st.Dead += n
		}
		return nil
	})
	if err != nil {
		return relay.Stats{}, fmt.Errorf("outbox stats: %w", err)
	}
	return st, nil
}

// Requeue turns the DEAD row id back into a due PENDING row with a fresh set of
// attempts (last_error is kept for the record), and notifies Channel so a running
// relay picks it up at once. It returns ErrNotFound or ErrNotDead, wrapped with id.
func (s *Store) Requeue(ctx context.Context, id uuid.UUID) error {
	return pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		tag, err := tx.Exec(ctx, requeueSQL+` AND id = $1`, id)
		if err != nil {
			return fmt.Errorf("requeue %s: %w", id, err)
		}
		if tag.RowsAffected() == 0 {
			var exists bool
			if err := tx.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM outbox WHERE id = $1)`, id).Scan(&exists); err != nil {
				return fmt.Errorf("requeue %s: %w", id, err)
			}
			if !exists {
				return fmt.Errorf("%w: %s", ErrNotFound, id)
			}
			return fmt.Errorf("%w: %s", ErrNotDead, id)
		}
		return notify(ctx, tx)
	})
}

// RequeueAll requeues every DEAD row, as Requeue does, and returns how many.
func (s *Store) RequeueAll(ctx context.Context) (int, error) {
	var n int64
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		tag, err := tx.Exec(ctx, requeueSQL)
		if err != nil {
			return fmt.Errorf("requeue all: %w", err)
		}
		n = tag.RowsAffected()
		if n == 0 {
			return nil
		}
		return notify(ctx, tx)
	})
	return int(n), err
}

const requeueSQL = `UPDATE outbox SET status = 'PENDING', attempts = 0, next_attempt_at = now() WHERE status = 'DEAD'`

func notify(ctx context.Context, tx pgx.Tx) error {
	if _, err := tx.Exec(ctx, `SELECT pg_notify($1, '')`, Channel); err != nil {
		return fmt.Errorf("notify %s: %w", Channel, err)
	}
	return nil
}

// DeletePublished is the outbox's retention.DeleteFunc: it deletes at most
// limit PUBLISHED rows published before cutoff, oldest first, in one short
// statement through the outbox_published_idx partial index. PENDING and DEAD
// rows are never touched: only acknowledged events may go.
func (s *Store) DeletePublished(ctx context.Context, cutoff time.Time, limit int) (int, error) {
	tag, err := s.pool.Exec(ctx, `
DELETE FROM outbox WHERE id IN (
    SELECT id FROM outbox
    WHERE status = 'PUBLISHED' AND published_at < $1
    ORDER BY published_at
    LIMIT $2)`, cutoff, limit)
	if err != nil {
		return 0, fmt.Errorf("delete published outbox rows: %w", err)
	}
	return int(tag.RowsAffected()), nil
}

// pgUUID hands an id to pgx as pgtype.UUID, which it encodes straight to
// binary; a uuid.UUID would take a failed binary encode, which builds an
// error, and a text round trip first, for every id of every batch (what that
// cost the write path: docs/BENCHMARKS.md).
func pgUUID(id uuid.UUID) pgtype.UUID { return pgtype.UUID{Bytes: id, Valid: true} }

func pgUUIDs(ids []uuid.UUID) []pgtype.UUID {
	out := make([]pgtype.UUID, len(ids))
	for i, id := range ids {
		out[i] = pgUUID(id)
	}
	return out
}
