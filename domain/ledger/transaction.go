package ledger

import (
	"fmt"
	"math"
	"time"
)

// Kind names the business fact a transaction posts: "payment", "refund". The
// consumer's registry of event types declares it (Postings); the ledger
// checks only its form (lower-case letters and underscores, as the database
// does), so a new kind needs no change here. Together with the payment id and the fact id it forms
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

// Postings is a kind's declaration: what a fact of that kind does to the
// chart of accounts, and which fact it follows. Every kind the ledger
// applies has one (the consumer's registry holds them), and everything the
// ledger does with a fact reads it: NewTransfer builds the fact's entries
// from it, the consumer waits for the fact it depends on, and
// reconciliation derives from it the accounts the payments database implies.
//
// A new kind that moves money between roles that exist needs nothing else
// here; one that moves it to an account of another kind (a dispute
// reserve, a fee account) adds a Role first.
type Postings struct {
	// Kind is the kind declared.
	Kind Kind
	// Debit and Credit are the roles of the accounts a fact of the kind
	// moves its amount from and to. Each account belongs to the fact's
	// Parties as its role names them: RoleMerchant to the merchant,
	// RolePayer to the payer as that merchant knows it. Both zero: the
	// fact moves no money (an authorization places a hold).
	Debit, Credit Role
	// DependsOn lists the kinds of fact this one follows on its payment:
	// the ledger applies it once a fact of one of them is applied, and
	// until then it waits (ErrOutOfOrder), since delivery is unordered. A
	// capture depends on its authorization; a refund on the payment or
	// the capture that moved the money it gives back. The fact a fact
	// with fact id F follows is its payment's fact of that kind with fact
	// id F, or with none: a dispute's close follows the opening of the
	// same dispute, a capture the payment's one authorization. Empty: the
	// fact can come first.
	DependsOn []Kind
}

// Moves reports whether a fact of the kind moves money: posts entries.
func (d Postings) Moves() bool { return d.Debit != 0 || d.Credit != 0 }

// Check reports whether d is a declaration the ledger can post by: a kind
// of the database's form; two distinct roles, or none; and the kinds it
// depends on of that form, none of them its own. Errors:
// ErrInvalidTransaction.
func (d Postings) Check() error {
	if !d.Kind.valid() {
		return fmt.Errorf("%w: kind %q is not lower-case letters and underscores", ErrInvalidTransaction, d.Kind)
	}
	if d.Moves() {
		if _, ok := d.Debit.spec(); !ok {
			return fmt.Errorf("%w: kind %s debits %s, no role", ErrInvalidTransaction, d.Kind, d.Debit)
		}
		if _, ok := d.Credit.spec(); !ok {
			return fmt.Errorf("%w: kind %s credits %s, no role", ErrInvalidTransaction, d.Kind, d.Credit)
		}
		if d.Debit == d.Credit {
			return fmt.Errorf("%w: kind %s debits and credits the same role, %s", ErrInvalidTransaction, d.Kind, d.Debit)
		}
	}
	for _, k := range d.DependsOn {
		if !k.valid() || k == d.Kind {
			return fmt.Errorf("%w: kind %s depends on %q", ErrInvalidTransaction, d.Kind, k)
		}
	}
	return nil
}

// Entries returns the two legs of a fact of the kind between ps: amount
// debited from the Debit role's account of ps, credited to the Credit
// role's. Reconciliation reads them as the legs the ledger must hold.
// Errors: ErrInvalidTransaction (a kind that moves no money, an invalid
// amount or currency, a party that cannot own an account).
func (d Postings) Entries(ps Parties, amount int64, currency string) ([]Entry, error) {
	if err := d.Check(); err != nil {
		return nil, err
	}
	if !d.Moves() {
		return nil, fmt.Errorf("%w: a fact of kind %s moves no money", ErrInvalidTransaction, d.Kind)
	}
	if amount <= 0 || amount == math.MinInt64 {
		return nil, fmt.Errorf("%w: amount %d is not positive", ErrInvalidTransaction, amount)
	}
	if !ValidCurrency(currency) {
		return nil, fmt.Errorf("%w: currency %q is not an ISO 4217 code", ErrInvalidTransaction, currency)
	}
	debit, err := d.Debit.Account(ps)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidTransaction, err)
	}
	credit, err := d.Credit.Account(ps)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidTransaction, err)
	}
	return []Entry{
		{account: debit, amount: -amount, currency: currency},
		{account: credit, amount: amount, currency: currency},
	}, nil
}

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
	// Kind is the business fact, as the consumer's registry names it:
	// NewTransfer takes it from the kind's Postings.
	Kind Kind
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

// Parties returns who the posting is between: the owners of its accounts.
func (p Posting) Parties() Parties { return Parties{Merchant: p.Merchant, Payer: p.Payer} }

// NewTransfer posts p as a fact of d's kind: a two-entry transaction moving
// p.Amount from the Debit role's account of p's parties to the Credit
// role's (Postings.Entries). p.Kind, when set, must be d's. It needs
// nothing from any other transaction: whether the fact may post yet (its
// DependsOn) is the consumer's question, asked before it posts. Errors:
// ErrInvalidTransaction.
func NewTransfer(p Posting, d Postings) (Transaction, error) {
	if p.Kind != "" && p.Kind != d.Kind {
		return Transaction{}, fmt.Errorf("%w: a posting of kind %q by the postings of %q", ErrInvalidTransaction, p.Kind, d.Kind)
	}
	if p.MessageID == "" || p.PaymentID == "" {
		return Transaction{}, fmt.Errorf("%w: message id and payment id are required", ErrInvalidTransaction)
	}
	if p.OccurredAt.IsZero() {
		return Transaction{}, fmt.Errorf("%w: occurrence time is required", ErrInvalidTransaction)
	}
	entries, err := d.Entries(p.Parties(), p.Amount, p.Currency)
	if err != nil {
		return Transaction{}, err
	}
	return Transaction{
		messageID:  p.MessageID,
		paymentID:  p.PaymentID,
		kind:       d.Kind,
		factID:     p.FactID,
		amount:     p.Amount,
		currency:   p.Currency,
		occurredAt: p.OccurredAt,
		entries:    entries,
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
