package claimloop

import (
	"context"
	"time"
)

// StatsWait is the pause before the next count of a backlog's gauges: every,
// or 50 times what the last count took (at most 2% of the time spent
// counting), capped at a minute so the gauges stay fresh enough to alert on.
// Counting a huge backlog is a scan, so the gauges back off exactly when the
// database has the most to do.
func StatsWait(every, took time.Duration) time.Duration {
	return max(every, min(50*took, time.Minute))
}

// CountEvery runs count at once, then again StatsWait after each run, until
// ctx ends. count reports its own result: a failed count is tried again at
// the next count, never stops the loop.
func CountEvery(ctx context.Context, every time.Duration, count func(context.Context)) {
	t := time.NewTimer(0)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		start := time.Now()
		count(ctx)
		t.Reset(StatsWait(every, time.Since(start)))
	}
}
