package posting

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/payments-outbox/payments-outbox/application/retention"
)

// RetentionMargin is how much longer than the broker's own retention the
// inbox keeps a message id. A message can be redelivered until the queue
// drops it; if the inbox forgot its id first, the redelivery would look new.
// The day of margin covers clock skew and a redrive from the DLQ.
const RetentionMargin = 24 * time.Hour

// ErrRetentionTooShort means the inbox would forget message ids the broker
// can still redeliver.
var ErrRetentionTooShort = errors.New("inbox retention too short")

// CheckRetention returns ErrRetentionTooShort unless inbox is at least the
// longest of the queues' retention periods plus RetentionMargin. Start-up
// calls it with the retention periods read from the queue and the DLQ, for
// the processed rows' retention and for the unhandled rows' window alike.
func CheckRetention(inbox time.Duration, queues ...time.Duration) error {
	var longest time.Duration
	for _, q := range queues {
		longest = max(longest, q)
	}
	if need := longest + RetentionMargin; inbox < need {
		return fmt.Errorf("%w: %s, the queue keeps messages %s and the margin is %s: need at least %s",
			ErrRetentionTooShort, inbox, longest, RetentionMargin, need)
	}
	return nil
}

// MaxUnhandledSize is the largest message of a type this version does not
// apply that the inbox records. Such a message is kept whole, for a version
// that applies its type, and nothing has checked its data: a known type's
// schema bounds what its row holds, but an unknown type's size is the only
// bound on what anyone who can enqueue makes the inbox keep. 64 KiB is far
// above any event the payments service publishes (docs/events) and a quarter
// of what SNS delivers (256 KiB).
//
// A larger one is refused as malformed before anything is written: left
// unacknowledged, it reaches the DLQ, where it is counted and pages
// (ledger_dlq_messages), and once a version that applies its type is
// deployed, `ledger dlq redrive` brings it back. Truncated, it would be a row
// no version could apply; acknowledged unrecorded, it would be lost without
// a trace. A known type is never capped: its schema decides.
const MaxUnhandledSize = 64 << 10

// UnhandledMetrics counts the unhandled rows deleted at the end of their
// window. The binary exports it (adapters/metrics); nil records nothing.
type UnhandledMetrics interface {
	// UnhandledDeleted counts n rows deleted unapplied.
	UnhandledDeleted(n int)
}

type noUnhandledMetrics struct{}

func (noUnhandledMetrics) UnhandledDeleted(int) {}

// ExpireUnhandled returns the retention.DeleteFunc of the unhandled rows:
// the pending rows of types this version does not apply, which the inbox
// keeps for a version that does and which nothing else would ever remove,
// so that anyone who can enqueue could grow the inbox without bound. Past
// their window (start-up checks with CheckRetention that it outlives the
// broker's redelivery window, so the queue has dropped the message too)
// they are deleted rather than parked: parking would keep the bytes, which
// are the harm. Each deletion loses a message for good, so none is silent:
// every batch that deleted rows is logged once, with its count, and counted
// in metrics. Rows of the types this version applies, pending or parked,
// parked rows of any type and processed rows are never deleted here
// (InboxAdmin.DeleteUnhandled).
func ExpireUnhandled(admin InboxAdmin, log *slog.Logger, metrics UnhandledMetrics) retention.DeleteFunc {
	if metrics == nil {
		metrics = noUnhandledMetrics{}
	}
	types := AppliedTypes()
	return func(ctx context.Context, cutoff time.Time, limit int) (int, error) {
		n, err := admin.DeleteUnhandled(ctx, types, cutoff, limit)
		if n > 0 {
			metrics.UnhandledDeleted(n)
			log.WarnContext(ctx, "unhandled inbox rows deleted unapplied at the end of their window",
				"deleted", n, "received_before", cutoff)
		}
		return n, err
	}
}
