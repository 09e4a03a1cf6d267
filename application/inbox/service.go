package inbox

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// Disposition says what receiving a message did: applied, a duplicate,
// ignored, recorded for the processor, or parked. (Not a relay.BatchResult, which
// is what a claimed outbox batch did.)
type Disposition int

// The dispositions of Receive. Every one of them means "committed:
// acknowledge the message"; a message that must not be acknowledged comes
// back as an error.
const (
	// Applied: the message was new and what its handler writes is written.
	Applied Disposition = iota + 1
	// Duplicate: the message id was already in the inbox (a redelivery), or
	// its business fact was already applied under another message id.
	// Nothing changed.
	Duplicate
	// Ignored: an event type this version does not apply. It is recorded in
	// the inbox, unapplied, so that a new event type never poisons an older
	// consumer and a later version can still find it.
	Ignored
	// Recorded: the message was new and is recorded in the inbox, pending,
	// for the processor to apply (the async mode).
	Recorded
	// Parked: the message was new and can never apply as it is
	// (ErrPermanent); it is recorded in the inbox parked, with the reason,
	// where inbox_parked_rows counts it and `ledger inbox retry` finds it.
	// Nothing of it was applied.
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

// Result describes one message that Receive committed.
type Result struct {
	MessageID   string
	Type        string
	Disposition Disposition
	// EventTime is the event's own time (when the producer recorded the
	// fact); zero if the event had none.
	EventTime time.Time
	// Conflicting is set on a Duplicate whose body is not the one the
	// inbox recorded under its id (ErrConflictingDuplicate): dropped too,
	// and worth a warning.
	Conflicting bool
}

// Mode is when the inbox applies a message it receives.
type Mode int

const (
	// Sync applies each message in the transaction that records it; the
	// broker's acknowledgement waits for the handler's writes.
	Sync Mode = iota
	// Async records each message pending and acknowledges it; the Processor
	// applies it later, in batches, with retries and backoff.
	Async
)

// String names the mode as LEDGER_INBOX_MODE spells it.
func (m Mode) String() string {
	if m == Async {
		return "async"
	}
	return "sync"
}

// Config tunes a Service.
type Config struct {
	// Mode is when a received message is applied: Sync (the zero value) or
	// Async.
	Mode Mode
}

// Service receives messages into the inbox: the consumer's half of the
// inbox pattern. Nothing here knows about the broker: the SQS adapter passes
// a message body to Receive and decides from the result and the error
// whether to acknowledge it.
type Service[R, E any] struct {
	in   Recorder[R]
	proc *Processor[R, E]
	c    *consumer[R, E]
	mode Mode
	now  func() time.Time
}

// NewService returns a Service recording into in. It checks and applies
// each message with proc's handler and schemas, so that a message it
// records is one the processor can apply, and in the async mode it wakes
// proc after recording one. now is the clock, passed in so tests control it.
func NewService[R, E any](in Recorder[R], proc *Processor[R, E], now func() time.Time, cfg Config) *Service[R, E] {
	return &Service[R, E]{in: in, proc: proc, c: proc.c, mode: cfg.Mode, now: now}
}

// Receive processes one message body: it records the message in the inbox
// and, in the sync mode, if the inbox had not seen it, applies it with the
// handler in the same database transaction; in the async mode it records it
// pending for the processor. Either way it checks the message first, so a
// message that could never apply is refused before anything is written, and
// it returns only after the commit, so the caller may acknowledge the
// message exactly when err is nil.
//
// A message the database refuses for good (ErrPermanent) is not retried: a
// second transaction records it in the inbox parked, with the reason, and
// Receive returns Parked, to be acknowledged like any committed disposition.
//
// Errors: ErrMalformed or ErrInvalidEvent for a message that will never
// apply, one its schema refuses included, or one of a type this version does
// not apply that is larger than MaxUnhandledSize (leave it for the DLQ);
// anything else is a transient failure (leave it for redelivery).
func (s *Service[R, E]) Receive(ctx context.Context, body []byte) (Result, error) {
	ev, err := Decode(body)
	if err != nil {
		return Result{}, err
	}
	res := Result{MessageID: ev.ID, Type: ev.Type, EventTime: ev.Time}
	apply := s.mode == Sync
	now := s.now()
	msg := Message{ID: ev.ID, Type: ev.Type, Payload: body, ReceivedAt: now}

	var e E
	known := s.c.applies(ev.Type)
	switch reason, ignored := s.c.ignored[ev.Type]; {
	case known:
		// Check before touching the database: an invalid event must leave no
		// inbox row, or its redelivery would look like a duplicate and be
		// acknowledged instead of reaching the DLQ.
		if e, err = s.c.check(ev); err != nil {
			return res, err
		}
		if apply {
			// The row is applied as of the commit that makes it visible, so
			// it is written processed: one statement instead of insert +
			// update.
			msg.ProcessedAt = now
		}
	case ignored:
		// A decision, not a gap: the row is done, in both modes. Left
		// pending it would wait for a version that never applies it,
		// counted as unhandled and kept from retention forever.
		msg.Error = fmt.Sprintf("event type %q is not applied: %s", ev.Type, reason)
		msg.ProcessedAt = now
	default:
		// Kept whole and pending, for a version that applies the type; only
		// its size bounds what it keeps (MaxUnhandledSize), and only its
		// window how long (Processor.ExpireUnhandled).
		if len(body) > MaxUnhandledSize {
			return res, fmt.Errorf("%w: event type %q is not handled by this version, and the inbox keeps such a message only up to %d bytes: this one has %d",
				ErrMalformed, ev.Type, MaxUnhandledSize, len(body))
		}
		msg.Error = fmt.Sprintf("event type %q is not handled by this version", ev.Type)
	}

	var applyFn func(ctx context.Context, repos R) (string, error)
	applied := true
	if known && apply {
		applyFn = func(ctx context.Context, repos R) (string, error) {
			var err error
			if applied, err = s.c.h.Apply(ctx, repos, e, now); err != nil || applied {
				return "", err
			}
			// Layer 2: the same business fact came under another message id.
			return noteAlreadyApplied, nil
		}
	}
	inserted, err := s.in.Record(ctx, msg, applyFn)
	if errors.Is(err, ErrConflictingDuplicate) {
		res.Conflicting, err = true, nil
	}
	switch {
	case !inserted:
		res.Disposition = Duplicate
	case !known:
		res.Disposition = Ignored
	case !apply:
		res.Disposition = Recorded
	case !applied:
		res.Disposition = Duplicate
	default:
		res.Disposition = Applied
	}
	if apply && errors.Is(err, ErrPermanent) {
		return s.park(ctx, res, msg, err)
	}
	if err != nil {
		return Result{MessageID: ev.ID, Type: ev.Type, EventTime: ev.Time}, fmt.Errorf("apply message %s: %w", ev.ID, err)
	}
	if res.Disposition == Recorded {
		s.proc.Wake()
	}
	return res, nil
}

// park records msg in the inbox parked, with cause as its reason, in a
// transaction of its own: the one that tried to apply it rolled back. A
// message another delivery recorded meanwhile is a duplicate, as in Receive.
// If this transaction fails too, the message is left for redelivery.
func (s *Service[R, E]) park(ctx context.Context, res Result, msg Message, cause error) (Result, error) {
	msg.ProcessedAt, msg.ParkedAt, msg.Error = time.Time{}, msg.ReceivedAt, cause.Error()
	res.Disposition = Parked
	inserted, err := s.in.Record(ctx, msg, nil)
	if errors.Is(err, ErrConflictingDuplicate) {
		res.Conflicting, err = true, nil
	}
	if err == nil && !inserted {
		res.Disposition = Duplicate
	}
	if err != nil {
		return Result{MessageID: res.MessageID, Type: res.Type, EventTime: res.EventTime},
			fmt.Errorf("apply message %s: %w; parking it failed: %w", msg.ID, cause, err)
	}
	return res, nil
}

// noteAlreadyApplied is the inbox note of a message whose business fact was
// applied under another message id.
const noteAlreadyApplied = "business key already applied by another message"
