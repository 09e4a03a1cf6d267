package paymentstore

import (
	"context"
	"fmt"
	"time"

	"github.com/payments-outbox/payments-outbox/application/retention"
	"github.com/payments-outbox/payments-outbox/domain/payment"
)

var _ retention.DeleteFunc = (*Repository)(nil).DeleteKeysBefore

// DeleteKeysBefore is the idempotency keys' retention.DeleteFunc: it deletes
// at most limit keys created before cutoff, oldest first, in one statement. A
// client retrying with an expired key creates a new payment, so the cutoff
// must stay well past any client's retry window (clients are promised at
// least 24 hours: docs/RUNBOOK.md, Retention).
func (r *Repository) DeleteKeysBefore(ctx context.Context, cutoff time.Time, limit int) (int, error) {
	tag, err := r.pool.Exec(ctx, `DELETE FROM idempotency_keys WHERE (merchant_id, key) IN (
		SELECT merchant_id, key FROM idempotency_keys WHERE created_at < $1 ORDER BY created_at LIMIT $2)`, cutoff, limit)
	if err != nil {
		return 0, fmt.Errorf("delete expired idempotency keys: %w", err)
	}
	return int(tag.RowsAffected()), nil
}

// storedResult is the idempotency_keys.result document: the state the first
// response was rendered from, so that a retry is answered byte for byte alike.
type storedResult struct {
	Payment storedPayment `json:"payment"`
	Refund  *storedRefund `json:"refund,omitempty"`
}

// storedPayment is a payment as a result stores it. The fields added with
// capture methods are left out when empty, and a result stored before they
// existed — an automatic payment, then the only kind — reads back as one:
// capture method automatic, all of its amount captured.
type storedPayment struct {
	ID                 string     `json:"id"`
	Amount             int64      `json:"amount"`
	Currency           string     `json:"currency"`
	Refunded           int64      `json:"refunded_amount"`
	Status             string     `json:"status"`
	PayerID            string     `json:"payer_id"`
	MerchantID         string     `json:"merchant_id"`
	Description        string     `json:"description"`
	CreatedAt          time.Time  `json:"created_at"`
	UpdatedAt          time.Time  `json:"updated_at"`
	CaptureMethod      string     `json:"capture_method,omitempty"`
	Captured           *int64     `json:"amount_captured,omitempty"`
	CaptureBefore      *time.Time `json:"capture_before,omitempty"`
	CapturedAt         *time.Time `json:"captured_at,omitempty"`
	CanceledAt         *time.Time `json:"canceled_at,omitempty"`
	CancellationReason string     `json:"cancellation_reason,omitempty"`
}

type storedRefund struct {
	ID        string    `json:"id"`
	Amount    int64     `json:"amount"`
	CreatedAt time.Time `json:"created_at"`
}

func toStored(s payment.Snapshot, r *payment.Refund) storedResult {
	captured := s.CapturedMinor
	out := storedResult{Payment: storedPayment{
		ID: string(s.ID), Amount: s.AmountMinor, Currency: s.Currency, Refunded: s.RefundedMinor,
		Status: string(s.Status), PayerID: s.PayerID, MerchantID: s.MerchantID,
		Description: s.Description, CreatedAt: s.CreatedAt, UpdatedAt: s.UpdatedAt,
		CaptureMethod: string(s.CaptureMethod), Captured: &captured,
		CaptureBefore: nullTime(s.CaptureBefore), CapturedAt: nullTime(s.CapturedAt), CanceledAt: nullTime(s.CanceledAt),
		CancellationReason: string(s.CancellationReason),
	}}
	if r != nil {
		out.Refund = &storedRefund{ID: string(r.ID), Amount: r.Amount.Minor(), CreatedAt: r.CreatedAt}
	}
	return out
}

func (o storedResult) decode() (*payment.Payment, *payment.Refund, error) {
	sp := o.Payment
	method, captured := payment.CaptureMethod(sp.CaptureMethod), sp.Amount
	if method == "" {
		method = payment.CaptureAutomatic
	}
	if sp.Captured != nil {
		captured = *sp.Captured
	}
	p, err := payment.Rehydrate(payment.Snapshot{
		ID: payment.ID(sp.ID), AmountMinor: sp.Amount, Currency: sp.Currency, RefundedMinor: sp.Refunded,
		Status: payment.Status(sp.Status), PayerID: sp.PayerID, MerchantID: sp.MerchantID,
		Description: sp.Description, CreatedAt: sp.CreatedAt, UpdatedAt: sp.UpdatedAt,
		CaptureMethod: method, CapturedMinor: captured,
		CaptureBefore: orZero(sp.CaptureBefore), CapturedAt: orZero(sp.CapturedAt), CanceledAt: orZero(sp.CanceledAt),
		CancellationReason: payment.CancellationReason(sp.CancellationReason),
	})
	if err != nil {
		return nil, nil, err
	}
	if o.Refund == nil {
		return p, nil, nil
	}
	amount, err := payment.NewMoney(o.Refund.Amount, sp.Currency)
	if err != nil {
		return nil, nil, err
	}
	return p, &payment.Refund{ID: payment.RefundID(o.Refund.ID), PaymentID: p.ID(), Amount: amount, CreatedAt: o.Refund.CreatedAt.UTC()}, nil
}
