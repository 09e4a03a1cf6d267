// Package backlog holds what the two claim loops of this repository share:
// the outbox relay (application/relay), which claims rows to publish, and
// the inbox processor (application/inbox), which claims rows to apply. Both
// lock due rows with FOR UPDATE SKIP LOCKED, so replicas share a table
// without waiting on each other, and both reschedule a failed row with
// exponential backoff and jitter until a maximum of attempts sets it aside
// (DEAD in the outbox, parked in the inbox). The SQL of each claim stays in
// its store, and what a batch does in its processor: those differ. What is
// the same is here: the retry schedule (Backoff, Schedule), the loop that
// claims on wake-ups and polls and drains while batches come back full
// (Loop), and how often to count a backlog for its gauges (StatsWait,
// CountEvery).
package backlog

import (
	"context"
	"math/rand/v2"
	"sync"
	"time"
)

// Backoff is the delay before retry number attempts (1 after the first failure):
// base doubled per earlier failure, capped at max, then "equal jitter" — half the
// delay fixed, half scaled by rnd in [0,1) — so replicas that failed together
// (a broker or database outage) do not retry together, yet every retry waits at
// least half its step.
func Backoff(attempts int, base, max time.Duration, rnd float64) time.Duration {
	d := base
	for i := 1; i < attempts && d < max; i++ {
		d *= 2
	}
	if d > max {
		d = max
	}
	half := d / 2
	return half + time.Duration(float64(d-half)*rnd)
}

// Schedule is a Backoff with its own random source, safe for the concurrent
// workers of one claim loop.
type Schedule struct {
	Base, Max time.Duration

	mu   sync.Mutex
	rand *rand.Rand
}

// NewSchedule returns a Schedule from base to ceiling (raised to base if
// lower).
func NewSchedule(base, ceiling time.Duration) *Schedule {
	return &Schedule{Base: base, Max: max(ceiling, base), rand: rand.New(rand.NewPCG(rand.Uint64(), rand.Uint64()))}
}

// Delay is the jittered delay before retry number attempts.
func (s *Schedule) Delay(attempts int) time.Duration {
	s.mu.Lock()
	f := s.rand.Float64()
	s.mu.Unlock()
	return Backoff(attempts, s.Base, s.Max, f)
}

// StatsWait is the pause before the next count of a backlog's gauges: every,
// or 50 times what the last count took (at most 2% of the time spent
// counting), capped at a minute so the gauges stay fresh enough to alert on.
// Counting a huge backlog is a scan, so the gauges back off exactly when the
// database has the most to do.
func StatsWait(every, took time.Duration) time.Duration {
	return max(every, min(50*took, time.Minute))
}

// CountEvery runs count at once, then again StatsWait after each run, until
// ctx ends. count reports its own result: a failed count is retried at the
// next turn, never stops the loop.
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
