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
