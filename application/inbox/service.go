package inbox

import (
	"context"
	"time"
)

// Mode is when the inbox applies a message it receives.
type Mode int

const (
	// Sync applies each message in the transaction that records it; the
	// broker's acknowledgement waits for the handler's writes (Inbox).
	Sync Mode = iota
	// Async records each message pending and acknowledges it; the Processor
	// applies it later, in batches, with retries and backoff.
	Async
)

// String names the mode as a service's <SERVICE>_INBOX_MODE spells it.
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

// receiver is what each layer of a Service is and wraps: one message body
// received, committed when it returns nil.
type receiver interface {
	Receive(ctx context.Context, body []byte) (Result, error)
}

// Service is the inbox as a consumer service runs it: the sync path (Inbox)
// or the async mode's receive (async.go), wrapped so that a new event type
// never poisons the queue (unhandled.go) and, in the sync mode, so that a
// message the database refuses for good is parked rather than redelivered
// until the DLQ (park.go). Nothing here knows about the broker: its adapter
// passes a message body to Receive and decides from the result and the
// error whether to acknowledge it.
type Service[R, E any] struct {
	r receiver
}

// NewService returns a Service recording into store. It checks and applies
// each message with proc's handler and schemas, so that a message it
// records is one the processor can apply, and in the async mode it wakes
// proc after recording one. now is the clock, passed in so tests control it.
func NewService[R, E any](store Recorder[R], proc *Processor[R, E], now func() time.Time, cfg Config) *Service[R, E] {
	var r receiver
	if cfg.Mode == Async {
		r = async[R, E]{store: store, c: proc.c, wake: proc.Wake, now: now}
	} else {
		r = parking[R]{next: &Inbox[R, E]{store: store, c: proc.c, now: now}, store: store, now: now}
	}
	return &Service[R, E]{r: unhandled[R]{next: r, store: store, ignored: proc.c.h.Ignored(), now: now}}
}

// Receive receives one message body and returns only after the commit, so
// the caller may acknowledge the message exactly when err is nil.
//
// Errors: ErrMalformed or ErrInvalidEvent for a message that will never
// apply, one its schema refuses included, or one of a type this version does
// not apply that is larger than MaxUnhandledSize (leave it for the DLQ);
// anything else is a transient failure (leave it for redelivery).
func (s *Service[R, E]) Receive(ctx context.Context, body []byte) (Result, error) {
	return s.r.Receive(ctx, body)
}
