package paymentstore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/payments-outbox/payments-outbox/adapters/postgres"
	"github.com/payments-outbox/payments-outbox/application/idempotency"
	"github.com/payments-outbox/payments-outbox/application/payments"
	"github.com/payments-outbox/payments-outbox/application/retention"
	"github.com/payments-outbox/payments-outbox/domain/payment"
)

var _ retention.DeleteFunc = (*Repository)(nil).DeleteKeysBefore

// claimKey makes the idempotency key this transaction's (postgres.LockKey:
// ErrKeyInFlight while a twin holds it); once held, a committed row with the
// key means a retry: its stored result is returned with done set, or
// ErrKeyReused if the request differs.
func claimKey(ctx context.Context, tx *postgres.Tx, key *idempotency.Key) (payments.Committed, bool, error) {
	if key == nil {
		return payments.Committed{}, false, nil
	}
	if err := postgres.LockKey(ctx, tx, key); err != nil {
		return payments.Committed{}, false, err
	}
	var fingerprint string
	var raw []byte
	err := tx.QueryRow(ctx, `SELECT fingerprint, result FROM idempotency_keys WHERE merchant_id = $1 AND key = $2`,
		key.Merchant, key.Key).Scan(&fingerprint, &raw)
	if errors.Is(err, pgx.ErrNoRows) {
		return payments.Committed{}, false, nil
	}
	if err != nil {
		return payments.Committed{}, false, fmt.Errorf("read idempotency key: %w", err)
	}
	if fingerprint != key.Fingerprint {
		return payments.Committed{}, false, idempotency.ErrKeyReused
	}
	p, refund, err := decodeResult(raw)
	if err != nil {
		return payments.Committed{}, false, fmt.Errorf("decode idempotent result: %w", err)
	}
	return payments.Committed{Payment: p, Refund: refund, Replayed: true}, true, nil
}

// storedResult is the idempotency_keys.result document: the rows the write
// committed, as the tables hold them (paymentRow, refundRow) — what the
// first response was rendered from, so that a retry is answered byte for
// byte alike, and carries every field a read of the payment does.
type storedResult struct {
	Payment map[string]json.RawMessage `json:"payment"`
	Refund  map[string]json.RawMessage `json:"refund,omitempty"`
}

// encodeResult is the stored result of a write that committed s and, for
// a refund, r.
func encodeResult(s payment.Snapshot, r *payment.Refund) ([]byte, error) {
	doc := map[string]any{"payment": paymentRow.document(&s)}
	if r != nil {
		rec := recordOf(*r)
		doc["refund"] = refundRow.document(&rec)
	}
	return json.Marshal(doc)
}

// decodeResult reads a stored result back into the payment and the refund
// it holds, through the domain's Rehydrate, as a read of the row does.
func decodeResult(raw []byte) (*payment.Payment, *payment.Refund, error) {
	var doc storedResult
	if err := json.Unmarshal(raw, &doc); err != nil {
		return nil, nil, err
	}
	var s payment.Snapshot
	if err := paymentRow.fromDocument(doc.Payment, &s); err != nil {
		return nil, nil, err
	}
	p, err := payment.Rehydrate(s)
	if err != nil {
		return nil, nil, err
	}
	if doc.Refund == nil {
		return p, nil, nil
	}
	var rec refundRecord
	if err := refundRow.fromDocument(doc.Refund, &rec); err != nil {
		return nil, nil, err
	}
	refund, err := rec.refund(s.Currency)
	if err != nil {
		return nil, nil, err
	}
	return p, &refund, nil
}

// DeleteKeysBefore is the idempotency keys' retention.DeleteFunc: it deletes
// at most limit keys created before cutoff, oldest first, in one statement. A
// client retrying with an expired key creates a new payment, so the cutoff
// must stay well past any client's retry window (clients are promised at
// least 24 hours: docs/RUNBOOK.md, Retention).
func (r *Repository) DeleteKeysBefore(ctx context.Context, cutoff time.Time, limit int) (int, error) {
	tag, err := r.pool.Exec(ctx, `DELETE FROM idempotency_keys WHERE (merchant_id, key) IN (
		SELECT merchant_id, key FROM idempotency_keys WHERE created_at < $1 ORDER BY created_at LIMIT $2)`, cutoff, limit)
	if err != nil {
		return 0, fmt.Errorf("delete expired idempotency keys: %w", postgres.Unavailable(err))
	}
	return int(tag.RowsAffected()), nil
}
