package inbox

import (
	"context"
	"errors"
	"time"
)

// Message is one received message as the inbox records it.
type Message struct {
	ID         string    // the CloudEvent id, canonical lower-case UUID
	Type       string    // the CloudEvent type
	Payload    []byte    // the whole message body, a JSON document
	ReceivedAt time.Time // when this consumer received it
	// ProcessedAt is when the message was applied; the zero value records it
	// as not applied (pending, or of a type this version does not apply).
	ProcessedAt time.Time
	// ParkedAt, when set, records the message as tried once and parked: it
	// can never apply as it is (ErrPermanent), so it waits, counted, for an
	// operator (`ledger inbox retry`).
	ParkedAt time.Time
	Error    string // why it was not applied, or a note about how it was
}

// Inbox is the inbox table as seen from inside a transaction.
type Inbox interface {
	// Insert records msg unless a message with the same ID is already there
	// (INSERT … ON CONFLICT DO NOTHING) and reports whether it inserted. false
	// means the message is a redelivery and must not be applied again: the
	// first layer of idempotency.
	Insert(ctx context.Context, msg Message) (bool, error)
	// Annotate sets the error/note column of message id.
	Annotate(ctx context.Context, id, note string) error
}

// Transactor runs fn in one transaction of the consumer's database, with
// the inbox and the consumer's own repositories R bound to it: it commits if
// fn returns nil and rolls back otherwise, so an inbox row exists if and only
// if what the handler wrote for its message does. fn must send its
// statements with the ctx it is given, the transaction's.
//
// This is the one port that differs by consumer only in R: the ledger's
// store binds its ledger tables, another consumer's store its own tables,
// and the inbox code is the same.
type Transactor[R any] interface {
	// Transact returns fn's error, or the error of beginning or committing.
	// A commit the database refuses for good (a deferred check that a retry
	// would fail the same way) wraps ErrPermanent; nothing is committed.
	Transact(ctx context.Context, fn func(ctx context.Context, in Inbox, repos R) error) error
}

// ErrPermanent marks a failure to apply a message that a retry would only
// repeat: the consumer's database refused its writes for good (the ledger:
// an account's balance taken past what int64 holds). The inbox does not
// retry such a message: it records it parked, with the reason, for an
// operator to look at and `ledger inbox retry` once the cause is fixed.
var ErrPermanent = errors.New("refused for good")
