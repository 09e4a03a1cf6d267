package ledgers

import (
	"context"
	"time"

	"github.com/payments-outbox/payments-outbox/domain/ledger"
)

// Ledger is the ledger tables as seen from inside the inbox's transaction:
// the repositories the ledger's handler writes with (inbox.Recorder's R).
type Ledger interface {
	// Post stores tx and its entries and reports whether it did. false (and
	// nothing stored) means a transaction with the same business key — or
	// the same message id — is already posted: the second layer of
	// idempotency. At commit the database refuses an unbalanced
	// transaction, and adds the entries to the balances of their accounts;
	// a commit that would take a balance past what int64 holds fails with
	// ledger.ErrBalanceLimit, which is inbox.ErrPermanent too.
	Post(ctx context.Context, tx ledger.Transaction, postedAt time.Time) (bool, error)
	// Posted reports whether a transaction of kind is posted for payment
	// paymentID with fact id factID, or with none: the fact a fact of
	// fact id factID depends on, when its kind leaves no trace but its
	// postings (ledger.Postings.DependsOn). "" asks for the fact with none.
	Posted(ctx context.Context, paymentID string, kind ledger.Kind, factID string) (bool, error)
	// Payment returns what the ledger knows of payment id (its hold, what
	// was captured and refunded), locked until the transaction ends, or
	// ledger.ErrPaymentNotFound when it knows nothing of it yet.
	Payment(ctx context.Context, id string) (ledger.Payment, error)
	// AddPayment stores a payment the ledger did not know and reports
	// whether it did: false (nothing stored) means one with its id is
	// already stored. A hold placed moves its merchant's pending balance at
	// commit.
	AddPayment(ctx context.Context, p ledger.Payment, at time.Time) (bool, error)
	// SavePayment stores p, read with Payment in this transaction. The
	// database refuses a hold below zero, a capture past the authorization
	// and refunds past the capture, whatever the domain let through; a
	// change of the hold moves the merchant's pending balance at commit.
	SavePayment(ctx context.Context, p ledger.Payment, at time.Time) error
}

// Reader answers the ledger's read queries, outside any write transaction.
type Reader interface {
	// Balances returns the account's balance in every currency it has
	// entries in, or ledger.ErrAccountNotFound when it has none. It reads
	// the balances the postings keep, never the entries: its cost does not
	// grow with the account's history. Errors: dependency.ErrUnavailable.
	Balances(ctx context.Context, account ledger.AccountID) ([]ledger.Balance, error)
	// BalancesAsOf returns the account's balances as the ledger held them at
	// asOf: the current balance less what was posted, and the holds placed
	// or released, after asOf. Its cost grows with what the ledger wrote
	// since asOf, not with the account's history. A currency with nothing
	// posted nor held at asOf is left out; none at all is
	// ledger.ErrAccountNotFound. Errors: dependency.ErrUnavailable.
	BalancesAsOf(ctx context.Context, account ledger.AccountID, asOf time.Time) ([]ledger.Balance, error)
	// PaymentTransactions returns the payment's ledger transactions, oldest
	// first, or ledger.ErrPaymentNotFound when there are none.
	// Errors: dependency.ErrUnavailable.
	PaymentTransactions(ctx context.Context, paymentID string) ([]ledger.Transaction, error)
	// AccountEntries returns at most q.Limit of q.Account's entries, the
	// newest (greatest id) first, each with its transaction: those older
	// than q.After when it is not 0. Errors: ErrUnknownCursor when q.After
	// is not an entry of q.Account, dependency.ErrUnavailable.
	AccountEntries(ctx context.Context, q EntryQuery) ([]AccountEntry, error)
}
