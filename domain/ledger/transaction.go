package ledger

import (
	"fmt"
	"math"
	"time"
)

// Kind names the business fact a transaction posts: "payment", "refund". The
// consumer's registry of event types picks it; the ledger checks only its form
// (lower-case letters and underscores, as the database does), so a new kind
// needs no change here. Together with the payment id and the fact id it forms
// the business key that storage keeps unique.
type Kind string

// valid reports whether k has a kind's form: [a-z][a-z_]*.
func (k Kind) valid() bool {
	for i := 0; i < len(k); i++ {
		c := k[i]
		if !('a' <= c && c <= 'z' || c == '_' && i > 0) {
			return false
		}
	}
	return k != ""
}

// Direction is a posting rule: which of the two parties of a payment pays
// the other. A new kind of fact picks one of these; only a fact that moves
// money some other way (a fee to a third account, say) needs a new rule
// here. Either way the rule builds the accounts from the posting's merchant
// and payer ids (MerchantAccount, PayerAccount): a posting never takes an
// account's name from the event.
type Direction int

// The posting rules.
const (
	// PayerToMerchant debits the payer and credits the merchant: a payment.
	PayerToMerchant Direction = iota + 1
	// MerchantToPayer moves money back from the merchant to the payer: a refund.
	MerchantToPayer
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
	factID     string // empty for a kind a payment has at most once
	amount     int64  // positive: the money that moved
	currency   string
	occurredAt time.Time
	entries    []Entry
}

// Posting holds what a payment event says, in the ledger's words. It is the
// input of NewTransfer: a struct rather than nine positional values, which
// would be too easy to pass in the wrong order.
type Posting struct {
	MessageID string // the event's id: the idempotency key
	PaymentID string // the payment the money belongs to
	Kind      Kind   // the business fact, as the consumer's registry names it
	// FactID tells apart the facts of one kind on the same payment: a
	// refund's id. It is empty for a kind a payment has at most once (the
	// payment itself), so that a second such fact collides in storage.
	FactID string
	// Merchant is the merchant's id: the payments service takes it from the
	// API key that created the payment, so no merchant can name another.
	Merchant string
	// Payer is the payer's id as the merchant named it: free text, which
	// is why it only ever names an account of that merchant's
	// (PayerAccount).
	Payer      string
	Amount     int64     // minor units moved by this event, > 0
	Currency   string    // ISO 4217, upper case
	OccurredAt time.Time // when the payments service recorded the fact
}

// NewTransfer posts p as a two-entry transaction moving p.Amount between the
// payer's account and the merchant's in direction d. It needs nothing from
// any other transaction, so a refund that arrives before its
// payment.created posts just the same.
func NewTransfer(p Posting, d Direction) (Transaction, error) {
	if d != PayerToMerchant && d != MerchantToPayer {
		return Transaction{}, fmt.Errorf("%w: unknown direction %d", ErrInvalidTransaction, d)
	}
	merchant, err := MerchantAccount(p.Merchant)
	if err != nil {
		return Transaction{}, fmt.Errorf("%w: %w", ErrInvalidTransaction, err)
	}
	payer, err := PayerAccount(p.Merchant, p.Payer)
	if err != nil {
		return Transaction{}, fmt.Errorf("%w: %w", ErrInvalidTransaction, err)
	}
	if d == PayerToMerchant {
		return newTransfer(p, payer, merchant)
	}
	return newTransfer(p, merchant, payer)
}

// newTransfer checks every rule before building anything, then returns a
// two-entry transaction moving p.Amount from one account to another.
func newTransfer(p Posting, debit, credit AccountID) (Transaction, error) {
	if p.MessageID == "" || p.PaymentID == "" {
		return Transaction{}, fmt.Errorf("%w: message id and payment id are required", ErrInvalidTransaction)
	}
	if !p.Kind.valid() {
		return Transaction{}, fmt.Errorf("%w: kind %q is not lower-case letters and underscores", ErrInvalidTransaction, p.Kind)
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
	return Transaction{
		messageID:  p.MessageID,
		paymentID:  p.PaymentID,
		kind:       p.Kind,
		factID:     p.FactID,
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
func RehydrateTransaction(p Posting, entries []Entry) Transaction {
	return Transaction{
		messageID:  p.MessageID,
		paymentID:  p.PaymentID,
		kind:       p.Kind,
		factID:     p.FactID,
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

// Kind returns the business fact the transaction posts.
func (t Transaction) Kind() Kind { return t.kind }

// FactID returns what tells the fact from others of its kind on the payment
// (a refund's id), or "" for a kind a payment has at most once.
func (t Transaction) FactID() string { return t.factID }

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
