package inbox

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/payments-outbox/payments-outbox/application/retention"
)

// MaxUnhandledSize is the largest message of a type this version does not
// apply that the inbox records. Such a message is kept whole, for a version
// that applies its type, and nothing has checked its data: a known type's
// schema bounds what its row holds, but an unknown type's size is the only
// bound on what anyone who can enqueue makes the inbox keep. 64 KiB is far
// above any event the payments service publishes (docs/events) and a quarter
// of what SNS delivers (256 KiB).
//
// A larger one is refused as malformed before anything is written: left
// unacknowledged, it reaches the DLQ, where it is counted and pages (the
// service's <service>_dlq_messages), and once a version that applies its
// type is deployed, the service's `dlq redrive` command brings it back.
// Truncated, it would be a row no version could apply; acknowledged
// unrecorded, it would be lost without a trace. A known type is never
// capped: its schema decides.
const MaxUnhandledSize = 64 << 10

// unhandled wraps a receiver (the sync path, or the async mode's) for the
// messages of types its handler does not apply, which the wrapped receiver
// refuses (errNotApplied). A producer may ship a new type before a consumer
// applies it; refused, its messages would poison every older consumer's
// queue. Instead they are recorded and acknowledged (Ignored), in both
// modes, without a schema check:
//
//   - a type the handler deliberately ignores (Handler.Ignored) is recorded
//     done, with the reason: a decision, not a gap. Left pending it would
//     wait for a version that never applies it, counted as unhandled and
//     kept from retention forever;
//   - any other type is recorded whole and pending, for a version that
//     applies it: that version's processor applies it, once. Its size
//     bounds what it keeps (MaxUnhandledSize) and its window how long
//     (Processor.ExpireUnhandled).
type unhandled[R any] struct {
	next    receiver
	store   Recorder[R]
	ignored map[string]string // reason by ignored type
	now     func() time.Time
}

// Receive receives body with the wrapped receiver, and records the message
// unapplied when that refuses its type.
//
// Errors: the wrapped receiver's, and ErrMalformed for a message of a type
// no version applies yet that is larger than MaxUnhandledSize.
func (u unhandled[R]) Receive(ctx context.Context, body []byte) (Result, error) {
	res, err := u.next.Receive(ctx, body)
	if !errors.Is(err, errNotApplied) {
		return res, err
	}
	now := u.now()
	msg := Message{ID: res.MessageID, Type: res.Type, Payload: body, ReceivedAt: now, TraceID: res.TraceID}
	if reason, ignored := u.ignored[res.Type]; ignored {
		msg.Error = fmt.Sprintf("event type %q is not applied: %s", res.Type, reason)
		msg.ProcessedAt = now
	} else {
		if len(body) > MaxUnhandledSize {
			return res, fmt.Errorf("%w: event type %q is not handled by this version, and the inbox keeps such a message only up to %d bytes: this one has %d",
				ErrMalformed, res.Type, MaxUnhandledSize, len(body))
		}
		msg.Error = fmt.Sprintf("event type %q is not handled by this version", res.Type)
	}
	inserted, err := u.store.Record(ctx, msg, nil)
	if err = conflicting(&res, err); err != nil {
		return res, fmt.Errorf("record message %s: %w", res.MessageID, err)
	}
	res.Disposition = Ignored
	if !inserted {
		res.Disposition = Duplicate
	}
	return res, nil
}

// UnhandledMetrics counts the unhandled rows deleted at the end of their
// window (Processor.ExpireUnhandled). The binary exports it
// (adapters/metrics); nil records nothing.
type UnhandledMetrics interface {
	// UnhandledDeleted counts n rows deleted unapplied.
	UnhandledDeleted(n int)
}

type noUnhandledMetrics struct{}

func (noUnhandledMetrics) UnhandledDeleted(int) {}

// ExpireUnhandled returns the retention.DeleteFunc of the unhandled rows:
// the pending rows of types the processor does not apply, which the inbox
// keeps for a version that does and which nothing else would ever remove,
// so that anyone who can enqueue could grow the inbox without bound. Past
// their window (start-up checks with CheckRetention that it outlives the
// broker's redelivery window, so the queue has dropped the message too)
// they are deleted rather than parked: parking would keep the bytes, which
// are the harm. Each deletion loses a message for good, so none is silent:
// every batch that deleted rows is logged once, with its count, and counted
// in metrics (nil counts nothing). Rows of the types the processor applies,
// pending or parked, parked rows of any type and processed rows are never
// deleted here (Admin.DeleteUnhandled).
func (p *Processor[R, E]) ExpireUnhandled(admin Admin, metrics UnhandledMetrics) retention.DeleteFunc {
	if metrics == nil {
		metrics = noUnhandledMetrics{}
	}
	types := p.Types()
	return func(ctx context.Context, cutoff time.Time, limit int) (int, error) {
		n, err := admin.DeleteUnhandled(ctx, types, cutoff, limit)
		if n > 0 {
			metrics.UnhandledDeleted(n)
			p.log.WarnContext(ctx, "unhandled inbox rows deleted unapplied at the end of their window",
				"deleted", n, "received_before", cutoff)
		}
		return n, err
	}
}
