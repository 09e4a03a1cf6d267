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
	// operator (the service's `inbox retry` command).
	ParkedAt time.Time
	Error    string // why it was not applied, or a note about how it was
	// TraceID is the trace id of the trace context the event carries
	// (Event.TraceID), "" when it carries none: kept with the row so that an
	// operator goes from the row to the trace of the write that recorded
	// the fact. It is data the inbox hands the store; no store reads a
	// trace from its context.
	TraceID string
}

// Recorder is the inbox's write port for a received message: the same shape
// as the payments side's Repository.Update. The store owns the transaction
// and the application hands it a function; nothing here sees a transaction.
//
// This is the one port that differs by consumer only in R: the ledger's
// store binds its ledger tables, the webhooks service's its deliveries, and
// the inbox code is the same.
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
// operator to look at and retry once the cause is fixed. It is the inbox's
// side of one idiom: the broker's refusal for good is outbox.ErrPermanent,
// a sentinel too, wrapped with %w and matched with errors.Is.
var ErrPermanent = errors.New("refused for good")

// Result describes one message that Receive committed: what the broker's
// adapter needs to acknowledge it, count it and log it.
type Result struct {
	MessageID   string
	Type        string
	Disposition Disposition
	// EventTime is the event's own time (when the producer recorded the
	// fact); zero if the event had none.
	EventTime time.Time
	// TraceID is the event's trace id (Event.TraceID), "" when it carries
	// none: what the wrappers of the sync path record with the row.
	TraceID string
	// Conflicting is set on a Duplicate whose body is not the one the
	// inbox recorded under its id (ErrConflictingDuplicate): dropped too,
	// and worth a warning.
	Conflicting bool
}

// conflicting folds Record's ErrConflictingDuplicate into res: a message
// reusing a recorded id with another body is a duplicate, marked
// Conflicting, and no error. Any other error is returned as it is.
func conflicting(res *Result, err error) error {
	if errors.Is(err, ErrConflictingDuplicate) {
		res.Conflicting = true
		return nil
	}
	return err
}

// Disposition says what receiving a message did. Every one of them means
// "committed: acknowledge the message"; a message that must not be
// acknowledged comes back as an error.
type Disposition int

// The dispositions of Receive: the sync path's two, then those of what
// wraps it.
const (
	// Applied: the message was new and what its handler writes is written.
	Applied Disposition = iota + 1
	// Duplicate: the message id was already in the inbox (a redelivery), or
	// its business fact was already applied under another message id.
	// Nothing changed.
	Duplicate
	// Ignored: an event type this version does not apply. It is recorded in
	// the inbox, unapplied, so that a new event type never poisons an older
	// consumer and a later version can still find it (unhandled.go).
	Ignored
	// Recorded: the message was new and is recorded in the inbox, pending,
	// for the processor to apply (the async mode, async.go).
	Recorded
	// Parked: the message was new and can never apply as it is
	// (ErrPermanent); it is recorded in the inbox parked, with the reason,
	// where inbox_parked_rows counts it and the service's `inbox retry`
	// command finds it (park.go). Nothing of it was applied.
	Parked
)

// String names the disposition, for logs and metric labels.
func (d Disposition) String() string {
	switch d {
	case Applied:
		return "applied"
	case Duplicate:
		return "duplicate"
	case Ignored:
		return "ignored"
	case Recorded:
		return "recorded"
	case Parked:
		return "parked"
	default:
		return "unknown"
	}
}
