// Package inboxstore is the inbox in Postgres, for any consumer of the
// events: the inbox_messages table, the transactions that write a message's
// inbox row together with the consumer's own tables (inbox.Recorder), the
// processor's claims with a savepoint per row (inbox.Backlog), the operator's
// stats and retries and the deletions of retention (inbox.Admin).
//
// A consumer's store builds on it: it names the repositories its handler
// writes with, bound to a transaction (New's repos), and adds its own
// tables' queries and the mapping of its own commit errors (ledgerstore does
// both for the ledger). The table is created by the consumer's migrations,
// each consumer having its database: migrations/ledger 00001, 00004 and
// 00005 are the ledger's, and another consumer's migrations create the same
// table.
package inboxstore

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	"go.opentelemetry.io/otel/trace"

	"github.com/payments-outbox/payments-outbox/adapters/postgres"
	"github.com/payments-outbox/payments-outbox/application/inbox"
	"github.com/payments-outbox/payments-outbox/application/retention"
)

// Tx is what a consumer's repositories write through: the pipelined
// transaction of Record (a *postgres.Tx) or a savepoint of the
// processor's claim (a pgx.Tx). It is valid only inside the function it is
// handed to.
type Tx interface {
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
	SendBatch(ctx context.Context, b *pgx.Batch) pgx.BatchResults
}

// Store is a consumer's inbox in its Postgres database, R being the
// consumer's repositories bound to one transaction.
type Store[R any] struct {
	pool  *pgxpool.Pool
	repos func(Tx) R
}

var (
	_ inbox.Recorder[struct{}] = (*Store[struct{}])(nil)
	_ inbox.Backlog[struct{}]  = (*Store[struct{}])(nil)
	_ inbox.Admin              = (*Store[struct{}])(nil)

	_ retention.DeleteFunc = (*Store[struct{}])(nil).DeleteInboxBefore
)

// New returns the inbox on pool, a pool on a database migrated with the
// inbox table. repos binds the consumer's repositories to a transaction;
// the handler writes with what it returns, inside the transaction of the
// message's inbox row.
func New[R any](pool *pgxpool.Pool, repos func(Tx) R) *Store[R] {
	return &Store[R]{pool: pool, repos: repos}
}

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
		return false, err
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
// turns a redelivery into zero inserted rows. The row keeps the trace id of
// the message, which the consumer put in ctx (NULL when it carried none).
func insert(ctx context.Context, tx Tx, msg inbox.Message) (bool, error) {
	var traceID *string
	if sc := trace.SpanContextFromContext(ctx); sc.IsValid() {
		id := sc.TraceID().String()
		traceID = &id
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

// DeleteInboxBefore is the inbox's retention.DeleteFunc: it deletes at most
// limit processed inbox rows received before cutoff, in one statement.
// Start-up checks the cutoff lies past the broker's redelivery window
// (inbox.CheckRetention). A row not processed — pending, parked, or of a
// type this version does not handle — is never deleted here: it is work not
// done, and the inbox is the only place that still holds it. Unhandled rows
// have a window of their own (DeleteUnhandled).
func (s *Store[R]) DeleteInboxBefore(ctx context.Context, cutoff time.Time, limit int) (int, error) {
	tag, err := s.pool.Exec(ctx, `
		DELETE FROM inbox_messages WHERE id IN (
			SELECT id FROM inbox_messages
			WHERE received_at < $1 AND processed_at IS NOT NULL LIMIT $2)`, cutoff, limit)
	if err != nil {
		return 0, fmt.Errorf("delete inbox messages: %w", err)
	}
	return int(tag.RowsAffected()), nil
}

// DeleteUnhandled implements inbox.Admin: the expiry of the rows of types
// this version does not apply (inbox.Processor.ExpireUnhandled). Its WHERE
// holds the predicate of the partial pending index, so it reads the backlog,
// not the processed rows. FOR UPDATE SKIP LOCKED passes over a row a claim
// holds — a processor of a newer version, during a rolling deploy, applying
// the type this one does not know — and re-checks each row it locks, so a
// row that such a processor applied or parked meanwhile is left alone.
func (s *Store[R]) DeleteUnhandled(ctx context.Context, types []string, cutoff time.Time, limit int) (int, error) {
	tag, err := s.pool.Exec(ctx, `
		DELETE FROM inbox_messages WHERE id IN (
			SELECT id FROM inbox_messages
			WHERE processed_at IS NULL AND parked_at IS NULL AND received_at < $2
			  AND NOT type = ANY($1::text[])
			ORDER BY received_at
			LIMIT $3
			FOR UPDATE SKIP LOCKED)`, types, cutoff, limit)
	if err != nil {
		return 0, fmt.Errorf("delete unhandled inbox messages: %w", err)
	}
	return int(tag.RowsAffected()), nil
}
