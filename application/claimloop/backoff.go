package claimloop

import (
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
