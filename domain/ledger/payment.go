package ledger

import (
	"fmt"
	"time"
)

// Payment is what the ledger knows of one payment: the hold its
// authorization placed for the merchant, and what was captured (posted) and
// refunded for it. It is how the ledger checks what it is told: a capture
// no larger than the hold, one capture, a cancellation only of an open hold,
// refunds never past what was captured. Storage keeps one per payment and
// the database holds the same limits (ledger_payments' CHECKs), so a rule
// this type forgot would still be refused at commit.
//
// A payment captured at once (payment.created) has no hold: what it
// captured is its amount. The zero value is invalid.
type Payment struct {
	id         string
	merchant   AccountID
	currency   string
	authorized int64 // 0: never had a hold (captured at once)
	held       int64 // the open hold: authorized until released, then 0
	captured   int64
	refunded   int64
	placedAt   time.Time
	releasedAt time.Time // zero while the hold is open
}

// Authorize returns the payment of an authorization: a hold of amount in
// currency for the merchant, placed at. Errors: ErrInvalidTransaction.
func Authorize(paymentID, merchantID, currency string, amount int64, at time.Time) (Payment, error) {
	p, err := newPayment(paymentID, merchantID, currency, amount)
	if err != nil {
		return Payment{}, err
	}
	if at.IsZero() {
		return Payment{}, fmt.Errorf("%w: a hold needs the time it was placed", ErrInvalidTransaction)
	}
	p.authorized, p.held, p.placedAt = amount, amount, at
	return p, nil
}

// CapturedAtOnce returns the payment of a payment.created: amount captured
// with no hold before it. Errors: ErrInvalidTransaction.
func CapturedAtOnce(paymentID, merchantID, currency string, amount int64) (Payment, error) {
	p, err := newPayment(paymentID, merchantID, currency, amount)
	if err != nil {
		return Payment{}, err
	}
	p.captured = amount
	return p, nil
}

func newPayment(paymentID, merchantID, currency string, amount int64) (Payment, error) {
	merchant, err := MerchantAccount(merchantID)
	if err != nil {
		return Payment{}, fmt.Errorf("%w: %w", ErrInvalidTransaction, err)
	}
	switch {
	case paymentID == "":
		return Payment{}, fmt.Errorf("%w: payment id is required", ErrInvalidTransaction)
	case amount <= 0:
		return Payment{}, fmt.Errorf("%w: amount %d is not positive", ErrInvalidTransaction, amount)
	case !ValidCurrency(currency):
		return Payment{}, fmt.Errorf("%w: currency %q is not an ISO 4217 code", ErrInvalidTransaction, currency)
	}
	return Payment{id: paymentID, merchant: merchant, currency: currency}, nil
}

// RehydratePayment rebuilds a Payment that storage kept. It trusts its
// input: the database's checks held when it was written.
func RehydratePayment(paymentID string, merchant AccountID, currency string, authorized, held, captured, refunded int64, placedAt, releasedAt time.Time) Payment {
	return Payment{id: paymentID, merchant: merchant, currency: currency, authorized: authorized, held: held,
		captured: captured, refunded: refunded, placedAt: placedAt, releasedAt: releasedAt}
}

// Capture captures amount of the open hold and releases all of it: one
// capture per payment, a partial one releasing the rest. The checks come
// before any change. Errors: ErrNoHold (captured at once), ErrHoldReleased
// (already captured or canceled), ErrCaptureExceedsHold,
// ErrCurrencyMismatch.
func (p *Payment) Capture(amount int64, currency string, at time.Time) error {
	if err := p.open(currency); err != nil {
		return err
	}
	if amount <= 0 || amount > p.held {
		return fmt.Errorf("%w: capture of %d %s, hold of payment %s is %d", ErrCaptureExceedsHold, amount, currency, p.id, p.held)
	}
	p.captured, p.held, p.releasedAt = amount, 0, p.notBeforePlaced(at)
	return nil
}

// Release releases the open hold without capturing anything: a
// cancellation. Errors: ErrNoHold, ErrHoldReleased, ErrCurrencyMismatch.
func (p *Payment) Release(currency string, at time.Time) error {
	if err := p.open(currency); err != nil {
		return err
	}
	p.held, p.releasedAt = 0, p.notBeforePlaced(at)
	return nil
}

// notBeforePlaced is at, or the hold's placement when at is earlier. Times
// are when each event was applied, read by whichever consumer applied it:
// a capture whose consumer read the clock before the authorization's did,
// and whose transaction then waited (slow round trips) until that
// authorization committed, would otherwise record a release before its
// placement — which the database refuses (ledger_payments_hold_check), and
// which would make a balance as of a time between the two count the hold
// released but never placed.
func (p *Payment) notBeforePlaced(at time.Time) time.Time {
	if at.Before(p.placedAt) {
		return p.placedAt
	}
	return at
}

func (p *Payment) open(currency string) error {
	switch {
	case p.authorized == 0:
		return fmt.Errorf("%w: payment %s was captured at once", ErrNoHold, p.id)
	case !p.releasedAt.IsZero() && p.captured > 0:
		return fmt.Errorf("%w: payment %s was captured (%d %s)", ErrHoldReleased, p.id, p.captured, p.currency)
	case !p.releasedAt.IsZero():
		return fmt.Errorf("%w: payment %s was canceled", ErrHoldReleased, p.id)
	case currency != p.currency:
		return fmt.Errorf("%w: payment %s is in %s, not %s", ErrCurrencyMismatch, p.id, p.currency, currency)
	}
	return nil
}

// Refund adds amount to what was refunded, never past what was captured.
// Errors: ErrRefundExceedsCaptured, ErrCurrencyMismatch.
func (p *Payment) Refund(amount int64, currency string) error {
	if currency != p.currency {
		return fmt.Errorf("%w: payment %s is in %s, not %s", ErrCurrencyMismatch, p.id, p.currency, currency)
	}
	if amount <= 0 || amount > p.captured-p.refunded {
		return fmt.Errorf("%w: refund of %d %s, payment %s captured %d and refunded %d", ErrRefundExceedsCaptured,
			amount, currency, p.id, p.captured, p.refunded)
	}
	p.refunded += amount
	return nil
}

// ID returns the payment's id.
func (p Payment) ID() string { return p.id }

// Merchant returns the merchant's account, whose pending balance the hold
// moves.
func (p Payment) Merchant() AccountID { return p.merchant }

// Currency returns the payment's ISO 4217 code.
func (p Payment) Currency() string { return p.currency }

// Authorized returns the amount authorized, or 0 for a payment captured at
// once.
func (p Payment) Authorized() int64 { return p.authorized }

// Held returns the open hold: the authorized amount until the hold is
// released, then 0.
func (p Payment) Held() int64 { return p.held }

// Captured returns what was captured: posted payer → merchant.
func (p Payment) Captured() int64 { return p.captured }

// Refunded returns the sum of the payment's refunds.
func (p Payment) Refunded() int64 { return p.refunded }

// PlacedAt returns when the hold was placed; zero without one.
func (p Payment) PlacedAt() time.Time { return p.placedAt }

// ReleasedAt returns when the hold was released; zero while it is open or
// without one.
func (p Payment) ReleasedAt() time.Time { return p.releasedAt }
