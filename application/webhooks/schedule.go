package webhooks

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"time"
)

// DefaultRetrySchedule is the delays after the first attempt when
// WEBHOOKS_RETRY_SCHEDULE is unset: ten attempts over about three days, so
// that a receiver down for a weekend still gets its events.
const DefaultRetrySchedule = "5s,5m,30m,2h,5h,10h,10h,24h,24h"

// Jitter is how far a delay may move either way: ±20 %, so that the
// deliveries an outage failed together are not retried together.
const Jitter = 0.2

// Schedule is the delays between attempts: after attempt n fails, the next
// one is due Delays[n-1] later, jittered; after the last one the delivery is
// parked. Safe for concurrent use.
type Schedule struct {
	delays []time.Duration

	mu   sync.Mutex
	rand *rand.Rand
}

// ParseSchedule parses a comma-separated list of positive Go durations, such
// as DefaultRetrySchedule.
func ParseSchedule(s string) (*Schedule, error) {
	var delays []time.Duration
	for part := range strings.SplitSeq(s, ",") {
		d, err := time.ParseDuration(strings.TrimSpace(part))
		if err != nil || d <= 0 {
			return nil, fmt.Errorf("%q is not a positive Go duration such as 5s or 2h", strings.TrimSpace(part))
		}
		delays = append(delays, d)
	}
	return NewSchedule(delays...), nil
}

// NewSchedule returns the schedule of delays.
func NewSchedule(delays ...time.Duration) *Schedule {
	return &Schedule{delays: delays, rand: rand.New(rand.NewPCG(rand.Uint64(), rand.Uint64()))}
}

// Attempts is how many attempts a delivery gets: the first and one per
// delay.
func (s *Schedule) Attempts() int { return len(s.delays) + 1 }

// Delays returns the delays, unjittered.
func (s *Schedule) Delays() []time.Duration { return append([]time.Duration(nil), s.delays...) }

// Next returns the delay after attempt number attempts (1 after the first)
// failed, jittered by ±Jitter, and false when that was the last attempt.
func (s *Schedule) Next(attempts int) (time.Duration, bool) {
	if attempts < 1 || attempts > len(s.delays) {
		return 0, false
	}
	s.mu.Lock()
	f := s.rand.Float64()
	s.mu.Unlock()
	return jittered(s.delays[attempts-1], f), true
}

// jittered is d moved by up to ±Jitter: rnd in [0,1) maps onto
// [d·(1-Jitter), d·(1+Jitter)).
func jittered(d time.Duration, rnd float64) time.Duration {
	return time.Duration(float64(d) * (1 - Jitter + 2*Jitter*rnd))
}
