package ledger

import (
	"fmt"
	"math"
	"time"
)

// Kind says which business fact a transaction posts. Together with the payment
// id and the refund id it forms the business key that storage keeps unique.
type Kind string

// The kinds of transaction the ledger posts.
const (
	// KindPayment posts a payment: the payer pays the merchant.
	KindPayment Kind = "payment"
	// KindRefund posts one refund of a payment: the merchant pays the payer back.
	KindRefund Kind = "refund"
)

// Entry is one leg of a transaction: a signed amount on one account. Debits
// are negative and credits positive, so a balanced transaction sums to zero.
type Entry struct {
	account  AccountID
	amount   int64
	currency string
}

// Account returns the account the entry moves money on.
func (e Entry) Account() AccountID { return e.account }

// Amount returns the signed amount in minor units (negative = debit).
func (e Entry) Amount() int64 { return e.amount }

// Currency returns the ISO 4217 code of the amount.
func (e Entry) Currency() string { return e.currency }

// Transaction is one balanced posting. Its fields are unexported so that the
// only ways to get one are the constructors below (which balance it) and
// RehydrateTransaction (which storage uses for rows the database already
// checked).
type Transaction struct {
	messageID  string
	paymentID  string
	kind       Kind
	refundID   string // empty for KindPayment
	amount     int64  // positive: the money that moved
	currency   string
	occurredAt time.Time
	entries    []Entry
}

// Posting holds what a payment event says, in the ledger's words. It is the
// input of NewPayment and NewRefund: a struct rather than eight positional
// strings, which would be too easy to pass in the wrong order.
type Posting struct {
	MessageID  string    // the event's id: the idempotency key
	PaymentID  string    // the payment the money belongs to
	RefundID   string    // the refund's id; refunds only
	Payer      string    // the payer's account id
	Merchant   string    // the merchant's account id
	Amount     int64     // minor units moved by this event, > 0
	Currency   string    // ISO 4217, upper case
	OccurredAt time.Time // when the payments service recorded the fact
}

// NewPayment posts a payment: it debits the payer and credits the merchant by
// p.Amount.
func NewPayment(p Posting) (Transaction, error) {
	if p.RefundID != "" {
		return Transaction{}, fmt.Errorf("%w: a payment has no refund id", ErrInvalidTransaction)
	}
	return newTransfer(p, KindPayment, p.Payer, p.Merchant)
}

// NewRefund posts a refund: it moves p.Amount back from the merchant to the
// payer. It needs nothing from the payment's own transaction, so a refund
// that arrives before its payment.created posts just the same.
func NewRefund(p Posting) (Transaction, error) {
	if p.RefundID == "" {
		return Transaction{}, fmt.Errorf("%w: a refund needs a refund id", ErrInvalidTransaction)
	}
	return newTransfer(p, KindRefund, p.Merchant, p.Payer)
}

// newTransfer checks every rule before building anything, then returns a
// two-entry transaction moving p.Amount from one account to another.
func newTransfer(p Posting, kind Kind, from, to string) (Transaction, error) {
	if p.MessageID == "" || p.PaymentID == "" {
		return Transaction{}, fmt.Errorf("%w: message id and payment id are required", ErrInvalidTransaction)
	}
	if p.Amount <= 0 || p.Amount == math.MinInt64 {
		return Transaction{}, fmt.Errorf("%w: amount %d is not positive", ErrInvalidTransaction, p.Amount)
	}
	if !ValidCurrency(p.Currency) {
		return Transaction{}, fmt.Errorf("%w: currency %q is not an ISO 4217 code", ErrInvalidTransaction, p.Currency)
	}
	if p.OccurredAt.IsZero() {
		return Transaction{}, fmt.Errorf("%w: occurrence time is required", ErrInvalidTransaction)
	}
	debit, err := NewAccountID(from)
	if err != nil {
		return Transaction{}, fmt.Errorf("%w: %w", ErrInvalidTransaction, err)
	}
	credit, err := NewAccountID(to)
	if err != nil {
		return Transaction{}, fmt.Errorf("%w: %w", ErrInvalidTransaction, err)
	}
	return Transaction{
		messageID:  p.MessageID,
		paymentID:  p.PaymentID,
		kind:       kind,
		refundID:   p.RefundID,
		amount:     p.Amount,
		currency:   p.Currency,
		occurredAt: p.OccurredAt,
		entries: []Entry{
			{account: debit, amount: -p.Amount, currency: p.Currency},
			{account: credit, amount: p.Amount, currency: p.Currency},
		},
	}, nil
}

// RehydrateTransaction rebuilds a transaction read back from storage. It
// records nothing and checks nothing: the database's balance trigger already
// guaranteed the entries sum to zero when they were written.
func RehydrateTransaction(p Posting, kind Kind, entries []Entry) Transaction {
	return Transaction{
		messageID:  p.MessageID,
		paymentID:  p.PaymentID,
		kind:       kind,
		refundID:   p.RefundID,
		amount:     p.Amount,
		currency:   p.Currency,
		occurredAt: p.OccurredAt,
		entries:    entries,
	}
}

// RehydrateEntry rebuilds one stored entry for RehydrateTransaction.
func RehydrateEntry(account AccountID, amount int64, currency string) Entry {
	return Entry{account: account, amount: amount, currency: currency}
}

// MessageID returns the id of the message that posted the transaction.
func (t Transaction) MessageID() string { return t.messageID }

// PaymentID returns the payment the transaction belongs to.
func (t Transaction) PaymentID() string { return t.paymentID }

// Kind returns whether the transaction posts a payment or a refund.
func (t Transaction) Kind() Kind { return t.kind }

// RefundID returns the refund's id, or "" for a payment.
func (t Transaction) RefundID() string { return t.refundID }

// Amount returns the (positive) amount that moved, in minor units.
func (t Transaction) Amount() int64 { return t.amount }

// Currency returns the ISO 4217 code of the transaction.
func (t Transaction) Currency() string { return t.currency }

// OccurredAt returns when the payments service recorded the fact.
func (t Transaction) OccurredAt() time.Time { return t.occurredAt }

// Entries returns a copy of the transaction's entries, so callers cannot
// unbalance it.
func (t Transaction) Entries() []Entry {
	return append([]Entry(nil), t.entries...)
}

// Balanced reports whether the entries sum to zero in every currency. The
// constructors always return balanced transactions; storage checks again.
func (t Transaction) Balanced() bool {
	sums := map[string]int64{}
	for _, e := range t.entries {
		sums[e.currency] += e.amount
	}
	for _, s := range sums {
		if s != 0 {
			return false
		}
	}
	return len(t.entries) >= 2
}
