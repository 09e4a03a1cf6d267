package inbox

import (
	"errors"
	"fmt"
	"time"
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
// window (Processor.ExpireUnhandled). The binary exports it
// (adapters/metrics); nil records nothing.
type UnhandledMetrics interface {
	// UnhandledDeleted counts n rows deleted unapplied.
	UnhandledDeleted(n int)
}

type noUnhandledMetrics struct{}

func (noUnhandledMetrics) UnhandledDeleted(int) {}
