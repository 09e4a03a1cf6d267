package outbox

import (
	"sync"
	"time"
)

// A broker slower than the relay's deadline must not stop the relay. A
// claim holds its rows locked until it commits, so its publish is bounded
// (Config.PublishTimeout); if the whole batch were rolled back whenever the
// broker missed that bound, the same rows would be claimed and sent again,
// and again, and none would ever be marked: no progress, and every cycle a
// batch of duplicates downstream. Two things keep the relay moving:
//
//   - The publish ends before the claim's deadline, by a quarter of
//     PublishTimeout (publishDeadline), so that the claim always has time
//     to write what the broker did answer: the rows it acknowledged
//     PUBLISHED, the rest retried with backoff, like any failed publish. A
//     message the broker took but did not acknowledge in time is published
//     again: at least once, never lost.
//   - The batch size adapts (batchSize): halved after a publish that ran
//     out of its deadline, one more after each full batch that did not,
//     never above Config.BatchSize: additive increase, multiplicative
//     decrease, as TCP sizes its window. A broker whose answers grow with
//     the batch gets batches it can answer in time, and the relay creeps
//     back to the configured size once it is fast again. Metrics.BatchSize
//     shows where it is.

// publishDeadline is when the publish of a claim due to end at deadline must
// end: a quarter of timeout before it, the time left to write the result
// and commit.
func publishDeadline(deadline time.Time, timeout time.Duration) time.Time {
	return deadline.Add(-timeout / 4)
}

// batchSize is how many rows the relay claims at once: between 1 and its
// ceiling, Config.BatchSize. The workers share it.
type batchSize struct {
	mu      sync.Mutex
	ceiling int
	size    int
}

func newBatchSize(ceiling int) *batchSize {
	return &batchSize{ceiling: ceiling, size: ceiling}
}

// get is the size of the next claim.
func (b *batchSize) get() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.size
}

// adapt records how a claim of limit rows went, n of them claimed, late if
// its publish ran out of its deadline, and returns the size after it and
// whether it changed. The halving starts from the claim's own limit, not
// from the current size, so that the workers whose batches ran late
// together halve it once, not once each.
func (b *batchSize) adapt(limit, n int, late bool) (size int, changed bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	was := b.size
	switch {
	case late:
		b.size = min(b.size, max(1, limit/2))
	case n >= limit:
		b.size = min(b.ceiling, b.size+1)
	}
	return b.size, b.size != was
}
