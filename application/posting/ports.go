package posting

import (
	"context"
	"errors"
	"time"

	"github.com/payments-outbox/payments-outbox/domain/ledger"
)

// InboxMessage is one received message as the inbox records it.
type InboxMessage struct {
	ID         string    // the CloudEvent id, canonical lower-case UUID
	Type       string    // the CloudEvent type
	Payload    []byte    // the whole message body, a JSON document
	ReceivedAt time.Time // when this consumer received it
	// ProcessedAt is when the message was applied; the zero value records it
	// as not applied (an event type this version does not handle).
	ProcessedAt time.Time
	// ParkedAt, when set, records the message as tried once and parked: it
	// can never apply as it is (a posting past an account's balance limit),
	// so it waits, counted, for an operator (`ledger inbox retry`).
	ParkedAt time.Time
	Error    string // why it was not applied, or a note about how it was
}

// Inbox is the inbox table as seen from inside a transaction.
type Inbox interface {
	// Insert records msg unless a message with the same ID is already there
	// (INSERT … ON CONFLICT DO NOTHING) and reports whether it inserted. false
	// means the message is a redelivery and must not be applied again.
	Insert(ctx context.Context, msg InboxMessage) (bool, error)
	// Annotate sets the error/note column of message id.
	Annotate(ctx context.Context, id, note string) error
}

// Ledger is the ledger tables as seen from inside a transaction.
type Ledger interface {
	// Post stores tx and its entries and reports whether it did. false (and
	// nothing stored) means a transaction with the same business key — or
	// the same message id — is already posted: the second layer of
	// idempotency. At commit the database refuses an unbalanced
	// transaction, and adds the entries to the balances of their accounts.
	Post(ctx context.Context, tx ledger.Transaction, postedAt time.Time) (bool, error)
}

// Repos are the repositories that share one database transaction.
type Repos struct {
	Inbox  Inbox
	Ledger Ledger
}

// Transactor runs fn in one database transaction: it commits if fn returns
// nil and rolls back otherwise, so an inbox row exists if and only if the
// ledger rows of its message do.
type Transactor interface {
	// Transact returns fn's error, or the error of beginning or committing:
	// ledger.ErrBalanceLimit when the commit would take an account's
	// balance past what int64 holds (nothing is committed).
	Transact(ctx context.Context, fn func(Repos) error) error
}

// ErrUnavailable means the ledger database could not be reached in time: the
// question was not answered, and may be asked again. The store wraps every
// outage in it, so the HTTP API can tell an outage (503 with Retry-After)
// from a fault (500) without knowing the database.
var ErrUnavailable = errors.New("service unavailable")

// Reader answers the ledger's read queries, outside any write transaction.
type Reader interface {
	// Balances returns the account's balance in every currency it has
	// entries in, or ledger.ErrAccountNotFound when it has none. It reads
	// the balances the postings keep, never the entries: its cost does not
	// grow with the account's history. Errors: ErrUnavailable.
	Balances(ctx context.Context, account ledger.AccountID) ([]ledger.Balance, error)
	// PaymentTransactions returns the payment's ledger transactions, oldest
	// first, or ledger.ErrPaymentNotFound when there are none.
	// Errors: ErrUnavailable.
	PaymentTransactions(ctx context.Context, paymentID string) ([]ledger.Transaction, error)
}
