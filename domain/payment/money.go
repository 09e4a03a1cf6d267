package payment

import (
	"fmt"
	"math"

	"github.com/payments-outbox/payments-outbox/domain/money"
)

// Money is a positive amount in a currency's minor unit (cents for BRL or USD,
// whole yen for JPY). It is never a float: payments must add up exactly. The
// zero value is invalid; build one with NewMoney.
type Money struct {
	minor    int64
	currency string // an active ISO 4217 code, upper-case (domain/money)
}

// NewMoney returns minor units of currency. currency is an ISO 4217 code in
// any case; minor must be greater than zero.
func NewMoney(minor int64, currency string) (Money, error) {
	code, ok := money.ParseCurrency(currency)
	if !ok {
		return Money{}, fmt.Errorf("%w: %q is no active ISO 4217 currency", ErrInvalidAmount, currency)
	}
	if minor <= 0 {
		return Money{}, fmt.Errorf("%w: %d is not positive", ErrInvalidAmount, minor)
	}
	return Money{minor: minor, currency: code}, nil
}

// Minor returns the amount in minor units.
func (m Money) Minor() int64 { return m.minor }

// Currency returns the ISO 4217 code.
func (m Money) Currency() string { return m.currency }

// IsZero reports whether m is the (invalid) zero value.
func (m Money) IsZero() bool { return m == Money{} }

// String formats m as "1050 BRL" (minor units), for logs and errors.
func (m Money) String() string { return fmt.Sprintf("%d %s", m.minor, m.currency) }

// Add returns m+o. Both must share a currency; the sum must fit in int64.
func (m Money) Add(o Money) (Money, error) {
	if m.currency != o.currency {
		return Money{}, fmt.Errorf("%w: %s + %s", ErrCurrencyMismatch, m.currency, o.currency)
	}
	if o.minor > math.MaxInt64-m.minor {
		return Money{}, fmt.Errorf("%w: %s + %s overflows", ErrInvalidAmount, m, o)
	}
	return Money{minor: m.minor + o.minor, currency: m.currency}, nil
}
