package inbox

import (
	"context"
	"fmt"
	"time"
)

// Inbox is the inbox pattern's consuming half in its plainest form, the
// sync path: receive a message, record it in the inbox and apply it in one
// database transaction, and let the broker's acknowledgement wait for the
// commit.
//
//	BEGIN
//	INSERT INTO inbox_messages … ON CONFLICT (id) DO NOTHING  -- no row: a redelivery, done
//	… the handler's writes, with its repositories bound to this transaction
//	COMMIT                                                   -- then the caller acknowledges
//
// A crash before the commit leaves nothing, and the broker redelivers; a
// crash after it and before the acknowledgement makes the redelivery a
// duplicate, absorbed by the inbox row's primary key.
//
// Inbox knows nothing of the rest, which wraps it (NewService): the types
// its handler does not apply (unhandled.go), a refusal for good that would
// otherwise be redelivered until the DLQ (park.go), and the async mode with
// its processor (async.go, processor.go). Alone, it refuses what it cannot
// apply, and the broker moves that to the DLQ: nothing is lost.
type Inbox[R, E any] struct {
	store Recorder[R]
	c     *checker[R, E]
	now   func() time.Time
}

// New returns the sync path of a consumer: messages recorded into store
// and applied by h, each checked first against schemas and by h. now is the
// clock, passed in so that tests control it.
func New[R, E any](store Recorder[R], h Handler[R, E], schemas Schemas, now func() time.Time) *Inbox[R, E] {
	return &Inbox[R, E]{store: store, c: newChecker(h, schemas), now: now}
}

// Receive records and applies one message body, and returns only after the
// commit: the caller may acknowledge the message exactly when err is nil.
// The disposition is Applied, or Duplicate when the inbox already held the
// message id (a redelivery) or the handler found its fact already applied
// under another id (the consumer's business key: the second layer).
//
// Errors: ErrMalformed or ErrInvalidEvent for a message that can never
// apply, written nowhere, to be left for the DLQ — a type the handler does
// not apply among them; a refusal wrapping ErrPermanent when the database
// refused its writes for good; anything else is transient (leave it for
// redelivery). Nothing is committed when it returns an error.
func (in *Inbox[R, E]) Receive(ctx context.Context, body []byte) (Result, error) {
	ev, err := Decode(body)
	if err != nil {
		return Result{}, err
	}
	res := Result{MessageID: ev.ID, Type: ev.Type, EventTime: ev.Time, TraceID: ev.TraceID()}
	// Check before touching the database: an invalid event must leave no
	// inbox row, or its redelivery would be acknowledged as a duplicate
	// instead of reaching the DLQ.
	e, err := in.c.check(ev)
	if err != nil {
		return res, err
	}
	// The row is written processed: it is applied as of the commit that
	// makes it visible.
	now := in.now()
	msg := Message{ID: ev.ID, Type: ev.Type, Payload: body, ReceivedAt: now, ProcessedAt: now, TraceID: res.TraceID}
	applied := false
	inserted, err := in.store.Record(ctx, msg, func(ctx context.Context, repos R) (note string, err error) {
		// Runs only for a new row, in its transaction.
		if applied, err = in.c.h.Apply(ctx, repos, e, now); err != nil || applied {
			return "", err
		}
		return noteAlreadyApplied, nil
	})
	err = conflicting(&res, err)
	switch {
	case err != nil:
		return res, fmt.Errorf("apply message %s: %w", ev.ID, err)
	case inserted && applied:
		res.Disposition = Applied
	default:
		res.Disposition = Duplicate
	}
	return res, nil
}

// noteAlreadyApplied is the inbox note of a message whose business fact was
// applied under another message id.
const noteAlreadyApplied = "business key already applied by another message"
