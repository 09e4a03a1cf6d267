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

// Recorder is the inbox's write port for a received message: the same shape
// as the payments side's Repository.Update. The store owns the transaction
// and the application hands it a function; nothing here sees a transaction.
//
// This is the one port that differs by consumer only in R: the ledger's
// store binds its ledger tables, another consumer's store its own tables,
// and the inbox code is the same.
type Recorder[R any] interface {
	// Record inserts msg into the inbox unless a message with the same ID is
	// already there (INSERT … ON CONFLICT DO NOTHING): the first layer of
	// idempotency. When it inserted the row and apply is not nil, it runs
	// apply in the same transaction, with the consumer's repositories R bound
	// to it, and sets the row's error/note column to the note apply returns
	// (when not ""). It commits if apply returns nil and rolls back
	// otherwise, so an inbox row exists if and only if what apply wrote does.
	// apply must send its statements with the ctx it is given, the
	// transaction's.
	//
	// It reports whether it inserted the row: false means the message is a
	// redelivery, apply was not run, and nothing changed; when the row
	// recorded under the ID holds another JSON document than msg.Payload
	// (not a redelivery: a second message reusing the ID), it returns false
	// with ErrConflictingDuplicate, and nothing changed either. It returns apply's
	// error, or the error of beginning or committing; a commit the database
	// refuses for good (a deferred check that a retry would fail the same
	// way) wraps ErrPermanent. Nothing is committed when it returns an error.
	Record(ctx context.Context, msg Message, apply func(ctx context.Context, repos R) (note string, err error)) (inserted bool, err error)
}

// ErrConflictingDuplicate means a message came with the ID of one the inbox
// recorded, and another body: the first is kept, this one dropped. A
// redelivery carries the same document; this is a producer reusing an id,
// or a message nobody published.
var ErrConflictingDuplicate = errors.New("a message with this id was recorded with another body")

// ErrPermanent marks a failure to apply a message that a retry would only
// repeat: the consumer's database refused its writes for good (the ledger:
// an account's balance taken past what int64 holds). The inbox does not
// retry such a message: it records it parked, with the reason, for an
// operator to look at and `ledger inbox retry` once the cause is fixed.
var ErrPermanent = errors.New("refused for good")
