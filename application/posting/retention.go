package posting

import (
	"context"
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
// calls it with the retention periods read from the queue and the DLQ.
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

// InboxJanitor deletes inbox rows older than the retention, in bounded
// batches so that a large backlog never becomes one long-locking DELETE.
type InboxJanitor struct {
	cleaner   Cleaner
	retention time.Duration
	batch     int
	now       func() time.Time
}

// NewInboxJanitor returns a janitor deleting rows older than retention,
// batch rows per statement.
func NewInboxJanitor(c Cleaner, retention time.Duration, batch int, now func() time.Time) *InboxJanitor {
	return &InboxJanitor{cleaner: c, retention: retention, batch: batch, now: now}
}

// Sweep deletes every expired row, one batch at a time, and returns how many
// it deleted. It stops early when ctx is cancelled.
func (j *InboxJanitor) Sweep(ctx context.Context) (int64, error) {
	cutoff := j.now().Add(-j.retention)
	var total int64
	for {
		n, err := j.cleaner.DeleteInboxBefore(ctx, cutoff, j.batch)
		total += n
		if err != nil {
			return total, fmt.Errorf("inbox cleanup: %w", err)
		}
		if n < int64(j.batch) || ctx.Err() != nil {
			return total, nil
		}
	}
}

// Run sweeps every interval until ctx is cancelled. A failed sweep is
// reported to onError and retried at the next tick: cleanup is never urgent.
func (j *InboxJanitor) Run(ctx context.Context, interval time.Duration, onError func(error)) error {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		if _, err := j.Sweep(ctx); err != nil && ctx.Err() == nil {
			onError(err)
		}
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}
