package inboxstore

import (
	"context"
	"fmt"
	"time"

	"github.com/payments-outbox/payments-outbox/adapters/postgres"
	"github.com/payments-outbox/payments-outbox/application/inbox"
)

// Record implements inbox.Recorder: it inserts msg and, when the row is
// new, runs apply with the consumer's repositories, in one database
// transaction; it commits when apply returns nil, rolls back otherwise, and
// returns the commit's error (a deferred constraint fails at COMMIT). A
// redelivery commits its empty transaction and reports false, after a
// read that tells it from another message under the same id.
//
// It runs on postgres.Transact, so BEGIN is sent in the same pipeline as the
// inbox insert instead of on its own: the consumer's hot path, where round
// trips are what a message costs.
func (s *Store[R]) Record(ctx context.Context, msg inbox.Message, apply func(context.Context, R) (string, error)) (bool, error) {
	var inserted bool
	err := postgres.Transact(ctx, s.pool, func(tx *postgres.Tx) error {
		var err error
		if inserted, err = insert(ctx, tx, msg); err != nil || apply == nil && inserted {
			return err
		}
		if !inserted {
			return sameBody(ctx, tx, msg)
		}
		note, err := apply(ctx, s.repos(tx))
		if err != nil || note == "" {
			return err
		}
		if _, err := tx.Exec(ctx, `UPDATE inbox_messages SET error = $2 WHERE id = $1`, msg.ID, note); err != nil {
			return fmt.Errorf("note inbox message: %w", err)
		}
		return nil
	})
	if err != nil {
		return false, postgres.Unavailable(err)
	}
	return inserted, nil
}

// sameBody tells a redelivery from a message that reuses a recorded id:
// ErrConflictingDuplicate unless the row recorded under msg.ID holds the
// same JSON document, compared as jsonb (the same values, whatever the
// spacing or the order of members). Read after the insert found the row,
// so it sees the row committed.
func sameBody(ctx context.Context, tx Tx, msg inbox.Message) error {
	tag, err := tx.Exec(ctx, `SELECT 1 FROM inbox_messages WHERE id = $1 AND payload::jsonb = $2::jsonb`, msg.ID, string(msg.Payload))
	if err != nil {
		return fmt.Errorf("compare inbox message: %w", err)
	}
	if tag.RowsAffected() == 0 {
		return fmt.Errorf("%w: %s", inbox.ErrConflictingDuplicate, msg.ID)
	}
	return nil
}

// insert is the first layer of idempotency: the primary key on the message id
// turns a redelivery into zero inserted rows. The row keeps the trace id the
// message carries (NULL when it carried none): data the inbox hands over,
// never read from ctx, so the store knows nothing of tracing.
func insert(ctx context.Context, tx Tx, msg inbox.Message) (bool, error) {
	var traceID *string
	if msg.TraceID != "" {
		traceID = &msg.TraceID
	}
	var processed *time.Time
	if !msg.ProcessedAt.IsZero() {
		processed = &msg.ProcessedAt
	}
	var errText *string
	if msg.Error != "" {
		errText = &msg.Error
	}
	var parked *time.Time // a parked row was tried once: attempts = 1
	if !msg.ParkedAt.IsZero() {
		parked = &msg.ParkedAt
	}
	tag, err := tx.Exec(ctx, `
		INSERT INTO inbox_messages (id, type, payload, received_at, processed_at, error, trace_id, parked_at, attempts)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, CASE WHEN $8::timestamptz IS NULL THEN 0 ELSE 1 END)
		ON CONFLICT (id) DO NOTHING`,
		msg.ID, msg.Type, string(msg.Payload), msg.ReceivedAt, processed, errText, traceID, parked)
	if err != nil {
		return false, fmt.Errorf("insert inbox message: %w", err)
	}
	return tag.RowsAffected() == 1, nil
}
