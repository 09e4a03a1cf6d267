// Package paymentstore is the payments service's Postgres repository. Every
// write commits, in ONE transaction, the payment row, one outbox row per
// message the use case handed it for the events the payment recorded, and
// the idempotency key — the transactional outbox. The relay (package
// outboxstore) publishes the outbox rows afterwards. The store keeps each
// message's bytes as it received them: an event's wire form is the
// application's (application/payments/events.go), not the database's.
package paymentstore

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/payments-outbox/payments-outbox/adapters/postgres"
	"github.com/payments-outbox/payments-outbox/application/idempotency"
	"github.com/payments-outbox/payments-outbox/application/outbox"
	"github.com/payments-outbox/payments-outbox/application/payments"
	"github.com/payments-outbox/payments-outbox/domain/payment"
)

var (
	_ payments.Repository            = (*Repository)(nil)
	_ payments.ExpiredAuthorizations = (*Repository)(nil).ExpiredAuthorizations
)

// Repository implements payments.Repository on Postgres. Tracing its writes
// (paymentstracing.Repository) and waking the relays after them (Notifying) are
// decorators around it.
type Repository struct {
	pool *pgxpool.Pool
}

// New returns a Repository on pool.
func New(pool *pgxpool.Pool) *Repository {
	return &Repository{pool: pool}
}

// Create implements payments.Repository.
func (r *Repository) Create(ctx context.Context, p *payment.Payment, msgs []outbox.Message, key *idempotency.Key) (payments.Committed, error) {
	s := p.Snapshot()
	b := &pgx.Batch{}
	b.Queue(insertPaymentSQL, paymentRow.values(&s)...)
	if err := queueCommit(b, p, payments.Change{Outbox: msgs}, key); err != nil {
		return payments.Committed{}, err
	}
	out := payments.Committed{Payment: p}

	if key == nil {
		// Nothing to read first, so the whole write is ONE round trip: a batch
		// sent outside an explicit transaction runs in a single implicit
		// transaction (everything up to the protocol's Sync), all or nothing,
		// and Close returns the first error — the commit's included. (The
		// shapes of transaction and when each fits: adapters/postgres/tx.go.)
		if err := r.pool.SendBatch(ctx, b).Close(); err != nil {
			return payments.Committed{}, postgres.Unavailable(fmt.Errorf("create payment %s: %w", s.ID, err))
		}
		return out, nil
	}
	err := postgres.Transact(ctx, r.pool, func(tx *postgres.Tx) error {
		if replay, done, err := claimKey(ctx, tx, key); done || err != nil {
			out = replay
			return err
		}
		return tx.SendBatch(ctx, b).Close()
	})
	if err != nil {
		return payments.Committed{}, postgres.Unavailable(err)
	}
	return out, nil
}

// Update implements payments.Repository. SELECT … FOR UPDATE holds the
// payment's row lock while fn runs, so concurrent changes are applied one
// after another and the domain always sees the latest state: the latest
// refunded total, whether another request (or the expiry) captured or
// canceled it first.
func (r *Repository) Update(ctx context.Context, id payment.ID, key *idempotency.Key, fn func(*payment.Payment) (payments.Change, error)) (payments.Committed, error) {
	var out payments.Committed
	err := postgres.Transact(ctx, r.pool, func(tx *postgres.Tx) error {
		if replay, done, err := claimKey(ctx, tx, key); done || err != nil {
			out = replay
			return err
		}
		p, err := get(ctx, tx, id, "FOR UPDATE")
		if err != nil {
			return err
		}
		change, err := fn(p)
		if err != nil {
			return err // rolled back: no state change, no outbox row
		}
		s := p.Snapshot()
		b := &pgx.Batch{}
		b.Queue(updatePaymentSQL, paymentRow.values(&s)...)
		if err := queueCommit(b, p, change, key); err != nil {
			return err
		}
		out = payments.Committed{Payment: p, Refund: change.Refund}
		return tx.SendBatch(ctx, b).Close()
	})
	if err != nil {
		return payments.Committed{}, postgres.Unavailable(err)
	}
	return out, nil
}

// queueCommit queues, after the state write already in b, the refund c
// made, one outbox row per message of c, and the idempotency key with the
// result. Queued into one batch, the whole write is a single round trip
// inside its transaction.
func queueCommit(b *pgx.Batch, p *payment.Payment, c payments.Change, key *idempotency.Key) error {
	if c.Refund != nil {
		rec := recordOf(*c.Refund)
		b.Queue(insertRefundSQL, refundRow.values(&rec)...)
	}
	for _, m := range c.Outbox {
		// The payload goes in as bytes and stays them: the column is json,
		// which keeps its input text, so the relay publishes exactly what
		// the application encoded.
		//
		// pgtype.UUID, not uuid.UUID: pgx encodes it straight to binary,
		// while uuid.UUID is a driver.Valuer whose string pgx first fails to
		// encode as binary (building an error) and then parses, on every
		// outbox row written.
		b.Queue(`INSERT INTO outbox (id, type, aggregate_id, payload, traceparent, tracestate) VALUES ($1, $2, $3, $4, $5, $6)`,
			pgtype.UUID{Bytes: m.ID, Valid: true}, m.Type, pgtype.UUID{Bytes: m.AggregateID, Valid: true}, m.Payload, m.TraceParent, m.TraceState)
	}
	if key != nil {
		result, err := encodeResult(p.Snapshot(), c.Refund)
		if err != nil {
			return fmt.Errorf("encode idempotent result: %w", err)
		}
		b.Queue(`INSERT INTO idempotency_keys (merchant_id, key, fingerprint, payment_id, result) VALUES ($1, $2, $3, $4, $5)`,
			key.Merchant, key.Key, key.Fingerprint, string(p.ID()), result)
	}
	return nil
}

// Get implements payments.Repository.
func (r *Repository) Get(ctx context.Context, id payment.ID) (*payment.Payment, error) {
	return get(ctx, r.pool, id, "")
}

type querier interface {
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

func get(ctx context.Context, q querier, id payment.ID, lock string) (*payment.Payment, error) {
	p, err := scanPayment(q.QueryRow(ctx, `SELECT `+paymentColumns+` FROM payments WHERE id = $1 `+lock, string(id)))
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, fmt.Errorf("%w: %s", payment.ErrNotFound, id)
	}
	if err != nil {
		return nil, postgres.Unavailable(fmt.Errorf("read payment %s: %w", id, err))
	}
	return p, nil
}

// scanPayment reads one row of paymentColumns into a payment.
func scanPayment(row pgx.Row) (*payment.Payment, error) {
	var s payment.Snapshot
	if err := paymentRow.scan(row, &s); err != nil {
		return nil, err
	}
	return payment.Rehydrate(s)
}

// ExpiredAuthorizations implements payments.ExpiredAuthorizations, on the
// partial index of authorized payments by deadline.
func (r *Repository) ExpiredAuthorizations(ctx context.Context, now time.Time, limit int) ([]payment.ID, error) {
	rows, err := r.pool.Query(ctx, `SELECT id::text FROM payments
		WHERE status = 'authorized' AND capture_before <= $1 ORDER BY capture_before LIMIT $2`, now, limit)
	if err != nil {
		return nil, postgres.Unavailable(fmt.Errorf("list expired authorizations: %w", err))
	}
	ids, err := pgx.CollectRows(rows, pgx.RowTo[payment.ID])
	if err != nil {
		return nil, postgres.Unavailable(fmt.Errorf("list expired authorizations: %w", err))
	}
	return ids, nil
}
