package outboxstore

import (
	"context"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/payments-outbox/payments-outbox/adapters/postgres"
	"github.com/payments-outbox/payments-outbox/application/outbox"
)

// claimDueSQL is the relay's claim, as the pattern describes it: the due
// PENDING rows, oldest due first, locked by this transaction until it
// commits, skipping the rows another claim holds (SKIP LOCKED), so that any
// number of relays claim side by side, each its own rows. Due first, so a
// row waiting for its retry waits behind its backoff and never in front of
// new rows. It reads the partial index outbox_pending_idx in its order
// (migrations/payments). The last column says the row is due: always,
// here; ordered mode's claims (ordered.go) read rows that are not.
const claimDueSQL = `
SELECT id, aggregate_id, type, payload, attempts, created_at, traceparent, tracestate, true
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

// Claim implements outbox.Store with claimDueSQL. The row locks are held
// while publish runs, so no other relay can claim the same rows; the marks
// are written in the same transaction. If the process dies after the broker
// acknowledged and before the commit, the rows stay PENDING and are published
// again: the at-least-once window.
func (s *Store) Claim(ctx context.Context, limit int, publish func(context.Context, []outbox.Message) outbox.Result) (int, error) {
	return s.claim(ctx, claimDueSQL, []any{limit}, limit, false, publish)
}

// claim is one claim transaction: the statement q locks the rows, publish
// gets the ones to publish (all of them, or in ordered mode the first due
// row of each aggregate: firstDuePerAggregate), and the marks of the Result
// go with the COMMIT. It costs two round trips (postgres.Transact): BEGIN
// travels with the claim, and the marks with COMMIT. A failed mark never
// commits.
//
// ctx's cancellation stops the claim statement; once it has returned rows,
// the transaction runs on ctx's deadline alone (outbox.Store), so that a
// stop never tears a publish from its mark. The transaction is rolled back
// whatever ctx says.
func (s *Store) claim(ctx context.Context, q string, args []any, limit int, ordered bool, publish func(context.Context, []outbox.Message) outbox.Result) (int, error) {
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	bctx, cancel := withoutCancel(ctx)
	defer cancel()
	var n int
	err := postgres.Transact(bctx, s.pool, func(tx *postgres.Tx) error {
		locked, err := lockRows(ctx, tx, q, args, limit)
		if err != nil {
			return fmt.Errorf("claim: %w", err)
		}
		n = len(locked)
		var msgs []outbox.Message
		if ordered {
			msgs = firstDuePerAggregate(locked)
		} else {
			msgs = make([]outbox.Message, len(locked))
			for i, r := range locked {
				msgs[i] = r.Message
			}
		}
		if len(msgs) == 0 {
			return nil
		}
		queueMarks(tx, publish(bctx, msgs))
		return nil
	})
	if err != nil {
		return 0, postgres.Unavailable(err)
	}
	return n, nil
}

// withoutCancel is ctx with its values and deadline but not its
// cancellation.
func withoutCancel(ctx context.Context) (context.Context, context.CancelFunc) {
	detached := context.WithoutCancel(ctx)
	if d, ok := ctx.Deadline(); ok {
		return context.WithDeadline(detached, d)
	}
	return detached, func() {}
}

// claimedRow is a locked row and whether it is due.
type claimedRow struct {
	outbox.Message
	due bool
}

// lockRows runs the claim statement q; as the transaction's first
// statement it travels with BEGIN, in one round trip. Each Payload is the
// column's bytes as the write side stored them (json keeps its input
// text), which the relay publishes unchanged. The ids are read as
// pgtype.UUID, which pgx decodes from the binary column directly: into a
// uuid.UUID (a sql.Scanner) it would decode each to text and parse it.
func lockRows(ctx context.Context, tx *postgres.Tx, q string, args []any, limit int) ([]claimedRow, error) {
	var b pgx.Batch
	b.Queue(q, args...)
	br := tx.SendBatch(ctx, &b)
	defer br.Close()
	rows, err := br.Query()
	if err != nil {
		return nil, err
	}
	out := make([]claimedRow, 0, limit)
	var (
		m       claimedRow
		id, agg pgtype.UUID
	)
	_, err = pgx.ForEachRow(rows, []any{&id, &agg, &m.Type, &m.Payload, &m.Attempts, &m.CreatedAt, &m.TraceParent, &m.TraceState, &m.due}, func() error {
		m.ID, m.AggregateID = id.Bytes, agg.Bytes
		out = append(out, m)
		m.Payload = nil // the next Scan must not write into this message's bytes
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, br.Close()
}

// queueMarks queues, to be sent with the COMMIT, the statements that write
// a batch's result: one for every acknowledged row, one for every failure,
// retries and deaths alike.
func queueMarks(tx *postgres.Tx, res outbox.Result) {
	if len(res.Published) > 0 {
		tx.QueueAtCommit(markPublishedSQL, pgUUIDs(res.Published), res.PublishedAt)
	}
	if n := len(res.Retry) + len(res.Dead); n > 0 {
		ids := make([]pgtype.UUID, 0, n)
		errs := make([]string, 0, n)
		statuses := make([]string, 0, n)
		next := make([]*time.Time, 0, n)
		for _, f := range res.Retry {
			ids, errs, statuses = append(ids, pgUUID(f.ID)), append(errs, f.Error), append(statuses, "PENDING")
			next = append(next, &f.NextAttemptAt)
		}
		for _, f := range res.Dead {
			ids, errs, statuses = append(ids, pgUUID(f.ID)), append(errs, f.Error), append(statuses, "DEAD")
			next = append(next, nil)
		}
		tx.QueueAtCommit(markFailedSQL, ids, errs, statuses, next)
	}
}

// pgUUID hands an id to pgx as pgtype.UUID, which it encodes straight to
// binary; a uuid.UUID would take a failed binary encode, which builds an
// error, and a text round trip first, for every id of every batch.
func pgUUID(id uuid.UUID) pgtype.UUID { return pgtype.UUID{Bytes: id, Valid: true} }

func pgUUIDs(ids []uuid.UUID) []pgtype.UUID {
	out := make([]pgtype.UUID, len(ids))
	for i, id := range ids {
		out[i] = pgUUID(id)
	}
	return out
}
