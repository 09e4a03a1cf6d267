package inboxstore

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/payments-outbox/payments-outbox/adapters/postgres"
	"github.com/payments-outbox/payments-outbox/application/inbox"
)

// claimSQL locks the oldest due pending rows of the given types. The partial
// index on received_at holds only unprocessed, unparked rows, so the claim
// reads the backlog, not the table. SKIP LOCKED lets any number of
// processors claim side by side without waiting or overlapping.
const claimSQL = `
	SELECT id::text, type, payload::text, received_at, attempts
	FROM inbox_messages
	WHERE processed_at IS NULL AND parked_at IS NULL
	  AND (next_attempt_at IS NULL OR next_attempt_at <= now())
	  AND type = ANY($1::text[])
	  AND ($3::uuid[] IS NULL OR id = ANY($3::uuid[]))
	ORDER BY received_at
	LIMIT $2
	FOR UPDATE SKIP LOCKED`

// ClaimPending implements inbox.Backlog: apply runs its function in a
// savepoint of the claim's transaction (postgres.Tx.Savepoint), with the
// consumer's repositories bound to it, so that one row's refusal rolls back
// that row's writes alone and the batch's result commits with the rest.
func (s *Store[R]) ClaimPending(ctx context.Context, c inbox.Claim, fn func(context.Context, []inbox.PendingMessage, inbox.ApplyFunc[R]) (inbox.BatchResult, error)) (int, error) {
	var ids []string // nil: any row
	if len(c.IDs) > 0 {
		ids = c.IDs
	}
	n := 0
	err := postgres.Transact(ctx, s.pool, func(tx *postgres.Tx) error {
		rows, err := tx.Query(ctx, claimSQL, c.Types, c.Limit, ids)
		if err != nil {
			return fmt.Errorf("claim inbox rows: %w", err)
		}
		msgs, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (inbox.PendingMessage, error) {
			var (
				m       inbox.PendingMessage
				payload string
			)
			err := r.Scan(&m.ID, &m.Type, &payload, &m.ReceivedAt, &m.Attempts)
			m.Payload = []byte(payload)
			return m, err
		})
		if err != nil {
			return fmt.Errorf("claim inbox rows: %w", err)
		}
		n = len(msgs)
		if n == 0 {
			return nil
		}
		apply := func(ctx context.Context, _ inbox.Event, fn func(context.Context, R) error) error {
			return tx.Savepoint(ctx, func(sp *postgres.Tx) error {
				return fn(ctx, s.repos(sp))
			})
		}
		out, err := fn(ctx, msgs, apply)
		if err != nil {
			return err
		}
		return writeResult(ctx, tx, out)
	})
	return n, postgres.Unavailable(err)
}

// writeResult writes a batch's result with one statement per kind of
// result, whatever the batch's size.
func writeResult(ctx context.Context, tx *postgres.Tx, out inbox.BatchResult) error {
	b := &pgx.Batch{}
	if len(out.Processed) > 0 {
		ids, notes := make([]string, len(out.Processed)), make([]string, len(out.Processed))
		for i, p := range out.Processed {
			ids[i], notes[i] = p.ID, p.Note
		}
		b.Queue(`
			UPDATE inbox_messages m SET processed_at = $1, error = NULLIF(o.note, ''), next_attempt_at = NULL
			FROM unnest($2::uuid[], $3::text[]) AS o(id, note) WHERE m.id = o.id`, out.At, ids, notes)
	}
	queueFailures := func(fs []inbox.Failure, parked bool) {
		if len(fs) == 0 {
			return
		}
		ids, errs := make([]string, len(fs)), make([]string, len(fs))
		attempts, next := make([]int32, len(fs)), make([]*time.Time, len(fs))
		for i, f := range fs {
			ids[i], errs[i], attempts[i] = f.ID, f.Error, int32(f.Attempts)
			if !parked {
				next[i] = &f.NextAttemptAt
			}
		}
		var parkedAt *time.Time
		if parked {
			parkedAt = &out.At
		}
		b.Queue(`
			UPDATE inbox_messages m SET error = o.error, attempts = o.attempts, next_attempt_at = o.next, parked_at = $5
			FROM unnest($1::uuid[], $2::text[], $3::int[], $4::timestamptz[]) AS o(id, error, attempts, next)
			WHERE m.id = o.id`, ids, errs, attempts, next, parkedAt)
	}
	queueFailures(out.Retry, false)
	queueFailures(out.Parked, true)
	if b.Len() == 0 {
		return nil
	}
	if err := tx.SendBatch(ctx, b).Close(); err != nil {
		return fmt.Errorf("write inbox batch result: %w", err)
	}
	return nil
}
